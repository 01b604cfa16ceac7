// The verdict rules of the `errors` family: how each answer to a broken request is classified and how a campaign of
// them is graded. Pure functions of the recordings (suites/errors.ts builds the cases and sends them), so
// test/errors-grading.test.ts can feed them hand-made answers.

import { classifyErrorBody, OPENAI_ERROR_SHAPE } from '../decode/error-body.ts';
import { escapeBytes } from '../decode/stream-decoder.ts';
import { bodyText } from '../http/recorder.ts';
import type { Recording, Verdict } from '../model/types.ts';
import { fail, inconclusive, pass, warn } from '../model/verdict.ts';

export interface Outcome {
  /** Human label of the case, with the request as sent. */
  label: string;
  rec: Recording;
  /** 'refused' (4xx + error info), 'refused-bare' (4xx, no error info), 'accepted' (2xx), 'server-error' (5xx), 'hang', 'dropped', 'other'. */
  kind: 'refused' | 'refused-bare' | 'accepted' | 'server-error' | 'hang' | 'dropped' | 'other';
  shape?: string;
  shapeNote?: string;
}

export function classify(label: string, rec: Recording, json: unknown): Outcome {
  const s = rec.status;
  const f = rec.failure?.kind;
  // A 2xx is an acceptance whatever follows: with a deadline this short and no measured pace, a slow first token cannot
  // be told from a stuck one (docs/grading.md "Who owns a deadline"), so it is not judged here.
  if (s !== undefined && s >= 200 && s < 300) return { label, rec, kind: 'accepted' };
  // No answer within the deadline.
  if (f === 'headers-timeout' || f === 'total-timeout' || f === 'token-idle') return { label, rec, kind: 'hang' };
  if (s === undefined) return { label, rec, kind: f === 'connect' || f === 'reset' ? 'dropped' : 'other' };
  if (s >= 500) return { label, rec, kind: 'server-error' };
  if (s >= 400) {
    const e = classifyErrorBody(json);
    return { label, rec, kind: e.shape === 'none' ? 'refused-bare' : 'refused', shape: e.shape, shapeNote: e.note };
  }
  return { label, rec, kind: 'other' };
}

function outcomeLine(o: Outcome, deadlineMs: number): string {
  const body = escapeBytes(bodyText(o.rec), 160);
  const sent = `request ${o.rec.requestBody ? escapeBytes(o.rec.requestBody, 300) : '(empty body)'}`;
  switch (o.kind) {
    case 'hang':
      return `${o.label}: no response within ${deadlineMs} ms (the request hung${o.rec.status ? ` after HTTP ${o.rec.status}` : ''}); ${sent}`;
    case 'dropped':
      return `${o.label}: connection ${o.rec.failure?.kind === 'connect' ? 'refused (did the server crash?)' : 'dropped without a response'} — ${o.rec.failure?.message}; ${sent}`;
    case 'server-error':
      return `${o.label}: HTTP ${o.rec.status} (a server error for a client mistake, RFC 9110 §15.6), body ${body}; ${sent}`;
    case 'accepted': {
      const f = o.rec.failure?.kind;
      const how =
        f === 'aborted'
          ? 'cut at its first token'
          : f
            ? `no token within ${deadlineMs} ms; a slow first token is not judged here`
            : 'answered';
      return `${o.label}: HTTP ${o.rec.status} — the request was accepted (${how}); ${sent}`;
    }
    case 'refused-bare':
      return `${o.label}: HTTP ${o.rec.status} but no error object (${o.shapeNote}), body ${body}; ${sent}`;
    case 'refused':
      return `${o.label}: HTTP ${o.rec.status}, ${o.shapeNote}, body ${body}`;
    default:
      return `${o.label}: ${o.rec.status ? `HTTP ${o.rec.status}` : (o.rec.failure?.message ?? 'no response')}; ${sent}`;
  }
}

/** The answers of a campaign, in order, and why it stopped early, if it did. */
export interface Campaign {
  outcomes: Outcome[];
  stopped?: string;
}

function tally(outcomes: readonly Outcome[]): Record<string, number> {
  const t: Record<string, number> = {};
  for (const o of outcomes) {
    const k = o.rec.status !== undefined && o.kind !== 'hang' ? `HTTP ${o.rec.status}` : o.kind;
    t[k] = (t[k] ?? 0) + 1;
  }
  return t;
}

/** What each kind of answer is, in the words a message uses ("which case each was"). */
const KIND_TEXT: Record<Outcome['kind'], string> = {
  refused: 'refused with a 4xx error object',
  'refused-bare': 'refused with a 4xx but no error object',
  accepted: 'accepted with a 2xx',
  'server-error': 'a server error (5xx) for client input',
  hang: 'no answer in time (hang)',
  dropped: 'the connection dropped without an answer',
  other: 'another answer',
};

/** "3 accepted with a 2xx, 1 a server error (5xx) for client input" for some outcomes. */
function kindSummary(os: readonly Outcome[]): string {
  const n = new Map<Outcome['kind'], number>();
  for (const o of os) n.set(o.kind, (n.get(o.kind) ?? 0) + 1);
  return [...n].map(([k, c]) => `${c} ${KIND_TEXT[k]}`).join(', ');
}

function evidenceOf(os: readonly Outcome[]): Verdict['evidence'] {
  return os
    .slice(0, 6)
    .map((o) => ({ label: o.label, status: o.rec.status, e2eMs: o.rec.tEnd, wire: escapeBytes(bodyText(o.rec), 300) }));
}

/** Grade a must-refuse campaign: every case 4xx with an error object; other error shapes warn (clear evidence). */
export function gradeRefusals(
  r: Campaign,
  opts: { requirement: string; expectedNote: string; deadlineMs: number; seed: number },
): Verdict {
  const { requirement, expectedNote, seed } = opts;
  const deadline = opts.deadlineMs;
  const bad = r.outcomes.filter((o) => o.kind !== 'refused');
  const offShape = r.outcomes.filter((o) => o.kind === 'refused' && o.shape !== 'openai');
  const metrics = {
    seed,
    cases: r.outcomes.length,
    outcomes: tally(r.outcomes),
    stopped: r.stopped,
    deadlineMs: deadline,
  };
  if (bad.length > 0) {
    const lines = bad.map((o) => outcomeLine(o, deadline));
    return fail(
      {
        requirement,
        expected: `HTTP 4xx (400, or 422/413/415) with ${OPENAI_ERROR_SHAPE}, within ${deadline} ms${expectedNote}`,
        actual: `${bad.length} of ${r.outcomes.length} cases not refused (${kindSummary(bad)}); first: ${lines[0]!}`,
        violations: [...lines.slice(1), ...(r.stopped ? [`campaign ${r.stopped}`] : [])],
      },
      metrics,
      evidenceOf([...bad, ...offShape]),
    );
  }
  if (offShape.length > 0) {
    return warn(
      `every case was refused with a 4xx, but ${offShape.length} error bod${offShape.length === 1 ? 'y is' : 'ies are'} not the OpenAI error object (clients reading error.message show nothing): ` +
        offShape
          .slice(0, 3)
          .map((o) => outcomeLine(o, deadline))
          .join('; '),
      metrics,
      evidenceOf(offShape),
    );
  }
  return pass(
    `${r.outcomes.length} cases (fast-check seed ${seed}), each refused with a 4xx OpenAI error object: ${JSON.stringify(tally(r.outcomes))}`,
    metrics,
  );
}

/** Answers that are a server failure whatever the input: 5xx, a hang, a dropped connection (and anything not HTTP 2xx/4xx). */
export const serverFailure = (o: Outcome) =>
  o.kind === 'server-error' || o.kind === 'hang' || o.kind === 'dropped' || o.kind === 'other';

/**
 * errors.optional-types (SHOULD): every wrong-typed optional parameter answered with a 4xx (pass); one accepted with a
 * 2xx is lenient parsing (fail, graded warn). 5xx, hangs and drops are errors.no-server-error's: not judged here.
 */
export function gradeOptionalTypes(r: Campaign, opts: { deadlineMs: number; seed: number }): Verdict {
  const deadline = opts.deadlineMs;
  // A 5xx, a hang or a drop is a server failure, graded by errors.no-server-error; here only refused vs accepted.
  const judged = r.outcomes.filter((o) => o.kind === 'refused' || o.kind === 'refused-bare' || o.kind === 'accepted');
  const accepted = judged.filter((o) => o.kind === 'accepted');
  const elsewhere = r.outcomes.filter((o) => !judged.includes(o));
  const metrics = {
    seed: opts.seed,
    cases: r.outcomes.length,
    outcomes: tally(r.outcomes),
    accepted: accepted.map((o) => o.label),
    stopped: r.stopped,
  };
  const note = elsewhere.length
    ? `; ${elsewhere.length} case(s) answered otherwise (${kindSummary(elsewhere)}: errors.no-server-error grades those)`
    : '';
  if (judged.length === 0)
    return inconclusive(`no case was answered with a 4xx or a 2xx${note}`, metrics, evidenceOf(elsewhere));
  if (accepted.length > 0) {
    return fail(
      {
        requirement:
          "A request with a wrong-typed optional parameter SHOULD get a 4xx naming the field; accepting it (lenient parsing: the value ignored or coerced) hides the client's bug, though the server is not broken.",
        expected: `HTTP 4xx with ${OPENAI_ERROR_SHAPE}`,
        actual: `${accepted.length} of ${judged.length} cases accepted with HTTP ${[...new Set(accepted.map((o) => o.rec.status))].join('/')} (lenient parsing): ${accepted.map((o) => o.label).join(', ')}${note}`,
        violations: accepted.map((o) => outcomeLine(o, deadline)),
      },
      metrics,
      evidenceOf(accepted),
    );
  }
  return pass(
    `${judged.length} wrong-typed optional parameters (fast-check seed ${opts.seed}), each refused with a 4xx: ${JSON.stringify(tally(judged))}${note}`,
    metrics,
  );
}

/**
 * errors.no-server-error: no case answered with a 5xx, a hang, a drop or anything but a 2xx or a 4xx (fail naming
 * each); a 2xx is fine (the value ignored or clamped). `seeds` are the campaigns' fast-check seeds (for the message).
 */
export function gradeNoServerError(r: Campaign, opts: { deadlineMs: number; seed: number; seeds: number[] }): Verdict {
  const deadline = opts.deadlineMs;
  const bad = r.outcomes.filter(serverFailure);
  const accepted = r.outcomes.filter((o) => o.kind === 'accepted');
  const metrics = {
    seed: opts.seed,
    cases: r.outcomes.length,
    outcomes: tally(r.outcomes),
    clamped: accepted.map((o) => o.label),
    stopped: r.stopped,
  };
  if (bad.length > 0) {
    const lines = bad.map((o) => outcomeLine(o, deadline));
    return fail(
      {
        requirement:
          'A request with a wrong-typed optional parameter or an absurd value MUST get a 4xx error, or (ignoring or clamping the value) a normal bounded answer: never a 5xx, a hang or a dropped connection.',
        expected: `HTTP 4xx with an error object, or HTTP 200 that starts answering within ${deadline} ms`,
        actual: `${bad.length} of ${r.outcomes.length} cases failed on the server's side (${kindSummary(bad)}); first: ${lines[0]!}`,
        violations: [...lines.slice(1), ...(r.stopped ? [`campaign ${r.stopped}`] : [])],
      },
      metrics,
      evidenceOf(bad),
    );
  }
  return pass(
    `${r.outcomes.length} cases (fast-check seeds ${opts.seeds.join(', ')}): ${r.outcomes.length - accepted.length} refused with a 4xx, ${accepted.length} answered (ignored or clamped, cut at the first token)` +
      (accepted.length ? `: ${accepted.map((o) => o.label).join(', ')}` : ''),
    metrics,
  );
}

/** A normal request sent after the campaign: its recording, its parsed body and how lib/exchange describes it. */
interface Answer {
  rec: Recording;
  json: unknown;
  described: string;
}

/**
 * errors.survives: after the campaign, a normal chat completion (200 with a message) and GET /v1/models (200 with a
 * data array) both answer; fail otherwise, naming the hangs and drops of the campaign.
 */
export function gradeSurvives(r: Campaign, opts: { chat: Answer; models: Answer; deadlineMs: number }): Verdict {
  const { chat: x, models, deadlineMs } = opts;
  const violations: string[] = [];
  const content = (x.json as { choices?: Array<{ message?: { content?: unknown } }> } | undefined)?.choices?.[0]
    ?.message;
  if (x.rec.status !== 200 || x.rec.failure || !content)
    violations.push(`a normal chat completion: ${x.described}, body ${escapeBytes(bodyText(x.rec), 160)}`);
  if (models.rec.status !== 200 || !Array.isArray((models.json as { data?: unknown } | undefined)?.data))
    violations.push(`GET /v1/models: ${models.described}, body ${escapeBytes(bodyText(models.rec), 160)}`);
  const metrics = {
    badRequests: r.outcomes.length,
    outcomes: tally(r.outcomes),
    stopped: r.stopped,
    normalStatus: x.rec.status,
    modelsStatus: models.rec.status,
  };
  if (violations.length > 0) {
    return fail(
      {
        requirement: 'After invalid requests the server MUST still answer a normal chat completion and GET /v1/models.',
        expected: 'HTTP 200 chat.completion and HTTP 200 model list',
        actual: `after ${r.outcomes.length} bad requests the server no longer answers: ${violations[0]}`,
        violations: [
          ...violations.slice(1),
          ...r.outcomes
            .filter((o) => o.kind === 'dropped' || o.kind === 'hang')
            .slice(0, 3)
            .map((o) => `during the campaign: ${outcomeLine(o, deadlineMs)}`),
        ],
      },
      metrics,
    );
  }
  return pass(
    `after ${r.outcomes.length} bad requests (${JSON.stringify(tally(r.outcomes))}) a normal chat completion and GET /v1/models both answer 200`,
    metrics,
  );
}
