// Where the sweep saturates, from its levels' aggregates and their noise bands (lib/capacity/level.ts noiseBand):
// the smallest concurrency whose aggregate is within the band of the best aggregate measured, or the last level
// before errors or timeouts appeared — moved down to the last level before requests began to queue, where TTFT
// says so (a closed loop at exactly the slot count leaves slots idle between requests, so its aggregate reads a
// little low and throughput alone lands one doubling late). Pure, so a results file's table can be re-judged.
import { fmt } from '../model/verdict.ts';

export interface SweepPoint {
  concurrency: number;
  aggregateTps: number;
  band: number;
  errored: number;
  timedOut: number;
  /** The level's median time to first token: where it jumps, requests wait for a slot. */
  ttftP50Ms?: number | null;
}

const QUEUEING = {
  factor: 3,
  minMs: 50,
  keep: 0.75,
  why: "requests queue once every slot is busy: a level whose median TTFT is ≥ 3x and ≥ 50 ms above the single stream's waited for a slot (a busy machine moves a short TTFT by tens of %, a queue adds a whole service time); the level before it is the saturation point when it served ≥ 75 % of the best aggregate (the closed loop's idle turnaround costs a few %, not a quarter)",
};

/** The first level (index ≥ 1) whose requests waited for a slot, by its median TTFT against the single stream's. */
export function queueingFrom(points: readonly SweepPoint[]): number | undefined {
  const base = points[0]?.ttftP50Ms;
  if (base === undefined || base === null) return undefined;
  const i = points.findIndex(
    (p, k) =>
      k >= 1 &&
      p.ttftP50Ms !== undefined &&
      p.ttftP50Ms !== null &&
      p.ttftP50Ms >= QUEUEING.factor * base &&
      p.ttftP50Ms - base >= QUEUEING.minMs,
  );
  return i >= 1 ? i : undefined;
}

export const BAND_FLOOR = {
  value: 0.1,
  why: 'a level re-measured on a shared machine moves by several %, and a closed loop at exactly the slot count leaves slots idle while each stream turns its next request around; doubling the streams for under 10 % more output is not a rise worth reporting',
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
      // Requests began to queue at or before the plateau: the level before the queue is where every slot was busy.
      const q = queueingFrom(clean);
      if (q !== undefined && q <= i && clean[q - 1]!.aggregateTps >= QUEUEING.keep * peak.aggregateTps) {
        const s = clean[q - 1]!;
        const qp = clean[q]!;
        return {
          index: q - 1,
          concurrency: s.concurrency,
          aggregateTps: s.aggregateTps,
          noiseBand: Math.max(s.band, peak.band),
          why: `requests began to queue at ${qp.concurrency} streams (median TTFT ${fmt(qp.ttftP50Ms ?? undefined)} ms against ${fmt(clean[0]!.ttftP50Ms ?? undefined)} ms for one stream): every slot was busy at ${s.concurrency}, which served ${fmt(s.aggregateTps)} tok/s (best: ${fmt(peak.aggregateTps)} tok/s at ${peak.concurrency} streams)`,
        };
      }
      const after =
        failedAt >= 0 && i === clean.length - 1
          ? `errors or timeouts appeared at ${points[failedAt]!.concurrency} streams`
          : `no level above it served more than ${(band * 100).toFixed(1)} % (its noise band) beyond its ${fmt(p.aggregateTps)} tok/s (best: ${fmt(peak.aggregateTps)} tok/s at ${peak.concurrency} streams)`;
      return { index: i, concurrency: p.concurrency, aggregateTps: p.aggregateTps, noiseBand: band, why: after };
    }
  }
  return undefined;
}
