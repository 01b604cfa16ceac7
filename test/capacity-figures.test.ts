// Capacity figures in the peers' terms (issue 31): the statistics as vLLM's benchmark computes them (numpy's np.std
// and np.percentile, expected values computed with numpy 1.24), a percentile from too few requests marked as the
// maximum it is, TPOT per request, vLLM's duration and throughputs, gamma arrivals (seeded, mean rate, burstiness
// shape), the flags and their options, the CSV writer and the vLLM-named columns with the certification beside them.
// Pure: no server, well under a second.
import { describe, expect, test } from 'vitest';
import { parseCommand, UsageError } from '../cli/args.ts';
import { capacityEnvironment, runEnvironment } from '../cli/run.ts';
import { arrivalGaps, arrivalOffsets, gammaDraw } from '../lib/capacity/arrivals.ts';
import {
  CapacityFlagError,
  capacityConfig,
  parseBurstiness,
  parseConcurrencies,
  parseCount,
  parseRates,
} from '../lib/capacity/config.ts';
import { distribution, type LevelRequest, levelFigures } from '../lib/capacity/level.ts';
import { mergeCapacity } from '../lib/capacity/merge.ts';
import { csvCell, levelName, peerRow, peerRows, toCsv } from '../lib/capacity/peer-columns.ts';
import { ratePlans, sweepLevels } from '../lib/capacity/run.ts';
import type { CapacityTable } from '../lib/capacity/types.ts';
import { settingsFromEnv } from '../lib/config/settings.ts';
import type { Exchange } from '../lib/exchange/exchange.ts';
import { mean, mulberry32, quantile, std } from '../lib/measure/stats.ts';
import type { Profile } from '../lib/model/types.ts';
import { capacityLines, peerLines } from '../reporters/capacity-table.ts';
import { BURST_REASON, CLIENT_REASON, capacityTable, level } from './support/capacity-samples.ts';

describe('statistics as vLLM computes them', () => {
  const x = [12.5, 3.25, 7.0, 41.0, 9.5, 3.25, 18.75, 22.0, 5.5, 30.0, 11.0];
  test('std is the population std (np.std, ddof 0); percentiles interpolate linearly (np.percentile)', () => {
    expect(std(x)).toBeCloseTo(11.468516011417181, 12);
    expect(mean(x)).toBeCloseTo(14.886363636363637, 12);
    expect(quantile(x, 0.5)).toBe(11);
    expect(quantile(x, 0.9)).toBeCloseTo(30, 12);
    expect(quantile(x, 0.99)).toBeCloseTo(39.900000000000006, 12);
    const y = Array.from({ length: 100 }, (_, i) => (i + 1) * 1.5);
    expect(quantile(y, 0.99)).toBeCloseTo(148.515, 9);
    expect(quantile(y, 0.9)).toBeCloseTo(135.15, 9);
    expect(std(y)).toBeCloseTo(43.29910507158318, 12);
    expect(std([])).toBeUndefined();
    expect(std([5])).toBe(0);
  });

  test('a distribution records n; a p99 from fewer than 100 samples (a p90 from fewer than 10) is marked the maximum', () => {
    const d = distribution(x);
    expect(d).toMatchObject({ n: 11, p50: 11, max: 41, maxOnly: ['p99'] });
    expect(d.std).toBeCloseTo(11.468516011417181, 12);
    expect(distribution([1, 2, 3]).maxOnly).toEqual(['p90', 'p99']);
    expect(distribution(Array.from({ length: 99 }, (_, i) => i)).maxOnly).toEqual(['p99']);
    expect(distribution(Array.from({ length: 100 }, (_, i) => i)).maxOnly).toBeUndefined();
    expect(distribution([])).toEqual({ p50: null, p90: null, p99: null, n: 0, mean: null, std: null, max: null });
  });
});

/** A served streamed request: sent at `t0`, tokens at the given times (ms after t0), usage as given. */
function exchange(t0: number, tokenTimes: number[], tEnd: number, usage?: { prompt: number; completion: number }) {
  const itl = tokenTimes.slice(1).map((t, i) => t - tokenTimes[i]!);
  return {
    rec: { status: 200, t0Abs: t0, tEnd, reads: [] },
    events: {
      tokens: tokenTimes.map((t) => ({ t, text: 'x' })),
      errors: [],
      finishReasons: ['length'],
      done: true,
      ...(usage ? { usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion } } : {}),
    },
    metrics: {
      ttftMs: tokenTimes[0],
      itlMs: itl,
      e2eMs: tEnd,
      completionTokens: usage?.completion ?? tokenTimes.length,
    },
  } as unknown as Exchange;
}

describe('a level in vLLM terms', () => {
  test('TPOT per request, ITL over all gaps, duration from the level start, throughputs over it', () => {
    // Two requests: 5 tokens each (usage), TTFT 20 and 40 ms, ends at 120 and 160 ms after their sends.
    const reqs: LevelRequest[] = [
      { x: exchange(1000, [20, 40, 60, 80, 100], 120, { prompt: 10, completion: 5 }) },
      { x: exchange(1100, [40, 50, 60, 70, 80], 160, { prompt: 12, completion: 5 }) },
    ];
    const f = levelFigures(reqs, undefined, 900);
    // (e2e − TTFT) / (tokens − 1): (120 − 20) / 4 = 25, (160 − 40) / 4 = 30.
    expect(f.tpotMs).toMatchObject({ n: 2, mean: 27.5, p50: 27.5, std: 2.5, maxOnly: ['p90', 'p99'] });
    expect(f.itlMs).toMatchObject({ n: 8, mean: 15 });
    expect(f.ttftMs).toMatchObject({ n: 2, mean: 30 });
    // vLLM's duration: from the level's start (900) to the last end (1100 + 160): 0.36 s.
    expect(f.durationS).toBeCloseTo(0.36, 9);
    expect(f.totalOutputTokens).toBe(10);
    expect(f.requestThroughput).toBeCloseTo(2 / 0.36, 9);
    expect(f.outputThroughput).toBeCloseTo(10 / 0.36, 9);
    expect(f.inputThroughput).toBeCloseTo(22 / 0.36, 9);
    expect(f.totalTokenThroughput).toBeCloseTo(32 / 0.36, 9);
    // Without usage the input is unknown: no input or total token throughput rather than a guess.
    const g = levelFigures([{ x: exchange(0, [10, 20, 30], 40) }]);
    expect([g.inputThroughput, g.totalTokenThroughput, g.durationS]).toEqual([null, null, 0.04]);
  });
});

describe('gamma arrivals (vLLM get_request)', () => {
  test('seeded draws repeat; the gaps average 1/rate and their spread is 1/sqrt(burstiness)', () => {
    expect(arrivalGaps(50, 4, 0.5, 3)).toEqual(arrivalGaps(50, 4, 0.5, 3));
    expect(arrivalGaps(50, 4, 0.5, 3)).not.toEqual(arrivalGaps(50, 4, 0.5, 4));
    for (const shape of [0.25, 1, 4]) {
      const g = arrivalGaps(40_000, 5, shape, 11);
      const m = mean(g)!;
      expect(m / 200, `shape ${shape}`).toBeGreaterThan(0.97);
      expect(m / 200, `shape ${shape}`).toBeLessThan(1.03);
      // A gamma of shape k has coefficient of variation 1/sqrt(k): burstier below 1, more even above.
      expect(std(g)! / m / (1 / Math.sqrt(shape)), `shape ${shape}`).toBeGreaterThan(0.95);
      expect(std(g)! / m / (1 / Math.sqrt(shape)), `shape ${shape}`).toBeLessThan(1.05);
    }
    const rnd = mulberry32(5);
    const draws = Array.from({ length: 20_000 }, () => gammaDraw(2.5, rnd));
    expect(mean(draws)).toBeCloseTo(2.5, 1);
  });

  test('offsets: cumulated, scaled so the last starts at n/rate; constant for burstiness inf, at once for rate inf', () => {
    const o = arrivalOffsets(200, 4, 0.5, 9);
    expect(o.at(-1)).toBeCloseTo(50_000, 6);
    expect(o.every((t, i) => i === 0 || t >= o[i - 1]!)).toBe(true);
    expect(o[0]).toBeGreaterThan(0);
    expect(arrivalOffsets(4, 2, Number.POSITIVE_INFINITY)).toEqual([500, 1000, 1500, 2000]);
    expect(arrivalOffsets(3, Number.POSITIVE_INFINITY, 1)).toEqual([0, 0, 0]);
    expect(() => arrivalOffsets(3, 2, 0)).toThrow(RangeError);
  });
});

describe('the capacity flags, named as vllm bench serve names them', () => {
  test('parsers: lists, inf, counts; a bad value names the flag', () => {
    expect(parseConcurrencies('8')).toEqual([8]);
    expect(parseConcurrencies('8, 1,4,4')).toEqual([1, 4, 8]);
    expect(parseRates('2,4,inf')).toEqual([2, 4, Number.POSITIVE_INFINITY]);
    expect(parseRates('0.5,1e1,Inf')).toEqual([0.5, 10, Number.POSITIVE_INFINITY]);
    expect(parseBurstiness('inf')).toBe(Number.POSITIVE_INFINITY);
    expect(parseBurstiness('0.5')).toBe(0.5);
    expect(parseCount('200', '--num-prompts', 1)).toBe(200);
    expect(() => parseConcurrencies('0')).toThrow(/--max-concurrency: "0"/);
    expect(() => parseConcurrencies('4.5')).toThrow(CapacityFlagError);
    expect(() => parseRates('2,fast')).toThrow(/--request-rate: "fast"/);
    expect(() => parseRates('-1')).toThrow(CapacityFlagError);
    expect(() => parseBurstiness('0')).toThrow(/--burstiness/);
    expect(() => parseCount('1', '--output-len', 2)).toThrow(/--output-len needs a whole number of at least 2/);
  });

  const run = (...a: string[]) => parseCommand(['--base-url', 'http://127.0.0.1:1', ...a]);
  test('the done-when line reaches the checks through the environment', () => {
    const c = run('--capacity', '--max-concurrency', '8', '--request-rate', '2,4', '--num-prompts', '200');
    expect(c.kind).toBe('run');
    const o = (c as { options: Parameters<typeof runEnvironment>[0] }).options;
    expect(o).toMatchObject({ maxConcurrency: [8], requestRate: [2, 4], numPrompts: 200 });
    const { env } = runEnvironment(o, process.cwd());
    expect(env).toMatchObject({
      CONFORMANCE_CAPACITY: '1',
      CONFORMANCE_MAX_CONCURRENCY: '8',
      CONFORMANCE_REQUEST_RATE: '2,4',
      CONFORMANCE_NUM_PROMPTS: '200',
    });
    const all = run('--only', 'capacity', '--burstiness', 'inf', '--input-len', '32', '--output-len', '16');
    expect(runEnvironment((all as { options: Parameters<typeof runEnvironment>[0] }).options, '/').env).toMatchObject({
      CONFORMANCE_BURSTINESS: 'inf',
      CONFORMANCE_INPUT_LEN: '32',
      CONFORMANCE_OUTPUT_LEN: '16',
    });
  });

  test('usage errors: without --capacity, or a bad value, naming the flag', () => {
    expect(() => run('--max-concurrency', '8', '--num-prompts', '5')).toThrow(
      /--max-concurrency, --num-prompts shape a capacity run: give --capacity too/,
    );
    expect(() => run('--capacity', '--request-rate', '2,x')).toThrow(UsageError);
    expect(() => run('--capacity', '--request-rate', '2,x')).toThrow(/--request-rate: "x"/);
    expect(() => run('--capacity', '--num-prompts', '0')).toThrow(/--num-prompts/);
  });

  test('the programmatic API takes numbers, lists and "inf", and refuses a bad one by its option name', () => {
    expect(
      capacityEnvironment({ maxConcurrency: [1, 4], requestRate: ['inf', 3], burstiness: 'inf', numPrompts: 100 }),
    ).toEqual({
      CONFORMANCE_MAX_CONCURRENCY: '1,4',
      CONFORMANCE_REQUEST_RATE: 'inf,3',
      CONFORMANCE_BURSTINESS: 'inf',
      CONFORMANCE_NUM_PROMPTS: '100',
    });
    expect(() => capacityEnvironment({ numPrompts: 2.5 })).toThrow(/numPrompts: --num-prompts/);
  });

  test('profile values are the defaults, flags win; a list of concurrencies is each measured', () => {
    const p = {
      capacity: { maxConcurrency: [2, 8], requestRates: [1, 'inf'], numPrompts: 50, burstiness: 'inf', inputTokens: 9 },
    } as unknown as Profile;
    const fromProfile = capacityConfig(p, settingsFromEnv({}));
    expect(fromProfile).toMatchObject({
      maxConcurrency: 8,
      levels: [2, 8],
      requestRates: [1, Number.POSITIVE_INFINITY],
      numPrompts: 50,
      rateRequests: 50,
      burstiness: Number.POSITIVE_INFINITY,
      inputTokens: 9,
    });
    const flags = capacityConfig(
      p,
      settingsFromEnv({
        CONFORMANCE_MAX_CONCURRENCY: '16',
        CONFORMANCE_REQUEST_RATE: '3',
        CONFORMANCE_NUM_PROMPTS: '7',
        CONFORMANCE_BURSTINESS: '0.5',
        CONFORMANCE_INPUT_LEN: '100',
        CONFORMANCE_OUTPUT_LEN: '20',
      }),
    );
    expect(flags).toMatchObject({ maxConcurrency: 16, requestRates: [3], numPrompts: 7, burstiness: 0.5 });
    expect(flags).toMatchObject({ inputTokens: 100, outputTokens: 20, rateRequests: 7 });
    expect(flags.levels).toBeUndefined();
    expect(sweepLevels(flags)).toEqual([1, 2, 4, 8, 16]);
    expect(sweepLevels({ maxConcurrency: 6 })).toEqual([1, 2, 4, 6]);
    expect(sweepLevels(fromProfile)).toEqual([2, 8]);
  });

  test('rate runs: the rates given (Poisson unless a burstiness is), or constant and Poisson at fractions', () => {
    const cfg = capacityConfig({} as Profile, settingsFromEnv({}));
    expect(ratePlans(cfg, 10)).toEqual([
      { ratePerS: 5, burstiness: Number.POSITIVE_INFINITY },
      { ratePerS: 5, burstiness: 1 },
      { ratePerS: 9, burstiness: Number.POSITIVE_INFINITY },
      { ratePerS: 9, burstiness: 1 },
    ]);
    expect(ratePlans(cfg, 0)).toEqual([]);
    const given = capacityConfig({} as Profile, settingsFromEnv({ CONFORMANCE_REQUEST_RATE: '2,inf' }));
    expect(ratePlans(given, 0)).toEqual([
      { ratePerS: 2, burstiness: 1 },
      { ratePerS: Number.POSITIVE_INFINITY, burstiness: 1 },
    ]);
    const bursty = capacityConfig(
      {} as Profile,
      settingsFromEnv({ CONFORMANCE_REQUEST_RATE: '2', CONFORMANCE_BURSTINESS: '0.5' }),
    );
    expect(ratePlans(bursty, 0)).toEqual([{ ratePerS: 2, burstiness: 0.5 }]);
  });
});

describe('the CSV and JSON columns', () => {
  test('CSV cells are quoted where RFC 4180 needs it; empty for no value', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell(' padded')).toBe('" padded"');
    expect(csvCell(null)).toBe('');
    expect(csvCell(true)).toBe('true');
    expect(csvCell(0.1 + 0.2)).toBe('0.3');
    expect(toCsv([{ a: 1, 'b,c': 'x"y' }])).toBe('a,"b,c"\r\n1,"x""y"\r\n');
    expect(toCsv([])).toBe('');
  });

  const t: CapacityTable = capacityTable();
  test("vLLM's column names; a sweep level is its run at rate inf; rate runs keep rate, burstiness, concurrency", () => {
    const rows = peerRows(t);
    const keys = Object.keys(rows[0]!);
    for (const k of [
      'max_concurrency',
      'request_rate',
      'burstiness',
      'duration',
      'completed',
      'failed',
      'total_input_tokens',
      'total_output_tokens',
      'request_throughput',
      'output_throughput',
      'total_token_throughput',
      'max_concurrent_requests',
      'mean_ttft_ms',
      'median_ttft_ms',
      'std_ttft_ms',
      'p99_ttft_ms',
      'mean_tpot_ms',
      'p99_tpot_ms',
      'mean_itl_ms',
      'median_itl_ms',
      'p99_itl_ms',
      'mean_e2el_ms',
      'p99_e2el_ms',
    ])
      expect(keys, k).toContain(k);
    expect(rows.every((r) => Object.keys(r).join() === keys.join())).toBe(true);
    expect(rows[0]).toMatchObject({ level: '1 streams', max_concurrency: 1, request_rate: 'inf', burstiness: 1 });
    expect(rows[3]).toMatchObject({ saturation: true, median_ttft_ms: 28 });
    const rate = peerRow(
      level({
        t0: 0,
        windowMs: 1000,
        tokens: 10,
        mode: 'rate',
        ratePerS: 2,
        arrival: 'gamma',
        burstiness: 0.5,
        maxConcurrency: 8,
      }),
      t,
    );
    expect(rate).toMatchObject({
      level: '2.00 req/s gamma 0.50',
      request_rate: 2,
      burstiness: 0.5,
      max_concurrency: 8,
    });
    const constant = level({ t0: 0, windowMs: 1000, tokens: 10, mode: 'rate', ratePerS: 2, arrival: 'constant' });
    expect(peerRow(constant, t).burstiness).toBe('inf');
    const atOnce = level({ t0: 0, windowMs: 1000, tokens: 10, mode: 'rate', arrival: 'at-once', maxConcurrency: 4 });
    expect(peerRow(atOnce, t)).toMatchObject({ level: 'rate inf', request_rate: 'inf', max_concurrency: 4 });
    expect(levelName(atOnce)).toBe('rate inf');
  });

  test('certification beside every figure: a burst flags TTFT, TPOT, ITL and throughput; client-bound flags all', () => {
    const burst = level({
      t0: 0,
      windowMs: 1000,
      tokens: 10,
      concurrency: 4,
      flags: [
        { figure: 'itl', kind: 'burst', reason: BURST_REASON },
        { figure: 'tpot', kind: 'burst', reason: BURST_REASON },
        { figure: 'ttft', kind: 'burst', reason: BURST_REASON },
        { figure: 'aggregateTps', kind: 'burst', reason: BURST_REASON },
      ],
    });
    const r = peerRow(burst, t);
    expect(r).toMatchObject({ certified: false, delivery: 'burst', usage_consistent: true, client_bound: false });
    expect(String(r.flagged_columns).split(' ')).toEqual([
      'ttft',
      'tpot',
      'itl',
      'request_goodput',
      'output_throughput',
      'total_token_throughput',
      'aggregate_tps',
    ]);
    const usage = peerRow(
      level({ t0: 0, windowMs: 1000, tokens: 10, flags: [{ figure: 'usage', kind: 'usage', reason: 'u' }] }),
      t,
    );
    expect(usage).toMatchObject({ usage_consistent: false, delivery: 'streamed' });
    expect(String(usage.flagged_columns)).toMatch(/tpot.*total_output_tokens.*output_throughput/);
    const bound = peerRow(t.levels.find((l) => l.client.clientBound)!, t);
    expect(bound.client_bound).toBe(true);
    expect(String(bound.flagged_columns).split(' ')).toHaveLength(11);
    expect(String(bound.flag_reasons)).toContain(CLIENT_REASON);
  });

  test('a merged level pools n, mean and std exactly, and keeps vLLM columns', () => {
    const a = capacityTable('a');
    const b = capacityTable('b', a.levels[0]!.startedAt + 50);
    for (const [i, lv] of [...a.levels, ...b.levels].entries())
      lv.ttftMs = { ...lv.ttftMs, ...distribution(i % 2 ? [10, 20, 30] : [40, 50]) };
    const m = mergeCapacity([
      { machine: 'a', table: a },
      { machine: 'b', table: b },
    ]);
    const merged = m.levels.find((l) => l.machine === 'a+b' && l.concurrency === 2)!;
    // a's 2-stream level is index 1 (odd: 10, 20, 30), b's is index 10 (even: 40, 50): the union's n, mean and std.
    expect(merged.ttftMs).toMatchObject({ n: 5, mean: 30, max: 50 });
    expect(merged.ttftMs.std).toBeCloseTo(std([10, 20, 30, 40, 50])!, 12);
  });
});

describe('the console', () => {
  test("the peer table: a column per level, vLLM's names, flagged figures marked, a p99 of too few requests as the maximum", () => {
    const t = capacityTable();
    t.levels[0]!.ttftMs = distribution([10, 20, 30]);
    const lines = peerLines(t);
    expect(lines[1]).toMatch(/^\s+1 streams\s+2 streams/);
    const row = (k: string) => lines.find((l) => l.startsWith(`${k} `))!;
    expect(row('p99_ttft_ms')).toMatch(/^p99_ttft_ms\s+29\.8 \(~max of 3\)/);
    expect(row('mean_itl_ms')).toBeDefined();
    expect(row('request_throughput (req/s)')).toBeDefined();
    // The burst-flagged level (32 streams) marks its ITL; the client-bound one (16) marks every figure.
    expect(row('median_itl_ms')).toMatch(/ 16! +0\.02! /);
    expect(lines.join('\n')).toMatch(/a p99 needs at least 100 requests/);
    expect(capacityLines(t).join('\n')).toContain(lines[0]!);
  });
});
