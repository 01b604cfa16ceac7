// The seed study's comparison, rebuilt from results files: one row per server @ machine with the figures and
// findings the study tabulated (wall_tps_p50, ttft_p50, speedup with 2 requests, best scaling, real streaming,
// phantom gen_tps, long context, slowdown over cycles) and a conformance score whose definition travels with it.
// Pure: results in, rows / Markdown / HTML out (no clock, no disk, no environment), like the other reporters.

import { serverLevels } from '../lib/capacity/merge.ts';
import { flagReason } from '../lib/capacity/read.ts';
import type { CapacityTable } from '../lib/capacity/types.ts';
import { isJsonObject } from '../lib/json.ts';
import type { HeadlineFigure } from '../lib/model/figures.ts';
import { declaredSources, providerOf } from './figures.ts';
import { esc, fmtNum } from './html-escape.ts';
import {
  type Column,
  columnPhantom,
  columnsOf,
  headlineFigure,
  headlineSources,
  metricNumber,
  normaliseResults,
} from './report-data.ts';
import type { CheckResult } from './results-types.ts';

/** How a cell reads: the text, and the outcome of the check it comes from (for marks and colours). */
interface Cell {
  text: string;
  /** Outcome of the source check ('n/a' when the check is not in the results). */
  outcome: string;
  /** Check id the cell is read from. */
  from?: string;
  /** The figure behind the text, when there is one. */
  value?: number;
  /** Why the figure is not certified (a capacity figure a check flagged on its level). */
  flagged?: string;
}

interface Score {
  /** pass + known-passing. */
  passed: number;
  /** passed + fail + warn + known: the checks that produced evidence about the server. */
  graded: number;
  /** Checks left out of the ratio, each kind counted. */
  inconclusive: number;
  skip: number;
  error: number;
  known: number;
  /** passed / graded, undefined when nothing was graded. */
  ratio?: number;
}

export interface MatrixRow {
  /** `project @ machine` (with the run date when one project ran twice on one machine unsharded). */
  label: string;
  project: string;
  machine: string;
  /** Chip and memory of the machine, as its results header recorded them. */
  machineInfo: { chip?: string; memGiB?: number; cpus?: number; platform?: string; arch?: string };
  /** What answered (name and version as discovered). */
  server: string;
  shards: string[];
  finished: boolean;
  wallTps: Cell;
  ttft: Cell;
  speedup2: Cell;
  bestScaling: Cell;
  streaming: Cell;
  phantom: Cell;
  servedWindow: Cell;
  overWindow: Cell;
  cyclesSlope: Cell;
  /** Saturation concurrency and tok/s of the run's capacity sweep, when it ran one. */
  capacity?: Cell;
  score: Score;
}

export type CellName =
  | 'wallTps'
  | 'ttft'
  | 'speedup2'
  | 'bestScaling'
  | 'streaming'
  | 'phantom'
  | 'servedWindow'
  | 'overWindow'
  | 'cyclesSlope';

/** The checks the catalogue declares provide these figures (lib/model/figures.ts), for the table's notes. */
const sources = (...figures: HeadlineFigure[]) => [...new Set(figures.flatMap(declaredSources))].join(', ');

/** Column heads, in table order, with the checks each cell is read from (the first that provides its figure). */
const MATRIX_COLUMNS: ReadonlyArray<{ name: CellName; head: string; check: string }> = [
  { name: 'wallTps', head: 'wall_tps_p50 (tok/s)', check: headlineSources('wallTps').join(', ') },
  { name: 'ttft', head: 'ttft_p50 (ms)', check: headlineSources('ttft').join(', ') },
  { name: 'speedup2', head: 'speedup(2)', check: sources('speedup_2') },
  { name: 'bestScaling', head: `best speedup (${sources('best_scaling')})`, check: sources('best_scaling') },
  { name: 'streaming', head: 'real streaming?', check: sources('first_token_share', 'read_share') },
  { name: 'phantom', head: 'phantom gen_tps?', check: sources('gen_tps_phantom') },
  { name: 'servedWindow', head: 'served window', check: sources('served_window') },
  { name: 'overWindow', head: 'over the window', check: sources('over_window') },
  { name: 'cyclesSlope', head: 'cycles slope', check: sources('cycles_slope') },
];

/** Shown only when some row ran a capacity sweep (results.json `capacity`), so tables without one keep their shape. */
const CAPACITY_COLUMN = { name: 'capacity', head: 'capacity (saturation)', check: 'results.json capacity' } as const;

function columnsFor(
  rows: readonly MatrixRow[],
): ReadonlyArray<{ name: CellName | 'capacity'; head: string; check: string }> {
  return rows.some((r) => r.capacity) ? [...MATRIX_COLUMNS, CAPACITY_COLUMN] : MATRIX_COLUMNS;
}

const NO_CAPACITY: Cell = { text: 'n/a', outcome: 'n/a' };

/** The sweep's saturation point (streams, aggregate tok/s), or its peak when it never saturated; flagged figures say why. */
function capacityCell(t: CapacityTable): Cell {
  const sweep = serverLevels(t).filter((l) => l.mode === 'concurrency' && l.concurrency !== undefined);
  const merged = t.machines && t.machines.length > 1 ? ` (${t.machines.length} machines)` : '';
  const s = t.saturation;
  const at = s ? sweep.find((l) => l.concurrency === s.concurrency) : undefined;
  const peak = sweep.reduce<(typeof sweep)[number] | undefined>(
    (b, l) => (!b || l.aggregateTps > b.aggregateTps ? l : b),
    undefined,
  );
  const level = s ? at : peak;
  if (!s && !peak) return { text: 'no sweep level', outcome: 'n/a', from: CAPACITY_COLUMN.check };
  const text = s
    ? `${fmtNum(s.aggregateTps)} tok/s @ ${fmtNum(s.concurrency)} streams${merged}`
    : `${fmtNum(peak!.aggregateTps)} tok/s @ ${fmtNum(peak!.concurrency)} streams, no saturation in the sweep${merged}`;
  const flagged = level ? flagReason(level, ['aggregateTps', 'usage']) : undefined;
  return {
    text,
    outcome: 'pass',
    from: CAPACITY_COLUMN.check,
    value: s ? s.aggregateTps : peak!.aggregateTps,
    ...(flagged ? { flagged } : {}),
  };
}

export const SCORE_DEFINITION =
  'conformance score = (pass + known-passing) / (pass + known-passing + fail + warn + known). ' +
  'A `known` failure counts against the server (listing a defect in its profile does not fix it); a warn (a SHOULD not met) counts against it too. ' +
  "Left out of both sides: `inconclusive` (the evidence could not decide), `skip` (capability absent or not declared) and `error` (our side went wrong, never the server's failure); " +
  'their counts are shown beside the score so a score over few checks cannot pass for one over many.';

// ---------------------------------------------------------------------------------------------------------
// Reading one column

function outcomeOf(c: CheckResult | undefined): string {
  return c ? c.outcome : 'n/a';
}

export function scoreOf(checks: Iterable<CheckResult>): Score {
  const s: Score = { passed: 0, graded: 0, inconclusive: 0, skip: 0, error: 0, known: 0 };
  for (const c of checks) {
    const o = outcomeOf(c);
    if (o === 'pass' || o === 'known-passing') {
      s.passed++;
      s.graded++;
    } else if (o === 'fail' || o === 'warn') s.graded++;
    else if (o === 'known') {
      s.known++;
      s.graded++;
    } else if (o === 'inconclusive') s.inconclusive++;
    else if (o === 'skip') s.skip++;
    else s.error++;
  }
  if (s.graded > 0) s.ratio = s.passed / s.graded;
  return s;
}

/** A share as a percentage in the report's figure style (fmtNum: 3 significant digits, 0.5 → "50 %"). */
const percentFigure = (x: number | undefined) => (x === undefined ? 'n/a' : `${fmtNum(x * 100)} %`);

function cellFrom(c: CheckResult | undefined, text: string, value?: number): Cell {
  return { text, outcome: outcomeOf(c), ...(c ? { from: c.id } : {}), ...(value !== undefined ? { value } : {}) };
}

/** A missing check reads n/a; a skipped one says it was skipped; an inconclusive one says so. */
function notMeasured(c: CheckResult | undefined): Cell | undefined {
  if (!c) return { text: 'n/a', outcome: 'n/a' };
  if (c.outcome === 'skip') return cellFrom(c, 'skipped');
  if (c.outcome === 'error') return cellFrom(c, 'error');
  return undefined;
}

/** A measured figure (wall_tps, ttft): no verdict of its own — the check it is read from judges something else. */
function figureCell(col: Column, name: 'wallTps' | 'ttft'): Cell {
  const f = headlineFigure(col, name);
  return {
    text: fmtNum(f.value),
    outcome: f.value === undefined ? 'n/a' : 'pass',
    ...(f.from ? { from: f.from } : {}),
    ...(f.value !== undefined ? { value: f.value } : {}),
  };
}

/** The first check of the column that provides `figure`. */
const from = (col: Column, figure: HeadlineFigure) => providerOf(col.checks.values(), figure);

function speedupCell(col: Column): Cell {
  const c = from(col, 'speedup_2');
  const none = notMeasured(c);
  if (none) return none;
  const m = c!.metrics;
  const est = metricNumber(m, ['speedup_estimate', 'speedup']);
  const lo = metricNumber(m, ['speedup_low']);
  const hi = metricNumber(m, ['speedup_high']);
  if (est === undefined) return cellFrom(c, outcomeOf(c) === 'inconclusive' ? 'inconclusive' : 'n/a');
  return cellFrom(
    c,
    `${fmtNum(est)}×${lo !== undefined && hi !== undefined ? ` (${fmtNum(lo)}–${fmtNum(hi)})` : ''}`,
    est,
  );
}

function scalingCell(col: Column): Cell {
  const c = from(col, 'best_scaling');
  const none = notMeasured(c);
  if (none) return none;
  const gain = metricNumber(c!.metrics, ['bestGain']);
  const at = metricNumber(c!.metrics, ['bestConcurrency']);
  if (gain === undefined) return cellFrom(c, 'n/a');
  return cellFrom(c, `${fmtNum(gain)}×${at !== undefined ? ` @ ${fmtNum(at)}` : ''}`, gain);
}

function streamingCell(col: Column): Cell {
  const tb = from(col, 'first_token_share');
  const sp = from(col, 'read_share');
  if (!tb && !sp) return { text: 'n/a', outcome: 'n/a' };
  const ratio = metricNumber(tb?.metrics, ['ratio']);
  const share = metricNumber(sp?.metrics, ['maxReadShare']);
  const bad = (c: CheckResult | undefined) =>
    c !== undefined && (c.outcome === 'fail' || c.outcome === 'known' || c.outcome === 'warn');
  const why: string[] = [];
  if (bad(tb)) why.push(`first token at ${percentFigure(ratio)} of the response time`);
  if (bad(sp)) why.push(`${percentFigure(share)} of the text in one read`);
  const worst = [tb, sp].find((c) => bad(c));
  if (worst) return cellFrom(worst, `no: ${why.join('; ')}`);
  const undecided = [tb, sp].find((c) => !c || c.outcome !== 'pass');
  if (undecided) return cellFrom(undecided, outcomeOf(undecided) === 'skip' ? 'skipped' : outcomeOf(undecided));
  return cellFrom(tb, `yes (TTFT ${percentFigure(ratio)} of e2e)`, ratio);
}

function phantomCell(col: Column): Cell {
  const g = from(col, 'gen_tps_phantom');
  const f = headlineFigure(col, 'genTps');
  const ph = columnPhantom(col, f);
  if (ph)
    return {
      text: `PHANTOM ${fmtNum(f.value)} tok/s (${ph.cause})`,
      outcome: outcomeOf(g) === 'n/a' ? 'fail' : outcomeOf(g),
      from: ph.from,
      ...(f.value !== undefined ? { value: f.value } : {}),
    };
  const none = notMeasured(g);
  if (none) return none;
  if (g!.outcome !== 'pass') return cellFrom(g, outcomeOf(g));
  return cellFrom(g, `no (gen_tps ${fmtNum(f.value)})`, f.value);
}

function servedWindowCell(col: Column): Cell {
  const c = from(col, 'served_window');
  const none = notMeasured(c);
  if (none) return none;
  const m = c!.metrics;
  const served = metricNumber(m, ['servedWindow']);
  const trained = metricNumber(m, ['trainedContext']);
  const fraction = metricNumber(m, ['fraction']);
  if (served === undefined) return cellFrom(c, 'n/a');
  const of =
    trained !== undefined && trained !== served
      ? ` of ${fmtNum(trained)} trained (${percentFigure(fraction ?? served / trained)})`
      : trained !== undefined
        ? ' (= trained)'
        : '';
  return cellFrom(c, `${fmtNum(served)}${of}`, served);
}

/** Short names of what the server did with a prompt over its window (lib/grading/over-window.ts OverWindowKind). */
const OVER_WINDOW_TEXT: Record<string, string> = {
  rejected: '400 (context exceeded)',
  'rejected-vague': '400, message does not say why',
  'rejected-other-4xx': 'other 4xx',
  truncated: '200, prompt silently truncated',
  accepted: '200, window not enforced',
  'server-error': '5xx',
  dropped: 'connection dropped',
  'no-response': 'no answer (hangs)',
  'error-in-stream': '200 with the error inside the stream',
  other: 'unexpected answer',
};

function overWindowCell(col: Column): Cell {
  const c = from(col, 'over_window');
  const none = notMeasured(c);
  if (none) return none;
  const findings =
    isJsonObject(c!.metrics) && Array.isArray(c!.metrics.findings)
      ? c!.metrics.findings.filter((f): f is string => typeof f === 'string')
      : [];
  const kinds = [...new Set(findings)];
  if (!kinds.length) return cellFrom(c, outcomeOf(c));
  return cellFrom(c, kinds.map((k) => OVER_WINDOW_TEXT[k] ?? k).join('; '));
}

function cyclesCell(col: Column): Cell {
  const c = from(col, 'cycles_slope');
  const none = notMeasured(c);
  if (none) return none;
  const m = c!.metrics;
  const slope = metricNumber(m, ['slopeTpsPerCycle']);
  const ratio = metricNumber(m, ['lastOverFirst']);
  const first = metricNumber(m, ['firstMedianTps']);
  const last = metricNumber(m, ['lastMedianTps']);
  if (slope === undefined) return cellFrom(c, outcomeOf(c));
  const span =
    first !== undefined && last !== undefined
      ? `; ${fmtNum(first)} → ${fmtNum(last)} tok/s`
      : ratio !== undefined
        ? `; last/first ${percentFigure(ratio)}`
        : '';
  return cellFrom(c, `${slope >= 0 ? '+' : '−'}${fmtNum(Math.abs(slope))} tok/s per cycle${span}`, slope);
}

function serverOf(col: Column): string {
  const s = isJsonObject(col.header.server) ? col.header.server : {};
  const id = isJsonObject(s.identity) ? s.identity : {};
  const name = typeof id.name === 'string' ? id.name : undefined;
  const version = typeof id.version === 'string' ? id.version : undefined;
  return name ? `${name}${version ? ` ${version}` : ''}` : 'n/a';
}

function rowOf(col: Column): MatrixRow {
  const m = col.header.machine as typeof col.header.machine & { chip?: unknown };
  return {
    label: col.label,
    project: col.project,
    machine: col.machine,
    machineInfo: {
      ...(typeof m.chip === 'string' && m.chip ? { chip: m.chip } : {}),
      ...(m.memGiB ? { memGiB: m.memGiB } : {}),
      ...(m.cpus ? { cpus: m.cpus } : {}),
      ...(m.platform !== '?' ? { platform: m.platform } : {}),
      ...(m.arch !== '?' ? { arch: m.arch } : {}),
    },
    server: serverOf(col),
    shards: [...col.shards].sort(),
    finished: col.finished,
    wallTps: figureCell(col, 'wallTps'),
    ttft: figureCell(col, 'ttft'),
    speedup2: speedupCell(col),
    bestScaling: scalingCell(col),
    streaming: streamingCell(col),
    phantom: phantomCell(col),
    servedWindow: servedWindowCell(col),
    overWindow: overWindowCell(col),
    cyclesSlope: cyclesCell(col),
    ...(col.capacity ? { capacity: capacityCell(col.capacity) } : {}),
    score: scoreOf(col.checks.values()),
  };
}

/**
 * Rows of the matrix: one per server @ machine (shards of one run merged). `order` lists projects in the order the
 * table shows them; projects it does not name follow in the order their files came; within a project, machines by label.
 */
export function matrixRows(files: readonly unknown[], order: readonly string[] = []): MatrixRow[] {
  const cols = columnsOf(files.map(normaliseResults));
  const seen = [...new Set(cols.map((c) => c.project))];
  const rank = (p: string) => {
    const i = order.indexOf(p);
    return i === -1 ? order.length + seen.indexOf(p) : i;
  };
  cols.sort((a, b) => rank(a.project) - rank(b.project) || a.label.localeCompare(b.label));
  return cols.map(rowOf);
}

// ---------------------------------------------------------------------------------------------------------
// Rendering

/** Mark for a cell whose check did not pass (Markdown has no colour). */
function mark(c: Cell): string {
  switch (c.outcome) {
    case 'fail':
      return ' **FAIL**';
    case 'warn':
      return ' (warn)';
    case 'known':
      return ' (known)';
    case 'error':
      return '';
    case 'inconclusive':
      return c.text === 'inconclusive' ? '' : ' (inconclusive)';
    default:
      return '';
  }
}

function mdCell(s: string): string {
  return s.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

function scoreText(s: Score): string {
  if (s.ratio === undefined) return 'n/a';
  const left = [
    s.known ? `${s.known} known` : '',
    s.inconclusive ? `${s.inconclusive} inconclusive` : '',
    s.skip ? `${s.skip} skip` : '',
    s.error ? `${s.error} error` : '',
  ].filter(Boolean);
  return `${fmtNum(s.ratio * 100)} % (${s.passed}/${s.graded}${left.length ? `; ${left.join(', ')}` : ''})`;
}

function machineText(r: MatrixRow): string {
  const i = r.machineInfo;
  return (
    [
      i.chip,
      i.cpus ? `${i.cpus} CPUs` : '',
      i.memGiB ? `${fmtNum(i.memGiB)} GiB` : '',
      i.platform && i.arch ? `${i.platform}/${i.arch}` : '',
    ]
      .filter(Boolean)
      .join(', ') || 'n/a'
  );
}

interface MatrixMarkdownOptions {
  /** Heading level of the table's title (default 2); 0 leaves the title out. */
  level?: number;
  /** Line(s) under the title, e.g. how the table was made. */
  intro?: string[];
}

export function matrixMarkdown(rows: readonly MatrixRow[], o: MatrixMarkdownOptions = {}): string {
  const out: string[] = [];
  const level = o.level ?? 2;
  if (level > 0) out.push(`${'#'.repeat(level)} The seed study's comparison, reproduced`, '');
  for (const l of o.intro ?? []) out.push(l);
  if (o.intro?.length) out.push('');
  if (!rows.length) {
    out.push('No results to show (n/a).');
    return out.join('\n');
  }
  const shown = columnsFor(rows);
  const head = ['server @ machine', ...shown.map((c) => c.head), 'conformance score'];
  out.push(`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`);
  for (const r of rows) {
    const name = `${r.label}${r.shards.length ? ` (shards ${r.shards.join(', ')})` : ''}${r.finished ? '' : ' (interrupted)'}`;
    const cells = shown.map(({ name: n }) => {
      const c = r[n] ?? NO_CAPACITY;
      return `${c.text}${mark(c)}${c.flagged ? ` **FLAGGED** (${c.flagged})` : ''}`;
    });
    out.push(`| ${[name, ...cells, scoreText(r.score)].map(mdCell).join(' | ')} |`);
  }
  out.push('');
  out.push(
    `Each cell is read from one check (${shown.map((c) => `${c.head}: \`${c.check}\``).join('; ')}); **FAIL**, (warn), (known) and (inconclusive) give that check's outcome where it is not a pass (the two measured figures carry none).` +
      (shown.length > MATRIX_COLUMNS.length
        ? " Capacity: the sweep's saturation point (aggregate output tok/s @ concurrent streams), or its peak when it never saturated; **FLAGGED** with the reason when a certifying check failed on that level."
        : ''),
  );
  out.push('');
  out.push(`Score: ${SCORE_DEFINITION}`);
  const machines = new Map<string, MatrixRow>();
  for (const r of rows) if (!machines.has(r.machine)) machines.set(r.machine, r);
  out.push(
    '',
    `Machines: ${[...machines.values()].map((r) => `**${mdCell(r.machine)}**: ${mdCell(machineText(r))}`).join('; ')}.`,
  );
  return out.join('\n');
}

const OUTCOME_CLASS: Record<string, string> = {
  pass: 'pass',
  'known-passing': 'known-passing',
  fail: 'fail',
  warn: 'warn',
  known: 'known',
  error: 'error',
  skip: 'skip',
  inconclusive: 'skip',
};

/** The matrix as an HTML section for the report (reporters/html.ts): the same rows, coloured by outcome. */
/** `heading`: the seed study's own name only where the study's comparison is built (scripts/matrix.ts). */
export function matrixHtml(rows: readonly MatrixRow[], heading = 'Headline figures'): string {
  if (!rows.length) return '';
  const shown = columnsFor(rows);
  const head = ['server @ machine', ...shown.map((c) => c.head), 'conformance score']
    .map((h) => `<th>${esc(h)}</th>`)
    .join('');
  const body = rows
    .map((r) => {
      const cells = shown
        .map(({ name }) => {
          const c = r[name] ?? NO_CAPACITY;
          const cls = OUTCOME_CLASS[c.outcome];
          const badge =
            c.outcome !== 'pass' && c.outcome !== 'n/a' && cls
              ? ` <span class="badge b-${esc(cls)}">${esc(c.outcome)}</span>`
              : '';
          const flag = c.flagged
            ? ` <span class="badge b-warn" title="${esc(c.flagged)}">flagged</span><div class="small muted">${esc(c.flagged)}</div>`
            : '';
          const tip = [c.from ? `from ${c.from}` : '', c.flagged ? `flagged: ${c.flagged}` : '']
            .filter(Boolean)
            .join('\n');
          return `<td data-cell="${esc(name)}" data-o="${esc(c.outcome)}"${c.flagged ? ' data-flagged="true"' : ''}${tip ? ` title="${esc(tip)}"` : ''}>${esc(c.text)}${badge}${flag}</td>`;
        })
        .join('');
      return (
        `<tr data-column="${esc(r.label)}"><th>${esc(r.label)}<div class="muted small">${esc(r.server)} · ${esc(machineText(r))}${r.shards.length ? ` · shards ${esc(r.shards.join(', '))}` : ''}</div></th>${cells}` +
        `<td class="num" data-cell="score" data-value="${r.score.ratio ?? ''}">${esc(scoreText(r.score))}</td></tr>`
      );
    })
    .join('');
  return (
    `<section id="seed-matrix"><h2>${esc(heading)}</h2>` +
    `<p class="muted small">One row per server @ machine (shards of one run merged). Each cell is read from the check named in its tooltip; a badge gives that check's outcome when it is not a pass.</p>` +
    `<div class="scroll"><table id="seed-table"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></div>` +
    `<p class="small"><strong>Score.</strong> ${esc(SCORE_DEFINITION).replace(/`([^`]+)`/g, '<code>$1</code>')}</p></section>`
  );
}
