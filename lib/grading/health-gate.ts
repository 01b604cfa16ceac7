// The health gate: a timing verdict measured on a degraded server is not a pass. Pure: the health probe right after
// a timing check (lib/server/sentinel.ts, judged against the run's start-of-run baseline) and the check's verdict in,
// the verdict the run reports out (docs/grading.md "Health sentinel").
//
// - degraded after the check (the check's own requests made the server sick, or something did while it ran): its points
//   may have been measured on the sick server — a pass or a warn is inconclusive, naming the degradation (baseline
//   figures against now) and this check as its cause; a fail stays a fail (its finding holds on any server: a server
//   that decays over cycles is what cycles.* exists to fail) and says the server was degraded after it.
// - healthy after it, or no baseline (sentinel off): the verdict unchanged.
import type { Verdict } from '../model/types.ts';

export interface HealthAfterCheck {
  degraded: boolean;
  /** The probe figures against the start-of-run baseline, one line (judgeHealth's `figures`). */
  figures: string;
  /** Still degraded after the sentinel's wait (the run is "degraded since" this check), or recovered within it. */
  lasting: boolean;
  /** How long the sentinel waited for a recovery (ms). */
  waitedMs: number;
}

export function gateTimingVerdict(checkId: string, v: Verdict, health: HealthAfterCheck | undefined): Verdict {
  if (!health?.degraded) return v;
  const how = health.lasting
    ? `and still after ${Math.round(health.waitedMs / 100) / 10} s (health.sentinel: degraded since ${checkId})`
    : `and recovered within ${Math.round(health.waitedMs / 100) / 10} s`;
  const what = `the server was degraded right after this check, against the start of the run: ${health.figures}, ${how}; ${checkId} is the check that made it so`;
  const metrics = {
    ...v.metrics,
    healthGate: { degradedAfter: checkId, figures: health.figures, lasting: health.lasting },
  };
  if (v.outcome === 'pass' || v.outcome === 'warn')
    return {
      ...withoutBorderline(v),
      outcome: 'inconclusive',
      message: `not graded: ${what}. Its points may have been measured on the sick server, so its ${v.outcome} would grade the sickness, not this check (it read: ${v.message})`,
      metrics,
    };
  if (v.outcome === 'fail') return { ...v, message: `${v.message}\n(measured while ${what})`, metrics };
  return v;
}

function withoutBorderline(v: Verdict): Verdict {
  const { borderline: _, ...rest } = v;
  return rest;
}
