// Pure grading functions for the timing verdicts of the `cycles` and `parallel` families.
//
// Each function takes what a check measured (plain numbers, no recordings, no clock, no I/O) plus its thresholds
// and returns the Verdict. The checks in suites/cycles.ts and suites/parallel.ts call exactly these, and
// scripts/simulate-false-failures.ts feeds them 10,000 seeded simulated trials per check to measure the false-failure
// and detection rates (reports/simulation.json). Nothing here reads time or draws unseeded randomness, so a verdict
// can be recomputed from the metrics a results file keeps.
//
// Rules every function follows (design.md "Grading"):
// - fail only when a confidence bound (not a point estimate) is past the threshold, AND the effect is large enough
//   to matter; borderline evidence is `warn` with the figures;
// - a starved client (event-loop delay p99 above `starvedLoopP99Ms`) or too few samples is `inconclusive`, never fail;
// - metrics carry the figures a report plots (`cycles`, `speedup`, `curve`).
import type { Verdict } from './types.ts';
import { fail, fmt, inconclusive, pass, warn } from './messages.ts';
import { bootstrapRatioCI, median, quantile, summarize, theilSen } from './stats.ts';

export interface LoopDelay {
  p99Ms: number;
  maxMs: number;
}

function starved(loop: LoopDelay | undefined, limitMs: number): string | undefined {
  if (!loop || !(loop.p99Ms > limitMs)) return undefined;
  return `our client was starved (event-loop delay p99 ${fmt(loop.p99Ms)} ms, max ${fmt(loop.maxMs)} ms > ${fmt(limitMs)} ms): its timestamps cannot grade the server`;
}

const pct = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? 'n/a' : `${(x * 100).toFixed(1)} %`);

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
}

export interface CyclePoint {
  cycle: number;
  wallTps?: number;
  ttftMs?: number;
  rssKiB?: number;
}

/** The per-cycle curve the report plots: medians of each cycle's requests. */
export function cycleCurve(cycles: readonly CycleSample[]): CyclePoint[] {
  return cycles.map((c) => ({ cycle: c.cycle, wallTps: median(c.wallTps), ttftMs: median(c.ttftMs), ...(c.rssKiB !== undefined ? { rssKiB: c.rssKiB } : {}) }));
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

export interface TrendInput {
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
  return { xs, ys, slope: ts.slope, low: ts.low, high: ts.high, first, last, m, tail: ys.slice(Math.max(0, ys.length - m)) };
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
    return inconclusive(`only ${t.ys.length} cycle(s) with a measurable wall_tps (need ${th.minCycles}, and enough for Sen's ${pct(1 - th.alpha)} interval: 5 at least)`, metrics);
  const figures = `per-cycle wall_tps ${t.ys.map((y) => fmt(y, 1)).join(', ')} tok/s; Sen slope ${fmt(t.slope)} tok/s per cycle (${pct(1 - th.alpha)} CI ${fmt(t.low)} … ${fmt(t.high)}); median of the last ${t.m} cycles ${fmt(t.last, 1)} vs first ${t.m} ${fmt(t.first, 1)} tok/s (${pct(ratio)})`;
  const slopeBelow = t.high < 0;
  const bigDrop = ratio < 1 - th.relative;
  const persists = Math.max(...t.tail) < (1 - th.relative / 2) * t.first!;
  if (slopeBelow && bigDrop && persists) {
    return fail({
      requirement: 'Throughput MUST NOT decay over repeated cycles of the same workload (slowdown over cycles: mlx-vlm went 790 → 3.5 tok/s as garbage piled up).',
      expected: `Sen's slope interval of per-cycle wall_tps not wholly below zero, or the last cycles' median ≥ ${pct(1 - th.relative)} of the first cycles'`,
      actual: `per-cycle wall_tps keeps falling: slope ${fmt(t.slope)} tok/s per cycle, CI ${fmt(t.low)} … ${fmt(t.high)} (wholly below zero); last ${t.m} cycles at ${pct(ratio)} of the first ${t.m} (limit ${pct(1 - th.relative)})`,
      violations: [figures],
    }, metrics);
  }
  if ((slopeBelow && ratio < 1 - th.relative / 2) || bigDrop)
    return warn(`borderline slowdown over cycles (failing needs a slope interval below zero, a drop past ${pct(th.relative)}, and no recovery in the last ${t.m} cycles): ${figures}`, metrics);
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
  if (t.ys.length < th.minCycles || t.low === undefined || t.high === undefined || growth === undefined || rel === undefined)
    return inconclusive(`only ${t.ys.length} cycle(s) with a measurable TTFT (need ${th.minCycles})`, metrics);
  const figures = `per-cycle median TTFT ${t.ys.map((y) => fmt(y, 1)).join(', ')} ms; Sen slope ${fmt(t.slope)} ms per cycle (CI ${fmt(t.low)} … ${fmt(t.high)}); last ${t.m} cycles ${fmt(t.last, 1)} ms vs first ${t.m} ${fmt(t.first, 1)} ms`;
  const slopeAbove = t.low > 0;
  const big = rel > th.relative && growth > th.absolute;
  const persists = Math.min(...t.tail) - t.first! > Math.max(th.absolute / 2, (th.relative / 2) * t.first!);
  if (slopeAbove && big && persists) {
    return fail({
      requirement: 'Time to first token MUST NOT grow over repeated cycles of the same workload (TTFT growing over cycles: a request waits longer the longer the server runs).',
      expected: `Sen's slope interval of per-cycle median TTFT not wholly above zero, or growth of the last cycles' median ≤ ${pct(th.relative)} and ≤ ${fmt(th.absolute)} ms`,
      actual: `TTFT keeps growing: slope ${fmt(t.slope)} ms per cycle, CI ${fmt(t.low)} … ${fmt(t.high)} (wholly above zero); last cycles ${fmt(t.last, 1)} ms vs first ${fmt(t.first, 1)} ms (+${fmt(growth)} ms, +${pct(rel)})`,
      violations: [figures],
    }, metrics);
  }
  if ((slopeAbove && rel > th.relative / 2 && growth > th.absolute / 2) || big)
    return warn(`borderline TTFT growth over cycles: ${figures}`, metrics);
  return pass(`TTFT stable over ${t.ys.length} cycles: ${figures}`, metrics);
}

/**
 * Sequential rule of the shared cycles run (pure, so the simulation replays it): after the first K cycles, add cycles
 * while throughput or TTFT does not yet look clean (a failure or a borderline warning, not an inconclusive result),
 * up to the run's maximum. A real decay keeps going and is confirmed on more cycles; a transient burst of load on a
 * shared machine recovers, and the longer series no longer shows a slope and a drop together.
 */
export function cyclesUndecided(input: { cycles: readonly CycleSample[]; slowdown: TrendThresholds; ttft: TrendThresholds }): boolean {
  const open = (v: Verdict) => v.outcome === 'fail' || v.outcome === 'warn';
  return open(gradeNoSlowdown({ cycles: input.cycles, thresholds: input.slowdown })) || open(gradeTtftStable({ cycles: input.cycles, thresholds: input.ttft }));
}

export interface StallRequest {
  cycle: number;
  e2eMs?: number;
  /** Gaps between successive token-bearing events (ms). */
  itlMs: readonly number[];
  ttftMs?: number;
}

export interface StallThresholds {
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
export function gradeNoStalls(input: { requests: readonly StallRequest[]; loop?: LoopDelay; thresholds: StallThresholds }): Verdict {
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
    if (maxGap !== undefined && medGap !== undefined && maxGap - medGap > worst) { worst = maxGap - medGap; where = `token gap ${fmt(maxGap)} ms`; }
    if (r.ttftMs !== undefined && medTtft !== undefined && r.ttftMs - medTtft > worst) { worst = r.ttftMs - medTtft; where = `TTFT ${fmt(r.ttftMs)} ms`; }
    // e2e only where there are no token gaps to read: on a stream, many small delays add up without any pause.
    if (r.itlMs.length === 0 && r.e2eMs !== undefined && medE2e !== undefined && r.e2eMs - medE2e > worst) { worst = r.e2eMs - medE2e; where = `e2e ${fmt(r.e2eMs)} ms`; }
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
    return inconclusive(`too few streamed requests (${input.requests.length}) with token gaps to judge recurrence`, metrics);
  const list = stalls.map((s) => `request ${s.index + 1} (cycle ${s.cycle}): ${s.where}, ${fmt(s.excessMs)} ms over the median`);
  const figures = `median token gap ${fmt(medGap)} ms, stall limit ${fmt(limit)} ms over the median; e2e p50 ${fmt(e2e.p50)} ms, p99 ${fmt(e2e.p99)} ms`;
  if (stalls.length >= th.minRecurrences && cyclesHit.size >= 2) {
    return fail({
      requirement: 'A server SHOULD NOT stall periodically (recurring stalls: a GC pause every n requests freezes every stream for its length).',
      expected: `fewer than ${th.minRecurrences} requests with a pause ≥ ${fmt(limit)} ms beyond the median (largest token gap, TTFT or e2e)`,
      actual: `${stalls.length} of ${input.requests.length} requests stalled, in ${cyclesHit.size} different cycles (${figures})`,
      violations: list,
    }, metrics);
  }
  if (stalls.length >= 2)
    return inconclusive(`${stalls.length} stalled requests (${list.join('; ')}): too few to call them recurring (${th.minRecurrences} in ≥ 2 cycles fail); ${figures}`, metrics);
  return pass(`no recurring stalls in ${input.requests.length} requests${stalls.length ? ` (one isolated pause: ${list[0]})` : ''}; ${figures}`, metrics);
}

export interface RssSample {
  /** Requests served before this sample (x axis). */
  request: number;
  rssKiB: number;
}

export interface MemoryThresholds {
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
  const ts = theilSen(half.map((x) => x.request), half.map((x) => x.rssKiB), { alpha: th.alpha });
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
    return fail({
      requirement: 'The server\'s memory SHOULD plateau under a steady workload (memory growing without a plateau: a buffer leaked per request ends in an out-of-memory abort).',
      expected: `in the later half of the run, RSS growth < ${fmt(th.minGrowthKiB / 1024, 1)} MiB or < ${fmt(th.minLeakKiBPerRequest)} KiB/request, or a slope interval reaching zero (caches may grow to their cap first)`,
      actual: `RSS keeps growing after the first half: ${fmt(ts.slope)} KiB per request (CI ${fmt(ts.low)} … ${fmt(ts.high)}), +${fmt(growth / 1024, 1)} MiB over the later half`,
      violations: [figures],
    }, metrics);
  }
  if (growth >= th.minGrowthKiB && ts.slope! >= th.minLeakKiBPerRequest)
    return warn(`RSS grew in the later half but without a clear slope: ${figures}`, metrics);
  return pass(`memory plateaus: ${figures}`, metrics);
}

// ---------------------------------------------------------------------------------------------------------------
// parallel

export interface SpeedupThresholds {
  failBelow: number;
  warnBelow: number;
  alpha: number;
  minReps: number;
  starvedLoopP99Ms: number;
}

export interface SpeedupInput {
  /** wall_tps of each single request (one at a time). */
  singleTps: ReadonlyArray<number | undefined>;
  /** Aggregate wall_tps of each barrier-released pair (design.md: total tokens / (last end − first start)). */
  aggregateTps: ReadonlyArray<number | undefined>;
  /** Declared slots: 1 makes the verdict informational (never a failure). */
  slots: number;
  loop?: LoopDelay;
  thresholds: SpeedupThresholds;
  /** Bootstrap seed (fixed, so the interval is recomputable). */
  seed?: number;
  iterations?: number;
}

/**
 * parallel.speedup-2: speedup = median aggregate wall_tps(2) / median wall_tps(1), percentile-bootstrap CI.
 * Fail when the CI's upper bound is below failBelow (parallel clearly slower than serial); pass when the estimate is at
 * least warnBelow; warn between (no effective batching). With one declared slot the verdict is informational: pass,
 * or warn when parallel is clearly slower.
 */
export function gradeSpeedup(input: SpeedupInput): Verdict {
  const th = input.thresholds;
  const ci = bootstrapRatioCI(input.aggregateTps, input.singleTps, { alpha: th.alpha, seed: input.seed ?? 1, iterations: input.iterations ?? 2000 });
  const singles = input.singleTps.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  const aggs = input.aggregateTps.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  const metrics = {
    speedup: { estimate: ci.estimate, low: ci.low, high: ci.high, singleTps: median(singles), aggregateTps: median(aggs), reps: Math.min(singles.length, aggs.length) },
    singleTpsSamples: singles,
    aggregateTpsSamples: aggs,
    slots: input.slots,
    bands: { failBelow: th.failBelow, warnBelow: th.warnBelow },
    loopDelay: input.loop,
  };
  const why = starved(input.loop, th.starvedLoopP99Ms);
  if (why) return inconclusive(why, metrics);
  if (singles.length < th.minReps || aggs.length < th.minReps || ci.estimate === undefined || ci.low === undefined || ci.high === undefined)
    return inconclusive(`only ${singles.length} single and ${aggs.length} parallel measurement(s) (need ${th.minReps} each)`, metrics);
  const figures = `speedup ${fmt(ci.estimate)}x (${pct(1 - th.alpha)} bootstrap CI ${fmt(ci.low)} … ${fmt(ci.high)}): aggregate ${fmt(median(aggs), 1)} tok/s for 2 together vs ${fmt(median(singles), 1)} tok/s alone, medians of ${aggs.length} and ${singles.length} repetitions`;
  if (input.slots < 2) {
    if (ci.high < th.failBelow) return warn(`informational (profile declares 1 slot): parallel is clearly slower than serial: ${figures}`, metrics);
    return pass(`informational (profile declares 1 slot, so no batching is expected): ${figures}`, metrics);
  }
  if (ci.high < th.failBelow) {
    return fail({
      requirement: 'Two requests served together MUST NOT be slower in aggregate than one at a time (parallel slowdown: mlx-omni-server 0.85x).',
      expected: `speedup = aggregate wall_tps(2) / wall_tps(1) with CI upper bound ≥ ${fmt(th.failBelow)} (≥ ${fmt(th.warnBelow)} for a pass)`,
      actual: `${figures}: CI upper bound ${fmt(ci.high)} < ${fmt(th.failBelow)} — parallel slowdown`,
    }, metrics);
  }
  if (ci.estimate < th.warnBelow)
    return warn(`no effective batching (requests look serialised): ${figures}; ${fmt(th.warnBelow)}x or more passes, a CI wholly below ${fmt(th.failBelow)}x fails`, metrics);
  return pass(`batching works: ${figures}`, metrics);
}

/**
 * Sequential sampling rule of parallel.speedup-2 (pure, so the simulation replays it): after the first block of
 * repetitions, add more while the point estimate is below failBelow but the interval still reaches it (a slowdown
 * that is not yet clear), up to the check's maximum. Timing noise on a loaded machine is one-sided (delays only add
 * time), so a few more repetitions move the bootstrap bounds off a single delayed run.
 */
export function speedupUndecided(input: Omit<SpeedupInput, 'slots' | 'loop'>): boolean {
  const ci = bootstrapRatioCI(input.aggregateTps, input.singleTps, { alpha: input.thresholds.alpha, seed: input.seed ?? 1, iterations: input.iterations ?? 2000 });
  if (ci.estimate === undefined || ci.high === undefined) return false;
  return ci.estimate < input.thresholds.failBelow && ci.high >= input.thresholds.failBelow;
}

export interface ScalingRep {
  aggregateTps?: number;
  ttftMs: ReadonlyArray<number | undefined>;
  perStreamTps: ReadonlyArray<number | undefined>;
}

export interface ScalingLevel {
  concurrency: number;
  reps: readonly ScalingRep[];
}

export interface CurvePoint {
  concurrency: number;
  aggregateTps?: number;
  ttftP50Ms?: number;
  ttftP99Ms?: number;
  perStreamTps?: number;
}

/** Smallest concurrency after which aggregate throughput grows by less than `gain` (e.g. 1.1); undefined if it still grows. */
export function saturationPoint(curve: readonly CurvePoint[], gain: number): number | undefined {
  for (let i = 0; i + 1 < curve.length; i++) {
    const a = curve[i].aggregateTps;
    const b = curve[i + 1].aggregateTps;
    if (a !== undefined && b !== undefined && b < gain * a) return curve[i].concurrency;
  }
  return undefined;
}

/**
 * parallel.scaling (INFO): the curve; raw `fail` (graded warn, INFO never fails) when the best aggregate throughput is
 * below warnBelow × the single-stream figure although the profile declares several slots.
 */
export function gradeScaling(input: { levels: readonly ScalingLevel[]; slots: number; loop?: LoopDelay; thresholds: { warnBelow: number; saturationGain: number; starvedLoopP99Ms: number } }): Verdict {
  const th = input.thresholds;
  const curve: CurvePoint[] = input.levels.map((l) => {
    const ttfts = l.reps.flatMap((r) => r.ttftMs);
    return {
      concurrency: l.concurrency,
      aggregateTps: median(l.reps.map((r) => r.aggregateTps)),
      ttftP50Ms: quantile(ttfts, 0.5),
      ttftP99Ms: quantile(ttfts, 0.99),
      perStreamTps: median(l.reps.flatMap((r) => r.perStreamTps)),
    };
  });
  const base = curve.find((c) => c.concurrency === 1)?.aggregateTps;
  const best = curve.reduce<CurvePoint | undefined>((b, c) => (c.aggregateTps !== undefined && (b?.aggregateTps === undefined || c.aggregateTps > b.aggregateTps) ? c : b), undefined);
  const sat = saturationPoint(curve, th.saturationGain);
  const gain = base && best?.aggregateTps !== undefined ? best.aggregateTps / base : undefined;
  const metrics = { curve, saturationPoint: sat, bestConcurrency: best?.concurrency, bestGain: gain, slots: input.slots, loopDelay: input.loop };
  const why = starved(input.loop, th.starvedLoopP99Ms);
  if (why) return inconclusive(why, metrics);
  const table = curve.map((c) => `${c.concurrency}: ${fmt(c.aggregateTps, 1)} tok/s aggregate, TTFT p50 ${fmt(c.ttftP50Ms)} / p99 ${fmt(c.ttftP99Ms)} ms, ${fmt(c.perStreamTps, 1)} tok/s per stream`).join('; ');
  if (gain === undefined) return inconclusive(`no measurable single-stream or aggregate throughput: ${table}`, metrics);
  const satText = sat !== undefined ? `saturates at ${sat} concurrent` : `still scaling at ${curve[curve.length - 1].concurrency}`;
  const maxC = curve[curve.length - 1].concurrency;
  if (input.slots >= 2 && maxC >= 2 && gain < th.warnBelow) {
    return fail({
      requirement: 'With several declared slots, aggregate throughput should grow with concurrent streams (no scaling: requests are served one at a time).',
      expected: `best aggregate ≥ ${fmt(th.warnBelow)}x the single-stream figure somewhere up to ${maxC} concurrent`,
      actual: `best ${fmt(gain)}x at ${best?.concurrency} concurrent (${satText})`,
      violations: [table],
    }, metrics);
  }
  return pass(`best ${fmt(gain)}x at ${best?.concurrency} concurrent, ${satText}: ${table}`, metrics);
}

export interface StarvationStream {
  status?: number;
  retryAfter?: string;
  /** Transport failure (reset, timeout), if any. */
  failure?: string;
  /** performance.now() of the first / last token-bearing event. */
  firstTokenAbs?: number;
  lastTokenAbs?: number;
  tokens: number;
}

/**
 * A stream whose tokens all arrived at once: three times faster than the server generates them (`referenceTps`, the
 * decode rate measured on this server's single streams), or under 0.5 ms per token event when that is unknown. Its
 * "last token" marks when the server flushed, not when it finished generating, so it is no evidence of serialisation
 * (stream.spread judges bursts).
 */
export function arrivedInBurst(s: StarvationStream, referenceTps?: number): boolean {
  if (s.firstTokenAbs === undefined || s.lastTokenAbs === undefined || s.tokens < 4) return false;
  const msPerToken = referenceTps !== undefined && referenceTps > 0 ? 1000 / (3 * referenceTps) : 0.5;
  return s.lastTokenAbs - s.firstTokenAbs < msPerToken * s.tokens;
}

/** Pairs (a, b) where stream b's first token came only after stream a's last: b waited for a to finish. */
export function serialisedPairs(streams: readonly StarvationStream[], referenceTps?: number): Array<{ a: number; b: number; waitedMs: number }> {
  const out: Array<{ a: number; b: number; waitedMs: number }> = [];
  streams.forEach((a, i) => {
    streams.forEach((b, j) => {
      if (i === j || a.lastTokenAbs === undefined || b.firstTokenAbs === undefined || arrivedInBurst(a, referenceTps)) return;
      if (b.firstTokenAbs > a.lastTokenAbs) out.push({ a: i, b: j, waitedMs: b.firstTokenAbs - a.lastTokenAbs });
    });
  });
  return out;
}

/**
 * parallel.no-starvation: N ≤ slots streams released together must all make progress. A repetition is serialised when
 * some stream's first token came only after another stream's last. Fail when every repetition (at least 2) is
 * serialised, warn when some are; 429/503 with Retry-After is a warning with the reason; other errors fail.
 */
export function gradeNoStarvation(input: { reps: ReadonlyArray<readonly StarvationStream[]>; slots: number; loop?: LoopDelay; referenceTps?: number; thresholds: { minReps: number; starvedLoopP99Ms: number } }): Verdict {
  const th = input.thresholds;
  const n = input.reps[0]?.length ?? 0;
  const perRep = input.reps.map((streams) => {
    const t0 = Math.min(...streams.map((s) => s.firstTokenAbs ?? Infinity));
    return {
      pairs: serialisedPairs(streams, input.referenceTps),
      streams: streams.map((s, i) => ({
        stream: i + 1,
        status: s.status,
        tokens: s.tokens,
        firstTokenMs: s.firstTokenAbs !== undefined && Number.isFinite(t0) ? s.firstTokenAbs - t0 : undefined,
        lastTokenMs: s.lastTokenAbs !== undefined && Number.isFinite(t0) ? s.lastTokenAbs - t0 : undefined,
      })),
    };
  });
  const metrics = { streams: n, slots: input.slots, reps: perRep, loopDelay: input.loop };
  const all = input.reps.flatMap((r, k) => r.map((s, i) => ({ s, label: `repetition ${k + 1}, stream ${i + 1}` })));
  const limited = all.filter(({ s }) => (s.status === 429 || s.status === 503) && s.retryAfter !== undefined && s.retryAfter !== '');
  if (limited.length)
    return warn(`the server turned away ${limited.length} of ${all.length} stream(s) with HTTP ${[...new Set(limited.map(({ s }) => s.status))].join('/')} and Retry-After (${limited.map(({ s, label }) => `${label}: Retry-After ${s.retryAfter}`).join('; ')}) although ${n} ≤ ${input.slots} declared slots: at capacity, not broken`, metrics);
  const broken = all.filter(({ s }) => s.status !== 200 || s.failure !== undefined || s.tokens === 0);
  if (broken.length) {
    return fail({
      requirement: `Every one of ${n} concurrent streams (no more than the ${input.slots} declared slots) MUST be served; a server at capacity answers 429/503 with Retry-After.`,
      expected: 'HTTP 200 with generated tokens on every stream (or 429/503 with a Retry-After header)',
      actual: `${broken.length} of ${all.length} stream(s) got no tokens`,
      violations: broken.map(({ s, label }) => `${label}: ${s.failure ?? `HTTP ${s.status ?? 'none'}`}${s.status === 429 || s.status === 503 ? ' without Retry-After' : ''}, ${s.tokens} token event(s)`),
    }, metrics);
  }
  const why = starved(input.loop, th.starvedLoopP99Ms);
  if (why) return inconclusive(why, metrics);
  if (input.reps.length < th.minReps) return inconclusive(`only ${input.reps.length} repetition(s) (need ${th.minReps})`, metrics);
  const bursts = all.filter(({ s }) => arrivedInBurst(s, input.referenceTps));
  if (bursts.length === all.length)
    return inconclusive(`every stream's tokens arrived in one burst (${bursts.length} of ${all.length}), so arrival order says nothing about serialisation; stream.spread and metrics.gen-tps-plausible judge the bursts`, metrics);
  const serialisedReps = perRep.filter((r) => r.pairs.length > 0);
  const describe = (r: (typeof perRep)[number], k: number) =>
    `repetition ${k + 1}: ${r.pairs.slice(0, 6).map((p) => `stream ${p.b + 1}'s first token ${fmt(p.waitedMs)} ms after stream ${p.a + 1}'s last`).join(', ')}${r.pairs.length > 6 ? `, … (${r.pairs.length} pairs)` : ''}`;
  const timeline = (r: (typeof perRep)[number]) => r.streams.map((s) => `stream ${s.stream} tokens ${fmt(s.firstTokenMs)}…${fmt(s.lastTokenMs)} ms`).join(', ');
  if (serialisedReps.length === input.reps.length) {
    return fail({
      requirement: `With ${n} streams (no more than the ${input.slots} declared slots), every stream MUST make progress while the others run; the server serialises requests instead.`,
      expected: 'every stream\'s first token before every other stream\'s last token',
      actual: `serialised in all ${input.reps.length} repetitions: ${timeline(perRep[0])}`,
      violations: perRep.map((r, k) => describe(r, k)).filter((x) => !x.endsWith(': ')),
    }, metrics);
  }
  if (serialisedReps.length > 0)
    return warn(`streams waited for each other in ${serialisedReps.length} of ${input.reps.length} repetitions (${perRep.map((r, k) => (r.pairs.length ? describe(r, k) : '')).filter(Boolean).join('; ')})`, metrics);
  return pass(`all ${n} streams progressed together in ${input.reps.length} repetitions (${timeline(perRep[0])})`, metrics);
}

// ---------------------------------------------------------------------------------------------------------------
// isolation (not a timing verdict, but pure too)

export interface IsolationStream {
  label: string;
  nonce: string;
  status?: number;
  failure?: string;
  /** Distinct chunk ids seen in the stream. */
  ids: readonly string[];
  /** Distinct model names seen in the stream. */
  models: readonly string[];
  text: string;
  /** The answer the same request got alone (compared only where the profile declares determinism). */
  soloText?: string;
}

/**
 * parallel.isolation: each concurrent stream keeps one id of its own and the configured model; where the profile
 * declares determinism, each answer equals its solo answer; elsewhere each carries its own nonce and no other's.
 * When the solo answers do not echo their nonce (a model that cannot echo) and no determinism is declared: inconclusive.
 */
export function gradeIsolation(input: { streams: readonly IsolationStream[]; deterministic: boolean; model: string; soloEchoes: boolean }): Verdict {
  const { streams } = input;
  const violations: string[] = [];
  const broken = streams.filter((s) => s.status !== 200 || s.failure !== undefined);
  for (const s of broken) violations.push(`${s.label}: ${s.failure ?? `HTTP ${s.status}`}`);
  const idOwners = new Map<string, string[]>();
  for (const s of streams) {
    if (s.ids.length > 1) violations.push(`${s.label}: chunk id changes within the stream (${s.ids.slice(0, 4).map((x) => JSON.stringify(x)).join(', ')})`);
    for (const id of s.ids) idOwners.set(id, [...(idOwners.get(id) ?? []), s.label]);
    const wrongModel = s.models.filter((m) => m !== input.model);
    if (s.models.length > 1 || wrongModel.length) violations.push(`${s.label}: model ${JSON.stringify(s.models)} (expected ${JSON.stringify(input.model)} throughout)`);
  }
  for (const [id, owners] of idOwners) if (owners.length > 1) violations.push(`chunk id ${JSON.stringify(id)} appears in ${owners.join(' and ')}`);
  let mode: string;
  if (input.deterministic) {
    mode = 'each answer equals its solo answer (profile declares determinism)';
    for (const s of streams) {
      if (s.soloText === undefined) continue;
      if (s.text !== s.soloText) {
        const at = [...s.text].findIndex((c, i) => c !== [...s.soloText!][i]);
        violations.push(`${s.label}: answer differs from its solo answer at character ${at < 0 ? Math.min(s.text.length, s.soloText.length) : at}: got ${JSON.stringify(s.text.slice(0, 80))}, alone ${JSON.stringify(s.soloText.slice(0, 80))}`);
      }
    }
  } else if (input.soloEchoes) {
    mode = 'each stream carries its own nonce and no other\'s';
    for (const s of streams) {
      if (!s.text.includes(s.nonce)) violations.push(`${s.label}: its own nonce ${s.nonce} is missing from ${JSON.stringify(s.text.slice(0, 80))}`);
      for (const o of streams) if (o !== s && s.text.includes(o.nonce)) violations.push(`${s.label}: carries ${o.label}'s nonce ${o.nonce}`);
    }
  } else {
    mode = 'ids and models only';
  }
  const metrics = { streams: streams.map((s) => ({ label: s.label, status: s.status, ids: s.ids.length, models: s.models, chars: s.text.length, equalsSolo: s.soloText === undefined ? undefined : s.text === s.soloText })), mode };
  if (violations.length) {
    return fail({
      requirement: 'Concurrent streams MUST never mix: each keeps its own id, model and text (cross-stream mixing sends one user\'s tokens to another).',
      expected: `${streams.length} streams, one distinct id each, model ${JSON.stringify(input.model)}, ${mode}`,
      actual: `${violations.length} violation(s): the streams mix`,
      violations,
    }, metrics);
  }
  if (!input.deterministic && !input.soloEchoes)
    return inconclusive(`ids and models stayed per stream, but the model does not echo a nonce alone and the profile does not declare determinism, so the texts cannot be compared`, metrics);
  return pass(`${streams.length} concurrent streams stayed apart: ${mode}`, metrics);
}
