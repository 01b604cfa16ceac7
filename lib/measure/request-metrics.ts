// Per-request and aggregate metrics, exactly as docs/grading.md "Measuring" defines them.
//
// Units: times in ms (since the request's t0 unless named *Abs), rates in tokens/s.
// A value that cannot be measured is `undefined` with a reason in `reasons`, never 0, NaN or Infinity:
// a phantom figure must never be produced by our own arithmetic.
//
// | metric            | window                                   | token source                               |
// |-------------------|------------------------------------------|--------------------------------------------|
// | ttftMs            | t0 -> first token-bearing event          | events (role-only / empty / comments skip) |
// | e2eMs             | t0 -> end of stream (tEnd)               | -                                          |
// | completionTokens  | -                                        | usage.completion_tokens, else estimated    |
//                                                                 from the text (tokenCountOf), never one per
//                                                                 event when events carry several tokens
// | wallTps           | e2e                                      | completionTokens                           |
// | genTps            | first token event -> last token event    | completionTokens - 1                       |
// | itlMs             | gaps between successive token events     | events                                     |
// | tpotMs            | ttft -> e2e, per (completionTokens - 1)  | completionTokens                           |
// | aggregateWallTps  | earliest start -> latest end (absolute)  | sum of completionTokens                    |

import { codePoints } from '../decode/stream-events.ts';

/** Token-bearing events as columns: their times (ms since t0, in arrival order) and the code points of each one's text. */
interface TokenColumns {
  times: ArrayLike<number>;
  chars: ArrayLike<number>;
}

type RequestMetricsInput = {
  /** ms since t0 when the body ended. */
  tEnd: number;
  /** usage.completion_tokens when the server reported it. */
  usageCompletionTokens?: number;
  /** Code points per token on this server, learned from streams that carried usage (lib/measure/pace.ts); else assumed. */
  charsPerToken?: number;
} & (
  | {
      /** Token-bearing events (see stream-events.ts), ms since t0, in arrival order. */
      tokens: ReadonlyArray<{ t: number; text?: string }>;
    }
  | { columns: TokenColumns }
);

function columnsOf(tokens: ReadonlyArray<{ t: number; text?: string }>): TokenColumns {
  return { times: tokens.map((e) => e.t), chars: tokens.map((e) => codePoints(e.text ?? '')) };
}

export interface RequestMetrics {
  ttftMs?: number;
  e2eMs: number;
  completionTokens?: number;
  /** Number of token-bearing events (not tokens). */
  countedTokenEvents: number;
  /** usage: the server's count; counted: one token per event (events look like single tokens); estimated: from the text. */
  tokenSource?: 'usage' | 'counted' | 'estimated';
  wallTps?: number;
  genTps?: number;
  itlMs: number[];
  tpotMs?: number;
  /** Why a metric is undefined. */
  reasons: string[];
}

function isCount(v: number | undefined): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0;
}

export function requestMetrics(input: RequestMetricsInput): RequestMetrics {
  const { tEnd } = input;
  const { times, chars } = 'columns' in input ? input.columns : columnsOf(input.tokens);
  const reasons: string[] = [];
  const n = times.length;
  const m: RequestMetrics = { e2eMs: tEnd, countedTokenEvents: n, itlMs: [], reasons };

  if (n > 0) m.ttftMs = times[0];
  else reasons.push('ttft: no token-bearing event (role-only, empty and comment events do not count)');

  // Usage wins: events are not tokens (several tokens may share one event).
  if (isCount(input.usageCompletionTokens)) {
    m.completionTokens = input.usageCompletionTokens;
    m.tokenSource = 'usage';
  } else if (n > 0) {
    const c = tokenCountOfChars(chars, input.charsPerToken);
    m.completionTokens = c.tokens;
    m.tokenSource = c.source;
  } else {
    reasons.push('completion tokens: no usage.completion_tokens and no token-bearing events');
  }
  const tokensN = m.completionTokens;

  for (let i = 1; i < n; i++) m.itlMs.push(times[i]! - times[i - 1]!);

  // wall_tps = tokens / e2e.
  if (tokensN !== undefined) {
    if (tEnd > 0) m.wallTps = tokensN / (tEnd / 1000);
    else reasons.push(`wall_tps: zero-length window (e2e = ${tEnd} ms)`);
  } else {
    reasons.push('wall_tps: completion tokens unknown');
  }

  // gen_tps = (tokens - 1) / (last token event - first token event): needs two tokens and a positive window.
  if (tokensN === undefined || tokensN < 2) {
    reasons.push(`gen_tps: needs at least 2 completion tokens (have ${tokensN ?? 'none'})`);
  } else if (n === 0) {
    reasons.push('gen_tps: no token-bearing events to time');
  } else {
    const window = times[n - 1]! - times[0]!;
    if (window > 0) m.genTps = (tokensN - 1) / (window / 1000);
    else reasons.push(`gen_tps: zero-length window (${n} token event(s) arrived in ${window} ms)`);
  }

  // tpot = (e2e - ttft) / (tokens - 1).
  if (m.ttftMs === undefined || tokensN === undefined || tokensN < 2) {
    reasons.push('tpot: needs a ttft and at least 2 completion tokens');
  } else {
    const window = tEnd - m.ttftMs;
    if (window > 0) m.tpotMs = window / (tokensN - 1);
    else reasons.push(`tpot: zero-length window (e2e - ttft = ${window} ms)`);
  }
  return m;
}

/** Code points per token assumed without a calibration: English BPE vocabularies average about 4. */
const ASSUMED_CHARS_PER_TOKEN = 4;
/** An event whose text is longer than this (code points) carries more than one token of any vocabulary we know. */
const MAX_SINGLE_TOKEN_CHARS = 8;

/**
 * Completion tokens of a stream without usage. Events are not tokens: a server may put several tokens in one event
 * (vLLM --stream-interval, batched writers). When the median event carries a single token's worth of text, one token
 * per event ('counted'); otherwise the text length over the code points per token ('estimated': learned from this
 * server's usage where it gave any, else ASSUMED_CHARS_PER_TOKEN), never fewer than the events.
 */
export function tokenCountOf(
  events: ReadonlyArray<{ text?: string }>,
  charsPerToken?: number,
): { tokens: number; source: 'counted' | 'estimated' } {
  return tokenCountOfChars(
    events.map((e) => codePoints(e.text ?? '')),
    charsPerToken,
  );
}

/** tokenCountOf over each event's code points. */
function tokenCountOfChars(
  sizes: ArrayLike<number>,
  charsPerToken?: number,
): { tokens: number; source: 'counted' | 'estimated' } {
  const n = sizes.length;
  // The median is above the single-token size only if some event is: most streams are settled without sorting.
  const single =
    charsPerToken !== undefined ? Math.min(MAX_SINGLE_TOKEN_CHARS, 1.5 * charsPerToken) : MAX_SINGLE_TOKEN_CHARS;
  let chars = 0;
  let larger = 0;
  for (let i = 0; i < n; i++) {
    chars += sizes[i]!;
    if (sizes[i]! > single) larger++;
  }
  if (larger === 0) return { tokens: n, source: 'counted' };
  const s = Array.from(sizes).sort((a, b) => a - b);
  const medianChars = n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
  if (!(medianChars > single)) return { tokens: n, source: 'counted' };
  const cpt = charsPerToken && charsPerToken > 0 ? charsPerToken : ASSUMED_CHARS_PER_TOKEN;
  return { tokens: Math.max(n, Math.round(chars / cpt)), source: 'estimated' };
}

export interface TimedRequest {
  /** performance.now() at the request's t0 (Recording.t0Abs). */
  startAbs: number;
  /** performance.now() at the request's end (t0Abs + tEnd). */
  endAbs: number;
  completionTokens?: number;
}

/**
 * Aggregate wall_tps of concurrent requests: total completion tokens / (last end - first start), in tokens/s.
 * Undefined when there is no request, any request's token count is unknown (a partial sum would understate),
 * or the window is not positive.
 */
export function aggregateWallTps(requests: ReadonlyArray<TimedRequest>): number | undefined {
  if (requests.length === 0) return undefined;
  let total = 0;
  let first = Infinity;
  let last = -Infinity;
  for (const r of requests) {
    if (!isCount(r.completionTokens)) return undefined;
    total += r.completionTokens;
    first = Math.min(first, r.startAbs);
    last = Math.max(last, r.endAbs);
  }
  const window = last - first;
  return window > 0 ? total / (window / 1000) : undefined;
}

/**
 * speedup(N) = aggregate wall_tps(N) / wall_tps(1). A fully serial server scores 1.0, perfect batching N.
 * (Summing each request's own wall_tps would score a serial pair 1.5.)
 */
export function speedup(aggregateN: number | undefined, single: number | undefined): number | undefined {
  if (
    aggregateN === undefined ||
    single === undefined ||
    !Number.isFinite(aggregateN) ||
    !(single > 0) ||
    !Number.isFinite(single)
  )
    return undefined;
  return aggregateN / single;
}
