// Timing primitives for checks: a bounded pause and poll (the only sleeps a check may use), and how the generated
// text of one stream is spread over its body reads (what `stream.spread` grades).
//
// Why text and not events: events are not tokens (a server may put several tokens in one event, vLLM's
// --stream-interval), and a server that flushes everything at the end may do it in one event or in many. Weighting
// each token-bearing event by the code points of its text measures "how much of the answer arrived when" the same
// way in both cases.

/** Wait `ms` (bounded), or until the signal aborts (then resolves early; callers check the signal). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || !(ms > 0)) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

interface PollResult<T> {
  /** The value that satisfied the predicate, or the last value read. */
  value: T;
  ok: boolean;
  /** ms from the start of polling to the read that satisfied the predicate (or to giving up). */
  elapsedMs: number;
  polls: number;
}

/**
 * Read `read()` every `intervalMs` until `until(value)` holds or `deadlineMs` has passed (bounded in time and in
 * count: at most deadlineMs / intervalMs + 2 reads).
 */
export async function pollUntil<T>(
  read: () => Promise<T>,
  until: (v: T) => boolean,
  o: { intervalMs: number; deadlineMs: number; signal?: AbortSignal },
): Promise<PollResult<T>> {
  const t0 = performance.now();
  const maxPolls = Math.ceil(o.deadlineMs / Math.max(1, o.intervalMs)) + 2;
  let polls = 0;
  let value = await read();
  polls++;
  while (!until(value)) {
    const elapsed = performance.now() - t0;
    if (elapsed >= o.deadlineMs || polls >= maxPolls || o.signal?.aborted)
      return { value, ok: false, elapsedMs: elapsed, polls };
    await pause(Math.min(o.intervalMs, o.deadlineMs - elapsed), o.signal);
    value = await read();
    polls++;
  }
  return { value, ok: true, elapsedMs: performance.now() - t0, polls };
}

interface SpreadInput {
  /** Token-bearing events in arrival order, t = ms since t0 of the read that completed the event. */
  tokens: ReadonlyArray<{ t: number; text: string }>;
  /** ms since t0 when the body ended (the whole request time). */
  tEnd: number;
}

export interface ReadSpread {
  /** Token-bearing events. */
  events: number;
  /** Code points of generated text (the weight). */
  chars: number;
  /** Distinct body reads that carried generated text. */
  reads: number;
  /** Largest share of the generated text carried by one read (0..1). */
  maxReadShare: number;
  /** ms since t0 of that read. */
  maxReadAt: number;
  /** Token-bearing events in that read. */
  maxReadEvents: number;
  /** Share of the generated text that arrived in the last `lateFraction` of the whole request time (0..1). */
  lateShare: number;
  /** Start of that window (ms since t0). */
  lateFrom: number;
  /** First and last token-bearing read (ms since t0). */
  firstAt: number;
  lastAt: number;
}

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * How the generated text is spread over the body reads. Events completed by the same read share its timestamp
 * (the recorder stamps reads, not events), so equal `t` means one read. Undefined when there is no generated text.
 */
export function readSpread(input: SpreadInput, lateFraction = 0.05): ReadSpread | undefined {
  const perRead = new Map<number, { chars: number; events: number }>();
  let chars = 0;
  for (const tok of input.tokens) {
    const w = codePoints(tok.text);
    chars += w;
    const r = perRead.get(tok.t) ?? { chars: 0, events: 0 };
    r.chars += w;
    r.events++;
    perRead.set(tok.t, r);
  }
  if (chars === 0 || input.tokens.length === 0) return undefined;
  let maxReadShare = 0;
  let maxReadAt = 0;
  let maxReadEvents = 0;
  for (const [t, r] of perRead) {
    const share = r.chars / chars;
    if (share > maxReadShare) {
      maxReadShare = share;
      maxReadAt = t;
      maxReadEvents = r.events;
    }
  }
  const lateFrom = input.tEnd * (1 - lateFraction);
  let late = 0;
  for (const tok of input.tokens) if (tok.t >= lateFrom) late += codePoints(tok.text);
  return {
    events: input.tokens.length,
    chars,
    reads: perRead.size,
    maxReadShare,
    maxReadAt,
    maxReadEvents,
    lateShare: late / chars,
    lateFrom,
    firstAt: input.tokens[0]!.t,
    lastAt: input.tokens[input.tokens.length - 1]!.t,
  };
}

/**
 * The share of a generation that a client stall of `stallMs` could have merged into one read, for a generation
 * that ran from `from` to `to` (ms since t0): an upper bound on how much of a read share or late share our own
 * starvation can explain. Pass the whole request time (0 → tEnd), not the arrival window of the tokens: a server
 * that flushes at the end shrinks that window to ~0, which would excuse everything.
 */
export function stallShare(stallMs: number, from: number, to: number): number {
  const window = to - from;
  if (!(window > 0)) return 1;
  return Math.min(1, Math.max(0, stallMs) / window);
}

/** Three-way verdict on a sample against an upper threshold: fail only when the lower bound is past it. */
type Band = 'pass' | 'borderline' | 'fail';

/**
 * `estimate` ≤ threshold → pass; lower confidence bound > threshold → fail; otherwise borderline (warn with figures).
 * A missing bound can never fail.
 */
export function bandAbove(estimate: number | undefined, low: number | undefined, threshold: number): Band | undefined {
  if (estimate === undefined) return undefined;
  if (estimate <= threshold) return 'pass';
  if (low !== undefined && low > threshold) return 'fail';
  return 'borderline';
}
