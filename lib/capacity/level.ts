// One level's figures from its requests, as the capacity table states them (lib/capacity/types.ts): counts, TTFT,
// ITL and end-to-end percentiles, per-stream and aggregate output tok/s, usage beside the streamed count, goodput.
// Pure over the recorded exchanges: the same numbers whatever produced them.

import type { Exchange } from '../exchange/exchange.ts';
import { served } from '../exchange/served.ts';
import { finite, median, quantile } from '../measure/stats.ts';
import type { CapacityLevel, Percentiles, Slo } from './types.ts';

/** One request of a level: its exchange and, in a sweep, the round (its stream's n-th request) it belongs to. */
export interface LevelRequest {
  x: Exchange;
  round?: number;
}

const TIMEOUTS = new Set(['headers-timeout', 'token-idle', 'total-timeout']);

function timedOut(x: Exchange): boolean {
  return x.rec.failure !== undefined && TIMEOUTS.has(x.rec.failure.kind);
}

/** p50/p90/p99 of a sample (null where empty). */
function percentiles(xs: readonly number[]): Percentiles {
  const v = finite(xs);
  const q = (p: number) => (v.length ? (quantile(v, p) ?? null) : null);
  return { p50: q(0.5), p90: q(0.9), p99: q(0.99) };
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

/** The figures of a level (mode, client headroom and flags are added by the caller and lib/capacity/certify.ts). */
export function levelFigures(reqs: readonly LevelRequest[], slo?: Slo): LevelFigures & { roundTps?: number[] } {
  const xs = reqs.map((r) => r.x);
  const done = xs.filter(served);
  const first = xs.length ? Math.min(...xs.map(startOf)) : 0;
  const last = xs.length ? Math.max(...xs.map(endOf)) : 0;
  const wallS = Math.max(0, last - first) / 1000;
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
  return {
    startedAt: toEpoch(first),
    endedAt: toEpoch(last),
    sent: xs.length,
    completed: done.length,
    errored: xs.length - done.length - timeOut,
    timedOut: timeOut,
    ttftMs: percentiles(done.map((x) => x.metrics?.ttftMs).filter((v): v is number => v !== undefined)),
    itlMs: percentiles(done.flatMap((x) => x.metrics?.itlMs ?? [])),
    e2eMs: percentiles(done.map((x) => x.rec.tEnd)),
    tpsPerStream: percentiles(done.map((x) => x.metrics?.genTps).filter((v): v is number => v !== undefined)),
    aggregateTps: windowTps(xs),
    inputTokens: sum(usageIn),
    outputTokens: sum(usageOut),
    streamedTokens: done.reduce((a, x) => a + (x.events?.tokens.length ?? 0), 0),
    ...(slo ? { goodput: { ratePerS: wallS > 0 ? good / wallS : 0, fraction: xs.length ? good / xs.length : 0 } } : {}),
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
