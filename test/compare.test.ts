// reporters/compare.ts and `npm run compare`: outcome changes, figures beyond noise (bootstrap CI where raw samples
// exist, the runs' own intervals, else a stated tolerance), exit status of the gate.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { compareResults, directionOf, formatComparison, metricBase, outcomeChange } from '../reporters/compare.ts';
import type { CheckResult, ResultsFile } from '../reporters/results-types.ts';
import { realResultsFiles } from './support/real-results.ts';
import { sampleResults } from './support/results-samples.ts';

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

function file(checks: Partial<CheckResult>[], project = 'p'): ResultsFile {
  const base = sampleResults()[0]!;
  return {
    header: { ...base.header, project },
    checks: checks.map(
      (c) =>
        ({
          id: 'x.y',
          title: 't',
          family: 'x',
          level: 'MUST',
          outcome: 'pass',
          message: '',
          rationale: '',
          reference: '',
          ...c,
        }) as CheckResult,
    ),
    finished: { date: 'd', reason: 'passed' },
  };
}

describe('outcome changes', () => {
  test('worse outcomes are regressions, better ones improvements, skips and inconclusive neither', () => {
    const c = (outcome: CheckResult['outcome'], message = '') =>
      ({
        id: 'a.b',
        title: 't',
        family: 'a',
        level: 'MUST',
        outcome,
        message,
        rationale: '',
        reference: '',
      }) as CheckResult;
    expect(outcomeChange(c('pass'), c('fail'))?.kind).toBe('regression');
    expect(outcomeChange(c('pass'), c('error'))?.kind).toBe('regression');
    expect(outcomeChange(c('warn'), c('fail'))?.kind).toBe('regression');
    expect(outcomeChange(c('pass'), c('warn', 'SHOULD not met (fails under CONFORMANCE_STRICT=1): x'))?.kind).toBe(
      'regression',
    );
    expect(outcomeChange(c('pass'), c('inconclusive', 'client starved'))?.kind).toBe('changed');
    expect(outcomeChange(c('pass'), c('warn', 'inconclusive: a warn is a warn whatever its text'))?.kind).toBe(
      'regression',
    );
    expect(outcomeChange(c('fail'), c('pass'))?.kind).toBe('improvement');
    expect(outcomeChange(c('known'), c('known-passing'))?.kind).toBe('improvement');
    expect(outcomeChange(c('pass'), c('skip'))?.kind).toBe('changed');
    expect(outcomeChange(c('pass'), c('pass'))).toBeUndefined();
    expect(outcomeChange(undefined, c('fail'))?.kind).toBe('added');
    expect(outcomeChange(c('fail'), undefined)?.kind).toBe('removed');
  });

  test('the gate counts outcome regressions', () => {
    const r = compareResults(
      file([
        { id: 'a.b', outcome: 'pass' },
        { id: 'a.c', outcome: 'fail' },
      ]),
      file([
        { id: 'a.b', outcome: 'fail', message: 'broke\n  Expected: x' },
        { id: 'a.c', outcome: 'pass' },
      ]),
    );
    expect(r.regressions).toBe(1);
    expect(r.outcomeChanges.map((c) => [c.id, c.kind])).toEqual([
      ['a.b', 'regression'],
      ['a.c', 'improvement'],
    ]);
    const text = formatComparison(r);
    expect(text).toContain('REGRESSION  a.b [MUST]: pass → fail — broke');
    expect(text).toContain('1 regression.');
  });
});

describe('figures beyond noise', () => {
  test('names say which way is good and which figures pair with their samples', () => {
    expect(directionOf('workload.wall_tps_p50')).toBe('higher-better');
    expect(directionOf('speedup')).toBe('higher-better');
    expect(directionOf('ttft_p50_ms')).toBe('lower-better');
    expect(directionOf('evidence[].e2eMs')).toBe('lower-better');
    expect(directionOf('gap_ms')).toBe('lower-better');
    expect(directionOf('streams')).toBe('unknown'); // not a duration although it ends in "ms"
    expect(directionOf('saturationPoint')).toBe('unknown');
    expect(metricBase('wall_tps_p50')).toBe(metricBase('wallTpsSamples'));
    expect(metricBase('ttft_p50_ms')).toBe(metricBase('evidence[].ttftMs'));
    expect(metricBase('speedup.singleTps')).toBe(metricBase('singleTpsSamples'));
  });

  const steady = [50.1, 51.2, 49.8, 50.6, 50.9, 49.5, 50.3];
  test('a throughput drop shown by the raw samples is a regression (bootstrap CI)', () => {
    const slower = steady.map((x) => x * 0.7);
    const r = compareResults(
      file([{ metrics: { wall_tps_p50: 50.3, wall_tps: steady } }]),
      file([{ metrics: { wall_tps_p50: 35.2, wall_tps: slower } }]),
    );
    expect(r.metricChanges).toHaveLength(1); // the median is judged on its samples, not a second time by tolerance
    const m = r.metricChanges[0]!;
    expect(m).toMatchObject({
      id: 'x.y',
      metric: 'wall_tps',
      method: 'bootstrap',
      direction: 'higher-better',
      kind: 'regression',
      nOld: 7,
      nNew: 7,
    });
    expect(m.ratio).toBeCloseTo(0.7, 5);
    expect(m.ci!.high!).toBeLessThan(1);
    expect(r.regressions).toBe(1);
    expect(formatComparison(r)).toMatch(
      /REGRESSION  x\.y wall_tps: median 50\.3 → 35\.2 \(-30%; 95% CI -3\d% … -2\d%; n 7\/7\)/,
    );
  });

  test('noise within the samples moves nothing, even past the scalar tolerance on a single figure', () => {
    const jitter = [49.9, 51.0, 50.2, 50.7, 50.0, 49.6, 50.8];
    const r = compareResults(
      file([{ metrics: { wall_tps_p50: 50.3, wall_tps: steady } }]),
      file([{ metrics: { wall_tps_p50: 50.2, wall_tps: jitter } }]),
    );
    expect(r.metricChanges).toEqual([]);
    expect(r.regressions).toBe(0);
  });

  test('a TTFT rise in the samples is a regression, a fall an improvement; a few ms are noise', () => {
    const base = [140, 142, 141, 139, 143, 138];
    const worse = compareResults(
      file([{ metrics: { ttftSamples: base } }]),
      file([{ metrics: { ttftSamples: base.map((t) => t * 3) } }]),
    );
    expect(worse.metricChanges.map((m) => [m.metric, m.kind])).toEqual([['ttftSamples', 'regression']]);
    const better = compareResults(
      file([{ metrics: { ttftSamples: base.map((t) => t * 3) } }]),
      file([{ metrics: { ttftSamples: base } }]),
    );
    expect(better.metricChanges.map((m) => m.kind)).toEqual(['improvement']);
    expect(better.regressions).toBe(0);
    // Tripled, but by 28 ms: under minDeltaMs (timer and scheduler noise on a shared machine).
    const tiny = [14, 14.2, 14.1, 13.9, 14.3, 13.8];
    expect(
      compareResults(
        file([{ metrics: { ttftSamples: tiny } }]),
        file([{ metrics: { ttftSamples: tiny.map((t) => t * 3) } }]),
      ).metricChanges,
    ).toEqual([]);
    // Evidence timings are not samples: a check's evidence mixes requests of different kinds.
    const ev = (ms: number[]) => ms.map((t) => ({ label: 'x', ttftMs: t, e2eMs: t * 10 }));
    expect(
      compareResults(file([{ evidence: ev(base) }]), file([{ evidence: ev(base.map((t) => t * 3)) }])).metricChanges,
    ).toEqual([]);
  });

  test('per-request records under `samples` (lib/measure/workload.ts) are raw samples', () => {
    const wl = (tps: number[]) => ({
      workload: { name: 'w', wall_tps_p50: tps[2], samples: tps.map((t) => ({ wall_tps: t, counted: 32 })) },
    });
    const r = compareResults(file([{ metrics: wl(steady) }]), file([{ metrics: wl(steady.map((x) => x / 2)) }]));
    expect(r.metricChanges.map((m) => [m.metric, m.method, m.kind])).toEqual([
      ['workload.samples[].wall_tps', 'bootstrap', 'regression'],
    ]);
  });

  test('a figure with its own interval moves when the intervals do not overlap', () => {
    const sp = (estimate: number, low: number, high: number) => ({ speedup: { estimate, low, high } });
    const overlap = compareResults(file([{ metrics: sp(2.1, 1.9, 2.3) }]), file([{ metrics: sp(1.95, 1.7, 2.0) }]));
    expect(overlap.metricChanges).toEqual([]);
    const apart = compareResults(file([{ metrics: sp(2.1, 1.9, 2.3) }]), file([{ metrics: sp(1.0, 0.9, 1.1) }]));
    expect(apart.metricChanges).toMatchObject([{ metric: 'speedup', method: 'interval', kind: 'regression' }]);
  });

  test('without samples, the stated tolerance decides; our own client and configuration are not compared', () => {
    const r = compareResults(
      file([
        {
          metrics: {
            gen_tps_p50: 100,
            ttft_p50_ms: 50,
            saturationPoint: 4,
            loopDelay: { p99Ms: 2 },
            bands: { failBelow: 0.9 },
          },
        },
      ]),
      file([
        {
          metrics: {
            gen_tps_p50: 125,
            ttft_p50_ms: 200,
            saturationPoint: 16,
            loopDelay: { p99Ms: 40 },
            bands: { failBelow: 0.5 },
          },
        },
      ]),
    );
    expect(r.metricChanges.map((m) => [m.metric, m.method, m.kind])).toEqual([
      ['ttft_p50_ms', 'tolerance', 'regression'],
      ['saturationPoint', 'tolerance', 'changed'],
    ]);
    expect(r.regressions).toBe(1);
    expect(
      compareResults(file([{ metrics: { ttft_p50_ms: 50 } }]), file([{ metrics: { ttft_p50_ms: 200 } }]), {
        tolerance: 4,
      }).metricChanges,
    ).toEqual([]);
  });

  test('a summary object ({ n, p50, p90, … }) is judged by its median, on the samples when they exist', () => {
    const sum = (p50: number) => ({ n: 5, p50, p90: p50 * 2, p99: p50 * 3, min: p50 / 2, max: p50 * 4, mean: p50 });
    const noisyTails = compareResults(
      file([{ metrics: { e2eMs: sum(100) } }]),
      file([{ metrics: { e2eMs: { ...sum(105), p99: 900, max: 1000, n: 3 } } }]),
    );
    expect(noisyTails.metricChanges).toEqual([]);
    const slower = compareResults(file([{ metrics: { e2eMs: sum(100) } }]), file([{ metrics: { e2eMs: sum(150) } }]));
    expect(slower.metricChanges.map((m) => [m.metric, m.kind])).toEqual([['e2eMs.p50', 'regression']]);
    const withSamples = compareResults(
      file([{ metrics: { e2eMs: sum(100), e2eSamples: steady.map((x) => x * 2) } }]),
      file([{ metrics: { e2eMs: sum(150), e2eSamples: steady.map((x) => x * 2) } }]),
    );
    expect(withSamples.metricChanges).toEqual([]); // the samples say nothing moved; the summary is not judged again
  });

  test('across zero the sign of the difference decides', () => {
    const r = compareResults(file([{ metrics: { netTps: 0.3 } }]), file([{ metrics: { netTps: -0.2 } }]));
    expect(r.metricChanges.map((m) => [m.metric, m.kind, m.ratio])).toEqual([['netTps', 'regression', undefined]]);
    expect(formatComparison(r)).toContain('netTps: 0.3 → -0.2 (Δ -0.5; beyond ±30%');
  });

  test('extremes and derived figures are listed but never gate', () => {
    const r = compareResults(
      file([
        {
          metrics: {
            gen_tps_min: 100,
            largestGapMs: 40,
            slopeTpsPerCycle: 0.3,
            stallLimitMs: 150,
            e2eP99OverP50: 1.1,
            growthMs: -0.05,
          },
        },
      ]),
      file([
        {
          metrics: {
            gen_tps_min: 10,
            largestGapMs: 400,
            slopeTpsPerCycle: -2,
            stallLimitMs: 900,
            e2eP99OverP50: 3,
            growthMs: 150,
          },
        },
      ]),
    );
    expect(r.metricChanges.map((m) => m.kind)).toEqual([
      'changed',
      'changed',
      'changed',
      'changed',
      'changed',
      'changed',
    ]);
    expect(r.regressions).toBe(0);
    expect(formatComparison(r)).toContain('[not gated: extreme or derived figure]');
  });

  test('the same inputs give the same interval (seeded)', () => {
    const a = file([{ metrics: { wall_tps: steady } }]);
    const b = file([{ metrics: { wall_tps: steady.map((x) => x * 0.7) } }]);
    expect(compareResults(a, b).metricChanges).toEqual(compareResults(a, b).metricChanges);
  });
});

describe('odd input', () => {
  test('never throws; missing parts are noted', () => {
    for (const [o, n] of [
      [null, {}],
      [42, 'x'],
      [
        { checks: 'nope' },
        {
          header: null,
          checks: [null, { id: 7 }, { id: 'a.b', metrics: { x: [null, 'a', NaN] }, evidence: [null, 5] }],
        },
      ],
    ] as const) {
      const r = compareResults(o, n);
      expect(r.regressions).toBe(0);
      expect(formatComparison(r)).toContain('No regressions.');
    }
    expect(compareResults({}, {}).notes.join('\n')).toContain('the old file has no checks');
  });

  test('different machines and projects are called out', () => {
    const [a, b] = sampleResults();
    const r = compareResults(a, sampleResults()[2]);
    expect(r.notes.join('\n')).toMatch(/different machines/);
    expect(compareResults(a, b).notes.join('\n')).toMatch(/different projects/);
  });
});

describe('on real results files', () => {
  const real = realResultsFiles();
  test('a run compared with itself has no changes; a regressed copy is caught', () => {
    expect(real.length).toBeGreaterThan(0);
    for (const { path, data } of real) {
      const same = compareResults(data, clone(data));
      expect(same.outcomeChanges, path).toEqual([]);
      expect(same.metricChanges, path).toEqual([]);
      const worse = clone(data) as ResultsFile;
      const victim = worse.checks?.find((c) => c?.outcome === 'pass');
      if (!victim) continue;
      victim.outcome = 'fail';
      const r = compareResults(data, worse);
      expect(
        r.outcomeChanges.map((c) => [c.id, c.kind]),
        path,
      ).toEqual([[victim.id, 'regression']]);
    }
  });
});

describe('npm run compare', () => {
  const dir = mkdtempSync(join(tmpdir(), 'compare-test-'));
  const run = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'scripts/compare.ts', ...args], {
      encoding: 'utf8',
      timeout: 30_000,
    });
  test('exit 1 on a regression, 0 without, 2 on bad usage or an unreadable file', () => {
    try {
      const [a] = sampleResults();
      const b = clone(a!);
      b.checks.find((c) => c.id === 'sse.done-terminator')!.outcome = 'fail';
      writeFileSync(join(dir, 'old.json'), JSON.stringify(a));
      writeFileSync(join(dir, 'new.json'), JSON.stringify(b));
      writeFileSync(join(dir, 'bad.json'), '{ not json');
      const reg = run(join(dir, 'old.json'), join(dir, 'new.json'));
      expect(reg.status, reg.stderr).toBe(1);
      expect(reg.stdout).toContain('REGRESSION  sse.done-terminator [MUST]: pass → fail');
      const same = run(join(dir, 'old.json'), join(dir, 'old.json'));
      expect(same.status, same.stderr).toBe(0);
      expect(same.stdout).toContain('No regressions.');
      const json = run(join(dir, 'old.json'), join(dir, 'new.json'), '--json', '--tolerance', '0.3');
      expect(JSON.parse(json.stdout)).toMatchObject({ regressions: 1, options: { tolerance: 0.3 } });
      expect(run(join(dir, 'old.json')).status).toBe(2);
      expect(run(join(dir, 'old.json'), join(dir, 'bad.json')).status).toBe(2);
      expect(run(join(dir, 'old.json'), join(dir, 'missing.json')).status).toBe(2);
      expect(run(join(dir, 'old.json'), join(dir, 'new.json'), '--tolerance', 'x').status).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
