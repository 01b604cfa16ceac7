// context.healthy-after: normal requests after long and over-long prompts against the same requests before them.
// Pure: no I/O, no clock, no unseeded randomness, so every verdict can be recomputed from the recorded figures and
// simulated with seeded noise (test/context-grading.test.ts runs 10,000 noisy trials of the timing gradings).
// Times in ms, sizes in tokens as the server counts them (usage.prompt_tokens, calibrated).

import { escapeBytes } from '../decode/stream-decoder.ts';
import { bodyText } from '../http/recorder.ts';
import type { CpuUse } from '../measure/machine-load.ts';
import type { RequestMetrics } from '../measure/request-metrics.ts';
import { median } from '../measure/stats.ts';
import type { Evidence, Recording, Verdict } from '../model/types.ts';
import { fail, fmt, inconclusive, pass, warn } from '../model/verdict.ts';
import { contention } from './cycles.ts';
import { coverageText, guardStarvation, ratioCI, type TimingGrade } from './timing-grade.ts';

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

// ---------------------------------------------------------------------------------------------------------------
// The check's verdict

/** A normal request, timed before or after the long ones. */
export interface NormalRequest {
  rec: Recording;
  metrics?: Pick<RequestMetrics, 'ttftMs' | 'e2eMs' | 'completionTokens'>;
  /** HTTP 200, complete, with generated tokens (lib/exchange/served.ts). */
  served: boolean;
  /** The exchange in one phrase (its status or failure: lib/exchange describeExchange). */
  described: string;
}

/** wall_tps = tokens / e2e of each request (undefined where it failed); `shift` moves e2e (our client's delay, counted against a failing verdict). */
function wallTps(xs: readonly NormalRequest[], shift = 0): (number | undefined)[] {
  return xs.map((x) => {
    const tokens = x.metrics?.completionTokens;
    if (x.rec.status !== 200 || x.rec.failure || tokens === undefined) return undefined;
    const e2e = x.metrics!.e2eMs + shift;
    return e2e > 0 ? tokens / (e2e / 1000) : undefined;
  });
}

interface AfterSettings extends SlowdownThresholds {
  /** Our event loop late by more than this (p99, ms) means our timestamps are not the server's. */
  maxLoopDelayMs: number;
}

/** A set of normal requests against the set before the long ones: gradeSlowdown, guarded against a starved client. */
export function gradeAfterSet(
  before: readonly NormalRequest[],
  after: readonly NormalRequest[],
  t: AfterSettings,
  loop: { p99Ms: number; maxMs: number } | undefined,
): TimingGrade {
  const sl = { failSlowdown: t.failSlowdown, warnSlowdown: t.warnSlowdown, minSamples: t.minSamples };
  return guardStarvation(gradeSlowdown(wallTps(before), wallTps(after), sl), loop, t.maxLoopDelayMs, (d) =>
    gradeSlowdown(wallTps(before, d), wallTps(after, -d), sl),
  );
}

/** What the check recorded. */
interface HealthyAfterRecord {
  before: NormalRequest[];
  after: NormalRequest[];
  /** Tokens of each normal request, and what sized them. */
  tokens: number;
  sizing: string;
  longPromptStatus?: number;
  /** How the over-long prompts were answered (OverWindowFinding kinds). */
  overWindow: string[];
  ev: Evidence[];
}

function healthyMetrics(o: HealthyAfterRecord): Record<string, unknown> {
  return {
    tokens: o.tokens,
    sizing: o.sizing,
    beforeWallTps: wallTps(o.before),
    afterWallTps: wallTps(o.after),
    beforeTtftMs: o.before.map((x) => x.metrics?.ttftMs),
    afterTtftMs: o.after.map((x) => x.metrics?.ttftMs),
    longPromptStatus: o.longPromptStatus,
    overWindow: o.overWindow,
  };
}

/**
 * Normal requests after the long ones not served: a fail, `blocked` when none before them was served either (nothing
 * was done to the server that this check could judge: the run reports that cause once). Undefined when all were.
 */
export function judgeServedAfter(o: HealthyAfterRecord): { verdict: Verdict; blocked: boolean } | undefined {
  const { before, after } = o;
  const broken = after.filter((x) => !x.served);
  if (!broken.length) return undefined;
  const bytes = escapeBytes(bodyText(broken[0].rec), 300);
  if (before.every((x) => !x.served))
    return {
      blocked: true,
      verdict: fail(
        {
          requirement: 'A normal streamed request MUST be served.',
          expected: 'HTTP 200 and a streamed completion',
          actual: `none of the ${before.length} normal requests before the long prompts, nor the ${after.length} after them, was served: ${broken[0].described}`,
          bytes,
        },
        healthyMetrics(o),
        o.ev,
      ),
    };
  return {
    blocked: false,
    verdict: fail(
      {
        requirement: 'After long and over-long prompts, a normal request MUST still be served.',
        expected: `HTTP 200 and a streamed completion, as the ${before.length} requests before them got`,
        actual: `${broken.length} of ${after.length} normal requests after the long ones failed: ${broken[0].described}`,
        violations: broken.slice(1).map((x) => x.described),
        bytes,
      },
      healthyMetrics(o),
      o.ev,
    ),
  };
}

/**
 * The slowdown after the long requests. A slowdown must persist: when the first set after them was not a pass, a
 * confirmation set decides (`again`, graded by gradeAfterSet), and the first set's figure is named beside it. A
 * slowdown a neighbour on the machine explains (CPU use of the set before against the last set) is inconclusive.
 */
export function judgeHealthyAfter(
  o: HealthyAfterRecord & {
    first: TimingGrade;
    confirmation?: { xs: NormalRequest[]; grade: TimingGrade };
    cpu: { before?: CpuUse; after?: CpuUse };
  },
  failSlowdown: number,
): Verdict {
  const { ev, sizing, first } = o;
  const metrics = healthyMetrics(o);
  let g = first;
  Object.assign(metrics, g.figures);
  if (o.confirmation) {
    const g2 = o.confirmation.grade;
    metrics.firstAfter = { ...g.figures, outcome: g.outcome };
    metrics.confirmationWallTps = wallTps(o.confirmation.xs);
    Object.assign(metrics, g2.figures);
    g =
      g2.outcome === 'pass'
        ? {
            ...g2,
            reason: `${g2.reason} (a first set right after the long requests was ${g.outcome}: ${fmt(g.figures.slowdown)}x; the confirmation was not: transient)`,
          }
        : {
            ...g2,
            reason: `${g2.reason}; confirmed: the first set after the long requests gave ${fmt(g.figures.slowdown)}x`,
          };
  }
  const neighbour =
    g.outcome === 'fail' || g.outcome === 'warn'
      ? neighbourExplains(o.cpu.before, o.cpu.after, g.figures.slowdown)
      : undefined;
  if (neighbour) {
    metrics.cpu = { before: o.cpu.before, after: o.cpu.after };
    return inconclusive(`${g.reason}, but ${neighbour} (${sizing})`, metrics, ev);
  }
  if (g.outcome === 'fail') {
    return fail(
      {
        requirement:
          'After long and over-long prompts, a normal request MUST run at the speed it ran before them (same check, same request shape).',
        expected: `wall_tps after ≥ 1/${failSlowdown} of before (slowdown < ${failSlowdown}x)`,
        actual: `${g.reason}: the server stays degraded after a long prompt`,
      },
      metrics,
      ev,
    );
  }
  if (g.outcome === 'inconclusive') return inconclusive(`${g.reason} (${sizing})`, metrics, ev);
  if (g.outcome === 'warn') return { ...warn(`${g.reason} (${sizing})`, metrics, ev), borderline: g.borderline };
  return pass(`${g.reason} (${sizing})`, metrics, ev);
}
