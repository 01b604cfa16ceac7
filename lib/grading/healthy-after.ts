// context.healthy-after: normal requests after long and over-long prompts against the same requests before them.
// Pure: no I/O, no clock, no unseeded randomness, so every verdict can be recomputed from the recorded figures and
// simulated with seeded noise (test/context-grading.test.ts runs 10,000 noisy trials of the timing gradings).
// Times in ms, sizes in tokens as the server counts them (usage.prompt_tokens, calibrated).

import type { CpuUse } from '../measure/machine-load.ts';
import { median } from '../measure/stats.ts';
import { fmt } from '../model/verdict.ts';
import { contention } from './cycles.ts';
import { coverageText, ratioCI, type TimingGrade } from './timing-grade.ts';

interface SlowdownThresholds {
  /** Fail when the slowdown's lower bound reaches this factor. */
  failSlowdown: number;
  /** Warn when the estimate reaches this factor. */
  warnSlowdown: number;
  /** Samples needed on each side. */
  minSamples: number;
}

/**
 * slowdown = median(wall_tps before) / median(wall_tps after), both from normal requests of one shape measured in
 * the same check; estimate and interval from ratioCI (Hodges–Lehmann, Moses). 1 = as fast as before.
 * Fail when the lower bound reaches `failSlowdown`; warn when the estimate reaches `warnSlowdown` and the lower
 * bound is above 1 (evidence of a slowdown, not of a large one).
 */
export function gradeSlowdown(
  beforeTps: ReadonlyArray<number | undefined>,
  afterTps: ReadonlyArray<number | undefined>,
  t: SlowdownThresholds,
): TimingGrade {
  const b = beforeTps.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0);
  const a = afterTps.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0);
  const figures: Record<string, number | undefined> = {
    beforeTpsP50: median(b),
    afterTpsP50: median(a),
    before: b.length,
    after: a.length,
  };
  if (b.length < t.minSamples || a.length < t.minSamples)
    return {
      outcome: 'inconclusive',
      reason: `too few timed requests (before ${b.length}, after ${a.length}; need ${t.minSamples} each)`,
      figures,
    };
  const ci = ratioCI(b, a);
  Object.assign(figures, { slowdown: ci.estimate, slowdownLow: ci.low, slowdownHigh: ci.high, coverage: ci.coverage });
  const text = `wall_tps ${fmt(median(b))} tok/s before the long requests, ${fmt(median(a))} tok/s after (medians of ${b.length} and ${a.length}): slowdown ${fmt(ci.estimate)}x (${coverageText(ci.coverage)} ${fmt(ci.low)}–${fmt(ci.high)})`;
  if (ci.low !== undefined && ci.low >= t.failSlowdown)
    return { outcome: 'fail', reason: `${text}, lower bound ≥ ${t.failSlowdown}x`, figures };
  if (ci.estimate !== undefined && ci.estimate >= t.warnSlowdown && ci.low !== undefined && ci.low > 1)
    return {
      outcome: 'warn',
      reason: `${text}, estimate ≥ ${t.warnSlowdown}x with the lower bound above 1x, but not clearly past ${t.failSlowdown}x`,
      figures,
      borderline: ci.low < t.warnSlowdown,
    };
  return { outcome: 'pass', reason: text, figures };
}

/**
 * A slowdown between the normal requests before and after the long ones that a neighbour explains: the rule of the
 * cycles family (lib/grading/cycles.ts contention) on the two sets, other load up by ≥ 0.25 cores, the server
 * CPU-bound, and its own CPU fallen about as much as its speed. Undefined when it does not, or no CPU was measured.
 */
export function neighbourExplains(
  before: CpuUse | undefined,
  after: CpuUse | undefined,
  slowdown: number | undefined,
): string | undefined {
  if (!before || !after || slowdown === undefined || !(slowdown > 0)) return undefined;
  const point = (cycle: number, u: CpuUse) => ({ cycle, otherCores: u.otherCores, serverCores: u.serverCores });
  return contention([point(1, before), point(2, after)], 1, slowdown, {
    during: 'between the normal requests before the long ones and after them',
    first: 'before',
    last: 'after',
  });
}
