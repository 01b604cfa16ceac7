// Timing verdicts of the `context` family (suites/context.ts): a grade with the figures behind it, the ratio of two
// samples' locations with an exact distribution-free interval, and the guard against a starved client.
// Pure: no I/O, no clock, no unseeded randomness, so every verdict can be recomputed from the recorded figures and
// simulated with seeded noise (test/context-grading.test.ts runs 10,000 noisy trials of the timing gradings).
// Times in ms, sizes in tokens as the server counts them (usage.prompt_tokens, calibrated).
//
// Timing verdicts use medians over repetitions and ratios measured in the same run; they fail only when a
// confidence bound is past the threshold; borderline evidence is `warn`; too little evidence is `inconclusive`.

import { median } from '../measure/stats.ts';
import { fmt } from '../model/verdict.ts';

type TimingOutcome = 'pass' | 'warn' | 'fail' | 'inconclusive';

export interface TimingGrade {
  outcome: TimingOutcome;
  /** One sentence with the figures behind the outcome. */
  reason: string;
  figures: Record<string, number | undefined>;
  /** A warn whose confidence bound is not past the warn threshold (only its estimate is): strict mode leaves it a warn. */
  borderline?: boolean;
}

/** "97.1 % CI" for an interval's actual coverage. */
export const coverageText = (c: number | undefined) =>
  c === undefined ? 'no CI: too few samples,' : `${(c * 100).toFixed(1)} % CI`;

// ---------------------------------------------------------------------------------------------------------------
// Ratio of two samples' locations with an exact distribution-free interval

/**
 * Number of arrangements of n x's and m y's with Mann–Whitney U = u, for u = 0..n·m (exact null distribution).
 * Counts are floats: C(120, 60) ≈ 1e35 is still exact enough for tail probabilities.
 */
export function mannWhitneyCounts(n: number, m: number): number[] {
  // f[i][j][u]: arrangements of i x's and j y's with U = u; f(i,j,u) = f(i-1,j,u-j) + f(i,j-1,u).
  let prev: number[][] = Array.from({ length: m + 1 }, () => [1]); // i = 0: U = 0 for every j
  for (let i = 1; i <= n; i++) {
    const cur: number[][] = [[1]]; // j = 0
    for (let j = 1; j <= m; j++) {
      const row = new Array<number>(i * j + 1).fill(0);
      const a = prev[j];
      const b = cur[j - 1];
      for (let u = 0; u < row.length; u++)
        row[u] = (u - j >= 0 && u - j < a.length ? a[u - j] : 0) + (u < b.length ? b[u] : 0);
      cur.push(row);
    }
    prev = cur;
  }
  return prev[m];
}

interface RatioCI {
  /** Hodges–Lehmann estimate of num/den: exp(median of all log(num_i) − log(den_j)). */
  estimate?: number;
  /** Moses' distribution-free interval (from the exact Mann–Whitney distribution); undefined when the samples are too small for the confidence asked. */
  low?: number;
  high?: number;
  /** The interval's actual coverage (exact distributions have discrete levels). */
  coverage?: number;
}

/**
 * Ratio of the locations of two positive samples (e.g. wall_tps before / after), assuming a multiplicative shift:
 * the Hodges–Lehmann estimate and Moses' exact interval over the n·m pairwise log ratios. Distribution-free and
 * deterministic (no resampling), so 10,000 simulated trials take milliseconds; with 4 and 4 samples the 95 %
 * interval is [smallest, largest] pairwise ratio (coverage 97.1 %), which no single outlier can push past a bound.
 */
export function ratioCI(
  num: ReadonlyArray<number | undefined>,
  den: ReadonlyArray<number | undefined>,
  alpha = 0.05,
): RatioCI {
  const pos = (xs: ReadonlyArray<number | undefined>) =>
    xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0);
  const a = pos(num);
  const b = pos(den);
  if (a.length === 0 || b.length === 0) return {};
  const d: number[] = [];
  for (const x of a) for (const y of b) d.push(Math.log(x) - Math.log(y));
  d.sort((p, q) => p - q);
  const estimate = Math.exp(median(d)!);
  const counts = mannWhitneyCounts(a.length, b.length);
  const total = counts.reduce((p, q) => p + q, 0);
  // Largest c with P(U ≤ c) ≤ α/2: the interval is [d_(c+1), d_(N−c)].
  let cum = 0;
  let c = -1;
  for (let u = 0; u < counts.length; u++) {
    if (cum + counts[u] > (alpha / 2) * total) break;
    cum += counts[u];
    c = u;
  }
  if (c < 0) return { estimate };
  return { estimate, low: Math.exp(d[c]), high: Math.exp(d[d.length - 1 - c]), coverage: 1 - (2 * cum) / total };
}

// ---------------------------------------------------------------------------------------------------------------
// Starved client

/**
 * A client whose own event loop was late cannot blame the server for slowness: when the loop's p99 delay exceeded
 * the limit, a fail or warn stands only if it still holds with that delay moved against it (`worstCase` regrades the
 * same samples with every timestamp shifted by the delay in the least favourable direction); otherwise it becomes
 * inconclusive. A pass stays a pass.
 */
export function guardStarvation(
  g: TimingGrade,
  loop: { p99Ms: number; maxMs: number } | undefined,
  maxLoopP99Ms: number,
  worstCase?: (delayMs: number) => TimingGrade,
): TimingGrade {
  if (!loop || g.outcome === 'pass' || g.outcome === 'inconclusive') return g;
  if (loop.p99Ms <= maxLoopP99Ms) return g;
  const figures = { ...g.figures, loopP99Ms: loop.p99Ms, loopMaxMs: loop.maxMs };
  const again = worstCase?.(loop.p99Ms);
  if (again && again.outcome === g.outcome)
    return {
      ...g,
      reason: `${g.reason} (holds even with our client's event-loop delay, p99 ${fmt(loop.p99Ms)} ms, counted against it)`,
      figures,
    };
  return {
    outcome: 'inconclusive',
    reason: `our client was starved (event-loop delay p99 ${fmt(loop.p99Ms)} ms > ${maxLoopP99Ms} ms), so its timing cannot be graded; it would have been ${g.outcome}: ${g.reason}`,
    figures,
  };
}
