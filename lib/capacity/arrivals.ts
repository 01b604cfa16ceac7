// Start times of a request-rate run: constant spacing, or Poisson arrivals (exponential gaps) from a seeded
// generator, so a run is repeatable and two machines given the same seed start the same schedule.
import { mulberry32 } from '../measure/stats.ts';

/** Offsets (ms from the run's start) of `n` requests at `ratePerS`. */
export function arrivalOffsets(n: number, ratePerS: number, arrival: 'constant' | 'poisson', seed = 1): number[] {
  const meanMs = 1000 / ratePerS;
  const out: number[] = [];
  if (arrival === 'constant') {
    for (let i = 0; i < n; i++) out.push(i * meanMs);
    return out;
  }
  const rnd = mulberry32(seed);
  let t = 0;
  for (let i = 0; i < n; i++) {
    out.push(t);
    // 1 − u is in (0, 1]: never log(0).
    t += -Math.log(1 - rnd()) * meanMs;
  }
  return out;
}
