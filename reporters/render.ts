// Pure functions: results files -> console table text, Markdown summary, badge specs.
// The live reporters and `npm run report` call the same functions, so a report rebuilt from results.json is the
// report the run printed. Nothing here reads the clock, the environment or the disk.

import { causeLabel, maxPlausibleTps, phantomFromEvidence, physicalFlag } from '../lib/grading/phantom.ts';
import { isJsonObject } from '../lib/json.ts';
import { describePreflight } from '../lib/measure/fidelity.ts';
import type { WorkloadFigures } from '../lib/measure/workload.ts';
import type { HeadlineFigure } from '../lib/model/figures.ts';
import type { Outcome, SetupFailure } from '../lib/model/types.ts';
import { describeSetupFailure, SETUP_HEADLINE, setupFailureOf } from '../lib/server/setup-failure.ts';
import { clientMatrixLines } from './clients-matrix.ts';
import { providerOf } from './figures.ts';
import type { CheckResult, ResultsFile, ResultsHeader, RunError } from './results-types.ts';
import { inRunOrder } from './run-order.ts';

// ------------------------------------------------------------------------------------------------------------
// Columns: one per (project, machine); shards and repeated files of the same pair merge into one.

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

// ------------------------------------------------------------------------------------------------------------
// Counts

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

/** The run gate: any fail or error. */
export function gateFailed(cols: readonly Column[]): boolean {
  return cols.some((c) => c.checks.some((x) => x.outcome === 'fail' || x.outcome === 'error') || c.errors.length > 0);
}

/** A run that did not finish (Ctrl-C, a kill, a crash): what it got to is no verdict on the whole. */
function interrupted(cols: readonly Column[]): boolean {
  return cols.some((c) => !c.finished);
}

/**
 * The gate line: the verdict and the counts behind it, over every column. Pass, fail and error are always counted;
 * the other outcomes when there are any. Inconclusive checks never fail the gate but are counted: a gate passed with
 * many of them proved less than it seems. A run that did not finish is INTERRUPTED, never passed, whatever ran.
 */
export function gateLine(cols: readonly Column[], o: { reports?: string } = {}): string {
  // A run stopped before its checks has no gate to pass or fail: it says what stopped it (the server's checks: none).
  const stopped = cols.map((x) => setupFailureOfColumn(x)).filter((f) => f !== undefined);
  if (stopped.length && stopped.length === cols.length)
    return `GATE: ${[...new Set(stopped.map((f) => SETUP_HEADLINE[f.kind]))].join(', ')} (no check was run: ${firstLine(stopped[0]!.summary, 200)})`;
  const t = tally(cols.flatMap((x) => x.checks));
  const c = t.counts;
  const runErrors = cols.reduce((n, x) => n + x.errors.length, 0);
  const counts = [
    `${c.pass} pass`,
    `${c.fail} fail`,
    `${c.error} error`,
    ...(runErrors ? [`${runErrors} run error${runErrors === 1 ? '' : 's'}`] : []),
    ...(['warn', 'inconclusive', 'known', 'known-passing', 'skip'] as const)
      .filter((k) => c[k] > 0)
      .map((k) => `${c[k]} ${k}${k === 'inconclusive' ? ' (no verdict either way)' : ''}`),
    ...(stopped.length ? [`${stopped.length} run${stopped.length === 1 ? '' : 's'} stopped by a setup error`] : []),
  ].join(', ');
  const where = o.reports ? ` · reports: ${o.reports}` : '';
  if (interrupted(cols)) {
    const when = cols.map((x) => x.header.interrupted).find((i) => i !== undefined);
    const how = when ? ` by ${when.signal}${when.running ? ` during ${when.running}` : ''}` : '';
    const of = when?.planned ? ` of ${when.planned}` : '';
    return `GATE: INTERRUPTED${how}, not judged — ${t.total}${of} checks finished: ${counts}${where}`;
  }
  return `GATE: ${gateFailed(cols) ? 'FAILED' : 'passed'} — ${t.total} checks: ${counts}${where}`;
}

/** What stopped a column's run before its checks (lib/server/setup-failure.ts), if anything did. */
function setupFailureOfColumn(col: Column): SetupFailure | undefined {
  return setupFailureOf(col.header.server);
}

function knownPassing(col: Column): CheckResult[] {
  return col.checks.filter((c) => c.outcome === 'known-passing');
}

// ------------------------------------------------------------------------------------------------------------
// Figures and workloads

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** A figure stored either as a number or as an object with an estimate (e.g. speedup {estimate, low, high}). */
function figure(v: unknown): number | undefined {
  if (typeof v === 'number') return num(v);
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return num(o.estimate) ?? num(o.p50) ?? num(o.median) ?? num(o.value);
  }
  return undefined;
}

/** One workload's figures as a table row: lib/measure/workload.ts figures (requests optional), plus which check and its outcome. */
interface WorkloadRow extends Omit<WorkloadFigures, 'samples' | 'requests'> {
  check: string;
  outcome: Outcome;
  requests?: number;
  /** Set when gen_tps of this workload is phantom (recomputed from the check's evidence and the profile's hardware). */
  phantom?: { label: string; detail: string };
}

const FIGURE_KEYS = ['wall_tps_p50', 'ttft_p50_ms', 'ttft_p50', 'gen_tps_p50', 'speedup'];

/** A lib/measure/workload.ts WorkloadFigures object (not just any `workload` descriptor a check keeps, e.g. {cycles, tokens}). */
function isWorkloadFigures(w: unknown): w is Record<string, unknown> {
  return isJsonObject(w) && FIGURE_KEYS.some((k) => figure(w[k]) !== undefined);
}

function workloadsOf(c: CheckResult): Record<string, unknown>[] {
  const m = c.metrics;
  if (!m) return [];
  if (Array.isArray(m.workloads) && m.workloads.some(isWorkloadFigures)) return m.workloads.filter(isWorkloadFigures);
  if (isWorkloadFigures(m.workload)) return [m.workload];
  // Checks that did not adopt lib/measure/workload.ts: their top-level seed figures make one row. A bare ratio (an
  // older parallel.speedup-2's speedup) is no workload: its row was the check's id and dashes around "1.86x".
  const ttft = figure(m.ttft_p50_ms) ?? figure(m.ttft_p50);
  const wall = figure(m.wall_tps_p50);
  if (wall === undefined && ttft === undefined) return [];
  const sp = figure(m.speedup) ?? figure(m.speedup_p50);
  return [
    {
      name: "the check's own figures",
      wall_tps_p50: wall,
      ttft_p50_ms: ttft,
      gen_tps_p50: figure(m.gen_tps_p50),
      speedup: sp,
    },
  ];
}

interface PhantomCheck {
  check: string;
  outcome: Outcome;
  label: string;
  detail: string;
}

/** Checks whose recorded streams (evidence) show phantom delivery, whether or not they report a workload. */
function phantomChecks(col: Column): PhantomCheck[] {
  const plausible = maxPlausibleTps((col.header.profile as { hardware?: unknown }).hardware);
  const out: PhantomCheck[] = [];
  for (const c of col.checks) {
    const f = phantomFromEvidence(c.evidence, c.loopDelay?.maxMs, {}, plausible);
    if (f) out.push({ check: c.id, outcome: c.outcome, label: causeLabel(f.kinds), detail: f.detail });
  }
  return out;
}

/** Checks that share one recording (same causes and detail) are listed together. */
function groupPhantoms(ph: readonly PhantomCheck[]): { checks: string[]; label: string; detail: string }[] {
  const groups: { checks: string[]; label: string; detail: string }[] = [];
  for (const p of ph) {
    const g = groups.find((x) => x.label === p.label && x.detail === p.detail);
    if (g) g.checks.push(p.check);
    else groups.push({ checks: [p.check], label: p.label, detail: p.detail });
  }
  return groups;
}

export function workloadRows(col: Column): WorkloadRow[] {
  const hw = (col.header.profile as { hardware?: unknown }).hardware;
  const plausible = maxPlausibleTps(hw);
  const rows: WorkloadRow[] = [];
  for (const c of col.checks) {
    const ws = workloadsOf(c);
    if (ws.length === 0) continue;
    const delivery = phantomFromEvidence(c.evidence, c.loopDelay?.maxMs, {}, plausible);
    for (const w of ws) {
      const gen = figure(w.gen_tps_p50);
      const physics = physicalFlag(gen, hw);
      const flags = [delivery, physics].filter((f) => f !== undefined);
      rows.push({
        check: c.id,
        outcome: c.outcome,
        name: typeof w.name === 'string' ? w.name : c.id,
        requests: num(w.requests),
        concurrency: num(w.concurrency),
        wall_tps_p50: figure(w.wall_tps_p50),
        ttft_p50_ms: figure(w.ttft_p50_ms) ?? figure(w.ttft_p50),
        gen_tps_p50: gen,
        speedup: figure(w.speedup),
        tokens_usage: num(w.tokens_usage),
        tokens_counted: num(w.tokens_counted),
        phantom: flags.length
          ? { label: causeLabel(flags.flatMap((f) => f!.kinds)), detail: flags.map((f) => f!.detail).join('; ') }
          : undefined,
      });
    }
  }
  return rows;
}

// ------------------------------------------------------------------------------------------------------------
// Text helpers

/** A number for a table cell: fixed digits below 100, '-' when missing (not html-escape.ts fmtNum's 3 significant digits). */
function cellNum(x: number | undefined, digits = 1): string {
  if (x === undefined || !Number.isFinite(x)) return '-';
  return Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(digits);
}

function genTpsCell(r: WorkloadRow): string {
  const gen = r.gen_tps_p50 === undefined && r.phantom ? 'n/a' : cellNum(r.gen_tps_p50);
  return r.phantom ? `${gen} PHANTOM (${r.phantom.label})` : gen;
}

function tokensCell(r: WorkloadRow): string {
  if (r.tokens_usage === undefined && r.tokens_counted === undefined) return '-';
  return `${r.tokens_usage ?? 'n/a'} / ${r.tokens_counted ?? 'n/a'}`;
}

const OUTCOME_TEXT: Record<Outcome, string> = {
  pass: 'PASS',
  fail: 'FAIL',
  warn: 'WARN',
  inconclusive: 'INCONCLUSIVE',
  skip: 'SKIP',
  known: 'KNOWN',
  'known-passing': 'KNOWN-PASSING',
  error: 'ERROR',
};
const OUTCOME_MD: Record<Outcome, string> = {
  pass: '✅ pass',
  fail: '❌ **fail**',
  warn: '⚠️ warn',
  inconclusive: '❔ inconclusive',
  skip: '⏭️ skip',
  known: '🔶 known',
  'known-passing': '🎉 **known, now passing**',
  error: '💥 **error**',
};
const ANSI: Partial<Record<Outcome, string>> = {
  pass: '32',
  fail: '31',
  warn: '33',
  inconclusive: '36',
  skip: '90',
  known: '35',
  'known-passing': '1;36',
  error: '1;31',
};

function firstLine(s: string, max: number): string {
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

function serverLine(h: ResultsHeader): string {
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
function rootCauseGroups(checks: readonly CheckResult[]): RootCauseGroup[] {
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
function rootCauseLine(g: RootCauseGroup, max: number): { head: string; ids: string } {
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

function tallyLine(t: Tally): string {
  const c = t.counts;
  return `${t.passed}/${t.graded} passed · ${c.fail} fail · ${c.error} error · ${c.warn} warn · ${c.inconclusive} inconclusive · ${c.known} known · ${c['known-passing']} known-passing · ${c.skip} skip`;
}

// ------------------------------------------------------------------------------------------------------------
// Console

interface ConsoleOptions {
  color?: boolean;
  messageWidth?: number;
  /** Every check, the workloads and the client matrix (--verbose); by default only what did not pass. */
  verbose?: boolean;
  /** Where the reports went, for the gate line. */
  reports?: string;
}

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

/** One column: the checks with outcome and message, then the workload figures. */
function consoleOne(col: Column, o: ConsoleOptions): string {
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
function consolePerson(col: Column, o: ConsoleOptions): string {
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

/** Several columns: a matrix of outcomes (checks × columns), then each column's workloads. */
function consoleMatrix(cols: readonly Column[], o: ConsoleOptions): string {
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

function orderedIds(cols: readonly Column[]): string[] {
  const ids: string[] = [];
  for (const c of cols) for (const x of c.checks) if (!ids.includes(x.id)) ids.push(x.id);
  return ids;
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

// ------------------------------------------------------------------------------------------------------------
// Markdown (GitHub step summary, summary.md)

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

// ------------------------------------------------------------------------------------------------------------
// Badges

export interface BadgeSpec {
  /** Stable file name (badges/<name>.json|svg) for every profile. */
  name: 'conformance' | 'streaming' | 'batching' | 'long-context';
  label: string;
  message: string;
  color: 'brightgreen' | 'green' | 'yellow' | 'orange' | 'red' | 'lightgrey';
}

/** The shields.io endpoint JSON (https://shields.io/badges/endpoint-badge). */
export function shieldsEndpoint(b: BadgeSpec): { schemaVersion: 1; label: string; message: string; color: string } {
  return { schemaVersion: 1, label: b.label, message: b.message, color: b.color };
}

function colourOf(outcomes: readonly Outcome[]): BadgeSpec['color'] {
  if (outcomes.some((o) => o === 'fail' || o === 'error')) return 'red';
  if (outcomes.some((o) => o === 'known')) return 'orange';
  if (outcomes.some((o) => o === 'warn')) return 'yellow';
  // Nothing wrong found, but not everything could be decided: green, not bright green.
  if (outcomes.some((o) => o === 'inconclusive')) return 'green';
  return 'brightgreen';
}

/** Every one of these checks ended without a verdict either way (inconclusive or skipped). */
const undecidedOnly = (cs: readonly CheckResult[]) =>
  cs.length > 0 &&
  cs.every((c) => c.outcome === 'inconclusive' || c.outcome === 'skip') &&
  cs.some((c) => c.outcome === 'inconclusive');

export function badgeSpecs(col: Column): BadgeSpec[] {
  // A run stopped before its checks measured nothing: one badge that says so, no n/a for every family.
  const stopped = setupFailureOfColumn(col);
  if (stopped)
    return [
      {
        name: 'conformance',
        label: 'conformance',
        message: { 'never-ready': 'never ready', config: 'config error', error: 'setup error' }[stopped.kind],
        color: 'lightgrey',
      },
    ];
  const t = tally(col.checks);
  const ran = (c: CheckResult) => c.outcome !== 'skip';
  const fam = (f: string) => col.checks.filter((c) => c.family === f && ran(c));
  // Each badge reads the check that provides its figure (lib/model/figures.ts), never one named here.
  const provider = (figure: HeadlineFigure) => providerOf(col.checks, figure);

  const conformance: BadgeSpec = {
    name: 'conformance',
    label: 'conformance',
    message: `${t.passed}/${t.graded}${t.counts.inconclusive ? `, ${t.counts.inconclusive} inconclusive` : ''}`,
    color: t.graded === 0 ? 'lightgrey' : colourOf(col.checks.map((c) => c.outcome)),
  };

  // streaming: real (tokens arrive as generated), phantom (flushed: the phantom verdict), buffered (stream.* failed).
  const plausible = provider('gen_tps_phantom');
  const streamChecks = [...fam('stream'), ...(plausible && ran(plausible) ? [plausible] : [])];
  let streaming: BadgeSpec | undefined;
  if (streamChecks.length === 0) streaming = undefined;
  else if (plausible && (plausible.outcome === 'fail' || plausible.outcome === 'known'))
    streaming = {
      name: 'streaming',
      label: 'streaming',
      message: 'phantom',
      color: plausible.outcome === 'known' ? 'orange' : 'red',
    };
  else if (streamChecks.some((c) => c.outcome === 'fail' || c.outcome === 'known'))
    streaming = {
      name: 'streaming',
      label: 'streaming',
      message: 'buffered',
      color: colourOf(streamChecks.map((c) => c.outcome)),
    };
  else if (streamChecks.some((c) => c.outcome === 'error'))
    streaming = { name: 'streaming', label: 'streaming', message: 'error', color: 'red' };
  else if (undecidedOnly(streamChecks))
    streaming = { name: 'streaming', label: 'streaming', message: 'inconclusive', color: 'lightgrey' };
  else
    streaming = {
      name: 'streaming',
      label: 'streaming',
      message: 'real',
      color: colourOf(streamChecks.map((c) => c.outcome)),
    };

  // batching: the speedup with 2 requests.
  const sp = provider('speedup_2');
  let batching: BadgeSpec | undefined;
  if (!sp || !ran(sp)) batching = undefined;
  else {
    const x = figure(sp.metrics?.speedup) ?? figure(sp.metrics?.speedup_p50);
    // An inconclusive measurement shows no figure: it is not one the check stands behind.
    batching =
      sp.outcome === 'inconclusive'
        ? { name: 'batching', label: 'batching', message: 'inconclusive', color: 'lightgrey' }
        : {
            name: 'batching',
            label: 'batching',
            message: x === undefined ? sp.outcome : `${x.toFixed(2)}x`,
            color: colourOf([sp.outcome]),
          };
  }

  // long context: does an over-long prompt get its 400, and do the context checks pass?
  const ctx = fam('context');
  const over = provider('over_window');
  let long: BadgeSpec | undefined;
  if (ctx.length === 0) long = undefined;
  else {
    const bad = ctx.filter((c) => c.outcome === 'fail' || c.outcome === 'error' || c.outcome === 'known');
    const colour = colourOf(ctx.map((c) => c.outcome));
    if (over && (over.outcome === 'fail' || over.outcome === 'known'))
      long = { name: 'long-context', label: 'long context', message: 'no 400', color: colour };
    else if (bad.length)
      long = {
        name: 'long-context',
        label: 'long context',
        message: `${bad.length} failing (${bad[0].id.split('.')[1]})`,
        color: colour,
      };
    else if (undecidedOnly(ctx))
      long = { name: 'long-context', label: 'long context', message: 'inconclusive', color: 'lightgrey' };
    else
      long = {
        name: 'long-context',
        label: 'long context',
        message: over && over.outcome === 'pass' ? '400 ok' : 'ok',
        color: colour,
      };
  }
  // A family that did not run (left out, or every check skipped) gets no badge: "n/a" on a README says nothing.
  return [conformance, streaming, batching, long].filter((b) => b !== undefined);
}

/** Every badge name badgeSpecs may produce: a run that produces fewer removes the others' old files. */
export const BADGE_NAMES: readonly BadgeSpec['name'][] = ['conformance', 'streaming', 'batching', 'long-context'];
