/**
 * What a check family declares about itself, in its suite file (`export const family: FamilySpec` in
 * suites/<name>.ts). Everything else a family needs is derived from these declarations by `npm run families`
 * (scripts/families.ts): its Vitest entry suites/<name>.test.ts, FAMILY_ORDER and the per-family lists in
 * lib/check/family-order.ts, and its row in docs/families.md. test/families.test.ts fails when they drift.
 */
export interface FamilySpec {
  /** The suite file's name (suites/<name>.ts) and, unless `checksOf` says otherwise, the family of its checks. */
  name: string;
  /**
   * Where the family runs (the sequencer, per-file deadlines, the reports' order): lower first. `setup` is 0 and
   * first; families with destructive checks (fuzzing, absurd values, over-long prompts, another model) after every
   * family that only observes (test/registry.test.ts); `api-last` after everything that sends requests, `health`
   * (the sentinel's finding, which sends nothing) last.
   */
  order: number;
  /** One line for the families table in docs/families.md (markdown); none for a file that holds part of another family. */
  what?: string;
  /** This file holds checks of another family, run at its own place (suites/api-last.ts: api checks that run last). */
  checksOf?: string;
  /** Its checks time the server (the speed proof matrix runs them at several decode speeds). */
  timing?: boolean;
  /** false: loaded or long-prompt workloads, whose figures are never a column's single-stream headline. Default true. */
  headline?: boolean;
}
