import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  bootstrapMedianCI,
  bootstrapRatioCI,
  finite,
  logLogSlope,
  max,
  mean,
  median,
  min,
  mulberry32,
  normalQuantile,
  p90,
  p99,
  quantile,
  summarize,
  theilSen,
} from '../lib/measure/stats.ts';

/** Standard normal draws from a seeded uniform source (Box–Muller). */
function normals(seed: number, n: number, sd: number): number[] {
  const r = mulberry32(seed);
  return Array.from({ length: n }, () => sd * Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r()));
}

describe('order statistics', () => {
  test('median of odd and even samples', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([7])).toBe(7);
    expect(median([])).toBeUndefined();
  });

  test('quantile interpolates linearly between order statistics', () => {
    expect(quantile([1, 2, 3, 4, 5], 0)).toBe(1);
    expect(quantile([1, 2, 3, 4, 5], 0.25)).toBe(2);
    expect(quantile([1, 2, 3, 4, 5], 1)).toBe(5);
    // h = 3 * 0.9 = 2.7 -> 30 + 0.7 * 10
    expect(quantile([40, 10, 30, 20], 0.9)).toBeCloseTo(37, 12);
    const hundred = Array.from({ length: 101 }, (_, i) => i);
    expect(p90(hundred)).toBeCloseTo(90, 12);
    expect(p99(hundred)).toBeCloseTo(99, 12);
    expect(() => quantile([1], 1.5)).toThrow(RangeError);
  });

  test('min, max, mean; missing values ignored', () => {
    expect(min([3, undefined, -1, 2])).toBe(-1);
    expect(max([3, null, -1, 2])).toBe(3);
    expect(mean([1, 2, 3, 4])).toBe(2.5);
    expect(mean([])).toBeUndefined();
    expect(finite([1, Number.NaN, undefined, Infinity, 2])).toEqual([1, 2]);
  });

  test('summarize: empty input has no NaN; missing values are not counted', () => {
    expect(summarize([])).toEqual({ n: 0 });
    expect(summarize([undefined, Number.NaN])).toEqual({ n: 0 });
    const s = summarize([1, undefined, 3, Number.NaN]);
    expect(s).toEqual({ n: 2, p50: 2, p90: 2.8, p99: 2.98, min: 1, max: 3, mean: 2 });
    for (const v of Object.values(s)) expect(Number.isNaN(v)).toBe(false);
  });
});

describe('mulberry32', () => {
  test('deterministic for a seed, uniform in [0, 1)', () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    const xs = Array.from({ length: 1000 }, () => a());
    expect(Array.from({ length: 1000 }, () => b())).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(mean(xs)!).toBeGreaterThan(0.45);
    expect(mean(xs)!).toBeLessThan(0.55);
    expect(mulberry32(8)()).not.toBe(mulberry32(7)());
  });

  test('normalQuantile matches table values', () => {
    expect(normalQuantile(0.975)).toBeCloseTo(1.959964, 5);
    expect(normalQuantile(0.5)).toBeCloseTo(0, 12);
    expect(normalQuantile(0.005)).toBeCloseTo(-2.575829, 5);
  });
});

describe('Theil–Sen', () => {
  test('exact line: slope and intercept recovered', () => {
    const xs = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
    const r = theilSen(
      xs,
      xs.map((x) => 2 * x + 1),
    );
    expect(r.slope).toBe(2);
    expect(r.intercept).toBe(1);
    expect(r.n).toBe(10);
    // all 45 slopes equal 2, so the interval collapses onto it
    expect(r.low).toBe(2);
    expect(r.high).toBe(2);
  });

  test('one wild outlier does not move the fit', () => {
    const xs = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
    const ys = xs.map((x) => 2 * x + 1);
    ys[9] = 100; // 9 of the 45 pairwise slopes are affected, the median is not
    const r = theilSen(xs, ys);
    expect(r.slope).toBe(2);
    expect(r.intercept).toBe(1);
  });

  test('hand-computed Sen interval', () => {
    // 15 slopes sorted: -1 -1 1/3 .5 .5 .75 .75 1 1 1 4/3 4/3 2 2 3; median (8th) = 1.
    // Var(S) = 6*5*17/18 = 28.33; C = 1.96*5.323 = 10.433; M1 = 2.284, M2+1 = 13.716.
    // low = s(2) + 0.284*(s(3)-s(2)) = -1 + 0.284*4/3 = -0.622; high = s(13.7) = 2.
    const r = theilSen([1, 2, 3, 4, 5, 6], [1, 3, 2, 5, 4, 6]);
    expect(r.slope).toBe(1);
    expect(r.intercept).toBe(0);
    expect(r.low!).toBeCloseTo(-0.622, 3);
    expect(r.high!).toBeCloseTo(2, 12);
  });

  test('too few points for 95 % confidence: bounds undefined, not clamped', () => {
    const r = theilSen([1, 2, 3, 4], [1, 2, 3, 5]);
    expect(r.slope).toBeDefined();
    expect(r.low).toBeUndefined();
    expect(r.high).toBeUndefined();
    expect(theilSen([1, 1, 1], [1, 2, 3])).toEqual({ n: 3 }); // no distinct x: no slope
    expect(theilSen([], [])).toEqual({ n: 0 });
  });

  test('CI contains the true slope for noisy seeded data', () => {
    const xs = Array.from({ length: 30 }, (_, i) => i + 1);
    for (const seed of [1, 2, 3, 4, 5]) {
      const noise = normals(seed, xs.length, 2);
      const r = theilSen(
        xs,
        xs.map((x, i) => 3 * x + 5 + noise[i]),
      );
      expect(r.low!).toBeLessThan(3);
      expect(r.high!).toBeGreaterThan(3);
      expect(r.low!).toBeLessThanOrEqual(r.slope!);
      expect(r.high!).toBeGreaterThanOrEqual(r.slope!);
    }
  });

  test('logLogSlope: quadratic growth has exponent 2; non-positive points dropped', () => {
    const xs = [100, 1000, 4000, 16000, 32000, 53000];
    const r = logLogSlope([...xs, 0, -5], [...xs.map((x) => 3e-6 * x * x), 1, 1]);
    expect(r.n).toBe(6);
    expect(r.slope!).toBeCloseTo(2, 9);
    expect(
      logLogSlope(
        xs,
        xs.map((x) => 0.5 * x),
      ).slope!,
    ).toBeCloseTo(1, 9);
  });
});

describe('bootstrap', () => {
  const single = [100, 102, 98, 101, 99];
  const aggregate = [200, 210, 190, 205, 195];

  test('ratio CI brackets the estimate and is deterministic for a seed', () => {
    const a = bootstrapRatioCI(aggregate, single);
    expect(a.estimate).toBe(2);
    expect(a.low!).toBeLessThanOrEqual(2);
    expect(a.high!).toBeGreaterThanOrEqual(2);
    expect(a.high! - a.low!).toBeGreaterThan(0);
    expect(a.iterations).toBe(2000);
    expect(bootstrapRatioCI(aggregate, single)).toEqual(a);
    // with five points the medians are discrete, so another seed may land on the same percentiles: only
    // the seeded sequence itself is compared
    const big = normals(11, 40, 5).map((e) => 100 + e);
    expect(
      bootstrapRatioCI(
        big.map((x) => 2 * x),
        big,
        { seed: 1 },
      ),
    ).not.toEqual(
      bootstrapRatioCI(
        big.map((x) => 2 * x),
        big,
        { seed: 2 },
      ),
    );
  });

  test('ratio with no data or a zero denominator has no estimate', () => {
    expect(bootstrapRatioCI([], single).estimate).toBeUndefined();
    expect(bootstrapRatioCI(aggregate, [0, 0, 0]).estimate).toBeUndefined();
  });

  test('median CI brackets the median', () => {
    const r = bootstrapMedianCI([5, 7, 6, 9, 8, 6, 7], { iterations: 500, seed: 3 });
    expect(r.estimate).toBe(7);
    expect(r.low!).toBeLessThanOrEqual(7);
    expect(r.high!).toBeGreaterThanOrEqual(7);
    expect(bootstrapMedianCI([]).estimate).toBeUndefined();
  });
});

describe('properties', () => {
  const num = fc.double({ min: -1e9, max: 1e9, noNaN: true });

  test('median lies within [min, max]', () => {
    fc.assert(
      fc.property(fc.array(num, { minLength: 1 }), (xs) => {
        const m = median(xs)!;
        expect(m).toBeGreaterThanOrEqual(min(xs)!);
        expect(m).toBeLessThanOrEqual(max(xs)!);
      }),
      { numRuns: 200, seed: 42 },
    );
  });

  test('quantile is monotone in p', () => {
    fc.assert(
      fc.property(
        fc.array(num, { minLength: 1 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (xs, p, q) => {
          const [lo, hi] = p <= q ? [p, q] : [q, p];
          expect(quantile(xs, lo)!).toBeLessThanOrEqual(quantile(xs, hi)!);
        },
      ),
      { numRuns: 200, seed: 42 },
    );
  });

  test('summarize never yields NaN', () => {
    const val = fc.oneof(num, fc.constant(undefined), fc.constant(Number.NaN), fc.constant(Infinity));
    fc.assert(
      fc.property(fc.array(val), (xs) => {
        for (const v of Object.values(summarize(xs))) expect(Number.isNaN(v)).toBe(false);
      }),
      { numRuns: 200, seed: 42 },
    );
  });

  test('Theil–Sen slope is invariant to adding a constant to y', () => {
    const int = fc.integer({ min: -1_000_000, max: 1_000_000 });
    fc.assert(
      fc.property(fc.array(fc.tuple(int, int), { minLength: 2, maxLength: 30 }), int, (pts, c) => {
        const xs = pts.map((p) => p[0]);
        const ys = pts.map((p) => p[1]);
        const a = theilSen(xs, ys);
        const b = theilSen(
          xs,
          ys.map((y) => y + c),
        );
        expect(b.slope).toEqual(a.slope);
        expect(b.low).toEqual(a.low);
        expect(b.high).toEqual(a.high);
        if (a.intercept !== undefined) {
          // relative tolerance: slope * x can reach 1e12, where doubles keep ~1e-4 absolute precision
          expect(Math.abs(b.intercept! - (a.intercept + c))).toBeLessThanOrEqual(
            1e-12 * (Math.abs(a.intercept) + Math.abs(c) + 1e6 * Math.abs(a.slope!)) + 1e-9,
          );
        }
      }),
      { numRuns: 200, seed: 42 },
    );
  });

  test('Theil–Sen recovers any exact integer line', () => {
    const small = fc.integer({ min: -1000, max: 1000 });
    fc.assert(
      fc.property(fc.uniqueArray(small, { minLength: 2, maxLength: 20 }), small, small, (xs, m, k) => {
        const r = theilSen(
          xs,
          xs.map((x) => m * x + k),
        );
        expect(r.slope! + 0).toBe(m + 0); // + 0 folds -0 into 0
        expect(r.intercept! + 0).toBe(k + 0);
      }),
      { numRuns: 200, seed: 42 },
    );
  });
});

test('Sen interval at n = 5 is [min, max] of the pairwise slopes (exact coverage 98.3 %), undefined at n = 4', async () => {
  const { theilSen } = await import('../lib/measure/stats.ts');
  const five = theilSen([1, 2, 3, 4, 5], [10, 9.1, 8.3, 7.2, 6.5]);
  expect(five.low).toBeDefined();
  expect(five.high).toBeLessThan(0);
  expect(theilSen([1, 2, 3, 4], [10, 9, 8, 7]).low).toBeUndefined();
});
