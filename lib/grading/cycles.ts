// Pure grading functions for the timing verdicts of the `cycles` family.
//
// Each function takes what a check measured (plain numbers, no recordings, no clock, no I/O) plus its thresholds
// and returns the Verdict. The checks in suites/cycles.ts call exactly these, and scripts/simulate-false-failures.ts
// feeds them 10,000 seeded simulated trials per check to measure the false-failure and detection rates
// (reports/simulation.json). Nothing here reads time or draws unseeded randomness, so a verdict can be recomputed
// from the metrics a results file keeps.
//
// Rules every function follows (docs/grading.md "Timing verdicts"):
// - fail only when a confidence bound (not a point estimate) is past the threshold, AND the effect is large enough
//   to matter; borderline evidence is `warn` with the figures;
// - a starved client (event-loop delay p99 above `starvedLoopP99Ms`) or too few samples is `inconclusive`, never fail;
// - metrics carry the figures a report plots (`cycles`, `speedup`, `curve`).

import { type LoopDelay, starvedReason as starved } from '../measure/loop-delay.ts';
import type { CpuUse } from '../measure/machine-load.ts';
import { median, quantile, summarize, theilSen } from '../measure/stats.ts';
import type { Verdict } from '../model/types.ts';
import { borderline, fail, fmt, inconclusive, pass, pct, warn } from '../model/verdict.ts';

export type { LoopDelay } from '../measure/loop-delay.ts';

/** Median of the first and of the last `m` values (m = ceil(n/3), at least 2): "the first / last cycles". */
export function endMedians(ys: readonly number[]): { m: number; first?: number; last?: number } {
  const m = Math.max(2, Math.ceil(ys.length / 3));
  if (ys.length < 2 * m) return { m };
  return { m, first: median(ys.slice(0, m)), last: median(ys.slice(ys.length - m)) };
}

// ---------------------------------------------------------------------------------------------------------------
// cycles

/** One measured cycle (the warm-up cycle is not passed in). Per-request figures; undefined = not measurable. */
export interface CycleSample {
  cycle: number;
  wallTps: ReadonlyArray<number | undefined>;
  ttftMs: ReadonlyArray<number | undefined>;
  /** RSS of the server's process tree at the end of the cycle (KiB), where the suite started the server. */
  rssKiB?: number;
  /** Who used the machine's CPUs during the cycle (lib/measure/machine-load.ts), where /proc is there. */
  cpu?: CpuUse;
}

interface CyclePoint {
  cycle: number;
  wallTps?: number;
  ttftMs?: number;
  rssKiB?: number;
  /** Cores used by processes other than the server and our client during the cycle. */
  otherCores?: number;
  /** Cores used by the server's process tree during the cycle (only where the suite started it). */
  serverCores?: number;
}

/** The per-cycle curve the report plots: medians of each cycle's requests. */
export function cycleCurve(cycles: readonly CycleSample[]): CyclePoint[] {
  return cycles.map((c) => ({
    cycle: c.cycle,
    wallTps: median(c.wallTps),
    ttftMs: median(c.ttftMs),
    ...(c.rssKiB !== undefined ? { rssKiB: c.rssKiB } : {}),
    ...(c.cpu
      ? { otherCores: c.cpu.otherCores, ...(c.cpu.serverCores !== undefined ? { serverCores: c.cpu.serverCores } : {}) }
      : {}),
  }));
}

/**
 * When a neighbour explains a trend (docs/grading.md "Timing verdicts": our verdict must not blame the server for the machine's load):
 * other processes took at least `riseCores` more of the machine in the last cycles than in the first, the server was
 * CPU-bound (at least `cpuBoundCores` in the first cycles, so a neighbour can take its CPU), and the server's own CPU
 * supply fell about as much as the metric moved (observed factor at most `slack` × first/last server cores: a server
 * that slows down by itself keeps its CPU and spends more of it per token). Needs the server's pid (a server the suite
 * started); without it no trend is excused.
 */
const CONTENTION = { riseCores: 0.25, cpuBoundCores: 0.5, slack: 1.25 };

export function contention(
  points: readonly CyclePoint[],
  m: number,
  observedFactor: number,
  words = { during: 'while the cycles ran', first: `in the first ${m} cycles`, last: `in the last ${m}` },
): string | undefined {
  if (points.length < 2 * m || points.some((p) => p.otherCores === undefined || p.serverCores === undefined))
    return undefined;
  const head = points.slice(0, m);
  const tail = points.slice(points.length - m);
  const otherFirst = median(head.map((p) => p.otherCores));
  const otherLast = median(tail.map((p) => p.otherCores));
  const serverFirst = median(head.map((p) => p.serverCores));
  const serverLast = median(tail.map((p) => p.serverCores));
  if (otherFirst === undefined || otherLast === undefined || serverFirst === undefined || serverLast === undefined)
    return undefined;
  if (otherLast - otherFirst < CONTENTION.riseCores || serverFirst < CONTENTION.cpuBoundCores || !(serverLast > 0))
    return undefined;
  const supply = serverFirst / serverLast;
  if (observedFactor > CONTENTION.slack * supply) return undefined;
  return `the machine got busier ${words.during}: other processes used ${fmt(otherFirst, 2)} cores ${words.first} and ${fmt(otherLast, 2)} ${words.last}, and the CPU-bound server's own CPU fell from ${fmt(serverFirst, 2)} to ${fmt(serverLast, 2)} cores (×${fmt(supply, 2)}), which explains the ×${fmt(observedFactor, 2)} change: a neighbour's load cannot be told from a slowdown of the server`;
}

export interface TrendThresholds {
  /** Relative change that matters (no-slowdown: drop δ = 0.2; ttft-stable: growth γ). */
  relative: number;
  /** Absolute change that matters, in the metric's unit (ttft: ms; wall_tps: 0). */
  absolute: number;
  /** Confidence level of Sen's slope interval is 1 − alpha. */
  alpha: number;
  minCycles: number;
  starvedLoopP99Ms: number;
}

interface TrendInput {
  cycles: readonly CycleSample[];
  loop?: LoopDelay;
  thresholds: TrendThresholds;
}

interface Trend {
  ys: number[];
  xs: number[];
  slope?: number;
  low?: number;
  high?: number;
  first?: number;
  last?: number;
  m: number;
  /** The last m values (each of them must show the change for it to persist). */
  tail: number[];
}

function trendOf(points: CyclePoint[], key: 'wallTps' | 'ttftMs', alpha: number): Trend {
  const xs: number[] = [];
  const ys: number[] = [];
  for (const p of points) {
    const y = p[key];
    if (y !== undefined && Number.isFinite(y)) {
      xs.push(p.cycle);
      ys.push(y);
    }
  }
  const ts = theilSen(xs, ys, { alpha });
  const { m, first, last } = endMedians(ys);
  return {
    xs,
    ys,
    slope: ts.slope,
    low: ts.low,
    high: ts.high,
    first,
    last,
    m,
    tail: ys.slice(Math.max(0, ys.length - m)),
  };
}

/**
 * cycles.no-slowdown: fail when Sen's slope interval of per-cycle wall_tps lies wholly below zero AND the last cycles'
 * median is below (1 − δ) of the first cycles' median AND the drop persists (no one of the last cycles is back within
 * δ/2 of the start: a decay does not recover, a burst of load on a shared machine does). Short of that: a warning
 * when the evidence is borderline, else a pass.
 */
export function gradeNoSlowdown(input: TrendInput): Verdict {
  const th = input.thresholds;
  const points = cycleCurve(input.cycles);
  const t = trendOf(points, 'wallTps', th.alpha);
  const ratio = t.first !== undefined && t.last !== undefined && t.first > 0 ? t.last / t.first : undefined;
  const metrics = {
    cycles: points,
    slopeTpsPerCycle: t.slope,
    slopeCI: [t.low, t.high],
    firstMedianTps: t.first,
    lastMedianTps: t.last,
    lastOverFirst: ratio,
    endCycles: t.m,
    delta: th.relative,
    alpha: th.alpha,
    loopDelay: input.loop,
  };
  const why = starved(input.loop, th.starvedLoopP99Ms);
  if (why) return inconclusive(why, metrics);
  if (t.ys.length < th.minCycles || t.low === undefined || t.high === undefined || ratio === undefined)
    return inconclusive(
      `only ${t.ys.length} cycle(s) with a measurable wall_tps (need ${th.minCycles}, and enough for Sen's ${pct(1 - th.alpha)} interval: 5 at least)`,
      metrics,
    );
  const figures = `per-cycle wall_tps ${t.ys.map((y) => fmt(y, 1)).join(', ')} tok/s; Sen slope ${fmt(t.slope)} tok/s per cycle (${pct(1 - th.alpha)} CI ${fmt(t.low)} … ${fmt(t.high)}); median of the last ${t.m} cycles ${fmt(t.last, 1)} vs first ${t.m} ${fmt(t.first, 1)} tok/s (${pct(ratio)})`;
  const slopeBelow = t.high < 0;
  const bigDrop = ratio < 1 - th.relative;
  const persists = Math.max(...t.tail) < (1 - th.relative / 2) * t.first!;
  const busier = (slopeBelow || bigDrop) && ratio > 0 ? contention(points, t.m, 1 / ratio) : undefined;
  if (busier) return inconclusive(`${busier}: ${figures}`, metrics);
  if (slopeBelow && bigDrop && persists) {
    return fail(
      {
        requirement:
          'Throughput MUST NOT decay over repeated cycles of the same workload (slowdown over cycles: mlx-vlm went 790 → 3.5 tok/s as garbage piled up).',
        expected: `Sen's slope interval of per-cycle wall_tps not wholly below zero, or the last cycles' median ≥ ${pct(1 - th.relative)} of the first cycles'`,
        actual: `per-cycle wall_tps keeps falling: slope ${fmt(t.slope)} tok/s per cycle, CI ${fmt(t.low)} … ${fmt(t.high)} (wholly below zero); last ${t.m} cycles at ${pct(ratio)} of the first ${t.m} (limit ${pct(1 - th.relative)})`,
        violations: [figures],
      },
      metrics,
    );
  }
  if ((slopeBelow && ratio < 1 - th.relative / 2) || bigDrop) {
    // Clear only when the slope interval itself lies below zero; a drop of the end medians alone is a point estimate.
    const v = warn(
      `borderline slowdown over cycles (failing needs a slope interval below zero, a drop past ${pct(th.relative)}, and no recovery in the last ${t.m} cycles): ${figures}`,
      metrics,
    );
    return slopeBelow ? v : { ...v, borderline: true };
  }
  return pass(`no slowdown over ${t.ys.length} cycles: ${figures}`, metrics);
}

/**
 * cycles.ttft-stable: fail when Sen's slope interval of per-cycle median TTFT lies wholly above zero AND the last cycles'
 * median exceeds the first cycles' by more than γ relative and `absolute` ms AND the growth persists (each of the last
 * cycles at least half that growth). Short of that: a warning when borderline, else a pass.
 */
export function gradeTtftStable(input: TrendInput): Verdict {
  const th = input.thresholds;
  const points = cycleCurve(input.cycles);
  const t = trendOf(points, 'ttftMs', th.alpha);
  const growth = t.first !== undefined && t.last !== undefined ? t.last - t.first : undefined;
  const rel = growth !== undefined && t.first !== undefined && t.first > 0 ? growth / t.first : undefined;
  const metrics = {
    cycles: points,
    slopeMsPerCycle: t.slope,
    slopeCI: [t.low, t.high],
    firstMedianTtftMs: t.first,
    lastMedianTtftMs: t.last,
    growthMs: growth,
    relativeGrowth: rel,
    gamma: th.relative,
    floorMs: th.absolute,
    loopDelay: input.loop,
  };
  const why = starved(input.loop, th.starvedLoopP99Ms);
  if (why) return inconclusive(why, metrics);
  if (
    t.ys.length < th.minCycles ||
    t.low === undefined ||
    t.high === undefined ||
    growth === undefined ||
    rel === undefined
  )
    return inconclusive(`only ${t.ys.length} cycle(s) with a measurable TTFT (need ${th.minCycles})`, metrics);
  const figures = `per-cycle median TTFT ${t.ys.map((y) => fmt(y, 1)).join(', ')} ms; Sen slope ${fmt(t.slope)} ms per cycle (CI ${fmt(t.low)} … ${fmt(t.high)}); last ${t.m} cycles ${fmt(t.last, 1)} ms vs first ${t.m} ${fmt(t.first, 1)} ms`;
  const slopeAbove = t.low > 0;
  const big = rel > th.relative && growth > th.absolute;
  const persists = Math.min(...t.tail) - t.first! > Math.max(th.absolute / 2, (th.relative / 2) * t.first!);
  const busier = (slopeAbove || big) && t.first! > 0 ? contention(points, t.m, t.last! / t.first!) : undefined;
  if (busier) return inconclusive(`${busier}: ${figures}`, metrics);
  if (slopeAbove && big && persists) {
    return fail(
      {
        requirement:
          'Time to first token MUST NOT grow over repeated cycles of the same workload (TTFT growing over cycles: a request waits longer the longer the server runs).',
        expected: `Sen's slope interval of per-cycle median TTFT not wholly above zero, or growth of the last cycles' median ≤ ${pct(th.relative)} and ≤ ${fmt(th.absolute)} ms`,
        actual: `TTFT keeps growing: slope ${fmt(t.slope)} ms per cycle, CI ${fmt(t.low)} … ${fmt(t.high)} (wholly above zero); last cycles ${fmt(t.last, 1)} ms vs first ${fmt(t.first, 1)} ms (+${fmt(growth)} ms, +${pct(rel)})`,
        violations: [figures],
      },
      metrics,
    );
  }
  if ((slopeAbove && rel > th.relative / 2 && growth > th.absolute / 2) || big) {
    // Clear only when the slope interval itself lies above zero; growth of the end medians alone is a point estimate.
    const v = warn(`borderline TTFT growth over cycles: ${figures}`, metrics);
    return slopeAbove ? v : { ...v, borderline: true };
  }
  return pass(`TTFT stable over ${t.ys.length} cycles: ${figures}`, metrics);
}

/**
 * Sequential rule of the shared cycles run (pure, so the simulation replays it): after the first K cycles, add cycles
 * while throughput or TTFT does not yet look clean (a failure or a borderline warning, not an inconclusive result),
 * up to the run's maximum. A real decay keeps going and is confirmed on more cycles; a transient burst of load on a
 * shared machine recovers, and the longer series no longer shows a slope and a drop together.
 */
export function cyclesUndecided(input: {
  cycles: readonly CycleSample[];
  slowdown: TrendThresholds;
  ttft: TrendThresholds;
}): boolean {
  const open = (v: Verdict) => v.outcome === 'fail' || v.outcome === 'warn';
  return (
    open(gradeNoSlowdown({ cycles: input.cycles, thresholds: input.slowdown })) ||
    open(gradeTtftStable({ cycles: input.cycles, thresholds: input.ttft }))
  );
}

export interface StallRequest {
  cycle: number;
  e2eMs?: number;
  /** Gaps between successive token-bearing events (ms). */
  itlMs: readonly number[];
  ttftMs?: number;
}

interface StallThresholds {
  /** A stall is at least this long (ms) … */
  stallMinMs: number;
  /** … and at least this many times the median token gap. */
  stallFactor: number;
  /** Stalled requests needed to call it recurring. */
  minRecurrences: number;
  starvedLoopP99Ms: number;
}

/**
 * cycles.no-stalls: a request stalled when its largest token gap or its TTFT (each against the run's median; e2e for a
 * request without token gaps) exceeds the median by at least max(stallMinMs, stallFactor × median gap). A pause is one
 * long silence: the sum of many small delays in e2e is load, not a stall, and is not counted on a stream. Recurring
 * (≥ minRecurrences stalled requests in ≥ 2 cycles) fails; two is inconclusive; one is a pass (one pause is no pattern).
 * The e2e p99/p50 ratio is reported beside it.
 */
export function gradeNoStalls(input: {
  requests: readonly StallRequest[];
  loop?: LoopDelay;
  thresholds: StallThresholds;
}): Verdict {
  const th = input.thresholds;
  const allGaps = input.requests.flatMap((r) => r.itlMs);
  const medGap = median(allGaps);
  const medE2e = median(input.requests.map((r) => r.e2eMs));
  const medTtft = median(input.requests.map((r) => r.ttftMs));
  const limit = Math.max(th.stallMinMs, th.stallFactor * (medGap ?? 0));
  const stalls: { index: number; cycle: number; excessMs: number; where: string }[] = [];
  input.requests.forEach((r, index) => {
    let worst = 0;
    let where = '';
    const maxGap = r.itlMs.length ? Math.max(...r.itlMs) : undefined;
    if (maxGap !== undefined && medGap !== undefined && maxGap - medGap > worst) {
      worst = maxGap - medGap;
      where = `token gap ${fmt(maxGap)} ms`;
    }
    if (r.ttftMs !== undefined && medTtft !== undefined && r.ttftMs - medTtft > worst) {
      worst = r.ttftMs - medTtft;
      where = `TTFT ${fmt(r.ttftMs)} ms`;
    }
    // e2e only where there are no token gaps to read: on a stream, many small delays add up without any pause.
    if (r.itlMs.length === 0 && r.e2eMs !== undefined && medE2e !== undefined && r.e2eMs - medE2e > worst) {
      worst = r.e2eMs - medE2e;
      where = `e2e ${fmt(r.e2eMs)} ms`;
    }
    if (worst >= limit) stalls.push({ index, cycle: r.cycle, excessMs: worst, where });
  });
  const e2e = summarize(input.requests.map((r) => r.e2eMs));
  const maxGaps = input.requests.map((r) => (r.itlMs.length ? Math.max(...r.itlMs) : undefined));
  const cyclesHit = new Set(stalls.map((s) => s.cycle));
  const metrics = {
    requests: input.requests.length,
    medianGapMs: medGap,
    largestGapMs: quantile(maxGaps, 1),
    maxGapPerRequestMs: maxGaps,
    e2e,
    e2eP99OverP50: e2e.p99 !== undefined && e2e.p50 ? e2e.p99 / e2e.p50 : undefined,
    stallLimitMs: limit,
    stalls,
    stalledCycles: [...cyclesHit],
    loopDelay: input.loop,
  };
  const why = starved(input.loop, th.starvedLoopP99Ms);
  if (why) return inconclusive(why, metrics);
  if (medGap === undefined || input.requests.length < 2 * th.minRecurrences)
    return inconclusive(
      `too few streamed requests (${input.requests.length}) with token gaps to judge recurrence`,
      metrics,
    );
  const list = stalls.map(
    (s) => `request ${s.index + 1} (cycle ${s.cycle}): ${s.where}, ${fmt(s.excessMs)} ms over the median`,
  );
  const figures = `median token gap ${fmt(medGap)} ms, stall limit ${fmt(limit)} ms over the median; e2e p50 ${fmt(e2e.p50)} ms, p99 ${fmt(e2e.p99)} ms`;
  if (stalls.length >= th.minRecurrences && cyclesHit.size >= 2) {
    return fail(
      {
        requirement:
          'A server SHOULD NOT stall periodically (recurring stalls: a GC pause every n requests freezes every stream for its length).',
        expected: `fewer than ${th.minRecurrences} requests with a pause ≥ ${fmt(limit)} ms beyond the median (largest token gap, TTFT or e2e)`,
        actual: `${stalls.length} of ${input.requests.length} requests stalled, in ${cyclesHit.size} different cycles (${figures})`,
        violations: list,
      },
      metrics,
    );
  }
  if (stalls.length >= 2)
    return inconclusive(
      `${stalls.length} stalled requests (${list.join('; ')}): too few to call them recurring (${th.minRecurrences} in ≥ 2 cycles fail); ${figures}`,
      metrics,
    );
  return pass(
    `no recurring stalls in ${input.requests.length} requests${stalls.length ? ` (one isolated pause: ${list[0]})` : ''}; ${figures}`,
    metrics,
  );
}

export interface RssSample {
  /** Requests served before this sample (x axis). */
  request: number;
  rssKiB: number;
}

interface MemoryThresholds {
  /** Growth over the later half that matters (KiB). */
  minGrowthKiB: number;
  /** Leak rate that matters (KiB per request). */
  minLeakKiBPerRequest: number;
  alpha: number;
  minSamples: number;
}

/**
 * cycles.memory: caches legitimately grow to a cap, so only growth that continues in the later half of the run counts.
 * Fail when, over the later half, Sen's slope interval lies wholly above zero, the slope is at least
 * minLeakKiBPerRequest and the growth it implies is at least minGrowthKiB. Large growth without a clear slope warns.
 */
export function gradeMemory(input: { samples: readonly RssSample[]; thresholds: MemoryThresholds }): Verdict {
  const th = input.thresholds;
  const s = input.samples.filter((x) => Number.isFinite(x.rssKiB) && x.rssKiB > 0);
  const half = s.slice(Math.floor(s.length / 2));
  const ts = theilSen(
    half.map((x) => x.request),
    half.map((x) => x.rssKiB),
    { alpha: th.alpha },
  );
  const span = half.length ? half[half.length - 1].request - half[0].request : 0;
  const growth = ts.slope !== undefined ? ts.slope * span : undefined;
  const early = s.length >= 2 ? s[Math.floor(s.length / 2)].rssKiB - s[0].rssKiB : undefined;
  const metrics = {
    rss: s,
    laterHalfFrom: half[0]?.request,
    slopeKiBPerRequest: ts.slope,
    slopeCI: [ts.low, ts.high],
    laterHalfGrowthKiB: growth,
    earlyGrowthKiB: early,
    firstKiB: s[0]?.rssKiB,
    lastKiB: s[s.length - 1]?.rssKiB,
  };
  if (s.length < th.minSamples || ts.low === undefined || growth === undefined)
    return inconclusive(`only ${s.length} RSS sample(s) of the server's process tree (need ${th.minSamples})`, metrics);
  const figures = `RSS ${fmt(s[0].rssKiB / 1024, 1)} → ${fmt(s[s.length - 1].rssKiB / 1024, 1)} MiB over ${s[s.length - 1].request - s[0].request} requests; later half (from request ${half[0].request}): slope ${fmt(ts.slope)} KiB/request (CI ${fmt(ts.low)} … ${fmt(ts.high)}), ${fmt(growth / 1024, 1)} MiB`;
  const clear = ts.low > 0 && ts.slope! >= th.minLeakKiBPerRequest && growth >= th.minGrowthKiB;
  if (clear) {
    return fail(
      {
        requirement:
          "The server's memory SHOULD plateau under a steady workload (memory growing without a plateau: a buffer leaked per request ends in an out-of-memory abort).",
        expected: `in the later half of the run, RSS growth < ${fmt(th.minGrowthKiB / 1024, 1)} MiB or < ${fmt(th.minLeakKiBPerRequest)} KiB/request, or a slope interval reaching zero (caches may grow to their cap first)`,
        actual: `RSS keeps growing after the first half: ${fmt(ts.slope)} KiB per request (CI ${fmt(ts.low)} … ${fmt(ts.high)}), +${fmt(growth / 1024, 1)} MiB over the later half`,
        violations: [figures],
      },
      metrics,
    );
  }
  if (growth >= th.minGrowthKiB && ts.slope! >= th.minLeakKiBPerRequest)
    return borderline(`RSS grew in the later half but without a clear slope: ${figures}`, metrics);
  return pass(`memory plateaus: ${figures}`, metrics);
}
