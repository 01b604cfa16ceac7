// The console of several columns (`report` on files of several runs): outcomes as checks × columns, each column's
// tally, the workloads of all of them and their phantom streams.

import { type Column, orderedIds, tally } from './columns.ts';
import {
  type ConsoleOptions,
  cellNum,
  firstLine,
  OUTCOME_TEXT,
  serverLine,
  tallyLine,
  textTable,
} from './report-text.ts';
import { genTpsCell, groupPhantoms, phantomChecks, tokensCell, workloadRows } from './workload-rows.ts';

/** Several columns: a matrix of outcomes (checks × columns), then each column's workloads. */
export function consoleMatrix(cols: readonly Column[], o: ConsoleOptions): string {
  const ids = orderedIds(cols);
  const out: string[] = [];
  out.push(`conformance — ${cols.length} columns`);
  cols.forEach((c, i) =>
    out.push(`  [${i + 1}] ${c.label}: ${serverLine(c.header)} (${c.header.date}${c.finished ? '' : ', INTERRUPTED'})`),
  );
  out.push('');
  const rows = ids.map((id) => [
    id,
    ...cols.map((c) => {
      const x = c.checks.find((k) => k.id === id);
      return x ? OUTCOME_TEXT[x.outcome] : '·';
    }),
  ]);
  out.push(textTable(['check', ...cols.map((_, i) => `[${i + 1}]`)], rows));
  out.push('');
  cols.forEach((c, i) => out.push(`[${i + 1}] ${tallyLine(tally(c.checks))}`));
  const wl = cols.flatMap((c, i) => workloadRows(c).map((r) => ({ col: i, r })));
  if (wl.length) {
    out.push('');
    out.push('workloads:');
    out.push(
      textTable(
        ['column', 'check', 'workload', 'wall_tps_p50', 'ttft_p50', 'gen_tps_p50', 'speedup', 'tokens usage / counted'],
        wl.map(({ col, r }) => [
          `[${col + 1}]`,
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
  const ph = cols.flatMap((c, i) =>
    groupPhantoms(phantomChecks(c)).map(
      (g) => `  [${i + 1}] PHANTOM ${g.checks.join(', ')} (${g.label}): ${firstLine(g.detail, o.messageWidth ?? 200)}`,
    ),
  );
  if (ph.length) out.push('', 'phantom delivery (gen_tps from these streams is not a decode rate):', ...ph);
  return out.join('\n');
}
