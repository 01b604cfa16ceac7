// Reading results files defensively for reports: a file from an interrupted run, an older suite version or a
// hand edit may lack any field, and a check's metrics are free-form. Nothing here throws on odd input; a value
// that is not there is `undefined` and the report shows "n/a". Pure functions only.

import { causeLabel, maxPlausibleTps, phantomFromEvidence, physicalFlag } from '../lib/grading/phantom.ts';
import type { FidelityPreflight, Level, Outcome } from '../lib/model/types.ts';
import type { CheckResult, ResultsFile, ResultsHeader } from './results-types.ts';

export { FAMILY_ORDER } from '../lib/check/family-order.ts';

import { readCapacity } from '../lib/capacity/read.ts';
import type { CapacityTable } from '../lib/capacity/types.ts';
import { NOT_HEADLINE } from '../lib/check/family-order.ts';
import { isJsonObject } from '../lib/json.ts';
import type { HeadlineFigure } from '../lib/model/figures.ts';
import { declaredSources, providerOf, providersOf } from './figures.ts';
import { inRunOrder } from './run-order.ts';

const OUTCOMES: readonly Outcome[] = [
  'pass',
  'fail',
  'warn',
  'inconclusive',
  'skip',
  'known',
  'known-passing',
  'error',
];
const LEVELS: readonly Level[] = ['MUST', 'SHOULD', 'INFO'];

function str(v: unknown, dflt = ''): string {
  return typeof v === 'string' ? v : v === undefined || v === null ? dflt : String(v);
}
function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function normaliseFidelity(f: Record<string, unknown>): FidelityPreflight {
  const summary = (v: unknown) => {
    if (!isJsonObject(v) || ![v.n, v.p50Ms, v.p99Ms, v.maxMs].every((x) => num(x) !== undefined)) return undefined;
    return { n: num(v.n)!, p50Ms: num(v.p50Ms)!, p99Ms: num(v.p99Ms)!, maxMs: num(v.maxMs)! };
  };
  const lag = summary(f.lag);
  const stepLag = summary(f.stepLag);
  return {
    streams: num(f.streams) ?? 0,
    cadenceMs: num(f.cadenceMs) ?? 0,
    durationMs: num(f.durationMs) ?? 0,
    ...(lag ? { lag } : {}),
    ...(stepLag ? { stepLag } : {}),
    ...(num(f.cpuUsPerEvent) !== undefined ? { cpuUsPerEvent: num(f.cpuUsPerEvent) } : {}),
    ...(num(f.clockUncertaintyMs) !== undefined ? { clockUncertaintyMs: num(f.clockUncertaintyMs) } : {}),
    ...(typeof f.error === 'string' ? { error: f.error } : {}),
  };
}

/** A results file as far as it can be read, with its capacity table when it carries one. */
type ReadResults = ResultsFile & { capacity?: CapacityTable };

/** A results file as far as it can be read; `source` names it in notes. Never throws. */
export function normaliseResults(input: unknown): ReadResults {
  const r = isJsonObject(input) ? input : {};
  const h = isJsonObject(r.header) ? r.header : {};
  const machine = isJsonObject(h.machine) ? h.machine : {};
  const header: ResultsHeader = {
    suite: isJsonObject(h.suite)
      ? { name: str(h.suite.name, 'llm-server-conformance'), version: str(h.suite.version, '?') }
      : { name: 'llm-server-conformance', version: '?' },
    date: str(h.date),
    project: str(h.project, 'unknown project'),
    profile: isJsonObject(h.profile) ? h.profile : {},
    server: isJsonObject(h.server) ? h.server : {},
    machine: {
      hostname: typeof machine.hostname === 'string' ? machine.hostname : undefined,
      label: str(machine.label) || str(machine.hostname) || 'unknown machine',
      platform: str(machine.platform, '?'),
      arch: str(machine.arch, '?'),
      cpus: num(machine.cpus) ?? 0,
      ...(typeof machine.chip === 'string' && machine.chip ? { chip: machine.chip } : {}),
      memGiB: num(machine.memGiB) ?? 0,
      node: str(machine.node, '?'),
    },
    tier: h.tier === 'full' ? 'full' : 'quick',
    strict: h.strict === true,
    ...(typeof h.shard === 'string' ? { shard: h.shard } : {}),
    ...(isJsonObject(h.fidelity) ? { fidelity: normaliseFidelity(h.fidelity) } : {}),
  };
  const rawChecks: unknown[] = Array.isArray(r.checks)
    ? r.checks
    : isJsonObject(r.checks)
      ? Object.entries(r.checks).map(([id, c]) => ({ id, ...(isJsonObject(c) ? c : {}) }))
      : [];
  const checks: CheckResult[] = [];
  for (const c of rawChecks) {
    if (!isJsonObject(c) || typeof c.id !== 'string' || !c.id) continue;
    const id = c.id;
    checks.push({
      id,
      title: str(c.title),
      family: str(c.family) || id.split('.')[0]!,
      level: LEVELS.includes(c.level as Level) ? (c.level as Level) : 'INFO',
      outcome: OUTCOMES.includes(c.outcome as Outcome) ? (c.outcome as Outcome) : 'error',
      message: str(c.message),
      rationale: str(c.rationale),
      reference: str(c.reference),
      ...(num(c.durationMs) !== undefined ? { durationMs: num(c.durationMs) } : {}),
      ...(isJsonObject(c.metrics) ? { metrics: c.metrics } : {}),
      ...(Array.isArray(c.evidence) ? { evidence: c.evidence } : {}),
      ...(isJsonObject(c.loopDelay)
        ? { loopDelay: { p99Ms: num(c.loopDelay.p99Ms) ?? NaN, maxMs: num(c.loopDelay.maxMs) ?? NaN } }
        : {}),
      ...(typeof c.blockedBy === 'string' && c.blockedBy ? { blockedBy: c.blockedBy } : {}),
      ...(Array.isArray(c.provides) ? { provides: c.provides.filter((f): f is string => typeof f === 'string') } : {}),
    });
  }
  const fin = isJsonObject(r.finished) ? { date: str(r.finished.date), reason: str(r.finished.reason) } : undefined;
  const errors = Array.isArray(r.errors)
    ? r.errors.filter(isJsonObject).map((e) => ({ where: str(e.where, '?'), message: str(e.message) }))
    : [];
  const capacity = readCapacity(r.capacity);
  return {
    header,
    checks,
    ...(fin ? { finished: fin } : {}),
    ...(errors.length ? { errors } : {}),
    ...(capacity ? { capacity } : {}),
  };
}

/** One column of a report: a project as run on one machine (shards of that run merged). */
export interface Column {
  key: string;
  label: string;
  project: string;
  machine: string;
  header: ResultsHeader;
  checks: Map<string, CheckResult>;
  /** False when any merged file lacks `finished` (an interrupted run). */
  finished: boolean;
  shards: string[];
  /** Problems outside the checks (load errors, unhandled errors), from every merged file. */
  errors: Array<{ where: string; message: string }>;
  /** The run's capacity table (results.json `capacity`), when it ran one; of several shards, the last that had one. */
  capacity?: CapacityTable;
}

/**
 * Group results into columns: one per project and machine, and per run. Shards of one run (header.shard set) merge
 * into one column (a later file wins for a check id present twice); separate unsharded runs of the same project on
 * the same machine stay apart, their labels carrying the run's date.
 */
export function columnsOf(files: readonly ReadResults[]): Column[] {
  const byKey = new Map<string, Column>();
  for (const raw of files) {
    const file = normaliseResults(raw);
    const project = file.header.project;
    const machine = file.header.machine.label;
    const key = [project, machine, file.header.shard ? 'sharded' : file.header.date].join('\u0000');
    let col = byKey.get(key);
    if (!col) {
      col = {
        key,
        label: `${project} @ ${machine}`,
        project,
        machine,
        header: file.header,
        checks: new Map(),
        finished: true,
        shards: [],
        errors: [],
      };
      byKey.set(key, col);
    }
    for (const c of file.checks) col.checks.set(c.id, c);
    if (!file.finished) col.finished = false;
    if (file.header.shard) col.shards.push(file.header.shard);
    col.errors.push(...(file.errors ?? []));
    if (file.capacity) col.capacity = file.capacity;
  }
  const columns = [...byKey.values()];
  // Same project on the same machine more than once: name each run by its date (then by position).
  const count = new Map<string, number>();
  for (const c of columns) count.set(c.label, (count.get(c.label) ?? 0) + 1);
  const seen = new Map<string, number>();
  for (const c of columns) {
    if (count.get(c.label)! < 2) continue;
    const base = c.label;
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    c.label = `${base} (${c.header.date || `run ${n}`})`;
  }
  // Still equal (same date twice): number them.
  const final = new Map<string, number>();
  for (const c of columns) {
    const n = (final.get(c.label) ?? 0) + 1;
    final.set(c.label, n);
    if (n > 1) c.label = `${c.label} #${n}`;
  }
  return columns;
}

/** Every check id seen in any column, in run order (reporters/run-order.ts), with the first seen definition. */
export function checkRows(columns: readonly Column[]): CheckResult[] {
  const seen = new Map<string, CheckResult>();
  for (const col of columns) for (const c of col.checks.values()) if (!seen.has(c.id)) seen.set(c.id, c);
  return inRunOrder([...seen.values()]);
}

// ---------------------------------------------------------------------------------------------------------
// Metric lookup: checks name figures in snake_case (wall_tps_p50), camelCase (wallTpsP50) or nested
// ({ wall_tps: { p50 } }); all three normalise to the same key.

export function normKey(k: string): string {
  return k.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** Flatten nested objects into normalised keys (arrays are not descended). Depth-limited. */
function flatNumbers(metrics: unknown, depth = 3): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (v: unknown, prefix: string, d: number) => {
    if (!isJsonObject(v) || d < 0) return;
    for (const [k, x] of Object.entries(v)) {
      const key = prefix + normKey(k);
      if (typeof x === 'number' && Number.isFinite(x)) {
        if (!out.has(key)) out.set(key, x);
      } else if (isJsonObject(x)) walk(x, key, d - 1);
    }
  };
  walk(metrics, '', depth);
  return out;
}

/** First of `names` (any spelling) present as a finite number in the metrics. */
export function metricNumber(metrics: unknown, names: readonly string[]): number | undefined {
  const flat = flatNumbers(metrics);
  for (const n of names) {
    const v = flat.get(normKey(n));
    if (v !== undefined) return v;
  }
  return undefined;
}

/** The figures of the seed's tables. Names are tried in order (p50 first: aggregates are medians). */
export const FIGURES = {
  wallTps: { label: 'wall_tps_p50', unit: 'tok/s', names: ['wall_tps_p50', 'wall_tps_median', 'wall_tps'] },
  ttft: {
    label: 'ttft_p50',
    unit: 'ms',
    names: ['ttft_p50_ms', 'ttft_p50', 'ttft_ms_p50', 'ttft_median', 'ttft_ms', 'ttft'],
  },
  genTps: { label: 'gen_tps_p50', unit: 'tok/s', names: ['gen_tps_p50', 'gen_tps_median', 'gen_tps'] },
  speedup: {
    label: 'speedup',
    unit: '×',
    names: ['speedup', 'speedup_estimate', 'speedup_p50', 'speedup2', 'speedup_2'],
  },
} as const;
export type FigureName = keyof typeof FIGURES;
const FIGURE_NAMES = Object.keys(FIGURES) as FigureName[];

/** PHANTOM: a gen_tps the stream could not have had. Flagged by a check or recomputed from its evidence, never guessed. */
export interface Phantom {
  /** Short label for tables ("one read", "above physical bound"). */
  cause: string;
  /** One line with the figures. */
  detail: string;
  /** Check whose evidence or verdict flagged it. */
  from: string;
}

/** One row of the seed's table: what a check ran and what it measured. */
export interface Workload {
  check: string;
  /** The workload's own name ("1 stream, 32 tokens"), or '' when the check reported bare figures. */
  name: string;
  concurrency?: number;
  figures: Partial<Record<FigureName, number>>;
  tokensUsage?: number;
  tokensCounted?: number;
  phantom?: Phantom;
}

function figuresIn(o: unknown): Partial<Record<FigureName, number>> {
  const out: Partial<Record<FigureName, number>> = {};
  for (const n of FIGURE_NAMES) {
    const v = metricNumber(o, FIGURES[n].names);
    if (v !== undefined) out[n] = v;
  }
  return out;
}

/**
 * Workloads of a check: `metrics.workload` / `metrics.workloads` (lib/measure/workload.ts), else the check's top-level
 * figures as one unnamed workload. Each carries the check's phantom flag when it has a gen_tps.
 */
export function workloadsOf(check: CheckResult | undefined, hardware?: unknown): Workload[] {
  const m = check?.metrics;
  if (!check || !isJsonObject(m)) return [];
  const raw: Record<string, unknown>[] = [];
  for (const [k, v] of Object.entries(m)) {
    const nk = normKey(k);
    if (nk === 'workload' && isJsonObject(v)) raw.push(v);
    if (nk === 'workloads' && Array.isArray(v)) raw.push(...v.filter(isJsonObject));
  }
  const out: Workload[] = raw
    .filter((w) => Object.keys(figuresIn(w)).length > 0)
    .map((w) => ({
      check: check.id,
      name: str(w.name),
      ...(num(w.concurrency) !== undefined ? { concurrency: num(w.concurrency) } : {}),
      figures: figuresIn(w),
      ...(num(w.tokens_usage ?? w.tokensUsage) !== undefined
        ? { tokensUsage: num(w.tokens_usage ?? w.tokensUsage) }
        : {}),
      ...(num(w.tokens_counted ?? w.tokensCounted) !== undefined
        ? { tokensCounted: num(w.tokens_counted ?? w.tokensCounted) }
        : {}),
    }));
  // Figures outside any workload object (e.g. parallel.speedup-2's speedup) make a workload of their own.
  const top: Record<string, unknown> = Object.fromEntries(
    Object.entries(m).filter(([k]) => !['workload', 'workloads'].includes(normKey(k))),
  );
  const topFigures = figuresIn(top);
  const extra = Object.fromEntries(
    Object.entries(topFigures).filter(([n]) => !out.some((w) => w.figures[n as FigureName] !== undefined)),
  );
  if (Object.keys(extra).length) out.push({ check: check.id, name: '', figures: extra });
  // The check's own flag marks every workload it measured (also one whose gen_tps is undefined: a zero-length window).
  const phantom = checkPhantom(check, hardware);
  if (phantom)
    for (const w of out) if (w.figures.genTps !== undefined || w.figures.wallTps !== undefined) w.phantom = phantom;
  // A gen_tps above the hardware's bound is phantom too (profile hardware from the results header).
  for (const w of out) {
    if (w.phantom || w.figures.genTps === undefined) continue;
    const p = physicalFlag(w.figures.genTps, hardware);
    if (p) w.phantom = { cause: causeLabel(p.kinds), detail: p.detail, from: check.id };
  }
  return out;
}

/**
 * Phantom flag of one check's gen_tps: its own stream verdicts (metrics.streams[].phantom, as metrics.gen-tps-plausible
 * writes them), a `phantom` field, or its evidence re-assessed with lib/grading/phantom.ts (the same rules the checks use).
 */
function checkPhantom(check: CheckResult, hardware?: unknown): Phantom | undefined {
  const m = isJsonObject(check.metrics) ? check.metrics : {};
  const streams = Array.isArray(m.streams) ? m.streams.filter(isJsonObject) : [];
  const judged = streams.filter((s) => typeof s.phantom === 'boolean');
  const flagged = judged.filter((s) => s.phantom === true);
  if (judged.length && flagged.length * 2 >= judged.length) {
    const kinds = flagged.flatMap((s) => (Array.isArray(s.causes) ? s.causes.map((c) => str(c)) : []));
    return {
      cause: causeLabel(kinds) || 'flagged',
      detail: `${flagged.length}/${judged.length} streams phantom${kinds.length ? ` (${causeLabel(kinds)})` : ''}`,
      from: check.id,
    };
  }
  for (const [k, v] of Object.entries(m)) {
    const nk = normKey(k);
    if (nk !== 'phantom' && nk !== 'gentpsphantom') continue;
    if (v === true)
      return {
        cause: str(m.phantomCause ?? m.phantom_cause) || 'flagged',
        detail: firstLine(check.message),
        from: check.id,
      };
    if (typeof v === 'string' && v) return { cause: v, detail: v, from: check.id };
    if (isJsonObject(v) && v.flagged !== false) {
      const cause = str(v.cause ?? v.reason ?? v.message) || 'flagged';
      return { cause, detail: str(v.detail) || cause, from: check.id };
    }
  }
  try {
    const stall = num(m.clientStallMs) ?? num(check.loopDelay?.maxMs);
    const flag = phantomFromEvidence(check.evidence, stall, {}, maxPlausibleTps(hardware));
    if (flag) return { cause: causeLabel(flag.kinds), detail: flag.detail, from: check.id };
  } catch {
    // Odd evidence never breaks a report.
  }
  return undefined;
}

/** The profile's hardware as the results header recorded it (for the physical bound). */
export function hardwareOf(col: Column): unknown {
  return isJsonObject(col.header.profile) ? col.header.profile.hardware : undefined;
}

interface Figure {
  value?: number;
  /** Check id the figure was read from. */
  from?: string;
  workload?: string;
  phantom?: Phantom;
}

/** Single-stream figures: the metrics family's workload first, then the stream family's, then any single stream. */
const SINGLE_STREAM = ['metrics', 'stream', 'api', 'sse'];

/**
 * Where a headline figure is read: the checks that provide it (lib/model/figures.ts), those of the families listed
 * first, in that order; then any check of those families that carries the figure.
 */
const PREFERRED: Record<FigureName, { figure: HeadlineFigure; families: string[] }> = {
  wallTps: { figure: 'wall_tps_p50', families: SINGLE_STREAM },
  ttft: { figure: 'ttft_p50', families: SINGLE_STREAM },
  genTps: { figure: 'gen_tps_p50', families: SINGLE_STREAM },
  speedup: { figure: 'speedup_2', families: ['parallel'] },
};

/** Several providers of a figure (ttft_p50: the metrics and the stream families'): the preferred family's first. */
function byPreference<T>(name: FigureName, xs: T[], familyOf: (x: T) => string): T[] {
  const { families } = PREFERRED[name];
  const rank = (x: T) => {
    const i = families.indexOf(familyOf(x));
    return i === -1 ? families.length : i;
  };
  return [...xs].sort((a, b) => rank(a) - rank(b));
}

/** The checks the catalogue declares provide a headline figure, in the order headlineFigure reads them. */
export function headlineSources(name: FigureName): string[] {
  return byPreference(name, [...declaredSources(PREFERRED[name].figure)], (id) => id.split('.')[0]!);
}

/** The headline figure of a column: from the checks that provide it, else the first preferred family having it, else any check. */
export function headlineFigure(col: Column, name: FigureName): Figure {
  const hw = hardwareOf(col);
  const pick = (c: CheckResult | undefined): Figure | undefined => {
    const ws = workloadsOf(c, hw).filter((w) => w.figures[name] !== undefined);
    const w =
      ws.find((x) => x.concurrency === undefined || x.concurrency === 1) ?? (name === 'speedup' ? ws[0] : undefined);
    return w
      ? {
          value: w.figures[name],
          from: w.check,
          workload: w.name,
          ...(name === 'genTps' && w.phantom ? { phantom: w.phantom } : {}),
        }
      : undefined;
  };
  const pref = PREFERRED[name];
  for (const c of byPreference(name, providersOf(col.checks.values(), pref.figure), (c) => c.family)) {
    const f = pick(c);
    if (f) return f;
  }
  const ordered = [...col.checks.values()].sort((a, b) => a.id.localeCompare(b.id));
  for (const fam of pref.families)
    for (const c of ordered)
      if (c.family === fam) {
        const f = pick(c);
        if (f) return f;
      }
  if (name === 'speedup') return {};
  for (const c of ordered)
    if (!NOT_HEADLINE.includes(c.family)) {
      const f = pick(c);
      if (f) return f;
    }
  return {};
}

/** Phantom flag for a column's headline gen_tps: its source check's flag, else the check providing the verdict not passing. */
export function columnPhantom(col: Column, headline: Figure = headlineFigure(col, 'genTps')): Phantom | undefined {
  if (headline.phantom) return headline.phantom;
  const g = providerOf(col.checks.values(), 'gen_tps_phantom');
  if (g && (g.outcome === 'fail' || g.outcome === 'known')) {
    return {
      cause: `flagged by ${g.id}`,
      detail: firstLine(g.message.replace(/^known issue \([^)]*\):\s*/, '')),
      from: g.id,
    };
  }
  return undefined;
}

export function firstLine(s: string): string {
  const line = s.split('\n').find((l) => l.trim()) ?? '';
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

// ---------------------------------------------------------------------------------------------------------
// Curves: arrays of points in a check's metrics, found by key patterns (tried in order), in any of the shapes
// [{x, y}], {xs: [...], ys: [...]}, or [y, y, ...] (x = 1, 2, ...) when `indexX` is set.

interface CurvePoint {
  x: number;
  y: number;
  note?: string;
}

interface CurveSpec {
  /** Keys to look at first (e.g. "curve", "cycles"); then every array in the metrics. */
  prefer: string[];
  x: RegExp[];
  y: RegExp[];
  /** Plain arrays of numbers are y values at x = 1, 2, … */
  indexX?: boolean;
  /** Extra fields worth a tooltip, e.g. /ttft/ on a throughput curve. */
  note?: RegExp[];
}

/** A number, or the median-like field of a summary object ({ p50 } / { median } / { value }). */
function pointValue(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (isJsonObject(v)) return num(v.p50) ?? num(v.median) ?? num(v.value) ?? num(v.estimate) ?? num(v.mean);
  return undefined;
}

function findKey(o: Record<string, unknown>, patterns: readonly RegExp[], exclude?: string): string | undefined {
  const keys = Object.keys(o).filter((k) => k !== exclude);
  for (const re of patterns) {
    const k = keys.find((key) => re.test(normKey(key)) && pointValue(o[key]) !== undefined);
    if (k) return k;
  }
  return undefined;
}

function findArrayKey(o: Record<string, unknown>, patterns: readonly RegExp[], exclude?: string): string | undefined {
  const keys = Object.keys(o).filter(
    (k) => k !== exclude && Array.isArray(o[k]) && (o[k] as unknown[]).some((v) => pointValue(v) !== undefined),
  );
  for (const re of patterns) {
    const k = keys.find((key) => re.test(normKey(key)));
    if (k) return k;
  }
  return undefined;
}

function pointsFromArray(arr: unknown[], spec: CurveSpec, plainOk: boolean): CurvePoint[] {
  const pts: CurvePoint[] = [];
  if (arr.length > 0 && arr.every((v) => v === null || typeof v === 'number')) {
    // A plain list of numbers is a curve only under a key that names it (never e.g. a list of ITLs).
    if (!spec.indexX || !plainOk) return pts;
    arr.forEach((v, i) => {
      const y = pointValue(v);
      if (y !== undefined) pts.push({ x: i + 1, y });
    });
    return pts;
  }
  arr.forEach((item, i) => {
    if (!isJsonObject(item)) return;
    const yk = findKey(item, spec.y);
    if (!yk) return;
    const xk = findKey(item, spec.x, yk);
    const x = xk ? pointValue(item[xk]) : spec.indexX ? i + 1 : undefined;
    const y = pointValue(item[yk]);
    if (x === undefined || y === undefined) return;
    const notes: string[] = [];
    for (const re of spec.note ?? []) {
      const nk = Object.keys(item).find(
        (k) => k !== xk && k !== yk && re.test(normKey(k)) && pointValue(item[k]) !== undefined,
      );
      if (nk) notes.push(`${nk} ${+pointValue(item[nk])!.toPrecision(4)}`);
    }
    pts.push({ x, y, ...(notes.length ? { note: notes.join(', ') } : {}) });
  });
  return pts;
}

function pointsFromParallelArrays(o: Record<string, unknown>, spec: CurveSpec): CurvePoint[] {
  const yk = findArrayKey(o, spec.y);
  if (!yk) return [];
  const ys = o[yk] as unknown[];
  const xk = findArrayKey(o, spec.x, yk);
  const xs = xk ? (o[xk] as unknown[]) : undefined;
  const pts: CurvePoint[] = [];
  ys.forEach((yv, i) => {
    const y = pointValue(yv);
    const x = xs ? pointValue(xs[i]) : spec.indexX ? i + 1 : undefined;
    if (x !== undefined && y !== undefined) pts.push({ x, y });
  });
  return pts;
}

/** Points of a curve in a check's metrics, or [] when none can be read. */
export function curvePoints(metrics: unknown, spec: CurveSpec): CurvePoint[] {
  if (!isJsonObject(metrics)) return [];
  const candidates: Array<{ key: string; value: unknown; preferred: boolean }> = [];
  const preferred = new Set(spec.prefer.map(normKey));
  for (const p of spec.prefer) {
    for (const [k, v] of Object.entries(metrics))
      if (normKey(k) === normKey(p)) candidates.push({ key: k, value: v, preferred: true });
  }
  // Then every array / object within two levels, in key order.
  const walk = (key: string, v: unknown, d: number) => {
    if (d < 0) return;
    if (Array.isArray(v)) candidates.push({ key, value: v, preferred: preferred.has(normKey(key)) });
    else if (isJsonObject(v)) {
      candidates.push({ key, value: v, preferred: false });
      for (const [k, x] of Object.entries(v)) walk(k, x, d - 1);
    }
  };
  walk('', metrics, 2);
  for (const c of candidates) {
    const plainOk = c.preferred || spec.y.some((re) => re.test(normKey(c.key)));
    const pts = Array.isArray(c.value)
      ? pointsFromArray(c.value, spec, plainOk)
      : isJsonObject(c.value)
        ? pointsFromParallelArrays(c.value, spec)
        : [];
    if (pts.length) return pts;
  }
  return [];
}

/** Aggregate throughput vs concurrency (metrics.curve). */
const SCALING_CURVE: CurveSpec = {
  prefer: ['curve', 'points', 'levels', 'scaling'],
  x: [/^concurrency$/, /^(n|c|level|parallel|streams|clients|requests|users)$/, /concurren/, /parallel/],
  y: [
    /^aggregate(wall)?tps(p50|median)?$/,
    /^agg(regate)?(wall)?tps/,
    /aggregate.*(tps|throughput)/,
    /^throughput/,
    /throughput/,
    /aggregate/,
  ],
  note: [/ttft.*p50|^ttft/, /ttft.*p99/, /stream.*tps|perstream/],
};

/** TTFT vs prompt length (metrics.curve). */
const PREFILL_CURVE: CurveSpec = {
  prefer: ['curve', 'points', 'samples', 'lengths', 'prefill'],
  x: [/^prompttokens$/, /^prompt(tokens|len|length)/, /prompt.*tok/, /^tokens$/, /^(length|len)$/, /tokens/, /length/],
  y: [/^ttft(ms)?(p50|median)?$/, /^ttft/, /ttft/, /prefill.*ms/],
  note: [/censored/, /^n$/],
};

/** Per-cycle throughput (metrics.cycles). */
const CYCLE_CURVE: CurveSpec = {
  prefer: ['cycles', 'perCycle', 'cycleTps', 'curve', 'points'],
  x: [/^cycle$/, /^(cycle|index|i|n)/, /cycle/],
  y: [/^wall(tps)?(p50|median)?$/, /^walltps/, /walltps/, /^(tps|throughput)/, /tps/, /throughput/],
  indexX: true,
  note: [/ttft/],
};

/** The plots' curves: read from the check that provides each (lib/model/figures.ts). */
export const CURVE_SOURCES = {
  scaling: { figure: 'scaling_curve', spec: SCALING_CURVE },
  prefill: { figure: 'prefill_curve', spec: PREFILL_CURVE },
  cycles: { figure: 'cycle_curve', spec: CYCLE_CURVE },
} as const satisfies Record<string, { figure: HeadlineFigure; spec: CurveSpec }>;

/** Counts of each outcome in a column. */
export function outcomeCounts(col: Column): Record<Outcome, number> {
  const counts = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  for (const c of col.checks.values()) counts[c.outcome]++;
  return counts;
}

export { OUTCOMES };
