// Pure grading functions of the `context` family (suites/context.ts): no I/O, no clock, no unseeded randomness,
// so every verdict can be recomputed from the recorded figures and simulated with seeded noise
// (test/context-grading.test.ts runs 10,000 noisy trials of the timing gradings).
//
// Conventions: times in ms, sizes in tokens as the server counts them (usage.prompt_tokens, calibrated).
// Timing verdicts use medians over repetitions and ratios measured in the same run; they fail only when a
// confidence bound is past the threshold; borderline evidence is `warn`; too little evidence is `inconclusive`.

import type { CpuUse } from '../measure/machine-load.ts';
import { logLogSlope, median } from '../measure/stats.ts';
import { fmt } from '../model/verdict.ts';
import { contention } from './cycles.ts';
import { attentionExcess, extrapolatePrefill, type PrefillFit, prefillMs } from './prefill-fit.ts';

type TimingOutcome = 'pass' | 'warn' | 'fail' | 'inconclusive';

export interface TimingGrade {
  outcome: TimingOutcome;
  /** One sentence with the figures behind the outcome. */
  reason: string;
  figures: Record<string, number | undefined>;
  /** A warn whose confidence bound is not past the warn threshold (only its estimate is): strict mode leaves it a warn. */
  borderline?: boolean;
}

/** "97.1 % CI" for an interval's actual coverage. */
const cov = (c: number | undefined) => (c === undefined ? 'no CI: too few samples,' : `${(c * 100).toFixed(1)} % CI`);

// ---------------------------------------------------------------------------------------------------------------
// Ratio of two samples' locations with an exact distribution-free interval

/**
 * Number of arrangements of n x's and m y's with Mann–Whitney U = u, for u = 0..n·m (exact null distribution).
 * Counts are floats: C(120, 60) ≈ 1e35 is still exact enough for tail probabilities.
 */
export function mannWhitneyCounts(n: number, m: number): number[] {
  // f[i][j][u]: arrangements of i x's and j y's with U = u; f(i,j,u) = f(i-1,j,u-j) + f(i,j-1,u).
  let prev: number[][] = Array.from({ length: m + 1 }, () => [1]); // i = 0: U = 0 for every j
  for (let i = 1; i <= n; i++) {
    const cur: number[][] = [[1]]; // j = 0
    for (let j = 1; j <= m; j++) {
      const row = new Array<number>(i * j + 1).fill(0);
      const a = prev[j];
      const b = cur[j - 1];
      for (let u = 0; u < row.length; u++)
        row[u] = (u - j >= 0 && u - j < a.length ? a[u - j] : 0) + (u < b.length ? b[u] : 0);
      cur.push(row);
    }
    prev = cur;
  }
  return prev[m];
}

interface RatioCI {
  /** Hodges–Lehmann estimate of num/den: exp(median of all log(num_i) − log(den_j)). */
  estimate?: number;
  /** Moses' distribution-free interval (from the exact Mann–Whitney distribution); undefined when the samples are too small for the confidence asked. */
  low?: number;
  high?: number;
  /** The interval's actual coverage (exact distributions have discrete levels). */
  coverage?: number;
}

/**
 * Ratio of the locations of two positive samples (e.g. wall_tps before / after), assuming a multiplicative shift:
 * the Hodges–Lehmann estimate and Moses' exact interval over the n·m pairwise log ratios. Distribution-free and
 * deterministic (no resampling), so 10,000 simulated trials take milliseconds; with 4 and 4 samples the 95 %
 * interval is [smallest, largest] pairwise ratio (coverage 97.1 %), which no single outlier can push past a bound.
 */
export function ratioCI(
  num: ReadonlyArray<number | undefined>,
  den: ReadonlyArray<number | undefined>,
  alpha = 0.05,
): RatioCI {
  const pos = (xs: ReadonlyArray<number | undefined>) =>
    xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0);
  const a = pos(num);
  const b = pos(den);
  if (a.length === 0 || b.length === 0) return {};
  const d: number[] = [];
  for (const x of a) for (const y of b) d.push(Math.log(x) - Math.log(y));
  d.sort((p, q) => p - q);
  const estimate = Math.exp(median(d)!);
  const counts = mannWhitneyCounts(a.length, b.length);
  const total = counts.reduce((p, q) => p + q, 0);
  // Largest c with P(U ≤ c) ≤ α/2: the interval is [d_(c+1), d_(N−c)].
  let cum = 0;
  let c = -1;
  for (let u = 0; u < counts.length; u++) {
    if (cum + counts[u] > (alpha / 2) * total) break;
    cum += counts[u];
    c = u;
  }
  if (c < 0) return { estimate };
  return { estimate, low: Math.exp(d[c]), high: Math.exp(d[d.length - 1 - c]), coverage: 1 - (2 * cum) / total };
}

// ---------------------------------------------------------------------------------------------------------------
// Starved client

/**
 * A client whose own event loop was late cannot blame the server for slowness: when the loop's p99 delay exceeded
 * the limit, a fail or warn stands only if it still holds with that delay moved against it (`worstCase` regrades the
 * same samples with every timestamp shifted by the delay in the least favourable direction); otherwise it becomes
 * inconclusive. A pass stays a pass.
 */
export function guardStarvation(
  g: TimingGrade,
  loop: { p99Ms: number; maxMs: number } | undefined,
  maxLoopP99Ms: number,
  worstCase?: (delayMs: number) => TimingGrade,
): TimingGrade {
  if (!loop || g.outcome === 'pass' || g.outcome === 'inconclusive') return g;
  if (loop.p99Ms <= maxLoopP99Ms) return g;
  const figures = { ...g.figures, loopP99Ms: loop.p99Ms, loopMaxMs: loop.maxMs };
  const again = worstCase?.(loop.p99Ms);
  if (again && again.outcome === g.outcome)
    return {
      ...g,
      reason: `${g.reason} (holds even with our client's event-loop delay, p99 ${fmt(loop.p99Ms)} ms, counted against it)`,
      figures,
    };
  return {
    outcome: 'inconclusive',
    reason: `our client was starved (event-loop delay p99 ${fmt(loop.p99Ms)} ms > ${maxLoopP99Ms} ms), so its timing cannot be graded; it would have been ${g.outcome}: ${g.reason}`,
    figures,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// context.over-window-400: what came back for an over-long prompt

/** Text a server uses to say the context is exceeded (vLLM, llama.cpp, omlx, Rapid-MLX, mlx-serve, Anthropic). */
export const CONTEXT_EXCEEDED_RE =
  /context|too long|too many tokens|exceed|maximum (?:\w+ )?length|max_model_len|n_ctx|input length|prompt length|token limit/i;

/** The human-readable message of an error body in any of the shapes servers use, or undefined. */
export function errorMessageOf(json: unknown): string | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const o = json as Record<string, unknown>;
  const e = o.error;
  if (typeof e === 'string') return e; // Ollama {"error": "…"}
  if (typeof e === 'object' && e !== null) {
    const m = (e as Record<string, unknown>).message;
    return typeof m === 'string' ? m : JSON.stringify(e);
  }
  if (typeof o.message === 'string') return o.message; // vLLM < 0.10.1 flat {"object":"error","message":…}
  const d = o.detail; // FastAPI
  if (typeof d === 'string') return d;
  if (d !== undefined && d !== null) return JSON.stringify(d);
  return undefined;
}

/** How the error object is shaped: OpenAI's envelope or something a client has to special-case. */
export function errorShapeOf(json: unknown): 'openai' | 'string-error' | 'flat' | 'detail' | 'none' {
  if (typeof json !== 'object' || json === null) return 'none';
  const o = json as Record<string, unknown>;
  if (
    typeof o.error === 'object' &&
    o.error !== null &&
    typeof (o.error as Record<string, unknown>).message === 'string'
  )
    return 'openai';
  if (typeof o.error === 'string') return 'string-error';
  if (typeof o.message === 'string') return 'flat';
  if (o.detail !== undefined) return 'detail';
  return 'none';
}

export interface OverWindowObservation {
  stream: boolean;
  /** HTTP status, undefined when no response arrived. */
  status?: number;
  /** The recorder's failure (reset, headers-timeout, …), if any. */
  failure?: { kind: string; message: string };
  contentType?: string;
  /** Parsed JSON body (non-SSE), if it parsed. */
  json?: unknown;
  /** Prompt tokens sent (calibrated estimate). */
  sentTokens: number;
  window: number;
  /** usage.prompt_tokens of a 200 answer. */
  usagePromptTokens?: number;
  /** Error objects inside a 200 SSE stream, and the SSE bytes that came before the first one. */
  streamErrors: number;
  sseBytesBeforeError?: number;
  /** Token-bearing events of a 200 stream. */
  tokenEvents: number;
  /**
   * The value of an `error:` line in a 200 SSE body: not a field SSE defines, so every parser drops it (llama.cpp
   * b4747 sends its context error this way), and the client sees an empty successful answer.
   */
  sseErrorField?: string;
  /** The bound we waited for an answer (ms). */
  waitedMs: number;
}

type OverWindowKind =
  | 'rejected' // 400 + error object that says the context is exceeded
  | 'rejected-vague' // 400 whose error does not say why
  | 'rejected-other-4xx' // another 4xx (413, 422) saying the context is exceeded
  | 'server-error' // 5xx
  | 'dropped' // connection closed without a response
  | 'no-response' // nothing within the bound
  | 'error-in-stream' // 200 and an error event inside the stream
  | 'truncated' // 200 and usage.prompt_tokens shows the prompt was cut
  | 'accepted' // 200 otherwise (the prompt was processed: the window is not enforced)
  | 'other';

export interface OverWindowFinding {
  kind: OverWindowKind;
  /** pass: meets the requirement; warn: a client can live with it; fail: violates it. */
  verdict: 'pass' | 'warn' | 'fail';
  /** One line, with the figures. */
  summary: string;
}

/** Classify the answer to a prompt of at least 1.25x the window. */
export function classifyOverWindow(o: OverWindowObservation): OverWindowFinding {
  const mode = o.stream ? 'stream' : 'non-stream';
  const what = `${mode} request with a ~${o.sentTokens}-token prompt (${fmt(o.sentTokens / o.window)}x the ${o.window}-token window)`;
  if (o.status === undefined) {
    if (o.failure?.kind === 'headers-timeout' || o.failure?.kind === 'total-timeout' || o.failure?.kind === 'aborted')
      return {
        kind: 'no-response',
        verdict: 'fail',
        summary: `${what}: no response within ${fmt(o.waitedMs)} ms (the server hangs instead of rejecting)`,
      };
    return {
      kind: 'dropped',
      verdict: 'fail',
      summary: `${what}: connection dropped without any response (${o.failure?.kind ?? 'no status'}: ${o.failure?.message ?? 'closed'})`,
    };
  }
  const msg = errorMessageOf(o.json);
  const saysContext = msg !== undefined && CONTEXT_EXCEEDED_RE.test(msg);
  const isSse = /text\/event-stream/i.test(o.contentType ?? '');
  if (o.status >= 200 && o.status < 300) {
    if (
      o.streamErrors > 0 ||
      (!o.stream && msg !== undefined && errorShapeOf(o.json) !== 'none' && o.usagePromptTokens === undefined)
    ) {
      const where = o.stream
        ? `an error inside the stream after ${o.sseBytesBeforeError ?? 0} SSE bytes`
        : 'an error object in a 200 body';
      return {
        kind: 'error-in-stream',
        verdict: 'fail',
        summary: `${what}: HTTP ${o.status} and ${where} instead of HTTP 400 before any SSE bytes (a client has already accepted the response as a success)`,
      };
    }
    if (o.stream && o.sseErrorField !== undefined && o.tokenEvents === 0) {
      return {
        kind: 'error-in-stream',
        verdict: 'fail',
        summary: `${what}: HTTP ${o.status} and the rejection sent as an SSE "error:" line (${JSON.stringify(o.sseErrorField.slice(0, 160))}), a field SSE does not define, so every parser drops it: the client sees an empty successful answer instead of HTTP 400`,
      };
    }
    if (o.usagePromptTokens !== undefined && o.usagePromptTokens < o.sentTokens * 0.9)
      return {
        kind: 'truncated',
        verdict: 'fail',
        summary: `${what}: HTTP ${o.status} and the prompt silently truncated (usage.prompt_tokens ${o.usagePromptTokens} of ~${o.sentTokens} sent): the model never saw the start or end of the prompt, and the client was not told`,
      };
    return {
      kind: 'accepted',
      verdict: 'fail',
      summary: `${what}: HTTP ${o.status}, the over-long prompt was accepted (usage.prompt_tokens ${o.usagePromptTokens ?? 'not reported'}; ${o.tokenEvents} token events): the window is not enforced`,
    };
  }
  if (o.status >= 500)
    return {
      kind: 'server-error',
      verdict: 'fail',
      summary: `${what}: HTTP ${o.status} (a server error) instead of 400 — clients retry 5xx, and this request can never succeed${msg ? `; message: ${JSON.stringify(msg.slice(0, 160))}` : ''}`,
    };
  if (o.status === 400) {
    if (isSse)
      return {
        kind: 'other',
        verdict: 'fail',
        summary: `${what}: HTTP 400 but with Content-Type ${o.contentType} (an SSE body), where a JSON error object is expected`,
      };
    if (!saysContext)
      return {
        kind: 'rejected-vague',
        verdict: 'fail',
        summary: `${what}: HTTP 400, but the error ${msg === undefined ? 'body is not an error object' : `message ${JSON.stringify(msg.slice(0, 160))}`} does not say the context is exceeded`,
      };
    return {
      kind: 'rejected',
      verdict: 'pass',
      summary: `${what}: HTTP 400 ${JSON.stringify(msg!.slice(0, 160))} (${errorShapeOf(o.json)} error shape)`,
    };
  }
  if (o.status >= 400 && o.status < 500 && saysContext)
    return {
      kind: 'rejected-other-4xx',
      verdict: 'warn',
      summary: `${what}: HTTP ${o.status} ${JSON.stringify(msg!.slice(0, 160))}; OpenAI clients expect 400 (context_length_exceeded)`,
    };
  return {
    kind: 'other',
    verdict: 'fail',
    summary: `${what}: HTTP ${o.status}${msg ? ` ${JSON.stringify(msg.slice(0, 160))}` : ''} instead of 400 with an error that says the context is exceeded`,
  };
}

interface RejectionThresholds {
  /** A rejection this fast cannot have paid for a prefill a user would notice (ms). */
  immediateMs: number;
  /** Fail when the ratio's lower bound reaches this fraction of the within-window prefill time. */
  failFraction: number;
  /** Warn when the ratio's estimate reaches this fraction. */
  warnFraction: number;
}

/**
 * Was the over-long prompt rejected before prefill? Compare the time to the 400 with the prefill time (TTFT) of a
 * within-window prompt of similar size, both measured in this run. A server that prefills before rejecting
 * needs at least that long (its prompt is longer), so the ratio is ≥ 1; an up-front check gives a ratio near 0.
 */
export function gradeRejectionLatency(
  rejectMs: readonly number[],
  prefillMs: readonly number[],
  t: RejectionThresholds,
): TimingGrade {
  const rej = median(rejectMs);
  const pre = median(prefillMs);
  const figures: Record<string, number | undefined> = {
    rejectMsP50: rej,
    prefillMsP50: pre,
    rejections: rejectMs.length,
    prefills: prefillMs.length,
  };
  if (rej === undefined) return { outcome: 'inconclusive', reason: 'no rejection was timed', figures };
  if (rej <= t.immediateMs)
    return {
      outcome: 'pass',
      reason: `rejected in ${fmt(rej)} ms (median of ${rejectMs.length}), within ${t.immediateMs} ms: no prefill was paid for${pre !== undefined ? ` (a within-window prompt of similar size takes ${fmt(pre)} ms to its first token)` : ''}`,
      figures,
    };
  if (pre === undefined)
    return {
      outcome: 'inconclusive',
      reason: `rejected in ${fmt(rej)} ms, and no within-window prefill time to compare with`,
      figures,
    };
  const ci = ratioCI(rejectMs, prefillMs);
  Object.assign(figures, { ratio: ci.estimate, ratioLow: ci.low, ratioHigh: ci.high, coverage: ci.coverage });
  const text = `rejection took ${fmt(rej)} ms (median of ${rejectMs.length}), ${fmt(ci.estimate)}x the ${fmt(pre)} ms prefill of a within-window prompt of similar size (${cov(ci.coverage)} ${fmt(ci.low)}–${fmt(ci.high)})`;
  if (ci.low !== undefined && ci.low >= t.failFraction)
    return {
      outcome: 'fail',
      reason: `${text}: the server prefilled the prompt before rejecting it (lower bound ≥ ${t.failFraction})`,
      figures,
    };
  if (ci.estimate !== undefined && ci.estimate >= t.warnFraction)
    return {
      outcome: 'warn',
      reason: `${text}: possibly prefilled before rejecting (estimate ≥ ${t.warnFraction}, bound below ${t.failFraction})`,
      figures,
      borderline: !(ci.low !== undefined && ci.low >= t.warnFraction),
    };
  return { outcome: 'pass', reason: `${text}: rejected before prefill`, figures };
}

// ---------------------------------------------------------------------------------------------------------------
// context.prefill-scaling

export interface ScalingPoint {
  /** Prompt tokens (server-counted when it reported them, else the calibrated estimate). */
  tokens: number;
  /** TTFT of each repetition; undefined when it failed. A censored value (deadline hit) is given as the deadline. */
  ttftMs: ReadonlyArray<number | undefined>;
  /** Repetitions that hit the deadline (their value is a lower bound). */
  censored?: number;
}

export interface ScalingThresholds {
  /** The upper range: this many of the longest measured lengths give the log-log slope the message reports. */
  fitPoints: number;
  /** Distinct lengths needed for the fit. */
  minPoints: number;
  /** The median TTFT must grow by at least this much over the upper range, or prefill is not visible (ms). */
  minSpreadMs: number;
  /** The window whose prefill is judged (tokens): the served window, else an assumed one. */
  windowTokens?: number;
  windowSource?: string;
  /**
   * Nothing known of the model: a window whose prefill is this many times what the short-prompt rate predicts is a
   * warn, never a pass (attention cannot be told from a defect without the model's width).
   */
  excessFactor: number;
  /** How much dearer a FLOP of attention may be than one of the matrix products (κ in attentionExcess). */
  attentionCostFactor: number;
  /** Growth past this many times what attention explains is a defect (fail along the bound, warn by the estimate). */
  unexplainedFactor: number;
  /** Nothing known of the model: the narrowest model assumed, for the fail bar only (a wider one explains less). */
  narrowestWidth: number;
  /** The model's embedding width (n_embd), reported by the server or declared, with where it came from. */
  width?: ModelWidth;
}

export interface ModelWidth {
  value: number;
  source: string;
  /** n_params as reported: with ~12·d² weights per layer it gives the layer count the message shows. */
  params?: number;
  /** n_vocab: the embedding matrix's share of n_params. */
  vocab?: number;
}

interface ScalingGrade extends TimingGrade {
  /** Log-log Theil–Sen slope of TTFT with the fixed cost removed, over the upper range, and its 95 % interval. */
  slope?: number;
  low?: number;
  high?: number;
  /** The fitted curve TTFT = fixedMs + perTokenMs·n + perTokenSqMs·n². */
  fit?: PrefillFit;
  /** The window's prefill without the fixed cost, extrapolated along the fit (s), and its bootstrap lower bound. */
  windowPrefillS?: number;
  windowPrefillLowS?: number;
  /** windowPrefillS over the linear estimate at the short-prompt rate, and its bootstrap lower bound. */
  excess?: number;
  excessLow?: number;
  /** Lengths of the fit with their median TTFT. */
  fitted: { tokens: number; ttftMsP50: number; n: number }[];
  /** Every length with its median, for the curve in the results. */
  curve: { tokens: number; ttftMsP50?: number; n: number; censored: number }[];
}

const finitePositive = (xs: ReadonlyArray<number | undefined>) =>
  xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0);

/** "x layers" from n_params with ~12·d² weights per layer, after the (tied) embedding matrix; undefined when implausible. */
function layersOf(w: ModelWidth): number | undefined {
  if (!w.params) return undefined;
  const layers = (w.params - (w.vocab ?? 0) * w.value) / (12 * w.value * w.value);
  return layers >= 0.5 ? layers : undefined;
}

/**
 * Prefill growth judged by its size at the window, with the fixed cost removed and by the model's own physics
 * (docs/grading.md "Prefill scaling"). The per-length medians are fitted with TTFT = c + a·n + b·n² (lib/grading/
 * prefill-fit.ts), the window's prefill extrapolated along a + b·n without c, and compared with what the server's own
 * short-prompt rate (the shortest length) predicts for it: excess = (a + b·W) / (a + b·n_s), bounded by resampling
 * the repetitions.
 *
 * - The model's width d known (reported or declared): attention at up to κ (attentionCostFactor) times its FLOP cost
 *   explains (1 + κ·W/(12·d)) / (1 + κ·n_s/(12·d)); fail when the excess's lower bound is ≥ unexplainedFactor times
 *   that, warn when its estimate is.
 * - Nothing known: warn when the excess is ≥ excessFactor (attention cannot be told from a defect, so never a pass);
 *   fail when its lower bound is ≥ unexplainedFactor times what attention explains in the narrowest model assumed.
 *
 * Ratios measured in one run, never an absolute time: a slow machine and a fast one get the same verdict.
 */
export function gradePrefillScaling(points: readonly ScalingPoint[], t: ScalingThresholds): ScalingGrade {
  const sortedPoints = [...points].sort((a, b) => a.tokens - b.tokens);
  const curve = sortedPoints.map((p) => ({
    tokens: p.tokens,
    ttftMsP50: median(finitePositive(p.ttftMs)),
    n: finitePositive(p.ttftMs).length,
    censored: p.censored ?? 0,
  }));
  const measured = sortedPoints.filter((p) => p.tokens > 0 && finitePositive(p.ttftMs).length > 0);
  const fitted = measured.map((p) => ({
    tokens: p.tokens,
    ttftMsP50: median(finitePositive(p.ttftMs))!,
    n: finitePositive(p.ttftMs).length,
  }));
  const upper = fitted.slice(-t.fitPoints);
  const top = fitted.length ? fitted[fitted.length - 1].tokens : 0;
  const base = { fitted, curve };
  const figures: Record<string, number | undefined> = { points: fitted.length, topTokens: top };
  if (fitted.length < t.minPoints)
    return {
      ...base,
      outcome: 'inconclusive',
      reason: `only ${fitted.length} prompt length(s) measured (need ${t.minPoints})`,
      figures,
    };
  const spread = upper[upper.length - 1].ttftMsP50 - upper[0].ttftMsP50;
  figures.spreadMs = spread;
  if (spread < t.minSpreadMs)
    return {
      ...base,
      outcome: 'inconclusive',
      reason: `TTFT grew by only ${fmt(spread)} ms from ${upper[0].tokens} to ${top} tokens (need ${t.minSpreadMs} ms): prefill is hidden by fixed costs and noise`,
      figures,
    };
  const window = Math.max(t.windowTokens ?? top, top);
  const short = fitted[0].tokens;
  const ex = extrapolatePrefill(
    measured.map((p) => ({ tokens: p.tokens, ttftMs: finitePositive(p.ttftMs) })),
    window,
    short,
  );
  if (!ex || ex.excess === undefined)
    return {
      ...base,
      outcome: 'inconclusive',
      reason: `no curve TTFT = c + a·n + b·n² with non-negative costs fits the medians of ${fitted.length} lengths`,
      figures,
    };
  const { fit } = ex;
  // The slope the message reports: the upper range's samples with the fixed cost taken off.
  const xs: number[] = [];
  const ys: number[] = [];
  for (const p of measured.slice(-t.fitPoints))
    for (const y of finitePositive(p.ttftMs))
      if (y - fit.fixedMs > 0) {
        xs.push(p.tokens);
        ys.push(y - fit.fixedMs);
      }
  const slope = logLogSlope(xs, ys, { alpha: 0.05 });
  const shortRate = short / (prefillMs(fit, short) / 1000);
  const linearS = window / shortRate;
  Object.assign(figures, {
    fixedMs: fit.fixedMs,
    perTokenMs: fit.perTokenMs,
    perTokenSqMs: fit.perTokenSqMs,
    slope: slope.slope,
    slopeLow: slope.low,
    slopeHigh: slope.high,
    samples: xs.length,
    windowTokens: window,
    windowPrefillS: ex.windowMs / 1000,
    windowPrefillLowS: ex.windowMsLow === undefined ? undefined : ex.windowMsLow / 1000,
    windowPrefillHighS: ex.windowMsHigh === undefined ? undefined : ex.windowMsHigh / 1000,
    shortPromptTps: shortRate,
    linearWindowS: linearS,
    excess: ex.excess,
    excessLow: ex.excessLow,
    excessHigh: ex.excessHigh,
  });
  const out = {
    ...base,
    slope: slope.slope,
    low: slope.low,
    high: slope.high,
    fit,
    windowPrefillS: ex.windowMs / 1000,
    windowPrefillLowS: ex.windowMsLow === undefined ? undefined : ex.windowMsLow / 1000,
    excess: ex.excess,
    excessLow: ex.excessLow,
  };
  const x = ex.excess;
  const xLow = ex.excessLow ?? 0; // no interval (too few usable replicates): nothing is clear
  const ci = (lo: number | undefined, hi: number | undefined, d = 1) =>
    lo === undefined || hi === undefined ? 'no interval' : `95 % CI ${fmt(lo, d)}–${fmt(hi, d)}`;
  const text =
    `TTFT = ${fmt(fit.fixedMs, 1)} ms + ${fit.perTokenMs.toPrecision(3)} ms·n + ${fit.perTokenSqMs.toPrecision(3)} ms·n² over ${fitted[0].tokens}–${top} tokens (medians ${fmt(fitted[0].ttftMsP50)} → ${fmt(fitted[fitted.length - 1].ttftMsP50)} ms; log-log slope without the ${fmt(fit.fixedMs, 1)} ms fixed cost ${fmt(slope.slope)}, ${ci(slope.low, slope.high, 2)}): ` +
    `the ${window}-token window${t.windowSource ? ` (${t.windowSource})` : ''} extrapolates to ${fmt(ex.windowMs / 1000, 1)} s of prefill (${ci(figures.windowPrefillLowS, figures.windowPrefillHighS)}), ` +
    `${fmt(x, 1)}x (${ci(ex.excessLow, ex.excessHigh)}) the ${fmt(linearS, 1)} s its short-prompt rate of ${fmt(shortRate, 0)} tok/s (at ${short} tokens) predicts`;
  const kappa = t.attentionCostFactor;
  const factor = t.unexplainedFactor;
  if (t.width) {
    const d = t.width.value;
    const explained = attentionExcess(d, window, short, kappa);
    const bar = factor * explained;
    const layers = layersOf(t.width);
    Object.assign(figures, { modelWidth: d, explainedExcess: explained, unexplained: x / explained });
    const physics = `attention in a ${d}-wide model (${t.width.source}${layers ? `; ~${fmt(layers, 0)} layers of ~12·d² weights in its ${fmt(t.width.params! / 1e6, 1)} M parameters` : ''}) costs a share of about n/(6·${d}) per token and, at up to ${kappa}x its FLOP cost, explains ${fmt(explained, 1)}x`;
    if (xLow >= bar)
      return {
        ...out,
        outcome: 'fail',
        reason: `${text}; ${physics}: prefill grows quadratically, ${fmt(x / explained, 1)}x faster than attention explains (lower bound ${fmt(xLow, 1)}x ≥ ${factor} × ${fmt(explained, 1)}x), beyond the model's physics`,
        figures,
      };
    if (x >= bar)
      return {
        ...out,
        outcome: 'warn',
        reason: `${text}; ${physics}: ${fmt(x / explained, 1)}x that by the estimate, past ${factor}x, but the lower bound ${fmt(xLow, 1)}x is not`,
        figures,
        borderline: true,
      };
    return {
      ...out,
      outcome: 'pass',
      reason: `${text}; ${physics}: ${x < 2 ? 'close to linear' : 'superlinear, within what real attention explains'} (a defect needs ${factor}x that, ${fmt(bar, 1)}x)`,
      figures,
    };
  }
  const widest = attentionExcess(t.narrowestWidth, window, short, kappa);
  const failBar = factor * widest;
  Object.assign(figures, { explainedExcessNarrowest: widest });
  const unknown = `the server reports no model width (no n_embd) and none is declared, so attention's share is unknown`;
  if (xLow >= failBar)
    return {
      ...out,
      outcome: 'fail',
      reason: `${text}; ${unknown}, but even a ${t.narrowestWidth}-wide model's attention at ${kappa}x its FLOP cost explains only ${fmt(widest, 1)}x: prefill grows quadratically beyond any model's physics (lower bound ${fmt(xLow, 1)}x ≥ ${factor} × ${fmt(widest, 1)}x)`,
      figures,
    };
  if (x >= t.excessFactor)
    return {
      ...out,
      outcome: 'warn',
      reason: `${text}; ${unknown}: ${fmt(x, 1)}x is at least ${t.excessFactor}x, growth a wide model's attention does not explain (declare modelWidth to judge it; a fail needs ${fmt(failBar, 1)}x, what no model ${t.narrowestWidth} or more wide explains)`,
      figures,
      borderline: true,
    };
  return {
    ...out,
    outcome: 'pass',
    reason: `${text}; ${unknown}: ${x < 2 ? 'close to linear' : 'superlinear'}, under ${t.excessFactor}x`,
    figures,
  };
}

/**
 * The same points with our client's delay moved against a failing verdict: every TTFT at the upper half of the
 * lengths `delayMs` shorter (floored at 0.1 ms), every one below it `delayMs` longer.
 */
export function scalingWorstCase(points: readonly ScalingPoint[], delayMs: number): ScalingPoint[] {
  const lengths = [...new Set(points.map((p) => p.tokens))].sort((a, b) => a - b);
  const mid = median(lengths) ?? 0;
  return points.map((p) => ({
    ...p,
    ttftMs: p.ttftMs.map((y) => (y === undefined ? y : p.tokens >= mid ? Math.max(0.1, y - delayMs) : y + delayMs)),
  }));
}

/**
 * Prompt lengths for the scaling curve: `count` lengths spaced geometrically from `top / span` to `top`, rounded
 * to whole tokens and distinct.
 */
export function scalingLengths(top: number, count: number, span: number): number[] {
  if (!(top >= 1) || count < 1) return [];
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const x = Math.round(top / span ** ((count - 1 - i) / Math.max(1, count - 1)));
    if (x >= 1 && !out.includes(x)) out.push(x);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// context.healthy-after

interface SlowdownThresholds {
  /** Fail when the slowdown's lower bound reaches this factor. */
  failSlowdown: number;
  /** Warn when the estimate reaches this factor. */
  warnSlowdown: number;
  /** Samples needed on each side. */
  minSamples: number;
}

/**
 * slowdown = median(wall_tps before) / median(wall_tps after), both from normal requests of one shape measured in
 * the same check; estimate and interval from ratioCI (Hodges–Lehmann, Moses). 1 = as fast as before.
 * Fail when the lower bound reaches `failSlowdown`; warn when the estimate reaches `warnSlowdown` and the lower
 * bound is above 1 (evidence of a slowdown, not of a large one).
 */
export function gradeSlowdown(
  beforeTps: ReadonlyArray<number | undefined>,
  afterTps: ReadonlyArray<number | undefined>,
  t: SlowdownThresholds,
): TimingGrade {
  const b = beforeTps.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0);
  const a = afterTps.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0);
  const figures: Record<string, number | undefined> = {
    beforeTpsP50: median(b),
    afterTpsP50: median(a),
    before: b.length,
    after: a.length,
  };
  if (b.length < t.minSamples || a.length < t.minSamples)
    return {
      outcome: 'inconclusive',
      reason: `too few timed requests (before ${b.length}, after ${a.length}; need ${t.minSamples} each)`,
      figures,
    };
  const ci = ratioCI(b, a);
  Object.assign(figures, { slowdown: ci.estimate, slowdownLow: ci.low, slowdownHigh: ci.high, coverage: ci.coverage });
  const text = `wall_tps ${fmt(median(b))} tok/s before the long requests, ${fmt(median(a))} tok/s after (medians of ${b.length} and ${a.length}): slowdown ${fmt(ci.estimate)}x (${cov(ci.coverage)} ${fmt(ci.low)}–${fmt(ci.high)})`;
  if (ci.low !== undefined && ci.low >= t.failSlowdown)
    return { outcome: 'fail', reason: `${text}, lower bound ≥ ${t.failSlowdown}x`, figures };
  if (ci.estimate !== undefined && ci.estimate >= t.warnSlowdown && ci.low !== undefined && ci.low > 1)
    return {
      outcome: 'warn',
      reason: `${text}, estimate ≥ ${t.warnSlowdown}x with the lower bound above 1x, but not clearly past ${t.failSlowdown}x`,
      figures,
      borderline: ci.low < t.warnSlowdown,
    };
  return { outcome: 'pass', reason: text, figures };
}

// ---------------------------------------------------------------------------------------------------------------
// context.served-window

interface Figure {
  value: number;
  source: string;
}

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
 * A slowdown between the normal requests before and after the long ones that a neighbour explains: the rule of the
 * cycles family (lib/grading/cycles.ts contention) on the two sets, other load up by ≥ 0.25 cores, the server
 * CPU-bound, and its own CPU fallen about as much as its speed. Undefined when it does not, or no CPU was measured.
 */
export function neighbourExplains(
  before: CpuUse | undefined,
  after: CpuUse | undefined,
  slowdown: number | undefined,
): string | undefined {
  if (!before || !after || slowdown === undefined || !(slowdown > 0)) return undefined;
  const point = (cycle: number, u: CpuUse) => ({ cycle, otherCores: u.otherCores, serverCores: u.serverCores });
  return contention([point(1, before), point(2, after)], 1, slowdown, {
    during: 'between the normal requests before the long ones and after them',
    first: 'before',
    last: 'after',
  });
}
