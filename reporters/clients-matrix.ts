// The server × client matrix of the `clients` family: per run (server) and client library, the version, the outcome
// of the streaming and the non-streaming call, and the client's first error. Pure functions of results (the
// `metrics.client` record each clients.* check stores), shared by the console reporter and the HTML report.

import { isJsonObject } from '../lib/json.ts';
import { esc } from './html-escape.ts';
import type { CheckResult } from './results-types.ts';

interface MatrixColumn {
  label: string;
  checks: Iterable<CheckResult>;
}

interface CaseView {
  outcome: string;
  error?: string;
  problem?: string;
  mustBroken?: string[];
}

interface ClientMatrixCell {
  /** The check's graded outcome (pass, warn, fail, skip, error, …). */
  outcome: string;
  version: string;
  stream: string;
  nonStream: string;
  /** The client's first error, else its first difference from the wire, else the check message's first line. */
  firstError: string;
  mustBroken: string[];
}

interface ClientMatrix {
  columns: string[];
  /** One row per client check id, in the order first seen. */
  rows: Array<{ id: string; cells: Array<ClientMatrixCell | undefined> }>;
}

function caseOf(v: unknown): CaseView | undefined {
  if (!isJsonObject(v) || typeof v.outcome !== 'string') return undefined;
  return {
    outcome: v.outcome,
    error: typeof v.error === 'string' ? v.error : undefined,
    problem: typeof v.problem === 'string' ? v.problem : undefined,
    mustBroken: Array.isArray(v.mustBroken) ? v.mustBroken.filter((x): x is string => typeof x === 'string') : [],
  };
}

function cellOf(c: CheckResult): ClientMatrixCell {
  const m = isJsonObject(c.metrics) && isJsonObject(c.metrics.client) ? c.metrics.client : undefined;
  const pk = m && isJsonObject(m.packages) ? m.packages : {};
  // A skipped check stored no metrics: its title names the packages ("OpenAI SDK (openai@6.49.0) …").
  const version =
    Object.entries(pk)
      .map(([p, v]) => `${p}@${String(v)}`)
      .join(' + ') ||
    /\(([^()]*@[^()]*)\)/.exec(c.title)?.[1]?.replace(/, /g, ' + ') ||
    '?';
  const s = caseOf(m?.stream);
  const n = caseOf(m?.nonStream);
  const head = c.message.split('\n')[0] ?? '';
  const firstError =
    s?.error ??
    n?.error ??
    s?.problem ??
    n?.problem ??
    (c.outcome === 'pass' ? '' : c.outcome === 'skip' ? `(skipped: ${head})` : head);
  return {
    outcome: c.outcome,
    version,
    stream: s?.outcome ?? (c.outcome === 'skip' || c.outcome === 'error' ? c.outcome : 'n/a'),
    nonStream: n?.outcome ?? (c.outcome === 'skip' || c.outcome === 'error' ? c.outcome : 'n/a'),
    firstError,
    mustBroken: [...new Set([...(s?.mustBroken ?? []), ...(n?.mustBroken ?? [])])],
  };
}

export function clientMatrix(cols: readonly MatrixColumn[]): ClientMatrix {
  const ids: string[] = [];
  const byCol = cols.map((col) => {
    const m = new Map<string, CheckResult>();
    for (const c of col.checks) {
      if (!c.id.startsWith('clients.')) continue;
      m.set(c.id, c);
      if (!ids.includes(c.id)) ids.push(c.id);
    }
    return m;
  });
  return {
    columns: cols.map((c) => c.label),
    rows: ids.map((id) => ({
      id,
      cells: byCol.map((m) => {
        const c = m.get(id);
        return c ? cellOf(c) : undefined;
      }),
    })),
  };
}

/** Badge style of a case outcome (n/a has the report's n/a style). */
const styleOf = (o: string) => (o === 'n/a' ? 'na' : o);
const clip = (s: string, n: number) => {
  const l = s.replace(/\s+/g, ' ').trim();
  return l.length > n ? `${l.slice(0, n - 1)}…` : l;
};

/** Console lines (a long-form table: one line per server and client); [] when no clients check ran. */
export function clientMatrixLines(
  cols: readonly MatrixColumn[],
  table: (head: string[], rows: string[][]) => string,
  width = 90,
): string[] {
  const m = clientMatrix(cols);
  if (m.rows.length === 0) return [];
  const several = m.columns.length > 1;
  const rows: string[][] = [];
  m.columns.forEach((_, i) => {
    for (const r of m.rows) {
      const c = r.cells[i];
      if (!c) continue;
      const err = c.firstError
        ? clip(c.firstError, width)
        : c.mustBroken.length
          ? `(tolerated: ${c.mustBroken.join(', ')})`
          : '';
      rows.push([
        ...(several ? [`[${i + 1}]`] : []),
        r.id.replace(/^clients\./, ''),
        c.version,
        c.stream,
        c.nonStream,
        err,
      ]);
    }
  });
  return [
    'server × client (clients family):',
    table([...(several ? ['server'] : []), 'client', 'version', 'stream', 'non-stream', 'first error'], rows),
  ];
}

/** The HTML section: clients × servers, each cell the two outcomes and the first error; '' when no clients check ran. */
export function clientMatrixHtml(
  cols: readonly MatrixColumn[],
  badge: (outcome: string, label?: string) => string,
): string {
  const m = clientMatrix(cols);
  if (m.rows.length === 0) return '';
  const head = m.columns.map((c) => `<th>${esc(c)}</th>`).join('');
  const body = m.rows
    .map((r) => {
      const version = r.cells.find((c) => c)?.version ?? '?';
      const cells = r.cells
        .map((c) => {
          if (!c) return `<td>${badge('na', 'n/a')}</td>`;
          const err = c.firstError ? `<div class="small"><code>${esc(clip(c.firstError, 300))}</code></div>` : '';
          const must = c.mustBroken.length
            ? `<div class="muted small">wire broke ${esc(c.mustBroken.join(', '))}</div>`
            : '';
          return `<td>${badge(c.outcome)} <span class="small" style="white-space:nowrap">stream ${badge(styleOf(c.stream), c.stream)} non-stream ${badge(styleOf(c.nonStream), c.nonStream)}</span>${err}${must}</td>`;
        })
        .join('');
      return `<tr><td><code>${esc(r.id)}</code><div class="muted small">${esc(version)}</div></td>${cells}</tr>`;
    })
    .join('');
  return (
    `<section id="clients"><h2>Client compatibility</h2><p class="muted small">Client libraries × runs: the check's outcome (a client failure is a SHOULD: warn, fail under strict), ` +
    `the streaming and the non-streaming call, and the client's first error or difference from the wire.</p>` +
    `<div class="scroll"><table id="client-matrix"><thead><tr><th>client</th>${head}</tr></thead><tbody>${body}</tbody></table></div></section>`
  );
}
