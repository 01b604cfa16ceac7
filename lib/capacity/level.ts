// One level's figures from its requests, as the capacity table states them (lib/capacity/types.ts): counts; TTFT,
// TPOT, ITL and end-to-end distributions (mean, median, population std, p90, p99, as vLLM's benchmark computes them);
// per-stream and aggregate output tok/s; request, input and output token throughput over vLLM's duration; usage beside
// the streamed count; goodput. Pure over the recorded exchanges: the same numbers whatever produced them.

import type { Exchange } from '../exchange/exchange.ts';
import { served } from '../exchange/served.ts';
import { finite, mean, median, quantile, std } from '../measure/stats.ts';
import type { Slo } from '../model/types.ts';
import type { CapacityLevel, Percentiles } from './types.ts';

/** One request of a level: its exchange and, in a sweep, the round (its stream's n-th request) it belongs to. */
export interface LevelRequest {
  x: Exchange;
  round?: number;
}

const TIMEOUTS = new Set(['headers-timeout', 'token-idle', 'total-timeout']);

function timedOut(x: Exchange): boolean {
  return x.rec.failure !== undefined && TIMEOUTS.has(x.rec.failure.kind);
}

/**
 * Samples a percentile needs before one of them lies above it: below these, linear interpolation puts a p90 or p99
 * between the two largest samples, so it reports the maximum, not a percentile.
 */
export const MIN_SAMPLES = {
  p90: { value: 10, why: 'one sample in 10 lies above a 90th percentile: from fewer, the p90 is the maximum' },
  p99: { value: 100, why: 'one sample in 100 lies above a 99th percentile: from fewer, the p99 is the maximum' },
};

/**
 * A figure over a sample: n, mean, median, population std (numpy's np.std, as vLLM's std_*_ms), p90, p99 (linear
 * interpolation: numpy's np.percentile default) and the maximum; null where empty (vLLM reports 0 there). Percentiles
 * from fewer samples than MIN_SAMPLES are listed in `maxOnly`.
 */
export function distribution(xs: readonly number[]): Percentiles {
  const v = finite(xs);
  const n = v.length;
  if (!n) return { p50: null, p90: null, p99: null, n: 0, mean: null, std: null, max: null };
  const maxOnly = (['p90', 'p99'] as const).filter((p) => n < MIN_SAMPLES[p].value);
  return {
    p50: quantile(v, 0.5)!,
    p90: quantile(v, 0.9)!,
    p99: quantile(v, 0.99)!,
    n,
    mean: mean(v)!,
    std: std(v)!,
    max: Math.max(...v),
    ...(maxOnly.length ? { maxOnly } : {}),
  };
}

/** Per second of `durationS`: completed requests, input tokens (null without usage), output tokens, both. */
export function throughputs(l: {
  completed: number;
  durationS: number;
  totalOutputTokens: number;
  inputTokens: number | null;
}): Pick<CapacityLevel, 'requestThroughput' | 'inputThroughput' | 'outputThroughput' | 'totalTokenThroughput'> {
  const per = (x: number) => (l.durationS > 0 ? x / l.durationS : 0);
  return {
    requestThroughput: per(l.completed),
    inputThroughput: l.inputTokens === null ? null : per(l.inputTokens),
    outputThroughput: per(l.totalOutputTokens),
    totalTokenThroughput: l.inputTokens === null ? null : per(l.inputTokens + l.totalOutputTokens),
  };
}

/** Time per output token after the first, per request: (e2e − TTFT) / (output tokens − 1), as vLLM's TPOT. */
function tpotOf(x: Exchange): number | undefined {
  const out = outputOf(x);
  const ttft = x.metrics?.ttftMs;
  return out > 1 && ttft !== undefined ? (x.rec.tEnd - ttft) / (out - 1) : undefined;
}

const startOf = (x: Exchange) => x.rec.t0Abs;
const endOf = (x: Exchange) => x.rec.t0Abs + x.rec.tEnd;

/** Output tokens of a completed request: usage where sent, else the token-bearing events (metrics' own count). */
function outputOf(x: Exchange): number {
  return x.events?.usage?.completion_tokens ?? x.metrics?.completionTokens ?? x.events?.tokens.length ?? 0;
}

/** Tokens of the requests over the window from the first start to the last end (tok/s); 0 for an empty window. */
function windowTps(xs: readonly Exchange[]): number {
  const done = xs.filter(served);
  if (!done.length) return 0;
  const first = Math.min(...xs.map(startOf));
  const last = Math.max(...xs.map(endOf));
  const tokens = done.reduce((a, x) => a + outputOf(x), 0);
  return last > first ? tokens / ((last - first) / 1000) : 0;
}

/** Whether one request met the SLO: its TTFT, its own p99 gap and its end-to-end time each within the bound. */
function meetsSlo(x: Exchange, slo: Slo): boolean {
  if (!served(x)) return false;
  const m = x.metrics;
  if (slo.ttftP99Ms !== undefined && !(m?.ttftMs !== undefined && m.ttftMs <= slo.ttftP99Ms)) return false;
  if (slo.itlP99Ms !== undefined) {
    const gap = quantile(m?.itlMs ?? [], 0.99);
    if (gap !== undefined && gap > slo.itlP99Ms) return false;
  }
  if (slo.e2eP99Ms !== undefined && !(m !== undefined && m.e2eMs <= slo.e2eP99Ms)) return false;
  return true;
}

/** Most requests in flight at once over the level (from their start and end times). */
export function peakInFlight(xs: readonly Exchange[]): number {
  const edges = xs.flatMap((x) => [
    [startOf(x), 1],
    [endOf(x), -1],
  ]);
  edges.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let now = 0;
  let peak = 0;
  for (const [, d] of edges) {
    now += d!;
    peak = Math.max(peak, now);
  }
  return peak;
}

type LevelFigures = Omit<CapacityLevel, 'mode' | 'client' | 'flags' | 'physicalBoundTps'>;

/**
 * The figures of a level (mode, client headroom and flags are added by the caller and lib/capacity/certify.ts).
 * `startAbs` (performance.now() time) is where vLLM's duration starts: a rate run's schedule, a sweep level's loop;
 * the first send when not given.
 */
export function levelFigures(
  reqs: readonly LevelRequest[],
  slo?: Slo,
  startAbs?: number,
): LevelFigures & { roundTps?: number[] } {
  const xs = reqs.map((r) => r.x);
  const done = xs.filter(served);
  const first = xs.length ? Math.min(...xs.map(startOf)) : 0;
  const last = xs.length ? Math.max(...xs.map(endOf)) : 0;
  const durationS = Math.max(0, last - Math.min(first, startAbs ?? first)) / 1000;
  const totalOutputTokens = done.reduce((a, x) => a + outputOf(x), 0);
  const usageOut = done.map((x) => x.events?.usage?.completion_tokens);
  const usageIn = done.map((x) => x.events?.usage?.prompt_tokens);
  const sum = (v: Array<number | undefined>) =>
    v.length && v.every((n) => typeof n === 'number') ? v.reduce((a: number, b) => a + (b as number), 0) : null;
  const timeOut = xs.filter(timedOut).length;
  // Rounds every stream took part in (past `rounds`, streams stop at different times: a partial round is fewer streams).
  const perRound = new Map<number, number>();
  for (const r of reqs) if (r.round !== undefined) perRound.set(r.round, (perRound.get(r.round) ?? 0) + 1);
  const full = Math.max(0, ...perRound.values());
  const rounds = [...perRound.keys()].filter((r) => perRound.get(r) === full).sort((a, b) => a - b);
  const roundTps = rounds.map((r) => windowTps(reqs.filter((q) => q.round === r).map((q) => q.x)));
  const good = slo ? xs.filter((x) => meetsSlo(x, slo)).length : 0;
  const toEpoch = (abs: number) => Math.round(performance.timeOrigin + abs);
  const inputTokens = sum(usageIn);
  return {
    startedAt: toEpoch(first),
    endedAt: toEpoch(last),
    sent: xs.length,
    completed: done.length,
    errored: xs.length - done.length - timeOut,
    timedOut: timeOut,
    ttftMs: distribution(done.map((x) => x.metrics?.ttftMs).filter((v): v is number => v !== undefined)),
    tpotMs: distribution(done.map(tpotOf).filter((v): v is number => v !== undefined)),
    itlMs: distribution(done.flatMap((x) => x.metrics?.itlMs ?? [])),
    e2eMs: distribution(done.map((x) => x.rec.tEnd)),
    tpsPerStream: distribution(done.map((x) => x.metrics?.genTps).filter((v): v is number => v !== undefined)),
    aggregateTps: windowTps(xs),
    durationS,
    totalOutputTokens,
    ...throughputs({ completed: done.length, durationS, totalOutputTokens, inputTokens }),
    inputTokens,
    outputTokens: sum(usageOut),
    streamedTokens: done.reduce((a, x) => a + (x.events?.tokens.length ?? 0), 0),
    // Per second of vLLM's duration, as its request_goodput.
    ...(slo
      ? { goodput: { ratePerS: durationS > 0 ? good / durationS : 0, fraction: xs.length ? good / xs.length : 0 } }
      : {}),
    ...(roundTps.length ? { roundTps } : {}),
  };
}

/**
 * The relative noise band of a level's aggregate: half the range of its rounds' aggregates over their median, never
 * below `floor` (timer jitter and a shared machine move a level by a few % from one run to the next).
 */
export function noiseBand(roundTps: readonly number[] | undefined, floor: number): number {
  const v = finite(roundTps ?? []).filter((x) => x > 0);
  const m = median(v);
  if (v.length < 2 || !m) return floor;
  return Math.max(floor, (Math.max(...v) - Math.min(...v)) / 2 / m);
}
