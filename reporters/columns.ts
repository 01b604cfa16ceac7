// Results files as columns, one per (project, machine): shards and repeated files of the same pair merge into one;
// the counts of a column's outcomes. Pure functions, like every module render.ts puts together.

import type { Outcome, SetupFailure } from '../lib/model/types.ts';
import { setupFailureOf } from '../lib/server/setup-failure.ts';
import type { CheckResult, ResultsFile, ResultsHeader, RunError } from './results-types.ts';
import { inRunOrder } from './run-order.ts';

export interface Column {
  /** `${project} @ ${machine}`: names the column everywhere. */
  label: string;
  project: string;
  machine: string;
  header: ResultsHeader;
  checks: CheckResult[];
  /** Every merged file had `finished` (false: an interrupted run, the figures are what it got to). */
  finished: boolean;
  errors: RunError[];
  /** How many results files were merged (shards). */
  files: number;
}

export function toColumns(files: readonly ResultsFile[]): Column[] {
  const groups = new Map<string, ResultsFile[]>();
  for (const f of files) {
    const key = `${f.header.project}\u0000${f.header.machine.label}`;
    groups.set(key, [...(groups.get(key) ?? []), f]);
  }
  const cols: Column[] = [];
  for (const group of groups.values()) {
    // Older first, so a later run of the same check wins.
    const sorted = [...group].sort((a, b) => a.header.date.localeCompare(b.header.date));
    const checks: CheckResult[] = [];
    for (const f of sorted) {
      for (const c of f.checks) {
        const i = checks.findIndex((x) => x.id === c.id);
        if (i === -1) checks.push(c);
        else checks[i] = c;
      }
    }
    const header = sorted[sorted.length - 1].header;
    cols.push({
      label: `${header.project} @ ${header.machine.label}`,
      project: header.project,
      machine: header.machine.label,
      header,
      checks: inRunOrder(checks),
      finished: sorted.every((f) => f.finished !== undefined),
      errors: sorted.flatMap((f) => f.errors ?? []),
      files: sorted.length,
    });
  }
  return cols;
}

export interface Tally {
  total: number;
  /** Neither skipped nor inconclusive: checks that reached a verdict. */
  graded: number;
  /** pass + known-passing. */
  passed: number;
  counts: Record<Outcome, number>;
}

export const OUTCOMES: readonly Outcome[] = [
  'pass',
  'fail',
  'warn',
  'inconclusive',
  'skip',
  'known',
  'known-passing',
  'error',
];

export function tally(checks: readonly CheckResult[]): Tally {
  const counts = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  for (const c of checks) counts[c.outcome] = (counts[c.outcome] ?? 0) + 1;
  return {
    total: checks.length,
    graded: checks.length - counts.skip - counts.inconclusive,
    passed: counts.pass + counts['known-passing'],
    counts,
  };
}

/** What stopped a column's run before its checks (lib/server/setup-failure.ts), if anything did. */
export function setupFailureOfColumn(col: Column): SetupFailure | undefined {
  return setupFailureOf(col.header.server);
}

export function knownPassing(col: Column): CheckResult[] {
  return col.checks.filter((c) => c.outcome === 'known-passing');
}

export function orderedIds(cols: readonly Column[]): string[] {
  const ids: string[] = [];
  for (const c of cols) for (const x of c.checks) if (!ids.includes(x.id)) ids.push(x.id);
  return ids;
}
