// Text helpers the console and Markdown reports share: outcome labels, cells, the plain text table, error runs
// folded into one row, the server line, root causes and the tally line.

import type { Outcome } from '../lib/model/types.ts';
import type { Tally } from './columns.ts';
import type { CheckResult, ResultsHeader } from './results-types.ts';

/** A number for a table cell: fixed digits below 100, '-' when missing (not html-escape.ts fmtNum's 3 significant digits). */
export function cellNum(x: number | undefined, digits = 1): string {
  if (x === undefined || !Number.isFinite(x)) return '-';
  return Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(digits);
}

export const OUTCOME_TEXT: Record<Outcome, string> = {
  pass: 'PASS',
  fail: 'FAIL',
  warn: 'WARN',
  inconclusive: 'INCONCLUSIVE',
  skip: 'SKIP',
  known: 'KNOWN',
  'known-passing': 'KNOWN-PASSING',
  error: 'ERROR',
};

export const OUTCOME_MD: Record<Outcome, string> = {
  pass: '✅ pass',
  fail: '❌ **fail**',
  warn: '⚠️ warn',
  inconclusive: '❔ inconclusive',
  skip: '⏭️ skip',
  known: '🔶 known',
  'known-passing': '🎉 **known, now passing**',
  error: '💥 **error**',
};

export const ANSI: Partial<Record<Outcome, string>> = {
  pass: '32',
  fail: '31',
  warn: '33',
  inconclusive: '36',
  skip: '90',
  known: '35',
  'known-passing': '1;36',
  error: '1;31',
};

export function firstLine(s: string, max: number): string {
  const line = (s.split('\n')[0] ?? '').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * Checks as table rows, with each run of 3 or more consecutive `error` checks that share one message (a server that
 * never answered, or stopped answering) folded into one row: "<message>; 54 checks not run", not 54 ERROR rows.
 */
interface CheckRow {
  check: CheckResult;
  id: string;
  message: string;
  count: number;
}

export function collapseErrors(checks: readonly CheckResult[]): CheckRow[] {
  const rows: CheckRow[] = [];
  for (let i = 0; i < checks.length; ) {
    const c = checks[i]!;
    let j = i + 1;
    if (c.outcome === 'error')
      while (j < checks.length && checks[j]!.outcome === 'error' && checks[j]!.message === c.message) j++;
    const n = j - i;
    const what = firstLine(c.message, 400)
      .replace(/^setup error: /, '')
      .replace(/\.$/, '');
    if (n >= 3)
      rows.push({
        check: c,
        id: n === checks.length ? `all ${n} checks` : `${c.id} … ${checks[j - 1]!.id} (${n} checks)`,
        message: `${what}; ${n} checks not run`,
        count: n,
      });
    else
      for (let k = i; k < j; k++)
        rows.push({ check: checks[k]!, id: checks[k]!.id, message: checks[k]!.message, count: 1 });
    i = j;
  }
  return rows;
}

/** A plain text table; `colour(text, row, col)` may wrap cells after padding (ANSI does not count toward width). */
export function textTable(
  head: string[],
  rows: string[][],
  colour?: (cell: string, r: number, c: number) => string,
): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[], r: number) =>
    cells
      .map((c, i) => {
        const padded = i === cells.length - 1 ? c : c.padEnd(widths[i]);
        return colour && r >= 0 ? colour(padded, r, i) : padded;
      })
      .join('  ')
      .trimEnd();
  return [line(head, -1), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map((r, i) => line(r, i))].join('\n');
}

export function serverLine(h: ResultsHeader): string {
  const s = h.server as {
    identity?: { name?: string; version?: string };
    setupError?: string;
    contextWindow?: { value: number; source: string };
  };
  const id = s.identity?.name
    ? `${s.identity.name}${s.identity.version ? ` ${s.identity.version}` : ''}`
    : 'server identity unknown';
  const ctx = s.contextWindow ? `, context window ${s.contextWindow.value} (${s.contextWindow.source})` : '';
  return `${id}${ctx}${s.setupError ? ` — SETUP ERROR: ${firstLine(s.setupError, 160)}` : ''}`;
}

/** One root cause and the checks it blocked (lib/check/blocked.ts: inconclusive "blocked by" it), in run order. */
interface RootCauseGroup {
  id: string;
  /** The check that reports the cause, when it ran in this column. */
  root?: CheckResult;
  blocked: CheckResult[];
}

/** The checks that were blocked, grouped by the check that reports their cause: the cause shown once, with its count. */
export function rootCauseGroups(checks: readonly CheckResult[]): RootCauseGroup[] {
  const groups = new Map<string, RootCauseGroup>();
  for (const c of checks) {
    if (!c.blockedBy) continue;
    const g = groups.get(c.blockedBy) ?? {
      id: c.blockedBy,
      root: checks.find((r) => r.id === c.blockedBy),
      blocked: [],
    };
    g.blocked.push(c);
    groups.set(c.blockedBy, g);
  }
  return [...groups.values()];
}

/** "sse.content-type (FAIL): <its first line> [<what was not served>] — blocked 38 checks (inconclusive)", and the ids. */
export function rootCauseLine(g: RootCauseGroup, max: number): { head: string; ids: string } {
  // What the blocked checks met, as they say it: "blocked by <id>: <request> answered <status>: <body> (<id> reports it…)".
  const met = firstLine(g.blocked[0]!.message, 1000)
    .replace(/^blocked by [^:]+: /, '')
    .replace(/ \([^()]* reports it[^()]*\)$/, '');
  const cause = g.root
    ? `${g.id} (${g.root.outcome.toUpperCase()}): ${firstLine(g.root.message, max)} [${firstLine(met, max)}]`
    : `${g.id} (not run here): ${firstLine(met, max)}`;
  const n = g.blocked.length;
  return {
    head: `${cause} — blocked ${n} check${n === 1 ? '' : 's'} (inconclusive)`,
    ids: g.blocked.map((c) => c.id).join(', '),
  };
}

export function tallyLine(t: Tally): string {
  const c = t.counts;
  return `${t.passed}/${t.graded} passed · ${c.fail} fail · ${c.error} error · ${c.warn} warn · ${c.inconclusive} inconclusive · ${c.known} known · ${c['known-passing']} known-passing · ${c.skip} skip`;
}

export interface ConsoleOptions {
  color?: boolean;
  messageWidth?: number;
  /** Every check, the workloads and the client matrix (--verbose); by default only what did not pass. */
  verbose?: boolean;
  /** Where the reports went, for the gate line. */
  reports?: string;
}
