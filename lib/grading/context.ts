// Pure grading functions of the `context` family (suites/context.ts): no I/O, no clock, no unseeded randomness,
// so every verdict can be recomputed from the recorded figures and simulated with seeded noise
// (test/context-grading.test.ts runs 10,000 noisy trials of the timing gradings).
//
// Conventions: times in ms, sizes in tokens as the server counts them (usage.prompt_tokens, calibrated).
// Timing verdicts use medians over repetitions and ratios measured in the same run; they fail only when a
// confidence bound is past the threshold; borderline evidence is `warn`; too little evidence is `inconclusive`.

import { logLogSlope, median } from './stats.ts';

type TimingOutcome = 'pass' | 'warn' | 'fail' | 'inconclusive';

export interface TimingGrade {
  outcome: TimingOutcome;
  /** One sentence with the figures behind the outcome. */
  reason: string;
  figures: Record<string, number | undefined>;
  /** A warn whose confidence bound is not past the warn threshold (only its estimate is): strict mode leaves it a warn. */
  borderline?: boolean;
}

/** Round for messages. */
const r = (x: number | undefined, d = 2) =>
  x === undefined || !Number.isFinite(x) ? 'n/a' : Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(d);
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
      reason: `${g.reason} (holds even with our client's event-loop delay, p99 ${r(loop.p99Ms)} ms, counted against it)`,
      figures,
    };
  return {
    outcome: 'inconclusive',
    reason: `our client was starved (event-loop delay p99 ${r(loop.p99Ms)} ms > ${maxLoopP99Ms} ms), so its timing cannot be graded; it would have been ${g.outcome}: ${g.reason}`,
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
  const what = `${mode} request with a ~${o.sentTokens}-token prompt (${r(o.sentTokens / o.window)}x the ${o.window}-token window)`;
  if (o.status === undefined) {
    if (o.failure?.kind === 'headers-timeout' || o.failure?.kind === 'total-timeout' || o.failure?.kind === 'aborted')
      return {
        kind: 'no-response',
        verdict: 'fail',
        summary: `${what}: no response within ${r(o.waitedMs)} ms (the server hangs instead of rejecting)`,
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
      reason: `rejected in ${r(rej)} ms (median of ${rejectMs.length}), within ${t.immediateMs} ms: no prefill was paid for${pre !== undefined ? ` (a within-window prompt of similar size takes ${r(pre)} ms to its first token)` : ''}`,
      figures,
    };
  if (pre === undefined)
    return {
      outcome: 'inconclusive',
      reason: `rejected in ${r(rej)} ms, and no within-window prefill time to compare with`,
      figures,
    };
  const ci = ratioCI(rejectMs, prefillMs);
  Object.assign(figures, { ratio: ci.estimate, ratioLow: ci.low, ratioHigh: ci.high, coverage: ci.coverage });
  const text = `rejection took ${r(rej)} ms (median of ${rejectMs.length}), ${r(ci.estimate)}x the ${r(pre)} ms prefill of a within-window prompt of similar size (${cov(ci.coverage)} ${r(ci.low)}–${r(ci.high)})`;
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
  /** Fail when the slope's lower confidence bound reaches this (2 = quadratic). */
  failLowBound: number;
  /** Warn when the slope's estimate reaches this. */
  warnSlope: number;
  /** The upper range: this many of the longest measured lengths are fitted. */
  fitPoints: number;
  /** Distinct lengths needed in the fit. */
  minPoints: number;
  /** The median TTFT must grow by at least this much over the fitted range, or prefill is not visible (ms). */
  minSpreadMs: number;
  /**
   * The window whose prefill is judged (tokens): the served window, else an assumed one. Real attention cost is not a
   * defect: superlinear growth fails only when it makes this window's prefill both longer than windowPrefillMaxS and
   * excessFactor times what the server's own short-prompt rate predicts.
   */
  windowTokens?: number;
  windowSource?: string;
  /** A full window that takes longer than this to prefill (extrapolated, s) is not usable. */
  windowPrefillMaxS?: number;
  /** Extrapolated window prefill over the short-prompt rate's linear estimate, past which growth is a defect. */
  excessFactor?: number;
}

interface ScalingGrade extends TimingGrade {
  slope?: number;
  low?: number;
  high?: number;
  /** The window's prefill extrapolated along the fitted curve (point estimate and along the lower slope bound, s). */
  windowPrefillS?: number;
  windowPrefillLowS?: number;
  /** windowPrefillS over the linear estimate at the short-prompt rate. */
  excess?: number;
  /** Lengths of the fit with their median TTFT. */
  fitted: { tokens: number; ttftMsP50: number; n: number }[];
  /** Every length with its median, for the curve in the results. */
  curve: { tokens: number; ttftMsP50?: number; n: number; censored: number }[];
}

const finitePositive = (xs: ReadonlyArray<number | undefined>) =>
  xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0);

/**
 * Log-log Theil–Sen slope of TTFT against prompt length over the upper range (the `fitPoints` longest lengths).
 * Linear prefill gives about 1 (less while fixed costs still weigh), attention's quadratic term lifts it towards 2.
 * The fit takes every repetition as a point: Theil–Sen is itself a median (of pairwise slopes, tolerating 29 % bad
 * points), and Sen's interval over all repetitions is far steadier under heavy-tailed jitter than one over
 * per-length medians (simulated in test/context-grading.test.ts). The curve reports per-length medians.
 *
 * Real attention cost is not a defect (a tiny model on a CPU: TTFT 274 ms at 1k tokens, 20 s at 12k, slope 1.7): the
 * slope alone cannot tell it from the seed's pathology (52k tokens in 31 min instead of 2–3). What can is its size at
 * the window the server serves: the fitted curve is extrapolated to `windowTokens` and compared with the linear
 * estimate from the server's own short-prompt rate (the shortest length measured). Fail when the slope's 95 % lower
 * bound is ≥ failLowBound AND, along that lower bound, the window's prefill exceeds windowPrefillMaxS AND excessFactor
 * times the linear estimate; warn when the lower bound is above 1 and the point estimates are past both window bounds;
 * otherwise pass and say how big the superlinear share is (warnSlope names it superlinear).
 */
export function gradePrefillScaling(points: readonly ScalingPoint[], t: ScalingThresholds): ScalingGrade {
  const sortedPoints = [...points].sort((a, b) => a.tokens - b.tokens);
  const curve = sortedPoints.map((p) => ({
    tokens: p.tokens,
    ttftMsP50: median(finitePositive(p.ttftMs)),
    n: finitePositive(p.ttftMs).length,
    censored: p.censored ?? 0,
  }));
  const measured = sortedPoints.filter((p) => p.tokens > 0 && finitePositive(p.ttftMs).length > 0).slice(-t.fitPoints);
  const fitted = measured.map((p) => ({
    tokens: p.tokens,
    ttftMsP50: median(finitePositive(p.ttftMs))!,
    n: finitePositive(p.ttftMs).length,
  }));
  const top = fitted.length ? fitted[fitted.length - 1].tokens : 0;
  const base = { fitted, curve };
  const figures: Record<string, number | undefined> = { points: fitted.length, topTokens: top };
  if (fitted.length < t.minPoints)
    return {
      ...base,
      outcome: 'inconclusive',
      reason: `only ${fitted.length} prompt length(s) measured in the upper range (need ${t.minPoints})`,
      figures,
    };
  const spread = fitted[fitted.length - 1].ttftMsP50 - fitted[0].ttftMsP50;
  figures.spreadMs = spread;
  if (spread < t.minSpreadMs)
    return {
      ...base,
      outcome: 'inconclusive',
      reason: `TTFT grew by only ${r(spread)} ms from ${fitted[0].tokens} to ${top} tokens (need ${t.minSpreadMs} ms): prefill is hidden by fixed costs and noise`,
      figures,
    };
  const xs: number[] = [];
  const ys: number[] = [];
  for (const p of measured)
    for (const y of finitePositive(p.ttftMs)) {
      xs.push(p.tokens);
      ys.push(y);
    }
  const fit = logLogSlope(xs, ys, { alpha: 0.05 });
  Object.assign(figures, { slope: fit.slope, slopeLow: fit.low, slopeHigh: fit.high, samples: xs.length });
  const out = { ...base, slope: fit.slope, low: fit.low, high: fit.high };
  if (fit.slope === undefined || fit.low === undefined)
    return {
      ...out,
      outcome: 'inconclusive',
      reason: `no confidence interval for the slope from ${xs.length} samples at ${fitted.length} lengths`,
      figures,
    };
  const text = `log-log slope of TTFT against prompt length ${r(fit.slope)} (95 % CI ${r(fit.low)}–${r(fit.high)}; ${xs.length} samples) over ${fitted[0].tokens}–${top} tokens; median TTFT ${r(fitted[0].ttftMsP50)} → ${r(fitted[fitted.length - 1].ttftMsP50)} ms`;

  // The window's prefill: extrapolated from the top length along the fitted slope (never below the top itself).
  const shortest = curve.find((c) => c.ttftMsP50 !== undefined && c.tokens > 0);
  const window = Math.max(t.windowTokens ?? top, top);
  const topMs = fitted[fitted.length - 1].ttftMsP50;
  const along = (slope: number) => (topMs * (window / top) ** Math.max(1, slope)) / 1000;
  const windowS = along(fit.slope);
  const windowLowS = along(fit.low);
  const shortRate = shortest ? shortest.tokens / (shortest.ttftMsP50! / 1000) : undefined;
  const linearS = shortRate ? window / shortRate : undefined;
  const excess = linearS ? windowS / linearS : undefined;
  const excessLow = linearS ? windowLowS / linearS : undefined;
  const maxS = t.windowPrefillMaxS ?? Infinity;
  const factor = t.excessFactor ?? 0;
  Object.assign(figures, {
    windowTokens: window,
    windowPrefillS: windowS,
    windowPrefillLowS: windowLowS,
    shortPromptTps: shortRate,
    linearWindowS: linearS,
    excess,
  });
  const withWindow = { ...out, windowPrefillS: windowS, windowPrefillLowS: windowLowS, excess };
  const windowText = `the ${window}-token window${t.windowSource ? ` (${t.windowSource})` : ''} extrapolates to ${r(windowS, 1)} s of prefill (${r(windowLowS, 1)} s along the lower slope bound), ${r(excess, 1)}x the ${r(linearS, 1)} s its short-prompt rate of ${r(shortRate, 0)} tok/s (at ${shortest?.tokens} tokens) predicts`;
  const big = (s: number, x: number | undefined) => s > maxS && x !== undefined && x >= factor;
  if (fit.low >= t.failLowBound && big(windowLowS, excessLow))
    return {
      ...withWindow,
      outcome: 'fail',
      reason: `${text}: prefill time grows quadratically with the prompt (lower bound ≥ ${t.failLowBound}), and ${windowText}: over ${r(maxS)} s and ${factor}x, the window is not usable`,
      figures,
    };
  // Clear when the window is past both along the lower slope bound too; past them by the estimate alone is borderline.
  if (fit.low > 1 && big(windowS, excess))
    return {
      ...withWindow,
      outcome: 'warn',
      reason: `${text}: prefill grows faster than linearly (lower bound above 1), and ${windowText}: over ${r(maxS)} s and ${factor}x by the estimate, not clearly (the fail needs the lower bound ≥ ${t.failLowBound} and the window past both along it)`,
      figures,
      borderline: !big(windowLowS, excessLow),
    };
  if (fit.slope >= t.warnSlope)
    return {
      ...withWindow,
      outcome: 'pass',
      reason: `${text}: superlinear, but ${windowText}: within ${r(maxS)} s or ${factor}x, the cost of real attention rather than a defect`,
      figures,
    };
  return { ...withWindow, outcome: 'pass', reason: `${text}: close to linear; ${windowText}`, figures };
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
  const text = `wall_tps ${r(median(b))} tok/s before the long requests, ${r(median(a))} tok/s after (medians of ${b.length} and ${a.length}): slowdown ${r(ci.estimate)}x (${cov(ci.coverage)} ${r(ci.low)}–${r(ci.high)})`;
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
