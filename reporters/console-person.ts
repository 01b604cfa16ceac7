// The console a person reads (the default): what did not pass, by family in run order, one row per reason.

import type { Outcome } from '../lib/model/types.ts';
import type { Column } from './columns.ts';
import {
  ANSI,
  type ConsoleOptions,
  firstLine,
  OUTCOME_TEXT,
  rootCauseGroups,
  rootCauseLine,
  serverLine,
  textTable,
} from './report-text.ts';
import type { CheckResult } from './results-types.ts';
import { groupPhantoms, phantomChecks, workloadRows } from './workload-rows.ts';

/** One row of a person's console: one check that did not pass, or several of a family that share one reason. */
interface NotPassedRow {
  family: string;
  outcome: Outcome;
  ids: string[];
  reason: string;
}

/** "a.b", "a.b, a.c", or "a.b … f (5 checks)" (the family said once). */
function idsText(ids: readonly string[]): string {
  if (ids.length <= 2) return ids.join(', ');
  const last = ids.at(-1)!;
  const family = `${ids[0]!.split('.')[0]}.`;
  return `${ids[0]} … ${last.startsWith(family) ? last.slice(family.length) : last} (${ids.length} checks)`;
}

/**
 * What did not pass, grouped by family in run order, one row per reason: checks of a family with the same outcome and
 * the same reason (capacity's five skips for one undeclared capability, the checks one root cause blocked) share a
 * row. A run of `error` checks with one message across families (a server that stopped answering) is one row.
 */
function notPassedRows(checks: readonly CheckResult[], width = 100): NotPassedRow[] {
  const rows: (NotPassedRow & { key: string })[] = [];
  for (const c of checks) {
    if (c.outcome === 'pass') continue;
    const key = `${c.outcome}\u0000${c.blockedBy ? `blocked by ${c.blockedBy}` : firstLine(c.message, 2000)}`;
    const last = rows.at(-1);
    const joins =
      rows.find((r) => r.family === c.family && r.key === key) ??
      (c.outcome === 'error' && last?.key === key ? last : undefined);
    if (joins) joins.ids.push(c.id);
    else
      rows.push({
        family: c.family,
        outcome: c.outcome,
        ids: [c.id],
        reason: c.blockedBy ? `blocked by ${c.blockedBy} (root cause below)` : firstLine(c.message, width),
        key,
      });
  }
  return rows.map(({ key: _, ...r }) => r);
}

/**
 * A person's console (the default): the server, what did not pass by family in run order with its one-line reason,
 * the root causes and phantom figures when there are any; the gate line follows (renderConsole).
 */
export function consolePerson(col: Column, o: ConsoleOptions): string {
  const out: string[] = [];
  out.push(
    `conformance — ${col.label}: ${serverLine(col.header)} · tier ${col.header.tier}${col.header.strict ? ' · strict' : ''}${col.finished ? '' : ' · INTERRUPTED (partial results)'}`,
  );
  const rows = notPassedRows(col.checks, o.messageWidth ?? 100);
  if (rows.length) {
    const color = o.color ?? false;
    let family = '';
    const cells = rows.map((r) => {
      const f = r.family === family ? '' : r.family;
      family = r.family;
      return [f, OUTCOME_TEXT[r.outcome], idsText(r.ids), r.reason];
    });
    out.push(
      textTable(
        ['family', 'outcome', 'check', 'why'],
        cells,
        color ? (cell, r, i) => (i === 1 ? `\x1b[${ANSI[rows[r]!.outcome] ?? '0'}m${cell}\x1b[0m` : cell) : undefined,
      ),
    );
  } else if (col.checks.length) out.push(col.finished ? 'every check passed' : 'every check that finished passed');
  const causes = rootCauseGroups(col.checks);
  for (const g of causes) out.push(`ROOT CAUSE ${rootCauseLine(g, 160).head}`);
  const ph = phantomChecks(col);
  for (const g of groupPhantoms(ph))
    out.push(`PHANTOM ${g.checks.join(', ')} (${g.label}): ${firstLine(g.detail, 200)}`);
  for (const r of workloadRows(col).filter((x) => x.phantom && !ph.some((p) => p.check === x.check)))
    out.push(`PHANTOM gen_tps in ${r.check} (${r.name}): ${firstLine(r.phantom!.detail, 200)}`);
  for (const e of col.errors) out.push(`run error (${e.where}): ${firstLine(e.message, 200)}`);
  return out.join('\n');
}
