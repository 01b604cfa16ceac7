// Pure functions: results files -> console table text, Markdown summary, badge specs.
// The live reporters and `npm run report` call the same functions, so a report rebuilt from results.json is the
// report the run printed. Nothing here reads the clock, the environment or the disk.
//
// This file puts the console together and is the one place callers import from; the parts live beside it:
// columns.ts (results files as columns, tallies), gate-line.ts, report-text.ts (labels, tables, root causes),
// workload-rows.ts (figures, workloads, phantom streams), console-person.ts (the default console),
// console-verbose.ts (--verbose), console-matrix.ts (several columns), markdown.ts, badge-specs.ts.

import { describeSetupFailure } from '../lib/server/setup-failure.ts';
import { clientMatrixLines } from './clients-matrix.ts';
import { type Column, knownPassing, setupFailureOfColumn } from './columns.ts';
import { consoleMatrix } from './console-matrix.ts';
import { consolePerson } from './console-person.ts';
import { consoleOne } from './console-verbose.ts';
import { gateLine } from './gate-line.ts';
import { type ConsoleOptions, textTable } from './report-text.ts';

export { BADGE_NAMES, type BadgeSpec, badgeSpecs, shieldsEndpoint } from './badge-specs.ts';
export { type Column, OUTCOMES, type Tally, tally, toColumns } from './columns.ts';
export { gateFailed, gateLine } from './gate-line.ts';
export { mdEscape, renderMarkdown } from './markdown.ts';
export { collapseErrors, textTable } from './report-text.ts';
export { workloadRows } from './workload-rows.ts';

function knownPassingBanner(cols: readonly Column[], color: boolean): string[] {
  const lines: string[] = [];
  for (const col of cols) {
    for (const c of knownPassing(col)) {
      const text = `!!! KNOWN ISSUE NOW PASSES: ${c.id} on ${col.label} — remove it from knownIssues of profile "${col.project}" (servers.json)`;
      lines.push(color ? `\x1b[1;36m${text}\x1b[0m` : text);
    }
  }
  return lines;
}

/**
 * The console text of one or more results files. By default a person's view of one run (what did not pass, the gate
 * line); `verbose` (--verbose) adds every check in run order, the workloads and the client matrix; several columns
 * (`report` on files of several runs) give the matrix.
 */
export function renderConsole(cols: readonly Column[], o: ConsoleOptions = {}): string {
  if (cols.length === 0) return 'conformance: no results';
  const stopped = cols.length === 1 ? setupFailureOfColumn(cols[0]!) : undefined;
  if (stopped) return [`conformance — ${cols[0]!.label}`, describeSetupFailure(stopped), '', gateLine(cols)].join('\n');
  const person = cols.length === 1 && !o.verbose;
  const body = person
    ? consolePerson(cols[0]!, o)
    : cols.length === 1
      ? consoleOne(cols[0]!, o)
      : consoleMatrix(cols, o);
  const clients = person ? [] : clientMatrixLines(cols, textTable, o.messageWidth ?? 90);
  const banner = knownPassingBanner(cols, o.color ?? false);
  return [
    ...banner,
    ...(banner.length ? [''] : []),
    body,
    ...(clients.length ? ['', ...clients] : []),
    ...(person ? [] : ['']),
    ...banner,
    gateLine(cols, { reports: o.reports }),
  ].join('\n');
}
