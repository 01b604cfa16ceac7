// The prefill curve of context.prefill-scaling: TTFT = c + a·n + b·n², fitted to the per-length medians, so the fixed
// per-request cost c (HTTP, scheduling, one decode step) is estimated and removed before the curve is extrapolated to
// the window, and the transformer physics that says how much of the growth attention explains (docs/grading.md
// "Prefill scaling"). Pure and seeded: no I/O, no clock.
//
// Why this form and not c + a·n^k: a transformer's prefill is a polynomial of degree 2 in the prompt length (the
// weights cost the same per token, attention over the tokens before it grows with the position), so a curve measured
// over 256–4096 tokens extrapolates along its own coefficients; a power law freezes the local exponent of the measured
// range (1.3 where the quadratic term is only starting to show) and underestimates the window several-fold.

import { median, mulberry32, quantile } from '../measure/stats.ts';

export interface PrefillFit {
  /** Fixed cost of a request, whatever its length (ms). */
  fixedMs: number;
  /** Cost per prompt token (ms). */
  perTokenMs: number;
  /** Cost per token² (ms): attention, and anything else that grows with the prompt. */
  perTokenSqMs: number;
}

/** Prefill of an n-token prompt along the fit, without the fixed cost (ms). */
export const prefillMs = (f: PrefillFit, n: number) => f.perTokenMs * n + f.perTokenSqMs * n * n;

/** Solve the square system m·x = v (Gaussian elimination with partial pivoting); undefined when singular. */
function solve(m: number[][], v: number[]): number[] | undefined {
  const k = v.length;
  const a = m.map((row, i) => [...row, v[i]]);
  for (let c = 0; c < k; c++) {
    let p = c;
    for (let r = c + 1; r < k; r++) if (Math.abs(a[r][c]) > Math.abs(a[p][c])) p = r;
    if (Math.abs(a[p][c]) < 1e-300) return undefined;
    [a[c], a[p]] = [a[p], a[c]];
    for (let r = c + 1; r < k; r++) {
      const f = a[r][c] / a[c][c];
      for (let j = c; j <= k; j++) a[r][j] -= f * a[c][j];
    }
  }
  const x = new Array<number>(k).fill(0);
  for (let r = k - 1; r >= 0; r--) {
    let s = a[r][k];
    for (let j = r + 1; j < k; j++) s -= a[r][j] * x[j];
    x[r] = s / a[r][r];
  }
  return x;
}

/**
 * Non-negative weighted least squares of y = c + a·n + b·n² over (n, y) pairs, relative residuals (weights 1/y²: the
 * jitter of a TTFT grows with it, and the short prompts that pin c weigh as much as the long ones that pin b). Every
 * cost is ≥ 0, so the optimum is the unconstrained solution on one of the 7 subsets of the three terms: each is solved
 * (columns scaled to unit size first, n² spans eight decades) and the feasible one with the smallest residual kept.
 */
function fitWeighted(
  pts: ReadonlyArray<{ tokens: number; ms: number }>,
  robust: readonly number[],
  quadratic: boolean,
): PrefillFit | undefined {
  const top = Math.max(...pts.map((p) => p.tokens));
  const scale = [1, top, top * top];
  const cols = (n: number) => [1, n, n * n].map((v, j) => v / scale[j]);
  let best: { x: number[]; ssr: number } | undefined;
  for (let mask = 1; mask < (quadratic ? 8 : 4); mask++) {
    const use = [0, 1, 2].filter((j) => mask & (1 << j));
    const m = use.map(() => use.map(() => 0));
    const v = use.map(() => 0);
    for (const [k, p] of pts.entries()) {
      const w = robust[k] / (p.ms * p.ms);
      const x = cols(p.tokens);
      for (let i = 0; i < use.length; i++) {
        v[i] += w * x[use[i]] * p.ms;
        for (let j = 0; j < use.length; j++) m[i][j] += w * x[use[i]] * x[use[j]];
      }
    }
    const sol = solve(m, v);
    if (!sol || sol.some((s) => !(s >= 0))) continue;
    const x = [0, 0, 0];
    use.forEach((j, i) => {
      x[j] = sol[i];
    });
    let ssr = 0;
    for (const [k, p] of pts.entries()) {
      const c = cols(p.tokens);
      const e = (x[0] * c[0] + x[1] * c[1] + x[2] * c[2] - p.ms) / p.ms;
      ssr += robust[k] * e * e;
    }
    if (!best || ssr < best.ssr - 1e-15) best = { x, ssr };
  }
  if (!best) return undefined;
  return { fixedMs: best.x[0] / scale[0], perTokenMs: best.x[1] / scale[1], perTokenSqMs: best.x[2] / scale[2] };
}

/**
 * fitWeighted made robust to a length whose median a burst of load lifted (a third of a length's repetitions slowed
 * is not rare on a shared machine, and one lifted median at the top bends a straight line into a parabola): Tukey's
 * biweight on the relative residuals, scale from their median absolute deviation (at least 2 %), a few rounds.
 */
export function fitPrefill(
  points: ReadonlyArray<{ tokens: number; ms: number }>,
  quadratic = true,
): PrefillFit | undefined {
  const pts = points.filter((p) => p.tokens > 0 && Number.isFinite(p.ms) && p.ms > 0);
  if (pts.length < 3) return undefined;
  let weights = pts.map(() => 1);
  let fit = fitWeighted(pts, weights, quadratic);
  for (let round = 0; fit && round < 4; round++) {
    const f = fit;
    const res = pts.map((p) => (f.fixedMs + prefillMs(f, p.tokens) - p.ms) / p.ms);
    const scale = Math.max(0.02, 1.4826 * median(res.map((e) => Math.abs(e - median(res)!)))!);
    weights = res.map((e) => {
      const u = e / (4.685 * scale);
      return Math.abs(u) < 1 ? (1 - u * u) ** 2 : 0;
    });
    if (weights.filter((w) => w > 0).length < 4) break;
    fit = fitWeighted(pts, weights, quadratic) ?? fit;
  }
  return fit;
}

/**
 * The window's prefill over what the short-prompt rate predicts for it, both without the fixed cost:
 * (a + b·W) / (a + b·n_s). 1 = linear; a pure quadratic gives W / n_s.
 */
export function windowExcess(f: PrefillFit, windowTokens: number, shortTokens: number): number | undefined {
  const short = f.perTokenMs + f.perTokenSqMs * shortTokens;
  return short > 0 ? (f.perTokenMs + f.perTokenSqMs * windowTokens) / short : undefined;
}

/**
 * What attention explains of that excess in a model `width` wide. Per token at position p, the weights cost ~2·12·d²
 * FLOPs per layer (~12·d² weights: 4·d² attention projections, 8·d² MLP) and attention ~4·p·d (scores and values):
 * a share of p/(6·d). Summed over a prompt of n tokens the cost is ∝ n·(1 + n/(12·d)), so the window's excess over
 * the short-prompt rate is (1 + κ·W/(12·d)) / (1 + κ·n_s/(12·d)), where κ is how much dearer attention is per FLOP
 * than the matrix products (1 for an ideal kernel).
 */
export function attentionExcess(width: number, windowTokens: number, shortTokens: number, kappa: number): number {
  const share = (n: number) => (kappa * n) / (12 * width);
  return (1 + share(windowTokens)) / (1 + share(shortTokens));
}

interface CurveSample {
  tokens: number;
  ttftMs: readonly number[];
}

interface ExtrapolatedCurve {
  fit: PrefillFit;
  /** The window's prefill without the fixed cost (ms), point estimate and 95 % bootstrap interval. */
  windowMs: number;
  windowMsLow?: number;
  windowMsHigh?: number;
  /** windowExcess, point estimate and 95 % bootstrap interval. */
  excess?: number;
  excessLow?: number;
  excessHigh?: number;
  /** Bootstrap replicates whose fit succeeded. */
  replicates: number;
}

/**
 * Fit the medians of each length, extrapolate to the window, and bound it: the repetitions of every length are
 * resampled (seeded, `replicates` times), the medians refitted, and the 2.5 % and 97.5 % quantiles of the window's
 * prefill and excess kept. Deterministic for the same samples.
 */
export function extrapolatePrefill(
  samples: readonly CurveSample[],
  windowTokens: number,
  shortTokens: number,
  replicates = 200,
  seed = 0x5eed,
): ExtrapolatedCurve | undefined {
  const usable = samples.filter((s) => s.tokens > 0 && s.ttftMs.length > 0);
  const pointsOf = (ss: readonly CurveSample[]) => ss.map((s) => ({ tokens: s.tokens, ms: median(s.ttftMs)! }));
  const full = fitPrefill(pointsOf(usable));
  if (!full) return undefined;
  const rand = mulberry32(seed);
  const windows: number[] = [];
  const excesses: number[] = [];
  const quadratics: number[] = [];
  for (let b = 0; b < replicates; b++) {
    const f = fitPrefill(
      pointsOf(
        usable.map((s) => ({
          tokens: s.tokens,
          ttftMs: Array.from(s.ttftMs, () => s.ttftMs[Math.floor(rand() * s.ttftMs.length)]),
        })),
      ),
    );
    if (!f) continue;
    quadratics.push(f.perTokenSqMs);
    windows.push(prefillMs(f, windowTokens));
    const x = windowExcess(f, windowTokens, shortTokens);
    if (x !== undefined) excesses.push(x);
  }
  const q = (xs: number[], p: number) => (xs.length >= replicates / 2 ? quantile(xs, p) : undefined);
  // A quadratic term that resampling sets to 0 in more than 1 % of the replicates is not evidence of one: the point
  // estimate drops it (noise at the top lengths would otherwise bend a straight line, and the window is 8x beyond
  // them: simulated, a linear server's window came out up to 30 % long in 5 % of runs with it, 2 % in 99 % without),
  // the interval keeps every replicate's.
  const fit =
    full.perTokenSqMs > 0 && !(q(quadratics, 0.01)! > 0) ? (fitPrefill(pointsOf(usable), false) ?? full) : full;
  return {
    fit,
    windowMs: prefillMs(fit, windowTokens),
    windowMsLow: q(windows, 0.025),
    windowMsHigh: q(windows, 0.975),
    excess: windowExcess(fit, windowTokens, shortTokens),
    excessLow: q(excesses, 0.025),
    excessHigh: q(excesses, 0.975),
    replicates: windows.length,
  };
}
