// Start times of a request-rate run as `vllm bench serve` draws them (its `get_request`): gaps between requests from a
// gamma distribution of shape `burstiness` and mean 1/rate (burstiness 1 is a Poisson process, ∞ constant spacing,
// below 1 burstier), summed, then scaled so the last request starts at exactly n/rate — the schedule's mean rate is the
// rate asked for, whatever the draws. The first request waits its own gap, as vLLM's does: the run's duration counts
// from the schedule's start. An infinite rate starts every request at once. Seeded (mulberry32), so a run repeats and
// two machines given the same seed start the same schedule; the draws are not numpy's, so the same seed in vLLM gives
// another schedule of the same distribution.
import { mulberry32 } from '../measure/stats.ts';

/** How a run's requests arrive (the label of its level): constant (burstiness ∞), Poisson (1), gamma (other), at once (rate ∞). */
type Arrival = 'constant' | 'poisson' | 'gamma' | 'at-once';

export function arrivalOf(ratePerS: number, burstiness: number): Arrival {
  if (ratePerS === Number.POSITIVE_INFINITY) return 'at-once';
  if (burstiness === Number.POSITIVE_INFINITY) return 'constant';
  return burstiness === 1 ? 'poisson' : 'gamma';
}

/** A standard normal draw (Box–Muller; 1 − u is in (0, 1]: never log(0)). */
function normal(rnd: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
}

/**
 * A gamma draw of the given shape and scale 1 (Marsaglia & Tsang 2000; for shape < 1 the shape + 1 draw times
 * U^(1/shape), their boost).
 */
export function gammaDraw(shape: number, rnd: () => number): number {
  if (shape < 1) return gammaDraw(shape + 1, rnd) * (1 - rnd()) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal(rnd);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - rnd();
    if (u < 1 - 0.0331 * x ** 4 || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
  }
}

/** Gaps (ms) between `n` arrivals at `ratePerS`: gamma of shape `burstiness`, mean 1000/rate (not yet rescaled). */
export function arrivalGaps(n: number, ratePerS: number, burstiness: number, seed: number): number[] {
  const meanMs = 1000 / ratePerS;
  if (burstiness === Number.POSITIVE_INFINITY) return Array.from({ length: n }, () => meanMs);
  const rnd = mulberry32(seed);
  return Array.from({ length: n }, () => gammaDraw(burstiness, rnd) * (meanMs / burstiness));
}

/**
 * Offsets (ms from the run's start) of `n` requests at `ratePerS` with the given burstiness (∞: constant spacing):
 * the cumulated gaps scaled so the last is n/rate, as vLLM's get_request does. Rate ∞: every offset 0.
 */
export function arrivalOffsets(n: number, ratePerS: number, burstiness = 1, seed = 1): number[] {
  if (!(burstiness > 0)) throw new RangeError(`burstiness must be above 0, not ${burstiness}`);
  if (ratePerS === Number.POSITIVE_INFINITY) return Array.from({ length: n }, () => 0);
  const gaps = arrivalGaps(n, ratePerS, burstiness, seed);
  const out: number[] = [];
  let t = 0;
  for (const g of gaps) {
    t += g;
    out.push(t);
  }
  const last = out.at(-1) ?? 0;
  const scale = last > 0 ? (n * 1000) / ratePerS / last : 1;
  return out.map((x) => x * scale);
}
