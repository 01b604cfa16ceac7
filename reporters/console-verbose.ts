// The verbose console of one column (--verbose): every check in run order with its outcome and message, the root
// causes, the workload figures and the phantom streams.

import { describePreflight } from '../lib/measure/fidelity.ts';
import { type Column, tally } from './columns.ts';
import {
  ANSI,
  type ConsoleOptions,
  cellNum,
  collapseErrors,
  firstLine,
  OUTCOME_TEXT,
  rootCauseGroups,
  rootCauseLine,
  serverLine,
  tallyLine,
  textTable,
} from './report-text.ts';
import { genTpsCell, groupPhantoms, phantomChecks, tokensCell, workloadRows } from './workload-rows.ts';

/** One column: the checks with outcome and message, then the workload figures. */
export function consoleOne(col: Column, o: ConsoleOptions): string {
  const color = o.color ?? false;
  const width = o.messageWidth ?? 90;
  const t = tally(col.checks);
  const out: string[] = [];
  out.push(`conformance — ${col.label}: ${serverLine(col.header)}`);
  out.push(
    `suite ${col.header.suite.version} · ${col.header.date} · tier ${col.header.tier}${col.header.strict ? ' · strict' : ''}${col.finished ? '' : ' · INTERRUPTED (partial results)'}${col.files > 1 ? ` · ${col.files} files merged` : ''}`,
  );
  if (col.header.fidelity) out.push(describePreflight(col.header.fidelity));
  out.push('');
  const shown = collapseErrors(col.checks);
  const rows = shown.map((r) => [
    OUTCOME_TEXT[r.check.outcome],
    r.count > 1 ? '' : r.check.level,
    r.id,
    r.count > 1 ? r.message : firstLine(r.message, width),
  ]);
  out.push(
    textTable(
      ['outcome', 'level', 'check', 'message'],
      rows,
      color
        ? (cell, r, i) => (i === 0 ? `\x1b[${ANSI[shown[r]!.check.outcome] ?? '0'}m${cell}\x1b[0m` : cell)
        : undefined,
    ),
  );
  out.push('');
  out.push(tallyLine(t));
  const causes = rootCauseGroups(col.checks);
  if (causes.length) {
    out.push('');
    out.push('root causes (each reported once; the checks it blocked had nothing to judge):');
    for (const g of causes) {
      const l = rootCauseLine(g, 160);
      out.push(`  ROOT CAUSE ${l.head}: ${l.ids}`);
    }
  }
  const wl = workloadRows(col);
  if (wl.length) {
    out.push('');
    out.push('workloads:');
    out.push(
      textTable(
        ['check', 'workload', 'wall_tps_p50', 'ttft_p50', 'gen_tps_p50', 'speedup', 'tokens usage / counted'],
        wl.map((r) => [
          r.check,
          r.name,
          cellNum(r.wall_tps_p50),
          r.ttft_p50_ms === undefined ? '-' : `${cellNum(r.ttft_p50_ms)} ms`,
          genTpsCell(r),
          r.speedup === undefined ? '-' : `${r.speedup.toFixed(2)}x`,
          tokensCell(r),
        ]),
      ),
    );
  }
  const ph = phantomChecks(col);
  if (ph.length) {
    out.push('');
    out.push('phantom delivery (gen_tps from these streams is not a decode rate):');
    for (const g of groupPhantoms(ph))
      out.push(`  PHANTOM ${g.checks.join(', ')} (${g.label}): ${firstLine(g.detail, 240)}`);
  }
  for (const r of wl.filter((x) => x.phantom && !ph.some((p) => p.check === x.check)))
    out.push(`  PHANTOM gen_tps in ${r.check} (${r.name}): ${r.phantom!.detail}`);
  for (const e of col.errors) out.push(`run error (${e.where}): ${firstLine(e.message, 200)}`);
  return out.join('\n');
}
