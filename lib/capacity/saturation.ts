// Where the sweep saturates, from its levels' aggregates and their noise bands (lib/capacity/level.ts noiseBand):
// the smallest concurrency whose aggregate is within the band of the best aggregate measured, or the last level
// before errors or timeouts appeared. Pure, so a results file's table can be re-judged.
import { fmt } from '../check/messages.ts';

export interface SweepPoint {
  concurrency: number;
  aggregateTps: number;
  band: number;
  errored: number;
  timedOut: number;
}

export const BAND_FLOOR = {
  value: 0.05,
  why: 'a level re-measured on a shared machine moves by a few %; doubling the streams for under 5 % more output is not a rise worth reporting',
};

/** Whether the sweep should stop rising: the newest level failed or gained no more than its noise band over the previous. */
export function stoppedRising(points: readonly SweepPoint[]): boolean {
  const n = points.length;
  if (n === 0) return false;
  const last = points[n - 1]!;
  if (last.errored + last.timedOut > 0) return true;
  if (n < 2) return false;
  const prev = points[n - 2]!;
  const band = Math.max(last.band, prev.band);
  return last.aggregateTps <= prev.aggregateTps * (1 + band);
}

/** The saturation point of a sweep, or undefined when it kept rising to its last level. */
export function saturationOf(
  points: readonly SweepPoint[],
): { index: number; concurrency: number; aggregateTps: number; noiseBand: number; why: string } | undefined {
  const failedAt = points.findIndex((p) => p.errored + p.timedOut > 0);
  const clean = failedAt >= 0 ? points.slice(0, failedAt) : points;
  if (!clean.length) return undefined;
  let best = 0;
  clean.forEach((p, i) => {
    if (p.aggregateTps > clean[best]!.aggregateTps) best = i;
  });
  const peak = clean[best]!;
  for (let i = 0; i <= best; i++) {
    const p = clean[i]!;
    const band = Math.max(p.band, peak.band);
    if (p.aggregateTps >= peak.aggregateTps * (1 - band)) {
      // Saturated only when something past it was measured: a rise that stops at the sweep's bound is no saturation.
      if (i === clean.length - 1 && failedAt < 0) return undefined;
      const after =
        failedAt >= 0 && i === clean.length - 1
          ? `errors or timeouts appeared at ${points[failedAt]!.concurrency} streams`
          : `no level above it served more than ${(band * 100).toFixed(1)} % (its noise band) beyond its ${fmt(p.aggregateTps)} tok/s (best: ${fmt(peak.aggregateTps)} tok/s at ${peak.concurrency} streams)`;
      return { index: i, concurrency: p.concurrency, aggregateTps: p.aggregateTps, noiseBand: band, why: after };
    }
  }
  return undefined;
}
