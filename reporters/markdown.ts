// Markdown (GitHub step summary, summary.md): one column's report, or a matrix of several and each one's report.

import { describePreflight } from '../lib/measure/fidelity.ts';
import type { Outcome, SetupFailure } from '../lib/model/types.ts';
import { describeSetupFailure, SETUP_HEADLINE } from '../lib/server/setup-failure.ts';
import { type Column, knownPassing, orderedIds, setupFailureOfColumn, tally } from './columns.ts';
import {
  cellNum,
  collapseErrors,
  firstLine,
  OUTCOME_MD,
  rootCauseGroups,
  rootCauseLine,
  serverLine,
} from './report-text.ts';
import { groupPhantoms, phantomChecks, tokensCell, workloadRows } from './workload-rows.ts';

export function mdEscape(s: string): string {
  return s
    .replace(/\\/g, '\\\\')
    .replace(/\|/g, '\\|')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\r?\n/g, '<br>');
}

/** A run stopped before its checks: what stopped it, as requirement / expected / actual; no table, no counts. */
function mdSetupFailure(col: Column, f: SetupFailure): string {
  return [
    `## LLM server conformance: ${mdEscape(col.label)}`,
    '',
    `suite ${col.header.suite.version} · ${col.header.date} · tier ${col.header.tier}`,
    '',
    `### ${SETUP_HEADLINE[f.kind]}: no check was run`,
    '',
    '```text',
    describeSetupFailure(f).replace(/```/g, "'''"),
    '```',
    '',
    f.kind === 'config'
      ? 'A configuration error is not counted against the server.'
      : f.kind === 'never-ready'
        ? 'The server never answered its readiness probe: nothing could be checked, nothing is counted against it.'
        : "Setup itself failed (the suite's side): nothing is counted against the server.",
  ].join('\n');
}

function mdOne(col: Column): string {
  const stopped = setupFailureOfColumn(col);
  if (stopped) return mdSetupFailure(col, stopped);
  const t = tally(col.checks);
  const out: string[] = [];
  out.push(`## LLM server conformance: ${mdEscape(col.label)}`);
  out.push('');
  out.push(
    `${mdEscape(serverLine(col.header))} · suite ${col.header.suite.version} · ${col.header.date} · tier ${col.header.tier}${col.header.strict ? ' · strict' : ''}${col.finished ? '' : ' · **interrupted: partial results**'}`,
  );
  if (col.header.fidelity) out.push('', mdEscape(describePreflight(col.header.fidelity)));
  out.push('');
  out.push(
    `**${t.passed}/${t.graded} passed** · ${t.counts.fail} fail · ${t.counts.error} error · ${t.counts.warn} warn · ${t.counts.inconclusive} inconclusive · ${t.counts.known} known · ${t.counts['known-passing']} known-passing · ${t.counts.skip} skip`,
  );
  for (const c of knownPassing(col)) {
    out.push('');
    out.push(
      `> [!IMPORTANT]\n> **Known issue now passes: \`${c.id}\`** — remove it from \`knownIssues\` of profile \`${mdEscape(col.project)}\` in servers.json.`,
    );
  }
  const causes = rootCauseGroups(col.checks);
  for (const g of causes) {
    const l = rootCauseLine(g, 300);
    out.push('');
    out.push(
      `> [!WARNING]\n> **Root cause \`${g.id}\`** ${mdEscape(l.head.slice(g.id.length + 1))}: ${g.blocked.map((c) => `\`${c.id}\``).join(', ')}`,
    );
  }
  out.push('');
  // Problems first, then the rest, each in run order.
  const rank = (o: Outcome) =>
    ['error', 'fail', 'known-passing', 'warn', 'inconclusive', 'known', 'pass', 'skip'].indexOf(o);
  const sorted = [...col.checks].sort((a, b) => rank(a.outcome) - rank(b.outcome));
  out.push('| outcome | level | check | message |');
  out.push('|---|---|---|---|');
  for (const r of collapseErrors(sorted))
    out.push(
      `| ${OUTCOME_MD[r.check.outcome]} | ${r.count > 1 ? '' : r.check.level} | \`${r.id}\` | ${mdEscape(firstLine(r.message, r.count > 1 ? 500 : 300))} |`,
    );
  const wl = workloadRows(col);
  if (wl.length) {
    out.push('');
    out.push('### Workloads');
    out.push('');
    out.push('| check | workload | wall_tps p50 | ttft p50 | gen_tps p50 | speedup | tokens usage / counted |');
    out.push('|---|---|---|---|---|---|---|');
    for (const r of wl) {
      const gen = r.phantom
        ? `${cellNum(r.gen_tps_p50)} **PHANTOM** (${mdEscape(r.phantom.label)})`
        : cellNum(r.gen_tps_p50);
      out.push(
        `| \`${r.check}\` | ${mdEscape(r.name)} | ${cellNum(r.wall_tps_p50)} | ${r.ttft_p50_ms === undefined ? '-' : `${cellNum(r.ttft_p50_ms)} ms`} | ${gen} | ${r.speedup === undefined ? '-' : `${r.speedup.toFixed(2)}x`} | ${tokensCell(r)} |`,
      );
    }
  }
  const ph = phantomChecks(col);
  if (ph.length) {
    out.push('');
    out.push('### Phantom delivery');
    out.push('');
    for (const g of groupPhantoms(ph))
      out.push(
        `- **PHANTOM** ${g.checks.map((c) => `\`${c}\``).join(', ')} (${mdEscape(g.label)}): ${mdEscape(firstLine(g.detail, 300))}`,
      );
  }
  const undecided = sorted.filter((c) => c.outcome === 'inconclusive');
  if (undecided.length) {
    out.push('');
    out.push('### Inconclusive (no verdict either way: never a failure, not even under strict mode)');
    out.push('');
    for (const c of undecided.filter((u) => !u.blockedBy))
      out.push(`- \`${c.id}\` (${c.level}): ${mdEscape(firstLine(c.message, 400))}`);
    // Blocked checks: once per cause, with the count (the cause itself is stated above).
    for (const g of causes)
      out.push(
        `- ${g.blocked.length} check${g.blocked.length === 1 ? '' : 's'} blocked by \`${g.id}\`: ${g.blocked.map((c) => `\`${c.id}\``).join(', ')}`,
      );
  }
  const failing = collapseErrors(sorted.filter((c) => c.outcome === 'fail' || c.outcome === 'error'));
  if (failing.length) {
    out.push('');
    out.push('### Failures');
    for (const { check: c, id, count } of failing) {
      out.push('');
      out.push(
        `<details><summary><code>${id}</code> (${c.level}) ${count > 1 ? `${count} checks not run` : mdEscape(c.title)}</summary>`,
      );
      out.push('');
      out.push('```text');
      out.push(c.message.replace(/```/g, "'''"));
      out.push('```');
      out.push('');
      out.push(`Reference: ${mdEscape(c.reference)}`);
      out.push('</details>');
    }
  }
  for (const e of col.errors) out.push(`\n> run error (${mdEscape(e.where)}): ${mdEscape(firstLine(e.message, 300))}`);
  return out.join('\n');
}

function mdMatrix(cols: readonly Column[]): string {
  const ids = orderedIds(cols);
  const out: string[] = [];
  out.push(`## LLM server conformance: ${cols.length} columns`);
  out.push('');
  out.push(`| check | ${cols.map((c) => mdEscape(c.label)).join(' | ')} |`);
  out.push(`|---|${cols.map(() => '---').join('|')}|`);
  for (const id of ids) {
    out.push(
      `| \`${id}\` | ${cols
        .map((c) => {
          const x = c.checks.find((k) => k.id === id);
          return x ? OUTCOME_MD[x.outcome] : '·';
        })
        .join(' | ')} |`,
    );
  }
  out.push(
    `| **passed** | ${cols
      .map((c) => {
        const t = tally(c.checks);
        return `**${t.passed}/${t.graded}**`;
      })
      .join(' | ')} |`,
  );
  return out.join('\n');
}

export function renderMarkdown(cols: readonly Column[]): string {
  if (cols.length === 0) return '## LLM server conformance\n\nNo results.\n';
  if (cols.length === 1) return `${mdOne(cols[0])}\n`;
  return `${mdMatrix(cols)}\n\n${cols.map(mdOne).join('\n\n')}\n`;
}
