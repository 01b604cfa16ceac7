// Checks in the order the run runs them: families in FAMILY_ORDER (setup first, health last), and within a family the
// order its file declares (Vitest runs a file's tests in that order, and results keep it). Vitest hands reporters its
// test modules by file name (anthropic first); every report shows the run order instead.
import { FAMILY_ORDER } from '../lib/check/family-order.ts';

const FILE_RE = /(?:^|[\\/])suites[\\/]([a-z0-9-]+)\.test\.ts$/;

/**
 * A check's place among the families: its suite file's (api.unknown-model runs from api-last.test.ts, after errors),
 * else its family's; unknown ones after every known one.
 */
function familyRank(c: { family: string; file?: string }): number {
  const fromFile = c.file ? FILE_RE.exec(c.file)?.[1] : undefined;
  const i = FAMILY_ORDER.indexOf(fromFile ?? c.family);
  return i === -1 ? FAMILY_ORDER.length : i;
}

/** The same checks in run order; a stable sort, so the order within a file is kept as it came. */
export function inRunOrder<T extends { family: string; file?: string }>(checks: readonly T[]): T[] {
  return checks
    .map((c, i) => ({ c, i, r: familyRank(c) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.c);
}

/** A test module's place in the run, from its file (Vitest's moduleId). */
export function moduleRank(moduleId: string): number {
  const m = FILE_RE.exec(moduleId);
  const i = m ? FAMILY_ORDER.indexOf(m[1]!) : -1;
  return i === -1 ? FAMILY_ORDER.length : i;
}
