// Which checks of a run provide a headline figure (lib/model/figures.ts): what each check's record says it provides
// (results.json carries the check's declared `provides`), else, for a file written before records carried it, what
// the catalogue declares for its id (lib/check/family-order.ts FIGURE_SOURCES, written by npm run families).
// Reporters find a figure this way, never by a check id (test/families.test.ts keeps them free of ids).
import { FIGURE_SOURCES } from '../lib/check/family-order.ts';
import type { HeadlineFigure } from '../lib/model/figures.ts';

interface Provider {
  id: string;
  provides?: readonly string[];
}

/** Check id → the figures the catalogue declares it provides. */
const DECLARED = new Map<string, string[]>();
for (const [figure, ids] of Object.entries(FIGURE_SOURCES))
  for (const id of ids) DECLARED.set(id, [...(DECLARED.get(id) ?? []), figure]);

/** The figures a check record provides: its own list, else its id's in the catalogue (an older file). */
function providesOf(c: Provider): readonly string[] {
  return c.provides ?? DECLARED.get(c.id) ?? [];
}

/** The checks that provide `figure`, in the order given. */
export function providersOf<T extends Provider>(checks: Iterable<T>, figure: HeadlineFigure): T[] {
  return [...checks].filter((c) => providesOf(c).includes(figure));
}

/** The first check that provides `figure`, if any does. */
export function providerOf<T extends Provider>(checks: Iterable<T>, figure: HeadlineFigure): T | undefined {
  for (const c of checks) if (providesOf(c).includes(figure)) return c;
  return undefined;
}

/** The ids of the checks the catalogue declares provide `figure`: where a report says a figure comes from. */
export function declaredSources(figure: HeadlineFigure): readonly string[] {
  return FIGURE_SOURCES[figure] ?? [];
}
