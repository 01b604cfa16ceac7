// Heavy-tailed distributions for the false-failure simulation: maximum-likelihood fits (Student-t, and an empirical
// body with a generalized Pareto tail) and a seeded sampler, so every simulated trial is reproducible from its seed.
import { mulberry32, quantile } from '../../lib/measure/stats.ts';

export interface TFit {
  /** Degrees of freedom (heavier tails when smaller). */
  nu: number;
  scale: number;
  /** 'half': |t| (one-sided delays); 'full': symmetric about 0. */
  kind: 'half' | 'full';
  n: number;
  unit: string;
}

/** ln Γ(x), Lanczos (g = 7, n = 9). */
function lnGamma(x: number): number {
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  x -= 1;
  let a = c[0];
  const t = x + 7.5;
  for (let i = 1; i < 9; i++) a += c[i] / (x + i);
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
}

function tLogLik(xs: readonly number[], nu: number, s: number): number {
  const k = lnGamma((nu + 1) / 2) - lnGamma(nu / 2) - 0.5 * Math.log(nu * Math.PI) - Math.log(s);
  let ll = 0;
  for (const x of xs) ll += k - ((nu + 1) / 2) * Math.log(1 + (x / s) ** 2 / nu);
  return ll;
}

const NU_GRID = [1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 7, 10, 15, 30, 100];

/** Maximum-likelihood Student-t (location 0) or half-t fit: ν on a grid, scale by golden-section search on log s. */
export function fitT(xs: readonly number[], kind: 'half' | 'full', unit: string): TFit {
  const data = xs.filter((x) => Number.isFinite(x)).map((x) => (kind === 'half' ? Math.max(0, x) : x));
  const spread = Math.max(1e-9, quantile(data.map(Math.abs), 0.9) ?? 1e-9, quantile(data.map(Math.abs), 0.5) ?? 0);
  let best: TFit = { nu: 100, scale: spread, kind, n: data.length, unit };
  let bestLl = -Infinity;
  for (const nu of NU_GRID) {
    let lo = Math.log(spread) - 12;
    let hi = Math.log(spread) + 3;
    const g = (Math.sqrt(5) - 1) / 2;
    for (let i = 0; i < 80; i++) {
      const a = hi - g * (hi - lo);
      const b = lo + g * (hi - lo);
      if (tLogLik(data, nu, Math.exp(a)) > tLogLik(data, nu, Math.exp(b))) hi = b;
      else lo = a;
    }
    const s = Math.exp((lo + hi) / 2);
    const ll = tLogLik(data, nu, s);
    if (ll > bestLl) {
      bestLl = ll;
      best = { nu, scale: s, kind, n: data.length, unit };
    }
  }
  return best;
}

/**
 * One-sided jitter (delays only add time): the empirical body below the 90th percentile u, and above it a generalized
 * Pareto tail (peaks over threshold, maximum likelihood). The fitted shape ξ is floored at 0, so the simulation never
 * assumes a bounded tail the data only failed to show: ξ = 0 is an exponential tail, ξ > 0 a power law.
 */
export interface TailFit {
  type: 'tail';
  unit: string;
  n: number;
  u: number;
  /** Quantiles 0, 0.01, …, 0.90 of the data. */
  body: number[];
  xiFitted: number;
  xi: number;
  sigma: number;
  exceedances: number;
  max: number;
}

function gpdLogLik(ys: readonly number[], xi: number, sigma: number): number {
  let ll = -ys.length * Math.log(sigma);
  for (const y of ys) {
    if (Math.abs(xi) < 1e-9) ll -= y / sigma;
    else {
      const z = 1 + (xi * y) / sigma;
      if (z <= 0) return -Infinity;
      ll -= (1 + 1 / xi) * Math.log(z);
    }
  }
  return ll;
}

export function fitTail(xs: readonly number[], unit: string): TailFit {
  const data = xs
    .filter((x) => Number.isFinite(x))
    .map((x) => Math.max(0, x))
    .sort((a, b) => a - b);
  const q = (p: number) => quantile(data, p) ?? 0;
  const u = q(0.9);
  const ys = data.filter((x) => x > u).map((x) => x - u);
  const meanY = ys.length ? ys.reduce((a, b) => a + b, 0) / ys.length : Math.max(u * 0.1, 1e-6);
  let best = { xi: 0, sigma: meanY, ll: -Infinity };
  if (ys.length >= 5) {
    for (let xi = -0.5; xi <= 1.5 + 1e-9; xi += 0.02) {
      let lo = Math.log(meanY) - 6;
      let hi = Math.log(meanY) + 6;
      const g = (Math.sqrt(5) - 1) / 2;
      for (let i = 0; i < 60; i++) {
        const a = hi - g * (hi - lo);
        const b = lo + g * (hi - lo);
        if (gpdLogLik(ys, xi, Math.exp(a)) > gpdLogLik(ys, xi, Math.exp(b))) hi = b;
        else lo = a;
      }
      const sigma = Math.exp((lo + hi) / 2);
      const ll = gpdLogLik(ys, xi, sigma);
      if (ll > best.ll) best = { xi, sigma, ll };
    }
  }
  const xi = Math.max(0, best.xi);
  // With ξ floored at 0 the scale is re-fitted for the exponential tail (its MLE is the mean exceedance).
  const sigma = xi === best.xi ? best.sigma : meanY;
  return {
    type: 'tail',
    unit,
    n: data.length,
    u,
    body: Array.from({ length: 91 }, (_, i) => q(i / 100)),
    xiFitted: Math.round(best.xi * 100) / 100,
    xi,
    sigma,
    exceedances: ys.length,
    max: data[data.length - 1] ?? 0,
  };
}

/**
 * Cycle-to-cycle level of throughput: load on a shared machine comes in phases, so a cycle keeps the previous cycle's
 * slowdown with probability φ (the lag-1 autocorrelation of the cycle medians) and draws a fresh one otherwise, from
 * the one-sided tail fit of cycle-median slowdowns (a cycle can be slowed without bound, never sped past clean).
 */
export interface LevelFit {
  type: 'regime';
  phi: number;
  tail: TailFit;
}

/** Seeded sampler: normals (Box–Muller), gammas (Marsaglia–Tsang), Student-t, tails. */
export class Rng {
  readonly u: () => number;
  private spare: number | undefined;
  constructor(seed: number) {
    this.u = mulberry32(seed);
  }
  normal(): number {
    if (this.spare !== undefined) {
      const s = this.spare;
      this.spare = undefined;
      return s;
    }
    const r = Math.sqrt(-2 * Math.log(1 - this.u()));
    const th = 2 * Math.PI * this.u();
    this.spare = r * Math.sin(th);
    return r * Math.cos(th);
  }
  gamma(shape: number): number {
    if (shape < 1) return this.gamma(shape + 1) * Math.pow(1 - this.u(), 1 / shape);
    const d = shape - 1 / 3;
    const c = 1 / Math.sqrt(9 * d);
    for (;;) {
      let x: number;
      let v: number;
      do {
        x = this.normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const u = 1 - this.u();
      if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
    }
  }
  t(f: TFit, stress = 1): number {
    const z = this.normal() / Math.sqrt((2 * this.gamma(f.nu / 2)) / f.nu);
    const x = z * f.scale * stress;
    return f.kind === 'half' ? Math.abs(x) : x;
  }
  int(n: number): number {
    return Math.floor(this.u() * n);
  }
  tail(f: TailFit, stress = 1): number {
    const p = this.u();
    let x: number;
    if (p < 0.9) {
      const h = p * 100;
      const i = Math.floor(h);
      x = f.body[i] + (h - i) * (f.body[i + 1] - f.body[i]);
    } else {
      const pp = (p - 0.9) / 0.1;
      x = f.u + (f.xi > 1e-9 ? (f.sigma / f.xi) * (Math.pow(1 - pp, -f.xi) - 1) : -f.sigma * Math.log(1 - pp));
    }
    return x * stress;
  }
  /** A series of n cycle levels (log slowdowns ≥ 0) with persistent phases. */
  levels(f: LevelFit, n: number, stress = 1): number[] {
    const out: number[] = [];
    let prev = this.tail(f.tail, stress);
    out.push(prev);
    for (let i = 1; i < n; i++) {
      if (this.u() >= f.phi) prev = this.tail(f.tail, stress);
      out.push(prev);
    }
    return out;
  }
}

/** A log-slowdown draw as a factor ≥ 1, capped at 100x (a request 100 times slower is a dead server, not jitter). */
export const inflate = (delta: number) => Math.exp(Math.min(Math.log(100), delta));

/** One line describing a fitted distribution, for the report. */
export function describeDist(d: TailFit | LevelFit | TFit): string {
  if ('type' in d && d.type === 'tail')
    return `body to p90 ${d.u.toPrecision(3)}, GPD tail ξ=${d.xi} (fitted ${d.xiFitted}) σ=${d.sigma.toPrecision(3)}, max seen ${d.max.toPrecision(3)} (${d.unit}; n=${d.n}, ${d.exceedances} exceedances)`;
  if ('type' in d && d.type === 'regime') return `phase persistence φ=${d.phi.toFixed(2)}; ${describeDist(d.tail)}`;
  const t = d as TFit;
  return `${t.kind === 'half' ? 'half-t' : 't'} ν=${t.nu} scale=${t.scale.toPrecision(3)} (${t.unit}; n=${t.n})`;
}
