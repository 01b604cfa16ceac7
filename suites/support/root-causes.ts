// Blocked verdicts for the checks that need a request only as a means (lib/check/blocked.ts: one root cause, one
// failure; the others are inconclusive "blocked by" it). Which check reports the cause is each check's declaration
// (`dependsOn`), not an argument here.
import { blockedOn, requestPrecondition } from '../../lib/grading/preconditions.ts';
import { endingOf } from '../../lib/measure/deadlines.ts';
import type { Precondition, Recording, Verdict } from '../../lib/model/types.ts';

/** Not served: the server answered a status other than 200, or failed before any byte of a body (not our side's ending). */
function unserved(rec: Recording): boolean {
  return endingOf(rec).by === 'server' && (rec.status !== 200 || (!!rec.failure && rec.reads.length === 0));
}

/**
 * `v`, marked as blocked when every one of the failed requests `recs` was not served at all, and all alike (the first
 * names the cause); unchanged when any of them failed otherwise (a stall mid-stream is the check's own finding).
 */
export function blockedIfUnserved(
  v: Verdict,
  recs: readonly Recording[],
  o: Pick<Precondition, 'mayReport' | 'ownFinding'> = {},
): Verdict {
  if (recs.length === 0 || !recs.every(unserved)) return v;
  // One cause: every request answered alike (the same status and error text); mixed answers are the check's own evidence.
  if (new Set(recs.map((r) => requestPrecondition(r).key)).size > 1) return v;
  return blockedOn(v, requestPrecondition(recs[0]!, o));
}
