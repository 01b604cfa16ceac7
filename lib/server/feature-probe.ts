// Optional request features (tools, structured output): declared in the profile or discovered with one probe
// request. The lenient-vs-broken rule decides what an answer means: 200 = supported; a 4xx = unsupported, said
// honestly (the family skips with the reason); a 5xx, a dropped connection or a hang = broken (graded once as a
// failure, by the check that owns the probe; the rest of the family skips and points there). RFC 9110 §15.5/15.6:
// a 4xx says the client's request cannot be served, a 5xx that the server failed a request it should handle.

import { classifyErrorBody } from '../decode/error-body.ts';
import { escapeBytes } from '../decode/stream-decoder.ts';
import type { Exchange } from '../exchange/exchange.ts';
import { bodyText } from '../http/recorder.ts';
import type { Requester } from '../model/check.ts';
import type { Verdict } from '../model/types.ts';
import { fail, inconclusive, pass, skip, warn } from '../model/verdict.ts';

type Feature = 'tools' | 'structured-output';

type Answer =
  | { kind: 'ok' }
  | { kind: 'refused'; status: number; detail: string }
  | { kind: 'broken'; status?: number; detail: string }
  /** Our own total budget ran out while the server was still answering: no evidence either way. */
  | { kind: 'budget'; detail: string };

/** What an exchange says about the request it answered. A refused connection is our side's problem: it throws. */
export function classifyAnswer(x: Exchange): Answer {
  const f = x.rec.failure;
  if (f?.kind === 'connect') throw new Error(`cannot reach ${x.rec.url}: ${f.message}`);
  const status = x.rec.status;
  // One line, bounded: servers echo whole requests in their error messages (llama-server prints the tools).
  const message = () => escapeBytes(classifyErrorBody(x.json).message ?? bodyText(x.rec), 160);
  if (status !== undefined && status >= 400 && status < 500)
    return { kind: 'refused', status, detail: `HTTP ${status}: ${message()}` };
  if (status !== undefined && status >= 500) return { kind: 'broken', status, detail: `HTTP ${status}: ${message()}` };
  if (f?.kind === 'total-timeout' && status === 200) return { kind: 'budget', detail: `our ${f.message}` };
  if (f) return { kind: 'broken', status, detail: `${f.kind}: ${f.message}${status ? ` (after HTTP ${status})` : ''}` };
  if (status !== 200) return { kind: 'broken', status, detail: `HTTP ${status}` };
  return { kind: 'ok' };
}

function declared(ctx: Requester, feature: Feature): boolean | undefined {
  return ctx.profile.capabilities?.[feature];
}

const declaredFalse = (ctx: Requester, feature: Feature) =>
  `profile "${ctx.profile.id}" declares capability "${feature}" false ("capabilities")`;

/**
 * The probe check of a feature family: pass on a 200; a 4xx skips (unsupported, said honestly) unless the profile
 * declares the feature; a 5xx, a drop or a hang fails — once, here: the family's other checks skip and point here.
 */
export async function probeCheck(
  ctx: Requester,
  feature: Feature,
  probe: () => Promise<Exchange>,
  what: string,
  request: string,
): Promise<Verdict> {
  const d = declared(ctx, feature);
  if (d === false) return skip(declaredFalse(ctx, feature));
  const x = await probe();
  const a = classifyAnswer(x);
  if (a.kind === 'ok') return pass(`capability "${feature}" supported: ${what} got HTTP 200`);
  if (a.kind === 'refused' && d !== true)
    return skip(`capability "${feature}" not supported: ${what} was refused with ${a.detail}`);
  if (a.kind === 'budget') return inconclusive(`${what}: ${a.detail}`);
  return fail({
    requirement:
      a.kind === 'refused'
        ? `The profile declares capability "${feature}": ${request} MUST be answered.`
        : `${request} MUST be answered, or refused with a 4xx if it is not supported; never a 5xx, a drop or a hang.`,
    expected: 'HTTP 200 (or a 4xx with an error object when the feature is unsupported)',
    actual: `${what} got ${a.detail}`,
    bytes: escapeBytes(bodyText(x.rec), 300),
  });
}

/**
 * The verdict for a request the check cannot judge further (anything but a 200 answer), or undefined to go on.
 * `what` names the request ("a streamed tool_choice "required" request"); the probe's 5xx is graded by the probe check,
 * any other 5xx by the check that sent it.
 */
export function unanswered(x: Exchange, what: string, requirement: string): Verdict | undefined {
  const a = classifyAnswer(x);
  switch (a.kind) {
    case 'ok':
      return undefined;
    case 'refused':
      return skip(
        `${what} was refused with ${a.detail}: the server does not support it and says so (a 4xx is the honest answer for an unsupported feature)`,
      );
    case 'budget':
      return inconclusive(`${what}: ${a.detail} while the server was still answering`);
    case 'broken':
      return fail({
        requirement,
        expected: 'HTTP 200 with an answer, or a 4xx with an error object if the server does not support this',
        actual: `${what} got ${a.detail}`,
        bytes: escapeBytes(bodyText(x.rec), 300),
      });
  }
}

/**
 * Gate for the checks of a feature family other than its probe check: proceed (undefined) when the feature is
 * declared or the probe got a 200; otherwise skip, naming the probe's answer.
 */
export async function featureGate(
  ctx: Requester,
  feature: Feature,
  probeCheck: string,
  probe: () => Promise<Exchange>,
): Promise<Verdict | undefined> {
  const d = declared(ctx, feature);
  if (d === true) return undefined;
  if (d === false) return skip(declaredFalse(ctx, feature));
  const a = classifyAnswer(await probe());
  switch (a.kind) {
    case 'ok':
      return undefined;
    case 'refused':
      return skip(
        `capability "${feature}" not supported: the probe request was refused with ${a.detail} (declare "capabilities": {"${feature}": true} to test it anyway)`,
      );
    case 'broken':
      return skip(
        `capability "${feature}" unknown: the probe request failed with ${a.detail}, graded once in ${probeCheck}`,
      );
    case 'budget':
      return skip(
        `capability "${feature}" unknown: the probe request ran out of our time budget (${a.detail}); see ${probeCheck}`,
      );
  }
}

/**
 * Invalid requests (lenient vs broken, issue 8 item 4): each should get a 4xx. A 200 that ignores the bad field is
 * lenient (warn: clients lose the error, nothing breaks); a 5xx, a dropped connection or a hang is broken (fail).
 */
export function judgeInvalidCases(
  results: ReadonlyArray<{ label: string; x: Exchange }>,
  requirement: string,
): Verdict {
  const refused: string[] = [];
  const lenient: string[] = [];
  const broken: string[] = [];
  for (const { label, x } of results) {
    const a = classifyAnswer(x);
    if (a.kind === 'refused') refused.push(`${label}: ${a.detail}`);
    else if (a.kind === 'ok')
      lenient.push(
        `${label}: accepted with HTTP 200 (lenient: the invalid value was ignored, the client never learns)`,
      );
    else broken.push(`${label}: ${a.detail}`);
  }
  const metrics = { refused: refused.length, lenient: lenient.length, broken: broken.length };
  if (broken.length) {
    return fail(
      {
        requirement,
        expected:
          'a 4xx with an error object for each (a 200 that ignores the value is lenient; a 5xx, a drop or a hang is broken)',
        actual: `${broken.length} of ${results.length} broken: ${broken[0]}`,
        violations: [...broken.slice(1), ...lenient],
      },
      metrics,
    );
  }
  if (lenient.length)
    return warn(
      `lenient, not broken: ${lenient.join('; ')}${refused.length ? `; refused as they should be: ${refused.join('; ')}` : ''}`,
      metrics,
    );
  return pass(`every invalid request refused: ${refused.join('; ')}`, metrics);
}
