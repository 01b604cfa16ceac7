// Small, dependency-free statistics for timing verdicts.
//
// Conventions (why): timings arrive as `number | undefined` (a missing metric is `undefined`, never 0, see
// docs/grading.md "Measuring"), so every function here accepts such arrays and ignores values that are not finite
// numbers. Empty input gives `undefined`, never NaN or Infinity. Nothing here draws randomness without a seed,
// so a verdict computed from a results file can be recomputed exactly.

/** A sample as the harness collects it: missing values are allowed and ignored. */
type Sample = ReadonlyArray<number | undefined | null>;

/** Finite values only, in input order. */
export function finite(xs: Sample): number[] {
  const out: number[] = [];
  for (const x of xs) if (typeof x === 'number' && Number.isFinite(x)) out.push(x);
  return out;
}

function sorted(xs: Sample): number[] {
  return finite(xs).sort((a, b) => a - b);
}

/** Linear interpolation on an already sorted, non-empty array (Hyndman & Fan type 7, as numpy/R default). */
function quantileSorted(s: readonly number[], p: number): number {
  const h = (s.length - 1) * p;
  const lo = Math.floor(h);
  const hi = Math.ceil(h);
  return s[lo] + (h - lo) * (s[hi] - s[lo]);
}

/** Quantile with linear interpolation between order statistics; p in [0, 1]. */
export function quantile(xs: Sample, p: number): number | undefined {
  if (!(p >= 0 && p <= 1)) throw new RangeError(`quantile: p must be in [0, 1], got ${p}`);
  const s = sorted(xs);
  return s.length === 0 ? undefined : quantileSorted(s, p);
}

export function median(xs: Sample): number | undefined {
  return quantile(xs, 0.5);
}
export function p90(xs: Sample): number | undefined {
  return quantile(xs, 0.9);
}
export function p99(xs: Sample): number | undefined {
  return quantile(xs, 0.99);
}
export function min(xs: Sample): number | undefined {
  const f = finite(xs);
  return f.length === 0 ? undefined : f.reduce((a, b) => (b < a ? b : a));
}
export function max(xs: Sample): number | undefined {
  const f = finite(xs);
  return f.length === 0 ? undefined : f.reduce((a, b) => (b > a ? b : a));
}
export function mean(xs: Sample): number | undefined {
  const f = finite(xs);
  if (f.length === 0) return undefined;
  // Running mean: no overflow on large sums, exact for constant input.
  let m = 0;
  f.forEach((x, i) => {
    m += (x - m) / (i + 1);
  });
  return m;
}

/**
 * Population standard deviation (divided by n, not n − 1): numpy's default `np.std` (ddof=0), which vLLM's benchmark
 * reports as `std_*_ms`. Two passes over the values (mean first), so a large common offset does not cancel digits.
 */
export function std(xs: Sample): number | undefined {
  const f = finite(xs);
  const m = mean(f);
  if (m === undefined) return undefined;
  let s = 0;
  for (const x of f) s += (x - m) * (x - m);
  return Math.sqrt(s / f.length);
}

interface Summary {
  /** Number of finite values used. */
  n: number;
  p50?: number;
  p90?: number;
  p99?: number;
  min?: number;
  max?: number;
  mean?: number;
}

/** The aggregate the design asks for: p50 is the figure, p90/p99/min/max are kept beside it. */
export function summarize(xs: Sample): Summary {
  const s = sorted(xs);
  if (s.length === 0) return { n: 0 };
  return {
    n: s.length,
    p50: quantileSorted(s, 0.5),
    p90: quantileSorted(s, 0.9),
    p99: quantileSorted(s, 0.99),
    min: s[0],
    max: s[s.length - 1],
    mean: mean(s),
  };
}

/** Seeded PRNG (mulberry32): uniform in [0, 1). Small, fast, and good enough for bootstrap resampling. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Inverse of the standard normal CDF (Acklam's rational approximation, relative error < 1.2e-9).
 * Used for z_{1-alpha/2} so that alpha is not limited to a table.
 */
export function normalQuantile(p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`normalQuantile: p must be in (0, 1), got ${p}`);
  const a = [
    -3.969683028665376e1, 2.209460984245205e2, -2.759285104469687e2, 1.38357751867269e2, -3.066479806614716e1,
    2.506628277459239,
  ];
  const b = [
    -5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1,
  ];
  const c = [
    -7.784894002430293e-3, -3.223964580411365e-1, -2.400758277161838, -2.549732539343734, 4.374664141464968,
    2.938163982698783,
  ];
  const d = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
  const pLow = 0.02425;
  if (p < pLow) {
    const q = Math.sqrt(-2 * Math.log(p));
    return (
      (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
      ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    );
  }
  if (p > 1 - pLow) return -normalQuantile(1 - p);
  const q = p - 0.5;
  const r = q * q;
  return (
    ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q) /
    (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)
  );
}

interface TheilSenResult {
  /** Median of the pairwise slopes; undefined with fewer than two distinct x values. */
  slope?: number;
  /** Median of y - slope * x. */
  intercept?: number;
  /** Sen's confidence bounds of the slope; undefined when n is too small for the requested confidence. */
  low?: number;
  high?: number;
  /** Points used (pairs where both x and y are finite). */
  n: number;
}

/** Sum over tie groups of t(t-1)(2t+5): the tie correction of Var(S) for Kendall's S. */
function tieTerm(values: readonly number[]): number {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let s = 0;
  for (const t of counts.values()) s += t * (t - 1) * (2 * t + 5);
  return s;
}

/**
 * 1-based order statistic with linear interpolation for a fractional rank; undefined outside [1, N].
 * A rank within 0.01 of the ends counts as the end: at n = 5, α = 0.05 the normal approximation gives rank 0.9992,
 * while the exact null distribution of S gives the [min, max] interval 98.3 % coverage (2/5! outside), a valid bound.
 */
function orderStat(s: readonly number[], rank: number): number | undefined {
  if (!(rank >= 1 - 0.01 && rank <= s.length + 0.01)) return undefined;
  const r = Math.min(Math.max(rank, 1), s.length) - 1;
  const lo = Math.floor(r);
  const hi = Math.ceil(r);
  return s[lo] + (r - lo) * (s[hi] - s[lo]);
}

/**
 * Theil–Sen robust line fit with Sen's (1968) confidence interval for the slope.
 *
 * Method: the N pairwise slopes (y_j - y_i)/(x_j - x_i) over pairs with x_i != x_j are sorted; the slope is
 * their median. For the interval, Kendall's S has Var(S) = [n(n-1)(2n+5) - Σ_x t(t-1)(2t+5) - Σ_y u(u-1)(2u+5)] / 18
 * (the usual first-order tie correction for tie groups t in x and u in y — "rough" because the exact variance with
 * ties in both variables has further terms). With C = z_{1-α/2}·sqrt(Var(S)), M1 = (N - C)/2 and M2 = (N + C)/2,
 * the bounds are the M1-th and (M2+1)-th smallest slopes (Gilbert 1987, §16.4; fractional ranks interpolated).
 * When a rank falls outside [1, N] the data cannot support that confidence (e.g. n ≤ 4 at α = 0.05) and the
 * bound is undefined rather than clamped, so a caller never reads a falsely tight interval.
 */
export function theilSen(xs: Sample, ys: Sample, opts: { alpha?: number } = {}): TheilSenResult {
  const alpha = opts.alpha ?? 0.05;
  const px: number[] = [];
  const py: number[] = [];
  const len = Math.min(xs.length, ys.length);
  for (let i = 0; i < len; i++) {
    const x = xs[i];
    const y = ys[i];
    if (typeof x === 'number' && Number.isFinite(x) && typeof y === 'number' && Number.isFinite(y)) {
      px.push(x);
      py.push(y);
    }
  }
  const n = px.length;
  const slopes: number[] = [];
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      if (px[j] !== px[i]) slopes.push((py[j] - py[i]) / (px[j] - px[i]));
    }
  }
  if (slopes.length === 0) return { n };
  slopes.sort((a, b) => a - b);
  const slope = quantileSorted(slopes, 0.5);
  const intercept = median(px.map((x, i) => py[i] - slope * x));

  const N = slopes.length;
  const varS = (n * (n - 1) * (2 * n + 5) - tieTerm(px) - tieTerm(py)) / 18;
  const C = normalQuantile(1 - alpha / 2) * Math.sqrt(Math.max(varS, 0));
  const low = orderStat(slopes, (N - C) / 2);
  const high = orderStat(slopes, (N + C) / 2 + 1);
  return { slope, intercept, low, high, n };
}

/**
 * Slope of log(y) against log(x) by Theil–Sen: the scaling exponent (1 = linear, 2 = quadratic prefill).
 * Points with a non-positive x or y are dropped (no logarithm).
 */
export function logLogSlope(xs: Sample, ys: Sample, opts: { alpha?: number } = {}): TheilSenResult {
  const lx: number[] = [];
  const ly: number[] = [];
  const len = Math.min(xs.length, ys.length);
  for (let i = 0; i < len; i++) {
    const x = xs[i];
    const y = ys[i];
    if (typeof x === 'number' && typeof y === 'number' && x > 0 && y > 0 && Number.isFinite(x) && Number.isFinite(y)) {
      lx.push(Math.log(x));
      ly.push(Math.log(y));
    }
  }
  return theilSen(lx, ly, opts);
}

interface BootstrapOptions {
  iterations?: number;
  alpha?: number;
  seed?: number;
}

interface BootstrapCI {
  /** Point estimate on the original data; undefined when it cannot be formed. */
  estimate?: number;
  /** Percentile-bootstrap bounds at 1 - alpha. */
  low?: number;
  high?: number;
  /** Resamples that produced a value (a ratio with a zero denominator median is skipped). */
  iterations: number;
}

function resample(xs: readonly number[], rand: () => number): number[] {
  const out = new Array<number>(xs.length);
  for (let i = 0; i < xs.length; i++) out[i] = xs[Math.floor(rand() * xs.length)];
  return out;
}

function percentileCI(values: number[], alpha: number): { low?: number; high?: number } {
  if (values.length === 0) return {};
  values.sort((a, b) => a - b);
  return { low: quantileSorted(values, alpha / 2), high: quantileSorted(values, 1 - alpha / 2) };
}

/**
 * Percentile-bootstrap CI of median(numerators) / median(denominators), e.g. speedup = aggregate / single.
 * The two samples come from independent runs, so each is resampled independently (same size as observed),
 * from one seeded PRNG: the same inputs and seed always give the same interval.
 */
export function bootstrapRatioCI(numerators: Sample, denominators: Sample, opts: BootstrapOptions = {}): BootstrapCI {
  const { iterations = 2000, alpha = 0.05, seed = 1 } = opts;
  const num = finite(numerators);
  const den = finite(denominators);
  const mn = median(num);
  const md = median(den);
  if (mn === undefined || md === undefined || md === 0) return { iterations: 0 };
  const rand = mulberry32(seed);
  const ratios: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const a = median(resample(num, rand))!;
    const b = median(resample(den, rand))!;
    if (b !== 0) ratios.push(a / b);
  }
  return { estimate: mn / md, ...percentileCI(ratios, alpha), iterations: ratios.length };
}

/** Percentile-bootstrap CI of the median, seeded like bootstrapRatioCI. */
export function bootstrapMedianCI(xs: Sample, opts: BootstrapOptions = {}): BootstrapCI {
  const { iterations = 2000, alpha = 0.05, seed = 1 } = opts;
  const f = finite(xs);
  const est = median(f);
  if (est === undefined) return { iterations: 0 };
  const rand = mulberry32(seed);
  const meds: number[] = [];
  for (let i = 0; i < iterations; i++) meds.push(median(resample(f, rand))!);
  return { estimate: est, ...percentileCI(meds, alpha), iterations: meds.length };
}
