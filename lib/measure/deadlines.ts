// Who owns a deadline (docs/grading.md "Who owns a deadline"): one rule for every request and every check.
//
//  - A server silent for far longer than its own measured token gap (STALL_FACTOR gaps), and past an absolute floor
//    (the profile's tokenIdleMs), has stalled: the request fails `token-idle` and the check fails the server.
//    Before the first token the gap is not known yet, so the silence is measured against the expected prefill
//    (PREFILL_FACTOR × what the pace predicts for this prompt), never below the same floor.
//  - Our own budget (a request's total deadline, a check's time bound, a shared recording cut short by the check that
//    started it) running out while tokens still flow is ours: `inconclusive`, naming the measured speed. Never a fail
//    (it is not the server's fault that we stopped listening), never an error (nothing went wrong on our side either).
//
// Request deadlines are sized from the pace (lib/measure/pace.ts): the profile's values are floors, never lowered.
import type { Deadlines, Recording } from '../model/types.ts';
import { answerBytesCap, type DeadlineEvidence, describeEvidence } from './deadline-evidence.ts';
import { describePace, type Pace } from './pace.ts';

/** Silence of this many token gaps is a stall: a real server's gaps vary by a few x, never by fifty. */
export const STALL_FACTOR = 50;
/** A first token later than this many expected prefills is a stall (prefill rates vary less than token gaps). */
export const PREFILL_FACTOR = 10;
/** A request's total deadline: this many times its expected duration (it is our budget, not the server's). */
export const BUDGET_FACTOR = 4;
/** Prefill rate assumed before one was measured: the slow end of the range the suite supports (200 tok/s). */
const ASSUMED_PREFILL_TPS = 200;
/** Prompt code points per token assumed when sizing a prompt from its text: low, so the estimate errs long. */
const PROMPT_CHARS_PER_TOKEN = 3;

/** The stall bound after a token: max(floor, STALL_FACTOR × the stream's own gap). */
export function stallLimitMs(floorMs: number, gapMs: number | undefined): number {
  return Math.max(floorMs, gapMs !== undefined && gapMs > 0 ? STALL_FACTOR * gapMs : 0);
}

interface RequestShape {
  /** max_tokens of the request (undefined: unknown). */
  maxTokens?: number;
  /** Code points of the prompt text (the request body is a fair upper bound). */
  promptChars?: number;
}

/** Expected time to the first token (ms) at this pace for a prompt of this size. */
function expectedTtftMs(pace: Pace | undefined, promptChars = 0): number {
  const prefill = (promptChars / PROMPT_CHARS_PER_TOKEN / (pace?.prefillTps ?? ASSUMED_PREFILL_TPS)) * 1000;
  return (pace?.ttftMs ?? 0) + prefill;
}

/**
 * Deadlines for one request: the profile's as floors, raised where the pace says this request legitimately needs
 * longer (a slow server, a long prompt, many tokens). Fields the caller sets explicitly are kept as they are.
 */
export function requestDeadlines(
  base: Deadlines,
  pace: Pace | undefined,
  shape: RequestShape,
  explicit: Partial<Deadlines> = {},
  evidence?: DeadlineEvidence,
): Deadlines {
  const ttft = expectedTtftMs(pace, shape.promptChars);
  const duration = ttft + (shape.maxTokens ?? 0) * (pace?.perTokenMs ?? 0);
  const floors = evidenceFloors(base, evidence, shape.maxTokens);
  // A server that holds its tokens until the end is silent for the whole generation: that is a burst (the stream
  // and metrics families judge it), not a stall, so the first-token bound also covers twice the expected duration.
  const firstToken = Math.max(base.tokenIdleMs, PREFILL_FACTOR * ttft, 2 * duration);
  const d: Deadlines = {
    connectMs: base.connectMs,
    // Headers too may wait for the whole answer (a server that holds everything until the end: a burst, judged as one).
    headersMs: Math.max(floors.headersMs, PREFILL_FACTOR * ttft, 2 * duration),
    tokenIdleMs: firstToken,
    totalMs: Math.max(floors.totalMs, BUDGET_FACTOR * duration, firstToken + BUDGET_FACTOR * duration),
  };
  // Past the read cap once: later answers of the kind are cut where no correct answer of their size reaches.
  if (evidence?.kind === 'oversized') d.readCapBytes = answerBytesCap(shape.maxTokens);
  if (evidence) {
    const unsized = requestDeadlines(base, pace, shape);
    if (d.headersMs < unsized.headersMs || d.totalMs < unsized.totalMs || d.readCapBytes !== undefined)
      d.sizedBy = `sized from this run's evidence: ${describeEvidence(evidence)}`;
  }
  return { ...d, ...explicit };
}

/**
 * The profile's floors, lowered by this run's evidence that requests of this kind get no end: to the silence the
 * profile itself counts as a stall (tokenIdleMs), or for a stream that ran past max_tokens, to BUDGET_FACTOR times
 * what a complete answer would take at the pace that very stream showed. Only floors: whatever the measured pace
 * says a request needs is added on top, never cut (a slow server shows no such evidence, and keeps its deadlines).
 */
function evidenceFloors(
  base: Deadlines,
  e: DeadlineEvidence | undefined,
  maxTokens: number | undefined,
): { headersMs: number; totalMs: number } {
  const stall = base.tokenIdleMs;
  switch (e?.kind) {
    case undefined:
    case 'oversized':
      return base;
    case 'no-headers':
      return { headersMs: Math.min(base.headersMs, stall), totalMs: base.totalMs };
    case 'silent':
      return { headersMs: Math.min(base.headersMs, stall), totalMs: Math.min(base.totalMs, stall) };
    case 'endless': {
      // The stream showed its own pace: a whole answer at it, BUDGET_FACTOR times, at least the stall floor.
      const answer = (e.ttftMs ?? 0) + (maxTokens ?? 0) * (e.gapMs ?? 0);
      return {
        headersMs: base.headersMs,
        totalMs: Math.min(base.totalMs, Math.max(base.tokenIdleMs, BUDGET_FACTOR * answer)),
      };
    }
  }
}

/** How a recorded exchange ended, and whose doing that was. */
type Ending =
  | { by: 'server'; kind: 'complete' }
  | { by: 'server'; kind: 'stalled'; detail: string }
  | { by: 'server'; kind: 'broken'; detail: string }
  | { by: 'us'; kind: 'budget'; detail: string }
  | { by: 'us'; kind: 'unreachable'; detail: string };

/**
 * Classify a recording's end: complete, stalled (token-idle, headers-timeout: the server's), broken (reset, overflow:
 * too much sent, not-json: a whole answer that cannot be JSON), our
 * budget (total deadline, or aborted by the check or by the check's time bound), unreachable (connect: setup).
 */
export function endingOf(rec: Pick<Recording, 'failure' | 'status' | 'tEnd'>): Ending {
  const f = rec.failure;
  if (!f) return { by: 'server', kind: 'complete' };
  switch (f.kind) {
    case 'token-idle':
    case 'headers-timeout':
      return { by: 'server', kind: 'stalled', detail: f.message };
    case 'reset':
    case 'overflow':
    case 'not-json':
      return { by: 'server', kind: 'broken', detail: f.message };
    case 'connect':
      return { by: 'us', kind: 'unreachable', detail: f.message };
    case 'total-timeout':
    case 'aborted':
      return { by: 'us', kind: 'budget', detail: f.message };
  }
}

/** True when our side ended this recording while the server was still working on it (not the server's doing). */
export function endedByUs(rec: Pick<Recording, 'failure' | 'status' | 'tEnd'>): boolean {
  return endingOf(rec).by === 'us';
}

/**
 * The message of a verdict when our budget ran out: what was cut short, and the speed the server was going at, so
 * the user sees why (and can raise the bound for a server this slow).
 */
export function budgetText(what: string, pace: Pace | undefined, detail?: string): string {
  return (
    `our time budget ran out before ${what} (${detail ? `${detail}; ` : ''}the server was still working, at ${describePace(pace)}): ` +
    "no evidence against the server; rerun on a quieter machine or raise the check's bound for a server this slow"
  );
}
