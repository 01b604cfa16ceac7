// Pure grading functions for the timing verdicts of the `parallel` family.
//
// Each function takes what a check measured (plain numbers, no recordings, no clock, no I/O) plus its thresholds
// and returns the Verdict. The checks in suites/parallel.ts call exactly these, and scripts/simulate-false-failures.ts
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
import { bootstrapRatioCI, median, quantile } from '../measure/stats.ts';
import type { Verdict } from '../model/types.ts';
import { borderline, fail, fmt, inconclusive, pass, pct, warn } from '../model/verdict.ts';

// ---------------------------------------------------------------------------------------------------------------
// parallel

interface SpeedupThresholds {
  failBelow: number;
  warnBelow: number;
  alpha: number;
  minReps: number;
  starvedLoopP99Ms: number;
}

interface SpeedupInput {
  /** wall_tps of each single request (one at a time). */
  singleTps: ReadonlyArray<number | undefined>;
  /** Aggregate wall_tps of each barrier-released pair (docs/grading.md "Measuring": total tokens / (last end − first start)). */
  aggregateTps: ReadonlyArray<number | undefined>;
  /** Slots, declared, reported or measured; undefined = unknown (the measurement itself says whether requests batch). */
  slots: number | undefined;
  /** The slots were measured (requests served at once), not declared or reported: the messages say so. */
  slotsMeasured?: boolean;
  loop?: LoopDelay;
  /** Our client's share of the machine's CPU during the single and the parallel requests (lib/measure/batching.ts CpuMeter). */
  clientCpu?: { single: number; pair: number; cores: number };
  thresholds: SpeedupThresholds;
  /** Bootstrap seed (fixed, so the interval is recomputable). */
  seed?: number;
  iterations?: number;
}

/**
 * Could our own client have caused a parallel slowdown? A server that shares the machine's cores with our client had
 * (1 − pair share) of the CPU during the parallel requests and (1 − single share) during the single ones; if that
 * ratio lifts the speedup's upper bound back to the fail threshold, the slowdown may be ours.
 */
export function clientExplainsSlowdown(
  high: number,
  failBelow: number,
  cpu: SpeedupInput['clientCpu'],
): { explains: boolean; corrected?: number; text: string } {
  if (!cpu) return { explains: false, text: 'client CPU share not measured' };
  const corrected = (high * (1 - cpu.single)) / Math.max(0.05, 1 - cpu.pair);
  const text = `our client took ${pct(cpu.pair)} of the machine's CPU (${cpu.cores} cores) during the parallel requests and ${pct(cpu.single)} during the single ones`;
  return { explains: corrected >= failBelow, corrected, text };
}

/**
 * parallel.speedup-2: speedup = median aggregate wall_tps(2) / median wall_tps(1), percentile-bootstrap CI.
 * For every server, whatever its slots: fail when the CI's upper bound is below failBelow (parallel clearly slower
 * than serial) and our client's CPU share cannot explain it (warn when it can). Pass when the estimate is at least
 * warnBelow (batching). Between: with several slots a warning (no effective batching); with one slot, or slots
 * unknown, an informational pass ("serialised").
 */
export function gradeSpeedup(input: SpeedupInput): Verdict {
  const th = input.thresholds;
  const ci = bootstrapRatioCI(input.aggregateTps, input.singleTps, {
    alpha: th.alpha,
    seed: input.seed ?? 1,
    iterations: input.iterations ?? 2000,
  });
  const singles = input.singleTps.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  const aggs = input.aggregateTps.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  const metrics = {
    speedup: {
      estimate: ci.estimate,
      low: ci.low,
      high: ci.high,
      singleTps: median(singles),
      aggregateTps: median(aggs),
      reps: Math.min(singles.length, aggs.length),
    },
    singleTpsSamples: singles,
    aggregateTpsSamples: aggs,
    slots: input.slots,
    bands: { failBelow: th.failBelow, warnBelow: th.warnBelow },
    loopDelay: input.loop,
    clientCpu: input.clientCpu,
  };
  const why = starved(input.loop, th.starvedLoopP99Ms);
  if (why) return inconclusive(why, metrics);
  if (
    singles.length < th.minReps ||
    aggs.length < th.minReps ||
    ci.estimate === undefined ||
    ci.low === undefined ||
    ci.high === undefined
  )
    return inconclusive(
      `only ${singles.length} single and ${aggs.length} parallel measurement(s) (need ${th.minReps} each)`,
      metrics,
    );
  const figures = `speedup ${fmt(ci.estimate)}x (${pct(1 - th.alpha)} bootstrap CI ${fmt(ci.low)} … ${fmt(ci.high)}): aggregate ${fmt(median(aggs), 1)} tok/s for 2 together vs ${fmt(median(singles), 1)} tok/s alone, medians of ${aggs.length} and ${singles.length} repetitions`;
  const measured = input.slotsMeasured ? ', measured' : '';
  const slotText =
    input.slots === undefined ? 'slots unknown' : `${input.slots} slot${input.slots === 1 ? '' : 's'}${measured}`;
  if (ci.high < th.failBelow) {
    // A server queueing the second request scores 1.0x whatever its slots: slower than that is a defect on any server.
    const client = clientExplainsSlowdown(ci.high, th.failBelow, input.clientCpu);
    if (client.explains) {
      return warn(
        `parallel slowdown, but possibly our own doing: ${figures}; ${client.text}, so with the CPU our client took the upper bound could be ${fmt(client.corrected)} ≥ ${fmt(th.failBelow)} (${slotText})`,
        metrics,
      );
    }
    return fail(
      {
        requirement:
          'Two requests served together MUST NOT be slower in aggregate than one at a time (parallel slowdown: mlx-omni-server 0.85x); a server that queues the second request scores 1.0x.',
        expected: `speedup = aggregate wall_tps(2) / wall_tps(1) with CI upper bound ≥ ${fmt(th.failBelow)} (≥ ${fmt(th.warnBelow)} shows batching)`,
        actual: `${figures}: CI upper bound ${fmt(ci.high)} < ${fmt(th.failBelow)} — parallel slowdown (${slotText}); ${client.text}${client.corrected !== undefined ? `, which explains at most an upper bound of ${fmt(client.corrected)}` : ''}`,
      },
      metrics,
    );
  }
  if (ci.estimate >= th.warnBelow) {
    if (input.slots === undefined)
      return pass(
        `batching observed at 2 concurrent (slots unknown): ${figures}; the multi-slot checks run at 2 concurrent`,
        metrics,
      );
    return pass(`batching works: ${figures}`, metrics);
  }
  if (input.slots === undefined)
    return pass(
      `informational: serialised (slots unknown; no batching at 2 concurrent, and no slowdown): ${figures}`,
      metrics,
    );
  if (input.slots < 2)
    return pass(`informational (1 slot${measured}, so no batching is expected): ${figures}`, metrics);
  // Clear when the whole interval lies below warnBelow; an estimate below it with the interval reaching it is borderline.
  const v = warn(
    `no effective batching (requests look serialised) with ${slotText}: ${figures}; ${fmt(th.warnBelow)}x or more passes, a CI wholly below ${fmt(th.failBelow)}x fails`,
    metrics,
  );
  return ci.high < th.warnBelow ? v : { ...v, borderline: true };
}

/**
 * Sequential sampling rule of parallel.speedup-2 (pure, so the simulation replays it): after the first block of
 * repetitions, add more while the point estimate is below failBelow but the interval still reaches it (a slowdown
 * that is not yet clear), up to the check's maximum. Timing noise on a loaded machine is one-sided (delays only add
 * time), so a few more repetitions move the bootstrap bounds off a single delayed run.
 */
export function speedupUndecided(input: Omit<SpeedupInput, 'slots' | 'loop'>): boolean {
  const ci = bootstrapRatioCI(input.aggregateTps, input.singleTps, {
    alpha: input.thresholds.alpha,
    seed: input.seed ?? 1,
    iterations: input.iterations ?? 2000,
  });
  if (ci.estimate === undefined || ci.high === undefined) return false;
  return ci.estimate < input.thresholds.failBelow && ci.high >= input.thresholds.failBelow;
}

/** A parallel request the server refused (429/503), as parallel.speedup-2 names it. */
interface RefusedRequest {
  label: string;
  status?: number;
  retryAfter?: string;
}

/** parallel.speedup-2 when the server refused some of the parallel requests: no parallel speed to measure. */
export function refusedParallel(refused: readonly RefusedRequest[], total: number): Verdict {
  return inconclusive(
    `the server refused ${refused.length} of ${total} parallel request(s) (${refused.map(({ label, status, retryAfter }) => `${label}: HTTP ${status}${retryAfter ? `, Retry-After ${retryAfter}` : ''}`).join('; ')}), so no parallel speed can be measured`,
    { refused: refused.length },
  );
}

/**
 * What a graded parallel.speedup-2 says of batching where the slots are unknown: clear batching (a pass at ≥
 * `warnBelow`) lets the multi-slot checks run at 2 concurrent; anything else, none (null).
 */
export function batchingFromSpeedup(
  v: Verdict,
  warnBelow: number,
): { concurrency: number; speedup: number; low?: number; source: string } | null {
  const sp = (v.metrics as { speedup?: { estimate?: number; low?: number } } | undefined)?.speedup;
  const batches = v.outcome === 'pass' && sp?.estimate !== undefined && sp.estimate >= warnBelow;
  return batches
    ? {
        concurrency: 2,
        speedup: sp!.estimate!,
        low: sp!.low,
        source: `batching measured by parallel.speedup-2 (${fmt(sp!.estimate)}x at 2 concurrent)`,
      }
    : null;
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

interface CurvePoint {
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
export function gradeScaling(input: {
  levels: readonly ScalingLevel[];
  slots: number | undefined;
  loop?: LoopDelay;
  thresholds: { warnBelow: number; saturationGain: number; starvedLoopP99Ms: number };
}): Verdict {
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
  const best = curve.reduce<CurvePoint | undefined>(
    (b, c) =>
      c.aggregateTps !== undefined && (b?.aggregateTps === undefined || c.aggregateTps > b.aggregateTps) ? c : b,
    undefined,
  );
  const sat = saturationPoint(curve, th.saturationGain);
  const gain = base && best?.aggregateTps !== undefined ? best.aggregateTps / base : undefined;
  const metrics = {
    curve,
    saturationPoint: sat,
    bestConcurrency: best?.concurrency,
    bestGain: gain,
    slots: input.slots,
    loopDelay: input.loop,
  };
  const why = starved(input.loop, th.starvedLoopP99Ms);
  if (why) return inconclusive(why, metrics);
  const table = curve
    .map(
      (c) =>
        `${c.concurrency}: ${fmt(c.aggregateTps, 1)} tok/s aggregate, TTFT p50 ${fmt(c.ttftP50Ms)} / p99 ${fmt(c.ttftP99Ms)} ms, ${fmt(c.perStreamTps, 1)} tok/s per stream`,
    )
    .join('; ');
  if (gain === undefined) return inconclusive(`no measurable single-stream or aggregate throughput: ${table}`, metrics);
  const satText =
    sat !== undefined ? `saturates at ${sat} concurrent` : `still scaling at ${curve[curve.length - 1].concurrency}`;
  const maxC = curve[curve.length - 1].concurrency;
  if (input.slots !== undefined && input.slots >= 2 && maxC >= 2 && gain < th.warnBelow) {
    return fail(
      {
        requirement:
          'With several slots (declared, reported or measured), aggregate throughput should grow with concurrent streams (no scaling: requests are served one at a time).',
        expected: `best aggregate ≥ ${fmt(th.warnBelow)}x the single-stream figure somewhere up to ${maxC} concurrent`,
        actual: `best ${fmt(gain)}x at ${best?.concurrency} concurrent (${satText})`,
        violations: [table],
      },
      metrics,
    );
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
  /** Served as tokens that decode to no text (lib/measure/served.ts): no token times, but not a failure. */
  textless?: boolean;
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
export function serialisedPairs(
  streams: readonly StarvationStream[],
  referenceTps?: number,
): Array<{ a: number; b: number; waitedMs: number }> {
  const out: Array<{ a: number; b: number; waitedMs: number }> = [];
  streams.forEach((a, i) => {
    streams.forEach((b, j) => {
      if (i === j || a.lastTokenAbs === undefined || b.firstTokenAbs === undefined || arrivedInBurst(a, referenceTps))
        return;
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
export function gradeNoStarvation(input: {
  reps: ReadonlyArray<readonly StarvationStream[]>;
  slots: number;
  slotsSource?: string;
  loop?: LoopDelay;
  referenceTps?: number;
  thresholds: { minReps: number; starvedLoopP99Ms: number };
}): Verdict {
  const th = input.thresholds;
  const slotsText = `${input.slots} slots (${input.slotsSource ?? 'declared'})`;
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
  const limited = all.filter(
    ({ s }) => (s.status === 429 || s.status === 503) && s.retryAfter !== undefined && s.retryAfter !== '',
  );
  if (limited.length)
    return warn(
      `the server turned away ${limited.length} of ${all.length} stream(s) with HTTP ${[...new Set(limited.map(({ s }) => s.status))].join('/')} and Retry-After (${limited.map(({ s, label }) => `${label}: Retry-After ${s.retryAfter}`).join('; ')}) although ${n} ≤ ${slotsText}: at capacity, not broken`,
      metrics,
    );
  const broken = all.filter(({ s }) => s.status !== 200 || s.failure !== undefined || (s.tokens === 0 && !s.textless));
  if (broken.length) {
    return fail(
      {
        requirement: `Every one of ${n} concurrent streams (no more than the ${slotsText}) MUST be served; a server at capacity answers 429/503 with Retry-After.`,
        expected: 'HTTP 200 with generated tokens on every stream (or 429/503 with a Retry-After header)',
        actual: `${broken.length} of ${all.length} stream(s) got no tokens`,
        violations: broken.map(
          ({ s, label }) =>
            `${label}: ${s.failure ?? `HTTP ${s.status ?? 'none'}`}${s.status === 429 || s.status === 503 ? ' without Retry-After' : ''}, ${s.tokens} token event(s)`,
        ),
      },
      metrics,
    );
  }
  const why = starved(input.loop, th.starvedLoopP99Ms);
  if (why) return inconclusive(why, metrics);
  if (input.reps.length < th.minReps)
    return inconclusive(`only ${input.reps.length} repetition(s) (need ${th.minReps})`, metrics);
  const bursts = all.filter(({ s }) => arrivedInBurst(s, input.referenceTps));
  if (bursts.length === all.length)
    return inconclusive(
      `every stream's tokens arrived in one burst (${bursts.length} of ${all.length}), so arrival order says nothing about serialisation; stream.spread and metrics.gen-tps-plausible judge the bursts`,
      metrics,
    );
  const serialisedReps = perRep.filter((r) => r.pairs.length > 0);
  const describe = (r: (typeof perRep)[number], k: number) =>
    `repetition ${k + 1}: ${r.pairs
      .slice(0, 6)
      .map((p) => `stream ${p.b + 1}'s first token ${fmt(p.waitedMs)} ms after stream ${p.a + 1}'s last`)
      .join(', ')}${r.pairs.length > 6 ? `, … (${r.pairs.length} pairs)` : ''}`;
  const timeline = (r: (typeof perRep)[number]) =>
    r.streams.map((s) => `stream ${s.stream} tokens ${fmt(s.firstTokenMs)}…${fmt(s.lastTokenMs)} ms`).join(', ');
  if (serialisedReps.length === input.reps.length) {
    return fail(
      {
        requirement: `With ${n} streams (no more than the ${slotsText}), every stream MUST make progress while the others run; the server serialises requests instead.`,
        expected: "every stream's first token before every other stream's last token",
        actual: `serialised in all ${input.reps.length} repetitions: ${timeline(perRep[0])}`,
        violations: perRep.map((r, k) => describe(r, k)).filter((x) => !x.endsWith(': ')),
      },
      metrics,
    );
  }
  if (serialisedReps.length > 0)
    return borderline(
      `streams waited for each other in ${serialisedReps.length} of ${input.reps.length} repetitions (${perRep
        .map((r, k) => (r.pairs.length ? describe(r, k) : ''))
        .filter(Boolean)
        .join('; ')})`,
      metrics,
    );
  return pass(
    `all ${n} streams progressed together in ${input.reps.length} repetitions (${timeline(perRep[0])})`,
    metrics,
  );
}
