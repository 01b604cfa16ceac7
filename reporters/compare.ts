// Comparing two runs (the PR gate's performance arm): which checks changed outcome, and which figures moved
// beyond noise. Pure: two results files in, a comparison out; scripts/compare.ts does the I/O and the exit code.
//
// Noise: where a check kept raw samples (an array of numbers in its metrics, or per-request records under
// `samples` / `streams`) a figure moved when the percentile-bootstrap CI of median(new) / median(old) excludes 1 AND
// the change is at least `minEffect` (the CI covers the spread within a run, not the 10 %+ between runs on a shared
// machine). Evidence timings are not used: a check's evidence mixes requests of different kinds. A figure that carries its own interval ({ estimate, low, high }, e.g. speedup) moved
// when the two runs' intervals do not overlap. Where only a single figure exists (a median without its samples)
// it moved when the relative change exceeds `tolerance`.
// Curves (arrays of objects) are not compared point by point: their points have no samples of their own.

import { isJsonObject } from '../lib/json.ts';
import { bootstrapRatioCI, finite, median } from '../lib/measure/stats.ts';
import type { Level, Outcome } from '../lib/model/types.ts';
import { fmtNum } from './html-escape.ts';
import { firstLine, normaliseResults, normKey } from './report-data.ts';
import type { CheckResult, ResultsFile } from './results-types.ts';

export interface CompareOptions {
  /** Relative change that counts as moved when no raw samples exist (default 0.3: one figure from a noisy machine). */
  tolerance?: number;
  /**
   * Smallest relative change that counts even when the bootstrap CI excludes 1 (default 0.2). The CI covers the
   * spread within a run; runs on a shared machine also differ between themselves by 10 % and more.
   */
  minEffect?: number;
  /** 1 − confidence of the bootstrap interval (default 0.05). */
  alpha?: number;
  iterations?: number;
  seed?: number;
  /** Smallest change of a duration that counts, in ms (default 50: scheduler and timer noise on a shared machine). */
  minDeltaMs?: number;
  /** Fewest samples on each side for the bootstrap (default 5: fewer make a falsely tight interval); fewer falls back to the tolerance. */
  minSamples?: number;
}

type Direction = 'higher-better' | 'lower-better' | 'unknown';
type ChangeKind = 'regression' | 'improvement' | 'changed' | 'added' | 'removed';

interface OutcomeChange {
  id: string;
  title: string;
  level?: Level;
  from: Outcome | 'absent';
  to: Outcome | 'absent';
  kind: ChangeKind;
  /** First line of the new message (or of the old one when the check was removed). */
  message: string;
}

interface MetricChange {
  id: string;
  metric: string;
  old?: number;
  new?: number;
  /** new / old of the figure (medians of the samples for the bootstrap method). */
  ratio?: number;
  ci?: { low?: number; high?: number };
  method: 'bootstrap' | 'interval' | 'tolerance';
  nOld?: number;
  nNew?: number;
  direction: Direction;
  kind: 'regression' | 'improvement' | 'changed';
}

interface RunLabel {
  project: string;
  machine: string;
  date: string;
  suiteVersion: string;
  tier: string;
}

export interface Comparison {
  old: RunLabel;
  new: RunLabel;
  outcomeChanges: OutcomeChange[];
  metricChanges: MetricChange[];
  /** Number of outcome and metric regressions: non-zero makes the gate fail. */
  regressions: number;
  /** Caveats (different machines, different suite versions, …) and the method used. */
  notes: string[];
  options: Required<CompareOptions>;
}

const DEFAULTS: Required<CompareOptions> = {
  tolerance: 0.3,
  minEffect: 0.2,
  minDeltaMs: 50,
  alpha: 0.05,
  iterations: 2000,
  seed: 1,
  minSamples: 5,
};

// ---------------------------------------------------------------------------------------------------------
// Outcomes

/** Badness of an outcome; skip and inconclusive are outside the order (no verdict, so neither better nor worse). */
function rank(o: Outcome): number | undefined {
  switch (o) {
    case 'pass':
    case 'known-passing':
      return 0;
    case 'warn':
    case 'known':
      return 1;
    case 'fail':
    case 'error':
      return 2;
    default:
      return undefined;
  }
}

export function outcomeChange(o: CheckResult | undefined, n: CheckResult | undefined): OutcomeChange | undefined {
  if (!o && !n) return undefined;
  const id = (n ?? o)!.id;
  const title = (n ?? o)!.title;
  const level = (n ?? o)!.level;
  if (!o) return { id, title, level, from: 'absent', to: n!.outcome, kind: 'added', message: firstLine(n!.message) };
  if (!n) return { id, title, level, from: o.outcome, to: 'absent', kind: 'removed', message: firstLine(o.message) };
  if (o.outcome === n.outcome) return undefined;
  const ro = rank(o.outcome);
  const rn = rank(n.outcome);
  let kind: ChangeKind = 'changed';
  if (ro !== undefined && rn !== undefined) {
    if (rn > ro) kind = 'regression';
    else if (rn < ro) kind = 'improvement';
  }
  return { id, title, level, from: o.outcome, to: n.outcome, kind, message: firstLine(n.message) };
}

// ---------------------------------------------------------------------------------------------------------
// Metrics

/** Which way is good, from the figure's path. Unknown directions are reported, never a regression. */
export function directionOf(path: string): Direction {
  const raw = path.replace(/\[\]/g, '').split('.').pop() ?? path;
  const k = normKey(path);
  if (/tps|throughput|speedup|tokpers|tokenspers|persecond|efficiency/.test(k)) return 'higher-better';
  if (/ttft|latenc|itl|tpot|e2e|stall|rss|memory|leak|exponent|slope$/.test(k) && !/slopetps|tpsper/.test(k))
    return 'lower-better';
  // A duration by its unit suffix: ttftMs, gap_ms, wait_ms_p50, pauseMsMedian.
  if (/(Ms|_ms)(_?(p\d+|P\d+|median|Median|mean|Mean|max|Max))?$/.test(raw)) return 'lower-better';
  return 'unknown';
}

/** Figures about our own client, the run's configuration or the grading bands: never the server's performance. */
const NOT_COMPARED =
  /^(loopdelay|bands|thresholds?|hardware|alpha|delta|slots|reps|repetitions|tier|window|runms|endcycles|requests|concurrency|counted|errors|maxtokens)$|clientstall|loopdelay/;

const SUFFIX = /(_(p50|median|samples|sample|raw|values|ms)|(P50|Median|Samples|Sample|Raw|Values|Ms))$/;

/** The figure a key names, without its statistic or unit suffixes: wall_tps_p50, wallTps (samples) → walltps; ttft_p50, ttftMs → ttft. */
export function metricBase(name: string): string {
  let k = name.replace(/\[\]/g, '').split('.').pop() ?? name;
  for (let i = 0; i < 4; i++) {
    const next = k.replace(SUFFIX, '');
    if (next === k || !next) break;
    k = next;
  }
  return normKey(k) || normKey(name);
}

interface Interval {
  estimate: number;
  low: number;
  high: number;
}

interface Figures {
  /** Single figures by path, with the base name that pairs them with samples. */
  scalars: Map<string, { value: number; base: string }>;
  /** Samples by base name. */
  samples: Map<string, { path: string; values: number[] }>;
  /** Figures that carry their own confidence interval ({ estimate, low, high }), by path. */
  intervals: Map<string, Interval>;
}

const fin = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Arrays of per-request records whose numeric fields are raw samples (never curves: their points differ in x). */
const SAMPLE_RECORDS = /^(samples?|raw|requests|streams|runs|reps)$/;

/** Scalars (dotted paths), raw-sample arrays and self-described intervals of a check. */
function figuresOf(check: CheckResult): Figures {
  const scalars = new Map<string, { value: number; base: string }>();
  const samples = new Map<string, { path: string; values: number[] }>();
  const intervals = new Map<string, Interval>();
  const addSamples = (path: string, values: number[]) => {
    const base = metricBase(path);
    if (values.length && !samples.has(base)) samples.set(base, { path, values });
  };
  const walk = (v: unknown, path: string, depth: number) => {
    if (depth < 0) return;
    const key = normKey(path.split('.').pop() ?? '');
    if (path && NOT_COMPARED.test(key)) return;
    if (fin(v)) scalars.set(path, { value: v, base: metricBase(path) });
    else if (Array.isArray(v)) {
      if (v.length && v.every((x) => typeof x === 'number' || x === null))
        addSamples(path, finite(v as Array<number | null>));
      else if (SAMPLE_RECORDS.test(key) && v.some(isJsonObject)) {
        const fields = new Set(v.filter(isJsonObject).flatMap((o) => Object.keys(o).filter((k) => fin(o[k]))));
        for (const f of fields)
          if (!NOT_COMPARED.test(normKey(f)))
            addSamples(
              `${path}[].${f}`,
              v
                .filter(isJsonObject)
                .map((o) => o[f])
                .filter(fin),
            );
      }
    } else if (isJsonObject(v)) {
      // A summary ({ n, p50, p90, p99, min, max, mean }, lib/grading/stats.ts summarize) is one figure: its median. The tails
      // and extremes of a handful of requests are too noisy to gate on, and n is a count.
      if (fin(v.p50) && ['p90', 'p99', 'min', 'max', 'mean', 'n'].some((k) => k in v) && !(fin(v.low) && fin(v.high))) {
        scalars.set(`${path}.p50`, { value: v.p50, base: metricBase(path) });
        return;
      }
      const est = v.estimate ?? v.value ?? v.p50;
      if (fin(est) && fin(v.low) && fin(v.high)) intervals.set(path, { estimate: est, low: v.low, high: v.high });
      for (const [k, x] of Object.entries(v)) {
        if (intervals.has(path) && ['estimate', 'value', 'p50', 'low', 'high'].includes(k)) continue;
        walk(x, path ? `${path}.${k}` : k, depth - 1);
      }
    }
  };
  walk(check.metrics, '', 3);
  return { scalars, samples, intervals };
}

/**
 * Figures that are extremes, bounds or derived shapes of a few requests (min, max, p99, a slope, a share, a limit):
 * too noisy between runs to gate on. Their moves are listed as `changed`, never as regressions; the checks grade them.
 */
const NOT_GATED_WORDS = new Set([
  'min',
  'max',
  'largest',
  'smallest',
  'worst',
  'p90',
  'p95',
  'p99',
  'low',
  'high',
  'lower',
  'upper',
  'limit',
  'slope',
  'growth',
  'share',
  'ratio',
  'atleast',
  'bound',
]);

/** Words of a key: camelCase, snake_case and dotted paths split, lower-cased. */
function words(path: string): string[] {
  return path
    .replace(/\[\]/g, '')
    .split(/[._\-\s]+/)
    .flatMap((w) => w.replace(/([a-z0-9])([A-Z])/g, '$1 $2').split(' '))
    .map((w) => w.toLowerCase())
    .filter(Boolean);
}

function gated(path: string): boolean {
  const segs = path.replace(/\[\]/g, '').split('.');
  // A summary's median is named by its parent (e2eMs.p50): judge the parent's words.
  const last = segs[segs.length - 1] === 'p50' && segs.length > 1 ? segs[segs.length - 2]! : segs[segs.length - 1]!;
  return !words(last).some((w) => NOT_GATED_WORDS.has(w));
}

/** A duration in ms by its name (ttftMs, e2e_ms_p50, ttft_p50): differences below minDeltaMs are timer noise. */
function isMs(path: string): boolean {
  const segs = path.replace(/\[\]/g, '').split('.');
  const raw = segs[segs.length - 1] === 'p50' && segs.length > 1 ? segs[segs.length - 2]! : segs[segs.length - 1]!;
  return (
    /(Ms|_ms)(_?(p\d+|P\d+|median|Median|mean|Mean|samples|Samples))?$/.test(raw) ||
    ['ttft', 'e2e', 'itl', 'tpot', 'latency'].includes(metricBase(raw))
  );
}

function classify(direction: Direction, ratio: number): MetricChange['kind'] {
  if (direction === 'unknown') return 'changed';
  const up = ratio > 1;
  return (direction === 'higher-better') === up ? 'improvement' : 'regression';
}

function metricChanges(o: CheckResult, n: CheckResult, options: CompareOptions = {}): MetricChange[] {
  const opt = { ...DEFAULTS, ...options };
  const fo = figuresOf(o);
  const fn = figuresOf(n);
  const out: MetricChange[] = [];
  const covered = new Set<string>();
  // 1. Raw samples on both sides: bootstrap CI of the ratio of medians.
  for (const [base, so] of fo.samples) {
    const sn = fn.samples.get(base);
    if (!sn || so.values.length < opt.minSamples || sn.values.length < opt.minSamples) continue;
    covered.add(base);
    const ci = bootstrapRatioCI(sn.values, so.values, { iterations: opt.iterations, alpha: opt.alpha, seed: opt.seed });
    if (ci.estimate === undefined || ci.low === undefined || ci.high === undefined) continue;
    const beyond = (ci.low > 1 || ci.high < 1) && Math.abs(ci.estimate - 1) >= opt.minEffect;
    if (!beyond) continue;
    if (isMs(sn.path) && Math.abs(median(sn.values)! - median(so.values)!) < opt.minDeltaMs) continue;
    const direction = directionOf(sn.path);
    out.push({
      id: n.id,
      metric: sn.path,
      old: median(so.values),
      new: median(sn.values),
      ratio: ci.estimate,
      ci: { low: ci.low, high: ci.high },
      method: 'bootstrap',
      nOld: so.values.length,
      nNew: sn.values.length,
      direction,
      kind: classify(direction, ci.estimate),
    });
  }
  // 2. Figures that carry their own interval (e.g. speedup { estimate, low, high }): moved when the intervals do not overlap.
  for (const [path, io] of fo.intervals) {
    const iN = fn.intervals.get(path);
    if (!iN) continue;
    covered.add(metricBase(path));
    const apart = iN.low > io.high || iN.high < io.low;
    const ratio = io.estimate !== 0 ? iN.estimate / io.estimate : undefined;
    if (!apart || (ratio !== undefined && Math.abs(ratio - 1) < opt.minEffect)) continue;
    const direction = directionOf(path);
    out.push({
      id: n.id,
      metric: path,
      old: io.estimate,
      new: iN.estimate,
      ratio,
      ci: { low: iN.low, high: iN.high },
      method: 'interval',
      direction,
      kind: ratio !== undefined && ratio > 0 ? classify(direction, ratio) : 'changed',
    });
  }
  // 3. Single figures without samples: relative tolerance.
  for (const [path, { value: ov, base }] of fo.scalars) {
    const nv = fn.scalars.get(path)?.value;
    if (nv === undefined || nv === ov) continue;
    if (covered.has(base)) continue; // judged above, on its samples or interval
    const direction = directionOf(path);
    const ratio = ov !== 0 ? nv / ov : undefined;
    if (ratio !== undefined && Math.abs(nv - ov) / Math.abs(ov) <= opt.tolerance) continue;
    if (isMs(path) && Math.abs(nv - ov) < opt.minDeltaMs) continue;
    // Across zero or from zero a ratio means nothing: the sign of the difference decides.
    const kind =
      direction === 'unknown'
        ? 'changed'
        : ratio !== undefined && ratio > 0
          ? classify(direction, ratio)
          : classify(direction, nv > ov ? 2 : 0.5);
    out.push({
      id: n.id,
      metric: path,
      old: ov,
      new: nv,
      ...(ratio !== undefined && ratio > 0 ? { ratio } : {}),
      method: 'tolerance',
      direction,
      kind,
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------

function label(f: ResultsFile): RunLabel {
  return {
    project: f.header.project,
    machine: f.header.machine.label,
    date: f.header.date,
    suiteVersion: f.header.suite.version,
    tier: f.header.tier,
  };
}

export function compareResults(
  oldInput: ResultsFile | unknown,
  newInput: ResultsFile | unknown,
  options: CompareOptions = {},
): Comparison {
  const opt = { ...DEFAULTS, ...options };
  const o = normaliseResults(oldInput);
  const n = normaliseResults(newInput);
  const oldById = new Map(o.checks.map((c) => [c.id, c]));
  const newById = new Map(n.checks.map((c) => [c.id, c]));
  const ids = [...new Set([...oldById.keys(), ...newById.keys()])].sort();
  const outcomeChanges: OutcomeChange[] = [];
  const metricChangesAll: MetricChange[] = [];
  for (const id of ids) {
    const a = oldById.get(id);
    const b = newById.get(id);
    const oc = outcomeChange(a, b);
    if (oc) outcomeChanges.push(oc);
    // Figures of a check are compared only when it ran both times (a skipped check measured nothing).
    if (a && b && a.outcome !== 'skip' && b.outcome !== 'skip') metricChangesAll.push(...metricChanges(a, b, opt));
  }
  const notes: string[] = [];
  const lo = label(o);
  const ln = label(n);
  if (lo.project !== ln.project)
    notes.push(`different projects ("${lo.project}" vs "${ln.project}"): outcomes compare, figures may not`);
  if (lo.machine !== ln.machine)
    notes.push(`different machines ("${lo.machine}" vs "${ln.machine}"): figures are not comparable across hardware`);
  if (lo.suiteVersion !== ln.suiteVersion)
    notes.push(`different suite versions (${lo.suiteVersion} vs ${ln.suiteVersion})`);
  if (lo.tier !== ln.tier) notes.push(`different tiers (${lo.tier} vs ${ln.tier})`);
  if (!o.finished) notes.push('the old run was interrupted (partial results)');
  if (!n.finished) notes.push('the new run was interrupted (partial results)');
  if (!o.checks.length) notes.push('the old file has no checks');
  if (!n.checks.length) notes.push('the new file has no checks');
  notes.push(
    `method: with raw samples (≥ ${opt.minSamples} each side), a figure moved when the ${Math.round((1 - opt.alpha) * 100)}% percentile-bootstrap CI ` +
      `(${opt.iterations} resamples, seed ${opt.seed}) of median(new)/median(old) excludes 1 and the change is ≥ ${Math.round(opt.minEffect * 100)}%; ` +
      `a figure with its own interval ({ estimate, low, high }) moved when the two intervals do not overlap; ` +
      `without either, when it changed by more than ±${Math.round(opt.tolerance * 100)}%; a duration must also move by ≥ ${opt.minDeltaMs} ms. Curves are not compared point by point; figures about our own client (loop delay) and configuration are not compared; ` +
      `extremes and derived figures (min, max, p99, slopes, shares, limits) are listed as changed but never gate. ` +
      `Regressions: an outcome that got worse (pass → warn/fail/error, warn → fail; inconclusive is neither), or a figure that moved the bad way (tok/s down, ms up).`,
  );
  for (const m of metricChangesAll) if (!gated(m.metric) && m.kind !== 'changed') m.kind = 'changed';
  const order = { regression: 0, improvement: 1, changed: 2 } as const;
  metricChangesAll.sort((a, b) => order[a.kind] - order[b.kind] || a.id.localeCompare(b.id));
  const regressions =
    outcomeChanges.filter((c) => c.kind === 'regression').length +
    metricChangesAll.filter((c) => c.kind === 'regression').length;
  return { old: lo, new: ln, outcomeChanges, metricChanges: metricChangesAll, regressions, notes, options: opt };
}

// ---------------------------------------------------------------------------------------------------------

function runText(r: RunLabel): string {
  return `${r.project} @ ${r.machine}, ${r.date || 'date n/a'}, suite ${r.suiteVersion}, ${r.tier}`;
}

/** A ratio new/old as a signed relative change (1.12 → "+12%", 0.9 → "-10%"). */
function relativeChange(r: number | undefined): string {
  if (r === undefined || !Number.isFinite(r)) return 'n/a';
  const p = (r - 1) * 100;
  return `${p >= 0 ? '+' : ''}${p.toFixed(Math.abs(p) < 10 ? 1 : 0)}%`;
}

/** Plain text for a terminal or a CI log. Figures of unknown direction are capped unless `all` is set. */
export function formatComparison(c: Comparison, names: { old?: string; new?: string; all?: boolean } = {}): string {
  const lines: string[] = [];
  lines.push(`old: ${names.old ? `${names.old} — ` : ''}${runText(c.old)}`);
  lines.push(`new: ${names.new ? `${names.new} — ` : ''}${runText(c.new)}`);
  for (const note of c.notes.slice(0, -1)) lines.push(`note: ${note}`);
  lines.push('');
  const tag = (k: string) => (k === 'regression' ? 'REGRESSION ' : k.padEnd(11));
  lines.push(`Checks that changed outcome (${c.outcomeChanges.length}):`);
  if (!c.outcomeChanges.length) lines.push('  none');
  for (const ch of c.outcomeChanges) {
    lines.push(
      `  ${tag(ch.kind)} ${ch.id}${ch.level ? ` [${ch.level}]` : ''}: ${ch.from} → ${ch.to}${ch.message ? ` — ${ch.message}` : ''}`,
    );
  }
  lines.push('');
  lines.push(`Figures that moved beyond noise (${c.metricChanges.length}):`);
  if (!c.metricChanges.length) lines.push('  none');
  const cap = names.all ? Infinity : 15;
  let unknownShown = 0;
  for (const m of c.metricChanges) {
    if (m.direction === 'unknown' && unknownShown++ >= cap) continue;
    const change =
      m.ratio !== undefined
        ? relativeChange(m.ratio)
        : `Δ ${m.new !== undefined && m.old !== undefined ? fmtNum(m.new - m.old) : 'n/a'}`;
    const how =
      m.method === 'bootstrap'
        ? `median ${fmtNum(m.old)} → ${fmtNum(m.new)} (${change}; ${Math.round((1 - c.options.alpha) * 100)}% CI ${relativeChange(m.ci?.low)} … ${relativeChange(m.ci?.high)}; n ${m.nOld}/${m.nNew})`
        : m.method === 'interval'
          ? `${fmtNum(m.old)} → ${fmtNum(m.new)} (${change}; the runs' own confidence intervals do not overlap; new ${fmtNum(m.ci?.low)} … ${fmtNum(m.ci?.high)})`
          : `${fmtNum(m.old)} → ${fmtNum(m.new)} (${change}; beyond ±${Math.round(c.options.tolerance * 100)}%, no raw samples)`;
    const why =
      m.direction === 'unknown'
        ? ' [direction unknown]'
        : !gated(m.metric)
          ? ' [not gated: extreme or derived figure]'
          : '';
    lines.push(`  ${tag(m.kind)} ${m.id} ${m.metric}: ${how}${why}`);
  }
  if (unknownShown > cap)
    lines.push(`  … and ${unknownShown - cap} more figures of unknown direction (--all lists them)`);
  lines.push('');
  lines.push(c.notes[c.notes.length - 1]!);
  lines.push(c.regressions ? `${c.regressions} regression${c.regressions === 1 ? '' : 's'}.` : 'No regressions.');
  return lines.join('\n');
}
