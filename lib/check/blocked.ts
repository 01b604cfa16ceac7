// One root cause, one failure (docs/grading.md "Blocked checks"). A check whose precondition failed — the request it
// needed answered, say, HTTP 500 — marks its verdict with what failed (`precondition`). The runner then decides:
//  - the first MUST check of the run to meet that failure reports it: it fails, and the failure is recorded as the
//    run's root cause for that kind of request and answer;
//  - every later check meeting the same failure is `inconclusive`, "blocked by <that check>", with its own figures;
//  - a SHOULD or INFO check is never "not met" for want of evidence: with no root cause recorded yet it is
//    inconclusive too, naming the check that reports such a failure: the first it declares it depends on
//    (CheckDef.dependsOn), or itself when it declares none.
// The record lives as long as the run, in its memory (shared by the workers of a Vitest run: lib/run/memory.ts).
import type { CheckDef, RunMemory, SharedSlice } from '../model/check.ts';
import type { Verdict } from '../model/types.ts';

/** A failure recorded as the run's root cause for one kind of request. */
interface RootCause {
  check: string;
  key: string;
  detail: string;
}

export interface RootCauseStore {
  get(key: string): RootCause | undefined;
  /** Record `cause` unless one is recorded for its key already; returns the one recorded. */
  claim(cause: RootCause): RootCause;
}

/** The run's root causes, by key: shared by its workers (lib/run/memory.ts). */
const ROOT_CAUSES: SharedSlice<Record<string, RootCause>> = { name: 'root-causes', initial: {} };

/** The root causes a run's memory keeps (a proof that must judge alone passes a fresh memory's). */
export function rootCauses(memory: RunMemory): RootCauseStore {
  const slot = memory.shared(ROOT_CAUSES);
  return {
    get: (key) => slot.read()[key],
    claim(c) {
      const had = slot.read()[c.key];
      if (had) return had;
      slot.update((all) => ({ ...all, [c.key]: c }));
      return c;
    },
  };
}

/**
 * The verdict a check gets when its precondition failed: its own (a MUST failure) when it is the first to meet the
 * failure and may report it, else inconclusive naming the check that reports it. Verdicts without a precondition pass
 * through unchanged.
 */
export function resolveBlocked(
  check: Pick<CheckDef, 'id' | 'level' | 'dependsOn'>,
  v: Verdict,
  store: RootCauseStore,
): Verdict {
  const p = v.precondition;
  if (!p) return v;
  const reporter = check.dependsOn?.[0] ?? check.id;
  const root = store.get(p.key);
  if (root && root.check !== check.id)
    return {
      outcome: 'inconclusive',
      message: `blocked by ${root.check}: ${p.detail} (${root.check} reports it once; this check has nothing to judge)`,
      metrics: v.metrics,
      evidence: v.evidence,
      precondition: p,
      blockedBy: root.check,
    };
  if (root || p.ownFinding) return v;
  if (check.level === 'MUST' && v.outcome === 'fail' && p.mayReport !== false) {
    store.claim({ check: check.id, key: p.key, detail: p.detail });
    return v;
  }
  return {
    outcome: 'inconclusive',
    message: `blocked by ${reporter}: ${p.detail} (${reporter} reports it; this check has nothing to judge)`,
    metrics: v.metrics,
    evidence: v.evidence,
    precondition: p,
    blockedBy: reporter,
  };
}
