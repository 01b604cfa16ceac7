// The window a server serves: context.within-window (prompts inside it served), context.served-window (against the
// model's trained context) and context.max-accepted (the largest prompt it accepts, by bisection).
// Pure (the bisection's probe is injected), unit-tested in test/context-grading.test.ts and
// test/context-verdicts.test.ts. Sizes in tokens as the server counts them (usage.prompt_tokens, calibrated).

import { escapeBytes } from '../decode/stream-decoder.ts';
import { bodyText } from '../http/recorder.ts';
import type { Evidence, Recording, Verdict } from '../model/types.ts';
import { fail, fmt, pass, skip, warn } from '../model/verdict.ts';

interface Figure {
  value: number;
  source: string;
}

// ---------------------------------------------------------------------------------------------------------------
// The window judged

/** The window a check judges, where it came from, and a larger one the server also states (lib/server/discovery.ts). */
export interface JudgedWindow extends Figure {
  /** The server states a larger window beside this one (a total over its slots beside what each slot holds). */
  disagreement?: {
    /** Both figures, as discovery describes them. */
    described: string;
    /** The larger windows (tokens). */
    larger: number[];
  };
}

export function windowText(w: JudgedWindow): string {
  return `${w.value}-token window (${w.source})`;
}

/**
 * Where the server states a larger window beside the one discovery chose (a total over its slots beside what each
 * slot holds): both figures, and what a prompt between them gets (`observed`) or that the smaller one is judged.
 */
export function windowNote(w: JudgedWindow, observed?: string): string {
  const d = w.disagreement;
  if (!d) return '';
  return `${d.described}: ${observed ? `prompts between them get ${observed}` : `judged at ${w.value}, the smallest it states`}`;
}

/** Largest prompt that fits with max_tokens in the window, with a margin for calibration error. */
export function fittingPrompt(window: number, fraction: number, maxTokens: number): number {
  const margin = Math.max(8, Math.round(window * 0.02));
  return Math.max(1, Math.min(Math.round(window * fraction), window - maxTokens - margin));
}

// ---------------------------------------------------------------------------------------------------------------
// context.within-window

/** One prompt inside the window and what came back. */
export interface WindowPrompt {
  fraction: number;
  /** Prompt tokens sent (calibrated estimate). */
  sent: number;
  /** usage.prompt_tokens of the answer. */
  counted?: number;
  maxTokens: number;
  rec: Recording;
  json?: unknown;
  jsonError?: string;
  /** The exchange in one phrase (its status or failure: lib/exchange describeExchange). */
  described: string;
}

/** How messages and evidence name a prompt of the window. */
export function promptLabel(p: Pick<WindowPrompt, 'fraction' | 'sent' | 'maxTokens'>, window: number): string {
  return `${Math.round(p.fraction * 100)} % prompt (~${p.sent} tokens of the ${window}-token window, max_tokens ${p.maxTokens})`;
}

/**
 * Prompts inside the advertised window must be served as sent: HTTP 200 with choices, usage.prompt_tokens not below
 * `minCountedFraction` of the prompt (else it was cut). A 4xx means the server enforces a smaller window.
 */
export function judgeWithinWindow(
  prompts: readonly WindowPrompt[],
  w: JudgedWindow,
  o: { minCountedFraction: number; calibration: unknown },
  ev: Evidence[],
): Verdict {
  const violations: string[] = [];
  let rejected = 0;
  for (const p of prompts) {
    const label = promptLabel(p, w.value);
    const status = p.rec.status;
    const choices = (p.json as { choices?: unknown } | undefined)?.choices;
    if (status !== 200) {
      const msg = p.json !== undefined ? escapeBytes(JSON.stringify(p.json), 240) : escapeBytes(bodyText(p.rec), 240);
      if (status !== undefined && status >= 400 && status < 500) rejected++;
      violations.push(
        `${label}: ${status !== undefined && status < 500 ? 'rejected' : 'not served'} — ${p.described} ${msg}`,
      );
    } else if (!Array.isArray(choices) || choices.length === 0) {
      violations.push(
        `${label}: HTTP 200 without a choices array (${p.jsonError ?? escapeBytes(bodyText(p.rec), 200)})`,
      );
    } else if (p.counted !== undefined && p.counted < p.sent * o.minCountedFraction) {
      violations.push(
        `${label}: HTTP 200 but usage.prompt_tokens is ${p.counted}: the prompt was silently truncated inside the advertised window`,
      );
    }
  }
  const sizes = prompts.map((p) => ({
    fraction: p.fraction,
    sent: p.sent,
    counted: p.counted,
    maxTokens: p.maxTokens,
    status: p.rec.status,
    ms: p.rec.tEnd,
  }));
  const metrics = { window: w.value, windowSource: w.source, calibration: o.calibration, sizes };
  const note = windowNote(w);
  if (violations.length) {
    return fail(
      {
        requirement: `Prompts inside the advertised window MUST be served: ~50 % and ~90 % of the ${windowText(w)} (max_tokens within what is left)${note ? `; ${note}` : ''}.`,
        expected: 'HTTP 200 with a completion for both, usage.prompt_tokens about the size sent',
        actual: `${violations.length} of 2 prompts not served as sent${rejected ? ': the server enforces a smaller window than it advertises' : ''}`,
        violations,
      },
      metrics,
      ev,
    );
  }
  return pass(
    `both served: ${sizes.map((s) => `${s.counted ?? `~${s.sent}`} prompt tokens → 200`).join(', ')} (window ${w.value})${note ? `; ${note}` : ''}`,
    metrics,
    ev,
  );
}

// ---------------------------------------------------------------------------------------------------------------
// context.served-window

/** Served per-request window against the model's trained context: below `minFraction` of it is a finding. */
export function gradeServedWindow(
  window: Figure,
  trained: Figure | undefined,
  minFraction: number,
): { outcome: 'pass' | 'fail' | 'skip'; reason: string; fraction?: number } {
  if (!trained)
    return {
      outcome: 'skip',
      reason:
        "the model's trained context is unknown (the server does not report it): set context.modelTrained in the profile to compare",
    };
  const fraction = window.value / trained.value;
  const both = `served window ${window.value} tokens (${window.source}); model trained context ${trained.value} tokens (${trained.source})`;
  if (fraction < minFraction)
    return {
      outcome: 'fail',
      reason: `${both}: the server serves only ${(fraction * 100).toFixed(1)} % of what the model supports`,
      fraction,
    };
  return { outcome: 'pass', reason: `${both}: ${(fraction * 100).toFixed(1)} % served`, fraction };
}

/** The served window against the trained one (declared in the profile, else reported), as the check's verdict. */
export function judgeServedWindow(served: Figure, trained: Figure | undefined, minServedFraction: number): Verdict {
  const g = gradeServedWindow(served, trained, minServedFraction);
  const metrics = {
    servedWindow: served.value,
    servedSource: served.source,
    trainedContext: trained?.value,
    trainedSource: trained?.source,
    fraction: g.fraction,
  };
  if (g.outcome === 'skip') return skip(g.reason);
  if (g.outcome === 'fail') {
    return fail(
      {
        requirement:
          'A server SHOULD serve the context the model was trained for (or tell the user how to raise its limit).',
        expected: `a per-request window of ${trained!.value} tokens (≥ ${minServedFraction * 100} % of the trained context)`,
        actual: `${served.value} tokens served (${served.source}) against ${trained!.value} trained (${trained!.source}): ${g.reason.split(': ').pop()}`,
      },
      metrics,
    );
  }
  return pass(g.reason, metrics);
}

// ---------------------------------------------------------------------------------------------------------------
// context.max-accepted

export type ProbeAnswer = 'accepted' | 'rejected' | 'error';

interface BisectOptions {
  /** A size known to be accepted (e.g. the calibration prompts). */
  lo: number;
  /** The first size probed (e.g. 1.25x the window). */
  hi: number;
  /** If `hi` is accepted, double up to this size looking for a rejection. */
  growUntil: number;
  /** Stop when the bracket is this narrow (tokens). */
  resolution: number;
  maxProbes: number;
}

interface BisectResult {
  largestAccepted: number;
  /** Undefined when nothing up to growUntil was rejected. */
  smallestRejected?: number;
  probes: { tokens: number; answer: ProbeAnswer }[];
  /** Why it stopped. */
  stop: 'resolution' | 'max-probes' | 'no-limit-found';
}

/**
 * Bisect the largest accepted prompt size with an injected probe. An `error` answer (5xx, dropped) counts as
 * not accepted. The probe decides what accepted means (no 4xx within a bound).
 */
export async function bisectLargestAccepted(
  probe: (tokens: number) => Promise<ProbeAnswer>,
  o: BisectOptions,
): Promise<BisectResult> {
  const probes: BisectResult['probes'] = [];
  const ask = async (n: number) => {
    const a = await probe(n);
    probes.push({ tokens: n, answer: a });
    return a;
  };
  let lo = o.lo;
  let hi = o.hi;
  while (probes.length < o.maxProbes) {
    if ((await ask(hi)) !== 'accepted') break;
    lo = hi;
    if (hi >= o.growUntil) return { largestAccepted: lo, probes, stop: 'no-limit-found' };
    hi = Math.min(o.growUntil, hi * 2);
  }
  if (probes.length >= o.maxProbes && probes[probes.length - 1].answer === 'accepted')
    return { largestAccepted: lo, probes, stop: 'max-probes' };
  while (hi - lo > o.resolution) {
    if (probes.length >= o.maxProbes) return { largestAccepted: lo, smallestRejected: hi, probes, stop: 'max-probes' };
    const mid = Math.round((lo + hi) / 2);
    if ((await ask(mid)) === 'accepted') lo = mid;
    else hi = mid;
  }
  return { largestAccepted: lo, smallestRejected: hi, probes, stop: 'resolution' };
}

/**
 * What a probe's answer counts as: a 4xx rejects; a 200, or no headers within the bound (the deadline aborted it: no
 * 4xx came), accepts; anything else (5xx, dropped) is an error, which bisection counts as not accepted.
 */
export function probeAnswer(rec: Pick<Recording, 'status' | 'failure'>): ProbeAnswer {
  const s = rec.status;
  return s !== undefined && s >= 400 && s < 500
    ? 'rejected'
    : s === 200 || (s === undefined && rec.failure?.kind === 'headers-timeout')
      ? 'accepted'
      : 'error';
}

interface MaxAcceptedSettings {
  /** Each probe's bound (ms): no 4xx by then counts as accepted. */
  acceptBoundMs: number;
  resolution: number;
  /** How far past the window the bisection looked for a limit (tokens), and as a factor of the window. */
  growUntil: number;
  growUntilFactor: number;
  minAcceptedFraction: number;
}

/**
 * The largest accepted prompt beside the advertised window. `counted` is usage.prompt_tokens of a request confirming
 * the largest accepted size: it rescales the calibrated probe sizes to the server's own count.
 */
export function judgeMaxAccepted(
  result: BisectResult,
  counted: number | undefined,
  w: Figure,
  o: MaxAcceptedSettings,
  ev: Evidence[],
): Verdict {
  const window = w.value;
  const largest = counted ?? result.largestAccepted;
  // Probes were sized by calibration; the confirmed count rescales them to the server's own token count.
  const scale = counted !== undefined ? counted / result.largestAccepted : 1;
  const rejected = result.smallestRejected !== undefined ? Math.round(result.smallestRejected * scale) : undefined;
  const metrics = {
    window,
    largestAccepted: largest,
    counted: counted !== undefined,
    smallestRejected: rejected,
    calibrationScale: scale,
    stop: result.stop,
    probes: result.probes.map((p) => ({ ...p, tokens: Math.round(p.tokens * scale) })),
    acceptBoundMs: o.acceptBoundMs,
    resolution: o.resolution,
  };
  const figures = `largest accepted prompt ${largest} tokens${counted !== undefined ? ' (usage.prompt_tokens)' : ' (calibrated estimate)'}, smallest rejected ≈ ${rejected ?? 'none'}, advertised window ${window} (${w.source}); ${result.probes.length} probes, stopped on ${result.stop}`;
  if (result.stop === 'no-limit-found')
    return warn(
      `no prompt up to ~${o.growUntil} tokens (${o.growUntilFactor}x the window) was rejected: the window is not enforced; ${figures}`,
      metrics,
      ev,
    );
  if (largest < window * o.minAcceptedFraction) {
    return fail(
      {
        requirement: 'The largest prompt a server accepts SHOULD match the window it advertises.',
        expected: `≥ ${Math.round(window * o.minAcceptedFraction)} tokens (${o.minAcceptedFraction * 100} % of the ${window}-token window) accepted with max_tokens 1`,
        actual: `${figures}: only ${fmt((largest / window) * 100, 1)} % of the advertised window is usable`,
      },
      metrics,
      ev,
    );
  }
  return pass(figures, metrics, ev);
}
