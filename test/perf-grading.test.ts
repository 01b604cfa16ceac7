// The pure grading functions of the cycles and parallel families, on hand-made measurements: each verdict both ways,
// the borderline band, and the inconclusive cases (starved client, too few samples).
import { describe, expect, test } from 'vitest';
import { knownSlots } from '../lib/exchange/batching.ts';
import { recordServing } from '../lib/exchange/serving.ts';
import {
  type CycleSample,
  cycleCurve,
  endMedians,
  gradeMemory,
  gradeNoSlowdown,
  gradeNoStalls,
  gradeTtftStable,
} from '../lib/grading/cycles.ts';
import { gradeIsolation, type IsolationStream } from '../lib/grading/isolation.ts';
import {
  clientExplainsSlowdown,
  gradeNoStarvation,
  gradeScaling,
  gradeSpeedup,
  type StarvationStream,
  saturationPoint,
  serialisedPairs,
  speedupUndecided,
} from '../lib/grading/parallel.ts';
import { mulberry32 } from '../lib/measure/stats.ts';
import { freshMemory } from '../lib/model/memory.ts';
import type { Profile, ServerInfo } from '../lib/model/types.ts';

const calm = { p99Ms: 12, maxMs: 20 };
const starvedLoop = { p99Ms: 250, maxMs: 400 };
const trendTh = { relative: 0.2, absolute: 0, alpha: 0.05, minCycles: 5, starvedLoopP99Ms: 100 };
const ttftTh = { relative: 0.5, absolute: 30, alpha: 0.05, minCycles: 5, starvedLoopP99Ms: 100 };

/** K cycles of 3 requests whose wall_tps follows f(cycle) with ±1 % spread. */
function cycles(k: number, tps: (c: number) => number, ttft: (c: number) => number = () => 12): CycleSample[] {
  return Array.from({ length: k }, (_, i) => ({
    cycle: i + 1,
    wallTps: [0.99, 1, 1.01].map((f) => tps(i + 1) * f),
    ttftMs: [0.98, 1, 1.03].map((f) => ttft(i + 1) * f),
  }));
}

describe('cycles.no-slowdown', () => {
  test('flat throughput passes, with the per-cycle curve in metrics', () => {
    const v = gradeNoSlowdown({ cycles: cycles(6, () => 120), loop: calm, thresholds: trendTh });
    expect(v.outcome).toBe('pass');
    const curve = (v.metrics as { cycles: Array<{ cycle: number; wallTps: number }> }).cycles;
    expect(curve).toHaveLength(6);
    expect(curve[0]).toMatchObject({ cycle: 1, wallTps: 120 });
  });
  test('steady decay (slope CI below zero and a drop past δ) fails naming the slowdown', () => {
    const v = gradeNoSlowdown({ cycles: cycles(6, (c) => 120 / (1 + 0.25 * c)), loop: calm, thresholds: trendTh });
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('slowdown over cycles');
  });
  test('a falling slope with a small drop is only a warning', () => {
    const v = gradeNoSlowdown({ cycles: cycles(6, (c) => 120 - 3 * c), loop: calm, thresholds: trendTh });
    expect(v.outcome).toBe('warn');
    expect(v.message).toMatch(/^borderline/);
  });
  test('a drop past δ in the last cycles without a clear slope is a warning, not a failure', () => {
    const ys = [120, 60, 125, 118, 62, 119, 60, 121];
    const v = gradeNoSlowdown({ cycles: cycles(8, (c) => ys[c - 1]), loop: calm, thresholds: trendTh });
    expect(v.outcome).not.toBe('fail');
  });
  test('a drop that recovers in one of the last cycles (a burst of load) only warns', () => {
    const ys = [120, 121, 119, 86, 84, 85, 83, 121, 84];
    const v = gradeNoSlowdown({ cycles: cycles(9, (c) => ys[c - 1]), loop: calm, thresholds: trendTh });
    expect(v.outcome).toBe('warn');
    expect(v.message).toContain('no recovery in the last 3 cycles');
  });
  test('a starved client or too few cycles is inconclusive, never a failure', () => {
    expect(
      gradeNoSlowdown({ cycles: cycles(6, (c) => 120 / c), loop: starvedLoop, thresholds: trendTh }),
    ).toMatchObject({ outcome: 'inconclusive', message: expect.stringMatching(/our client was starved/) });
    expect(gradeNoSlowdown({ cycles: cycles(3, (c) => 120 / c), loop: calm, thresholds: trendTh }).outcome).toBe(
      'inconclusive',
    );
  });
  test('endMedians uses the first and last ceil(n/3) values', () => {
    expect(endMedians([1, 2, 3, 4, 5, 6])).toEqual({ m: 2, first: 1.5, last: 5.5 });
    expect(endMedians([1, 2, 3])).toEqual({ m: 2 });
    expect(cycleCurve(cycles(2, () => 10))[1]).toEqual({ cycle: 2, wallTps: 10, ttftMs: 12 });
  });
});

describe('cycles.ttft-stable', () => {
  test('stable TTFT passes; TTFT growing by 12 ms per request fails', () => {
    expect(
      gradeTtftStable({
        cycles: cycles(
          6,
          () => 120,
          () => 12,
        ),
        loop: calm,
        thresholds: ttftTh,
      }).outcome,
    ).toBe('pass');
    const v = gradeTtftStable({
      cycles: cycles(
        6,
        () => 120,
        (c) => 12 + 36 * c,
      ),
      loop: calm,
      thresholds: ttftTh,
    });
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('TTFT growing over cycles');
  });
  test('growth below the absolute floor is not a failure (jitter of a 10 ms TTFT)', () => {
    const v = gradeTtftStable({
      cycles: cycles(
        6,
        () => 120,
        (c) => 10 + 3 * c,
      ),
      loop: calm,
      thresholds: ttftTh,
    });
    expect(v.outcome).not.toBe('fail');
  });
});

describe('cycles.no-stalls', () => {
  const th = { stallMinMs: 150, stallFactor: 8, minRecurrences: 3, starvedLoopP99Ms: 100 };
  const req = (cycle: number, stall = 0) => ({
    cycle,
    e2eMs: 200 + stall,
    ttftMs: 10,
    itlMs: Array.from({ length: 23 }, (_, i) => (i === 11 ? 8 + stall : 8)),
  });
  const run = (stalled: number[]) =>
    Array.from({ length: 18 }, (_, i) => req(Math.floor(i / 3) + 1, stalled.includes(i) ? 400 : 0));
  test('no stalls passes; one isolated stall still passes', () => {
    expect(gradeNoStalls({ requests: run([]), loop: calm, thresholds: th }).outcome).toBe('pass');
    expect(gradeNoStalls({ requests: run([5]), loop: calm, thresholds: th }).outcome).toBe('pass');
  });
  test('a stall every 4th request fails naming the recurring stalls', () => {
    const v = gradeNoStalls({ requests: run([3, 7, 11, 15]), loop: calm, thresholds: th });
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('recurring stalls');
    expect(v.message).toContain('token gap');
  });
  test('two stalls are inconclusive; three in one cycle do not recur', () => {
    expect(gradeNoStalls({ requests: run([3, 9]), loop: calm, thresholds: th }).outcome).toBe('inconclusive');
    expect(gradeNoStalls({ requests: run([0, 1, 2]), loop: calm, thresholds: th }).outcome).not.toBe('fail');
  });
});

describe('cycles.memory', () => {
  const th = { minGrowthKiB: 16 * 1024, minLeakKiBPerRequest: 512, alpha: 0.05, minSamples: 8 };
  const rand = mulberry32(7);
  const noise = () => (rand() - 0.5) * 2048;
  test('growth to a plateau passes', () => {
    const samples = Array.from({ length: 20 }, (_, i) => ({
      request: i + 1,
      rssKiB: 80_000 + 20_000 * (1 - Math.exp(-i / 3)) + noise(),
    }));
    expect(gradeMemory({ samples, thresholds: th }).outcome).toBe('pass');
  });
  test('4 MiB retained per request fails', () => {
    const samples = Array.from({ length: 20 }, (_, i) => ({ request: i + 1, rssKiB: 80_000 + 4096 * i + noise() }));
    const v = gradeMemory({ samples, thresholds: th });
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('memory growing without a plateau');
  });
  test('too few samples is inconclusive', () => {
    expect(
      gradeMemory({
        samples: [
          { request: 1, rssKiB: 1 },
          { request: 2, rssKiB: 9e9 },
        ],
        thresholds: th,
      }).outcome,
    ).toBe('inconclusive');
  });
});

describe('parallel.speedup-2', () => {
  const th = { failBelow: 0.9, warnBelow: 1.3, alpha: 0.05, minReps: 5, starvedLoopP99Ms: 100 };
  const singles = [120, 121, 119, 122, 120];
  const times = (f: number) => singles.map((s, i) => s * f * (1 + (i - 2) * 0.003));
  test('real batching (1.9x) passes with the speedup figures in metrics', () => {
    const v = gradeSpeedup({ singleTps: singles, aggregateTps: times(1.9), slots: 4, loop: calm, thresholds: th });
    expect(v.outcome).toBe('pass');
    const m = (v.metrics as { speedup: { estimate: number; low: number; high: number; reps: number } }).speedup;
    expect(m.estimate).toBeCloseTo(1.9, 1);
    expect(m.low).toBeLessThanOrEqual(m.estimate);
    expect(m.high).toBeGreaterThanOrEqual(m.estimate);
    expect(m.reps).toBe(5);
  });
  test('0.85x with a tight interval fails; a serial 1.0x warns (between the bands)', () => {
    const slow = gradeSpeedup({ singleTps: singles, aggregateTps: times(0.85), slots: 4, loop: calm, thresholds: th });
    expect(slow.outcome).toBe('fail');
    expect(slow.message).toContain('parallel slowdown');
    const serial = gradeSpeedup({ singleTps: singles, aggregateTps: times(1.0), slots: 4, loop: calm, thresholds: th });
    expect(serial.outcome).toBe('warn');
    expect(serial.message).toContain('no effective batching');
  });
  test('one slot: serial is an informational pass; clearly slower than serial fails on any server (a queue scores 1.0x)', () => {
    expect(
      gradeSpeedup({ singleTps: singles, aggregateTps: times(1.0), slots: 1, loop: calm, thresholds: th }).outcome,
    ).toBe('pass');
    expect(
      gradeSpeedup({ singleTps: singles, aggregateTps: times(0.85), slots: 1, loop: calm, thresholds: th }).outcome,
    ).toBe('fail');
  });
  test('slots measured (requests served at once, no slots declared or reported): graded as slots, said measured', () => {
    const serial = gradeSpeedup({
      singleTps: singles,
      aggregateTps: times(1.0),
      slots: 4,
      slotsMeasured: true,
      loop: calm,
      thresholds: th,
    });
    expect(serial.outcome).toBe('warn');
    expect(serial.message).toContain('no effective batching (requests look serialised) with 4 slots, measured');
    const one = gradeSpeedup({
      singleTps: singles,
      aggregateTps: times(1.0),
      slots: 1,
      slotsMeasured: true,
      loop: calm,
      thresholds: th,
    });
    expect(one.message).toContain('informational (1 slot, measured, so no batching is expected)');
  });
  test('the slots a check counts on: declared or reported first, else the serving concurrency measured in the run', () => {
    const ctx = {
      memory: freshMemory(),
      runId: 'r',
      baseUrl: 'http://127.0.0.1:1',
      profile: { id: 'p' } as Profile,
      server: {} as ServerInfo,
    };
    expect(knownSlots(ctx)).toBeUndefined();
    recordServing(ctx, { how: 'serving concurrency not measured: …', reps: [] });
    expect(knownSlots(ctx)).toBeUndefined();
    recordServing(ctx, { concurrency: 1, how: 'measured (not reported): the server serves one at a time', reps: [] });
    expect(knownSlots(ctx)).toMatchObject({ value: 1, measured: true, source: /serves one at a time/ });
    expect(knownSlots({ ...ctx, profile: { id: 'p', slots: 4 } as Profile })).toEqual({
      value: 4,
      source: 'declared in profile (slots)',
    });
    // Another run's or server's measurement is not this one's.
    expect(knownSlots({ ...ctx, runId: 'other' })).toBeUndefined();
  });
  test('slots unknown: batching passes and says so, serial is INFO "serialised", a slowdown fails', () => {
    const batch = gradeSpeedup({
      singleTps: singles,
      aggregateTps: times(1.5),
      slots: undefined,
      loop: calm,
      thresholds: th,
    });
    expect([batch.outcome, batch.message]).toEqual([
      'pass',
      expect.stringContaining('batching observed at 2 concurrent'),
    ]);
    const serial = gradeSpeedup({
      singleTps: singles,
      aggregateTps: times(1.0),
      slots: undefined,
      loop: calm,
      thresholds: th,
    });
    expect([serial.outcome, serial.message]).toEqual(['pass', expect.stringContaining('informational: serialised')]);
    const slow = gradeSpeedup({
      singleTps: singles,
      aggregateTps: times(0.86),
      slots: undefined,
      loop: calm,
      thresholds: th,
    });
    expect([slow.outcome, slow.message]).toEqual([
      'fail',
      expect.stringContaining('parallel slowdown (slots unknown)'),
    ]);
  });
  test("a slowdown our own client's CPU share can explain warns, stating the shares; one it cannot explain fails", () => {
    // Client took 30 % of the machine during the pairs, 5 % alone: the server had 0.7 / 0.95 of the CPU it had alone.
    const busy = gradeSpeedup({
      singleTps: singles,
      aggregateTps: times(0.86),
      slots: undefined,
      loop: calm,
      clientCpu: { single: 0.05, pair: 0.3, cores: 2 },
      thresholds: th,
    });
    expect(busy.outcome).toBe('warn');
    expect(busy.message).toMatch(
      /possibly our own doing.*30\.0 % of the machine's CPU \(2 cores\) during the parallel requests and 5\.0 %/,
    );
    const calmCpu = gradeSpeedup({
      singleTps: singles,
      aggregateTps: times(0.86),
      slots: undefined,
      loop: calm,
      clientCpu: { single: 0.02, pair: 0.03, cores: 2 },
      thresholds: th,
    });
    expect(calmCpu.outcome).toBe('fail');
    expect(calmCpu.message).toContain('our client took 3.0 %');
    expect(clientExplainsSlowdown(0.86, 0.9, { single: 0.02, pair: 0.03, cores: 2 }).explains).toBe(false);
  });
  test('a wide interval around 0.85x is not a failure, and asks for more repetitions', () => {
    const s = [120, 60, 121, 119, 125];
    const a = [100, 103, 140, 98, 101];
    const v = gradeSpeedup({ singleTps: s, aggregateTps: a, slots: 4, loop: calm, thresholds: th });
    expect(v.outcome).toBe('warn');
    expect(speedupUndecided({ singleTps: s, aggregateTps: a, thresholds: th })).toBe(true);
    expect(speedupUndecided({ singleTps: singles, aggregateTps: times(1.9), thresholds: th })).toBe(false);
  });
  test('starved client and too few repetitions are inconclusive', () => {
    expect(
      gradeSpeedup({ singleTps: singles, aggregateTps: times(0.5), slots: 4, loop: starvedLoop, thresholds: th })
        .outcome,
    ).toBe('inconclusive');
    expect(
      gradeSpeedup({ singleTps: [120, 120], aggregateTps: [60, 60], slots: 4, loop: calm, thresholds: th }).outcome,
    ).toBe('inconclusive');
  });
});

describe('parallel.scaling', () => {
  const th = { warnBelow: 1.3, saturationGain: 1.15, starvedLoopP99Ms: 100 };
  const level = (c: number, agg: number) => ({
    concurrency: c,
    reps: [{ aggregateTps: agg, ttftMs: Array(c).fill(10 * c), perStreamTps: Array(c).fill(agg / c) }],
  });
  test('scaling passes and reports the curve and saturation point', () => {
    const v = gradeScaling({
      levels: [level(1, 120), level(2, 230), level(4, 250)],
      slots: 4,
      loop: calm,
      thresholds: th,
    });
    expect(v.outcome).toBe('pass');
    const m = v.metrics as { curve: Array<Record<string, number>>; saturationPoint: number };
    expect(m.curve[1]).toEqual({ concurrency: 2, aggregateTps: 230, ttftP50Ms: 20, ttftP99Ms: 20, perStreamTps: 115 });
    expect(m.saturationPoint).toBe(2);
  });
  test('no scaling with several slots is a raw fail (graded warn for INFO)', () => {
    const v = gradeScaling({
      levels: [level(1, 120), level(2, 121), level(4, 119)],
      slots: 4,
      loop: calm,
      thresholds: th,
    });
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('no scaling');
    expect(gradeScaling({ levels: [level(1, 120), level(2, 121)], slots: 1, loop: calm, thresholds: th }).outcome).toBe(
      'pass',
    );
  });
  test('saturationPoint is undefined while throughput still grows', () => {
    expect(
      saturationPoint(
        [
          { concurrency: 1, aggregateTps: 1 },
          { concurrency: 2, aggregateTps: 2 },
        ],
        1.15,
      ),
    ).toBeUndefined();
  });
});

describe('parallel.no-starvation', () => {
  const th = { minReps: 2, starvedLoopP99Ms: 100 };
  const stream = (first: number, last: number, extra: Partial<StarvationStream> = {}): StarvationStream => ({
    status: 200,
    firstTokenAbs: first,
    lastTokenAbs: last,
    tokens: 24,
    ...extra,
  });
  const together = () => [stream(10, 210), stream(12, 212), stream(14, 214)];
  const serial = () => [stream(10, 210), stream(220, 420), stream(430, 630)];
  test('streams that overlap pass; serialised in every repetition fails', () => {
    expect(gradeNoStarvation({ reps: [together(), together()], slots: 4, loop: calm, thresholds: th }).outcome).toBe(
      'pass',
    );
    const v = gradeNoStarvation({ reps: [serial(), serial()], slots: 4, loop: calm, thresholds: th });
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain("stream 2's first token");
    expect(serialisedPairs(serial())).toHaveLength(3);
  });
  test('serialised in only some repetitions warns', () => {
    expect(gradeNoStarvation({ reps: [serial(), together()], slots: 4, loop: calm, thresholds: th }).outcome).toBe(
      'warn',
    );
  });
  test('429/503 with Retry-After warns with the reason; without it fails', () => {
    const limited = [stream(10, 210), { status: 503, retryAfter: '1', tokens: 0 }];
    const v = gradeNoStarvation({ reps: [limited, together()], slots: 4, loop: calm, thresholds: th });
    expect(v.outcome).toBe('warn');
    expect(v.message).toContain('Retry-After 1');
    const bare = [stream(10, 210), { status: 503, tokens: 0 }];
    const f = gradeNoStarvation({ reps: [bare, together()], slots: 4, loop: calm, thresholds: th });
    expect(f.outcome).toBe('fail');
    expect(f.message).toContain('without Retry-After');
  });
});

describe('parallel.isolation', () => {
  const s = (label: string, nonce: string, text: string, extra: Partial<IsolationStream> = {}): IsolationStream => ({
    label,
    nonce,
    status: 200,
    ids: [`id-${label}`],
    models: ['m'],
    text,
    soloText: text,
    ...extra,
  });
  test('separate streams pass; a foreign id, a changed text or a foreign nonce fail', () => {
    const ok = [s('a', 'n1', 'n1 x'), s('b', 'n2', 'n2 y')];
    expect(gradeIsolation({ streams: ok, deterministic: true, model: 'm', soloEchoes: true }).outcome).toBe('pass');
    const mixed = [s('a', 'n1', 'n1 y', { soloText: 'n1 x', ids: ['id-a', 'id-b'] }), s('b', 'n2', 'n2 y')];
    const v = gradeIsolation({ streams: mixed, deterministic: true, model: 'm', soloEchoes: true });
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('differs from its solo answer');
    expect(v.message).toContain('appears in a and b');
    const nonces = [s('a', 'n1', 'n1 n2'), s('b', 'n2', 'n2')];
    expect(gradeIsolation({ streams: nonces, deterministic: false, model: 'm', soloEchoes: true }).message).toContain(
      "carries b's nonce",
    );
  });
  test('no determinism and no echo: inconclusive', () => {
    const v = gradeIsolation({
      streams: [s('a', 'n1', 'x'), s('b', 'n2', 'y')],
      deterministic: false,
      model: 'm',
      soloEchoes: false,
    });
    expect(v.outcome).toBe('inconclusive');
  });
});

describe('no-starvation is not fooled by burst delivery', () => {
  test('streams whose tokens all arrive at once are no evidence of serialisation (inconclusive, not fail)', async () => {
    const { gradeNoStarvation, arrivedInBurst } = await import('../lib/grading/parallel.ts');
    // The emu-rapid-mlx shape: four streams, each flushed in one read, a few ms apart.
    const burst = (at: number) => ({ status: 200, tokens: 24, firstTokenAbs: at, lastTokenAbs: at });
    const reps = [
      [burst(1000), burst(1011.7), burst(1017), burst(1026.7)],
      [burst(2000), burst(2008.4), burst(2022.7), burst(2030.2)],
    ];
    expect(arrivedInBurst(reps[0]![0]!)).toBe(true);
    const v = gradeNoStarvation({ reps, slots: 4, thresholds: { minReps: 2, starvedLoopP99Ms: 50 } });
    expect(v).toMatchObject({
      outcome: 'inconclusive',
      message: expect.stringMatching(/every stream's tokens arrived in one burst/),
    });
  });
  test('real serialisation (tokens spread over each stream, one after another) still fails', async () => {
    const { gradeNoStarvation } = await import('../lib/grading/parallel.ts');
    const s = (start: number) => ({ status: 200, tokens: 24, firstTokenAbs: start, lastTokenAbs: start + 190 });
    const reps = [
      [s(0), s(200), s(400)],
      [s(1000), s(1200), s(1400)],
    ];
    expect(gradeNoStarvation({ reps, slots: 4, thresholds: { minReps: 2, starvedLoopP99Ms: 50 } }).outcome).toBe(
      'fail',
    );
  });
});

describe('borderline or clear: what strict mode may fail (Verdict.borderline)', () => {
  // Strict mode fails a warn only when a confidence bound is past the warn threshold; a point estimate past it is
  // borderline and stays a warn (docs/grading.md "Timing verdicts").
  const th = { failBelow: 0.9, warnBelow: 1.3, alpha: 0.05, minReps: 5, starvedLoopP99Ms: 100 };
  const singles = [120, 121, 119, 120, 122];
  test('speedup: an interval wholly below 1.3x is clear; one reaching it is borderline', () => {
    const serial = gradeSpeedup({
      singleTps: singles,
      aggregateTps: singles.map((x) => x * 1.0),
      slots: 4,
      loop: calm,
      thresholds: th,
    });
    expect(serial).toMatchObject({ outcome: 'warn' });
    expect(serial.borderline).toBeUndefined();
    const wide = gradeSpeedup({
      singleTps: [120, 60, 121, 119, 125],
      aggregateTps: [100, 103, 140, 98, 220],
      slots: 4,
      loop: calm,
      thresholds: th,
    });
    expect(wide.outcome).toBe('warn');
    expect((wide.metrics!.speedup as { high: number }).high).toBeGreaterThanOrEqual(1.3);
    expect(wide.borderline).toBe(true);
  });
  test('cycles: a slope interval below zero is clear; a drop of the end medians alone is borderline', () => {
    const slope = gradeNoSlowdown({ cycles: cycles(6, (c) => 120 - 3 * c), loop: calm, thresholds: trendTh });
    expect(slope.outcome).toBe('warn');
    expect(slope.borderline).toBeUndefined();
    const ys = [120, 121, 119, 86, 84, 85, 83, 121, 84];
    const drop = gradeNoSlowdown({ cycles: cycles(9, (c) => ys[c - 1]), loop: calm, thresholds: trendTh });
    expect(drop.outcome).toBe('warn');
    expect(drop.borderline).toBe((drop.metrics!.slopeCI as number[])[1]! >= 0);
  });
  test('memory growth without a clear slope, and serialisation in some repetitions only, are borderline', async () => {
    const { gradeMemory } = await import('../lib/grading/cycles.ts');
    const { gradeNoStarvation } = await import('../lib/grading/parallel.ts');
    const th2 = { minGrowthKiB: 16 * 1024, minLeakKiBPerRequest: 512, alpha: 0.05, minSamples: 8 };
    const noisy = [
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 40_000, -30_000, 45_000, -28_000, 50_000, -20_000, 60_000, 10_000, 70_000, 30_000,
    ];
    const m = gradeMemory({ samples: noisy.map((d, i) => ({ request: i + 1, rssKiB: 100_000 + d })), thresholds: th2 });
    expect(m).toMatchObject({ outcome: 'warn', borderline: true });
    const stream = (a: number, b: number) => ({
      status: 200,
      tokens: 20,
      firstTokenAbs: a,
      lastTokenAbs: b,
      tokenTimes: Array.from({ length: 20 }, (_, i) => a + ((b - a) * i) / 19),
    });
    const serial = () => [stream(0, 100), stream(110, 210)];
    const together = () => [stream(0, 200), stream(5, 205)];
    const partly = gradeNoStarvation({
      reps: [serial(), together()],
      slots: 4,
      loop: calm,
      thresholds: { minReps: 2, starvedLoopP99Ms: 100 },
    });
    expect(partly).toMatchObject({ outcome: 'warn', borderline: true });
    const limited = gradeNoStarvation({
      reps: [[stream(10, 210), { status: 503, retryAfter: '1', tokens: 0 }], together()],
      slots: 4,
      loop: calm,
      thresholds: { minReps: 2, starvedLoopP99Ms: 100 },
    });
    expect(limited.outcome).toBe('warn');
    expect(limited.borderline).toBeUndefined(); // a status code is not a matter of confidence
  });
});
