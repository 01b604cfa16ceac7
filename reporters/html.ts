// The HTML report: results files in, one self-contained HTML string out (reports/index.html).
// It opens offline: inline CSS, plots drawn here as inline SVG, no external resource, and a Content-Security-
// Policy that forbids fetching any (so a slip shows up as a console error in the browser test). Everything works
// without JavaScript (matrix cells open with <details>); a tiny inline script only adds "open all / only problems".
// Pure: the same files and options give the same bytes. Odd input (missing metrics, empty or partial files)
// renders as "n/a", never an exception.
import { createHash } from 'node:crypto';
import { isJsonObject } from '../lib/json.ts';
import { describePreflight } from '../lib/measure/fidelity.ts';
import { describeSetupFailure, SETUP_HEADLINE, setupFailureOf } from '../lib/server/setup-failure.ts';
import { clientMatrixHtml } from './clients-matrix.ts';
import { declaredSources, providerOf } from './figures.ts';
import { capacitySection } from './html-capacity.ts';
import { esc, fmtNum } from './html-escape.ts';
import {
  type Column,
  CURVE_SOURCES,
  checkRows,
  columnPhantom,
  columnsOf,
  curvePoints,
  FIGURES,
  type FigureName,
  hardwareOf,
  headlineFigure,
  normaliseResults,
  OUTCOMES,
  outcomeCounts,
  type Phantom,
  type Workload,
  workloadsOf,
} from './report-data.ts';
import type { CheckResult, ResultsFile } from './results-types.ts';
import { matrixHtml, matrixRows } from './seed-matrix.ts';
import { type PlotSeries, plotSvg } from './svg-plot.ts';

interface HtmlOptions {
  title?: string;
  /** Shown in the header; pass it in (the function reads no clock). */
  generatedAt?: string;
  /** Names of the results files the report was built from. */
  sources?: string[];
  /** Extra lines for the header (e.g. files that could not be read). */
  notes?: string[];
  /** Heading of the headline-figures table (scripts/matrix.ts: the seed study's comparison). */
  matrixHeading?: string;
}

/** Caps: the report stays readable and small; the results file keeps everything. */
const CAP = { message: 6000, wire: 2000, evidence: 6, metricKeys: 24 };

const SCRIPT = `(function(){var t=document.getElementById('tools');if(!t)return;t.hidden=false;
t.addEventListener('click',function(e){var a=e.target&&e.target.getAttribute('data-act');if(!a)return;
document.querySelectorAll('#matrix td[data-o] details').forEach(function(d){var o=d.parentNode.getAttribute('data-o');d.open=a==='open'&&!/^(pass|skip|known-passing)$/.test(o);});});
var cb=document.getElementById('only-problems'),sel=document.getElementById('outcome-filter');
function apply(){var o=sel.value;document.querySelectorAll('#matrix tr[data-check]').forEach(function(r){r.hidden=(cb.checked&&r.hasAttribute('data-all-pass'))||(o!==''&&!r.querySelector('td[data-o="'+o+'"]'));});}
cb.addEventListener('change',apply);sel.addEventListener('change',apply);})();`;

const CSS = `
:root{--pass:#1a7f37;--fail:#cf222e;--warn:#9a6700;--inconclusive:#0969da;--skip:#6e7781;--known:#8250df;--error:#bc4c00;--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;padding:16px 24px 48px;max-width:1600px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.muted{color:var(--muted)}.small{font-size:12px}
table{border-collapse:collapse;margin:6px 0 12px}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
thead th{background:#f6f8fa;position:sticky;top:0;z-index:1}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.scroll{overflow-x:auto}
.badge{display:inline-block;padding:0 6px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;white-space:nowrap}
.b-pass{background:var(--pass)}.b-fail{background:var(--fail)}.b-warn{background:var(--warn)}.b-inconclusive{background:var(--inconclusive)}.b-skip{background:var(--skip)}
.b-known{background:var(--known)}.b-known-passing{background:var(--known);outline:2px solid var(--pass)}.b-error{background:var(--error)}.b-na{background:#afb8c1}
.phantom{display:inline-block;margin-left:4px;padding:0 5px;border-radius:3px;background:var(--fail);color:#fff;font-size:11px;font-weight:700;letter-spacing:.03em}
.lvl{font-size:11px;color:var(--muted);white-space:nowrap}
#matrix td.id,td.wl{min-width:250px}td.wl code{white-space:nowrap}#matrix td.id code{font-weight:600}
#matrix tr.fam th{background:#eef1f4;text-align:left;font-size:13px}
#matrix td.o{min-width:90px}
details>summary{cursor:pointer;list-style:revert}
.cell-body{max-width:70ch;min-width:36ch;margin-top:6px}
pre{white-space:pre-wrap;word-break:break-word;overflow-wrap:anywhere;background:#f6f8fa;border:1px solid var(--line);border-radius:4px;padding:6px;margin:4px 0;font:12px/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;max-height:28em;overflow:auto}
dl.metrics{display:grid;grid-template-columns:max-content 1fr;gap:0 10px;margin:4px 0;font-size:12px}
dl.metrics dt{color:var(--muted)}dl.metrics dd{margin:0;overflow-wrap:anywhere}
.ev{margin:6px 0 0;font-size:12px}
.plots{display:flex;flex-wrap:wrap;gap:16px}
.plots figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:6px;background:#fff}
.plots figcaption{font-size:12px;color:var(--muted);max-width:640px}
svg.plot{max-width:100%;height:auto}
#tools{margin:6px 0}#tools button{margin-right:6px}#tools label{margin-right:12px}
#legend{display:flex;flex-wrap:wrap;gap:4px 14px;margin:6px 0;font-size:12px;padding:0;list-style:none}#legend li{max-width:46ch}
.interrupted{color:var(--error);font-weight:600}
ul.flags{margin:0;padding-left:16px;font-size:12px;max-width:60ch}details.capacity-levels{margin:8px 0}
`;

// ---------------------------------------------------------------------------------------------------------

export function renderHtml(files: readonly (ResultsFile | unknown)[], opts: HtmlOptions = {}): string {
  const list = Array.isArray(files) ? files : [];
  const columns = columnsOf(list.map(normaliseResults));
  const rows = checkRows(columns);
  // A report of one run is about that server; the generic title only for several.
  const title =
    opts.title ??
    (columns.length === 1 ? `LLM server conformance: ${columns[0]!.label}` : 'LLM server conformance report');
  const scriptHash = createHash('sha256').update(SCRIPT, 'utf8').digest('base64');
  const csp = `default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${scriptHash}'; base-uri 'none'; form-action 'none'`;

  // A run whose figures are all capacity figures (--only capacity) opens on the capacity plots, not on empty ones.
  const plots = plotsSection(columns);
  const capacity = capacitySection(columns);
  const capacityFirst = capacity !== '' && plots === '';
  const body = [
    headerSection(title, columns, opts),
    ...(capacityFirst ? [capacity] : []),
    runsSection(columns),
    matrixHtml(matrixRows(list), opts.matrixHeading),
    sideBySideSection(columns),
    workloadSection(columns, rows),
    plots,
    ...(capacityFirst ? [] : [capacity]),
    clientMatrixHtml(
      columns.map((c) => ({ label: c.label, checks: c.checks.values() })),
      outcomeBadge,
    ),
    matrixSection(columns, rows),
    `<footer class="muted small"><p>Every figure here is read from the results files named above and can be recomputed from them. ` +
      `Outcomes: pass, fail, warn (a SHOULD not met, or borderline evidence), inconclusive (the evidence could not decide: too short, our client starved, our budget ran out while the server was still working), skip (capability not declared), known (expected failure listed in the profile), known-passing (a known issue that now passes: update the profile), error (the suite's own problem, never the server's). n/a: not measured or not in that run.</p></footer>`,
  ].join('\n');

  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${esc(csp)}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${esc(title)}</title>`,
    `<style>${CSS}</style>`,
    '</head><body>',
    body,
    `<script>${SCRIPT}</script>`,
    '</body></html>',
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------------------

function headerSection(title: string, columns: Column[], opts: HtmlOptions): string {
  const parts = [`<header><h1>${esc(title)}</h1>`];
  const meta: string[] = [];
  if (opts.generatedAt) meta.push(`generated ${esc(opts.generatedAt)}`);
  meta.push(`${columns.length} run${columns.length === 1 ? '' : 's'}`);
  const machines = new Set(columns.map((c) => c.machine));
  meta.push(`${machines.size} machine${machines.size === 1 ? '' : 's'}`);
  parts.push(`<p class="muted">${meta.join(' · ')}</p>`);
  if (opts.sources?.length)
    parts.push(
      `<p class="muted small">Results files: ${opts.sources.map((s) => `<code>${esc(s)}</code>`).join(', ')}</p>`,
    );
  for (const n of opts.notes ?? []) parts.push(`<p class="interrupted small">${esc(n)}</p>`);
  if (columns.length === 0)
    parts.push(`<p><strong>No results to show</strong> (n/a): no results file had a readable run.</p>`);
  parts.push('</header>');
  return parts.join('\n');
}

function rec(v: unknown): Record<string, unknown> {
  return isJsonObject(v) ? v : {};
}
function text(v: unknown): string | undefined {
  return typeof v === 'string' && v ? v : typeof v === 'number' && Number.isFinite(v) ? String(v) : undefined;
}

function serverName(col: Column): string {
  const s = rec(col.header.server);
  const id = rec(s.identity);
  const name = text(id.name);
  const version = text(id.version);
  return name ? `${name}${version ? ` ${version}` : ''}` : version ? `version ${version}` : 'n/a';
}

function windowOf(col: Column): string {
  const w = rec(rec(col.header.server).contextWindow);
  const v = typeof w.value === 'number' ? w.value : undefined;
  return v === undefined ? 'n/a' : `${fmtNum(v)} tokens${text(w.source) ? ` (${text(w.source)})` : ''}`;
}

function machineText(col: Column): string {
  const m = col.header.machine;
  const bits = [
    m.chip ?? '',
    m.platform !== '?' ? `${m.platform}/${m.arch}` : '',
    m.cpus ? `${m.cpus} CPUs` : '',
    m.memGiB ? `${fmtNum(m.memGiB)} GiB` : '',
    m.node !== '?' ? `node ${m.node}` : '',
  ].filter(Boolean);
  if (col.header.fidelity) bits.push(describePreflight(col.header.fidelity));
  return bits.join(', ');
}

function outcomeBadge(o: string, label?: string): string {
  return `<span class="badge b-${esc(o)}">${esc(label ?? o)}</span>`;
}

function runsSection(columns: Column[]): string {
  if (!columns.length) return '';
  const rows = columns.map((c) => {
    const counts = outcomeCounts(c);
    const total = c.checks.size;
    const tally = OUTCOMES.filter((o) => counts[o] > 0)
      .map((o) => `${outcomeBadge(o, `${counts[o]} ${o}`)}`)
      .join(' ');
    const stopped = setupFailureOf(c.header.server);
    const status = stopped
      ? `<span class="interrupted">${esc(SETUP_HEADLINE[stopped.kind])}: no check was run</span><div class="small">${esc(stopped.summary)}</div><details class="small"><summary>requirement, expected, actual</summary><pre>${esc(capped(describeSetupFailure(stopped), CAP.message))}</pre></details>`
      : c.finished
        ? 'finished'
        : '<span class="interrupted">interrupted (partial results)</span>';
    return (
      `<tr data-column="${esc(c.label)}"><th>${esc(c.project)}</th><td>${esc(c.machine)}<div class="muted small">${esc(machineText(c))}</div></td>` +
      `<td>${esc(serverName(c))}</td><td>${esc(windowOf(c))}</td>` +
      `<td>${esc(c.header.suite.version)}</td><td>${esc(c.header.date || 'n/a')}</td><td>${esc(c.header.tier)}${c.header.strict ? ', strict' : ''}${c.shards.length ? `, shards ${esc(c.shards.join(' '))}` : ''}</td>` +
      `<td>${status}</td><td>${total ? tally : 'n/a'}</td></tr>` +
      (c.errors.length
        ? `<tr class="run-errors"><td></td><td colspan="8"><details><summary class="interrupted">${c.errors.length} run error${c.errors.length === 1 ? '' : 's'} outside the checks</summary>` +
          c.errors
            .slice(0, 20)
            .map((e) => `<pre>${esc(e.where)}: ${esc(capped(e.message, CAP.message))}</pre>`)
            .join('') +
          `</details></td></tr>`
        : '')
    );
  });
  return (
    `<section id="runs"><h2>Runs</h2><div class="scroll"><table><thead><tr><th>project</th><th>machine</th><th>server (as discovered)</th><th>context window</th>` +
    `<th>suite</th><th>date</th><th>tier</th><th>status</th><th>outcomes</th></tr></thead><tbody>${rows.join('')}</tbody></table></div></section>`
  );
}

/** Top of the aggregate-throughput curve: the best aggregate rate and the concurrency where it was reached. */
function peakAggregate(col: Column): { y: number; x: number } | undefined {
  const pts = curvePoints(
    providerOf(col.checks.values(), CURVE_SOURCES.scaling.figure)?.metrics,
    CURVE_SOURCES.scaling.spec,
  );
  let best: { x: number; y: number } | undefined;
  for (const p of pts) if (!best || p.y > best.y) best = p;
  return best;
}

function figureCell(col: Column, name: FigureName): string {
  const f = headlineFigure(col, name);
  const spec = FIGURES[name];
  const tip = f.from ? ` title="${esc(`from ${f.from}${f.workload ? ` (${f.workload})` : ''}`)}"` : '';
  let html = `${esc(fmtNum(f.value))}${f.value !== undefined && name === 'speedup' ? '×' : ''}`;
  const phantom = name === 'genTps' && f.value !== undefined ? columnPhantom(col, f) : undefined;
  if (phantom) html += ` ${phantomTag(phantom)}<div class="small muted">${esc(phantom.cause)}</div>`;
  return `<td class="num" data-figure="${esc(spec.label)}" data-value="${f.value ?? ''}"${phantom ? ' data-phantom="true"' : ''}${tip}>${html}</td>`;
}

function phantomTag(p: Phantom): string {
  return `<span class="phantom" title="${esc(`${p.detail} (${p.from})`)}">PHANTOM</span>`;
}

function sideBySideSection(columns: Column[]): string {
  if (!columns.length) return '';
  const rows = columns.map((c) => {
    const peak = peakAggregate(c);
    const counts = outcomeCounts(c);
    // Skipped and inconclusive checks reached no verdict: they count in neither number.
    const graded = c.checks.size - counts.skip - counts.inconclusive;
    const ok = counts.pass + counts['known-passing'];
    return (
      `<tr data-column="${esc(c.label)}"><th>${esc(c.label)}<div class="muted small">${esc(serverName(c))}</div></th>` +
      figureCell(c, 'wallTps') +
      figureCell(c, 'ttft') +
      figureCell(c, 'genTps') +
      figureCell(c, 'speedup') +
      `<td class="num" data-figure="aggregate_tps_peak" data-value="${peak?.y ?? ''}">${peak ? `${esc(fmtNum(peak.y))} <span class="muted small">@ ${esc(fmtNum(peak.x))}</span>` : 'n/a'}</td>` +
      `<td class="num">${graded > 0 ? `${ok}/${graded}` : 'n/a'}</td></tr>`
    );
  });
  return (
    `<section id="side-by-side"><h2>Side by side</h2>` +
    `<p class="muted small">Single-stream medians over repetitions. wall_tps = completion tokens / end-to-end time (the trustworthy figure); gen_tps = (tokens − 1) / (last − first token time), ` +
    `marked PHANTOM where a check found the stream could not have been generated that fast; speedup = aggregate wall_tps of 2 barrier-released requests / wall_tps of 1. Hover a figure for the check it comes from.</p>` +
    `<div class="scroll"><table id="headline"><thead><tr><th>run</th><th>wall_tps_p50 (tok/s)</th><th>ttft_p50 (ms)</th><th>gen_tps_p50 (tok/s)</th><th>speedup (2 requests)</th>` +
    `<th>peak aggregate tok/s @ concurrency</th><th>conformance (pass / graded)</th></tr></thead><tbody>${rows.join('')}</tbody></table></div></section>`
  );
}

function workloadCell(w: Workload | undefined): string {
  if (!w) return '<td class="muted">n/a</td>';
  const names: FigureName[] = ['wallTps', 'ttft', 'genTps', 'speedup'];
  const parts = w.name ? [`<div class="small muted wl-name">${esc(w.name)}</div>`] : [];
  for (const n of names) {
    const v = w.figures[n];
    const tag = n === 'genTps' && w.phantom ? ` ${phantomTag(w.phantom)}` : '';
    if (v === undefined) {
      // A phantom stream whose gen_tps is undefined (zero-length window) still gets its mark.
      if (tag)
        parts.push(
          `<div data-figure="gen_tps_p50" data-value="" data-phantom="true"><span class="muted small">gen_tps_p50</span> n/a${tag}</div>`,
        );
      continue;
    }
    const unit = n === 'speedup' ? '×' : ` ${FIGURES[n].unit}`;
    parts.push(
      `<div data-figure="${esc(FIGURES[n].label)}" data-value="${v}"${tag ? ' data-phantom="true"' : ''}><span class="muted small">${esc(FIGURES[n].label)}</span> ${esc(fmtNum(v))}${esc(unit)}${tag}</div>`,
    );
  }
  if (w.tokensUsage !== undefined || w.tokensCounted !== undefined) {
    parts.push(
      `<div class="small"><span class="muted">tokens usage / counted</span> ${esc(fmtNum(w.tokensUsage))} / ${esc(fmtNum(w.tokensCounted))}</div>`,
    );
  }
  if (w.phantom) parts.push(`<div class="small muted">${esc(w.phantom.cause)}</div>`);
  return `<td class="num">${parts.join('')}</td>`;
}

function workloadSection(columns: Column[], rows: CheckResult[]): string {
  // One row per check and position of the workload within it, so runs with different workload sizes (tiers,
  // profiles) still line up; each cell names its own workload.
  const perColumn = columns.map((c) => {
    const hw = hardwareOf(c);
    return new Map(rows.map((r) => [r.id, workloadsOf(c.checks.get(r.id), hw)]));
  });
  const body: string[] = [];
  for (const r of rows) {
    const n = Math.max(0, ...perColumn.map((m) => m.get(r.id)!.length));
    for (let i = 0; i < n; i++) {
      const cells = perColumn.map((m) => workloadCell(m.get(r.id)![i])).join('');
      body.push(
        `<tr data-check="${esc(r.id)}" data-index="${i}"><td class="wl"><code>${esc(r.id)}</code><div class="muted small">${esc(r.title)}</div></td>${cells}</tr>`,
      );
    }
  }
  if (!body.length || !columns.length)
    return `<section id="workloads"><h2>Per workload</h2><p class="muted">n/a: no check reported wall_tps, ttft, gen_tps or speedup.</p></section>`;
  const head = columns.map((c) => `<th>${esc(c.label)}</th>`).join('');
  return `<section id="workloads"><h2>Per workload</h2><div class="scroll"><table><thead><tr><th>workload (check)</th>${head}</tr></thead><tbody>${body.join('')}</tbody></table></div></section>`;
}

// ---------------------------------------------------------------------------------------------------------

type Curve = (typeof CURVE_SOURCES)[keyof typeof CURVE_SOURCES];

function seriesFor(columns: Column[], curve: Curve): PlotSeries[] {
  return columns.map((c) => ({
    name: c.label,
    points: curvePoints(providerOf(c.checks.values(), curve.figure)?.metrics, curve.spec),
  }));
}

/** The checks a curve was read from (those the catalogue declares when no column has one): the plot's caption names them. */
function sourcesOf(columns: Column[], curve: Curve): string {
  const ids = new Set(
    columns.map((c) => providerOf(c.checks.values(), curve.figure)?.id).filter((id) => id !== undefined),
  );
  return (ids.size ? [...ids] : declaredSources(curve.figure)).map((id) => `<code>${esc(id)}</code>`).join(', ');
}

/** The three plots of the conformance checks; none when no run measured any of them (e.g. a capacity-only run). */
function plotsSection(columns: Column[]): string {
  const sources = [CURVE_SOURCES.scaling, CURVE_SOURCES.prefill, CURVE_SOURCES.cycles];
  if (!sources.some((src) => seriesFor(columns, src).some((x) => x.points.length > 0))) return '';
  const figures: string[] = [];
  const add = (svg: string, caption: string) =>
    figures.push(`<figure>${svg}<figcaption>${caption}</figcaption></figure>`);
  add(
    plotSvg({
      id: 'throughput-vs-concurrency',
      title: 'Aggregate throughput vs concurrency',
      xLabel: 'concurrent requests',
      yLabel: 'aggregate tok/s',
      xScale: 'log2',
      series: seriesFor(columns, CURVE_SOURCES.scaling),
    }),
    `From ${sourcesOf(columns, CURVE_SOURCES.scaling)} (metrics.curve): total completion tokens of N barrier-released requests / (last end − first start). A server that batches rises; one that serialises stays flat.`,
  );
  add(
    plotSvg({
      id: 'ttft-vs-prompt-length',
      title: 'TTFT vs prompt length',
      xLabel: 'prompt tokens',
      yLabel: 'TTFT (ms)',
      xScale: 'log2',
      yScale: 'log10',
      series: seriesFor(columns, CURVE_SOURCES.prefill),
    }),
    `From ${sourcesOf(columns, CURVE_SOURCES.prefill)} (metrics.curve): median time to first token at each prompt length, on log–log axes: a linear prefill rises one decade per decade of prompt (slope 1), a quadratic one twice as steeply (slope 2).`,
  );
  add(
    plotSvg({
      id: 'throughput-per-cycle',
      title: 'Throughput per cycle',
      xLabel: 'cycle',
      yLabel: 'wall tok/s',
      series: seriesFor(columns, CURVE_SOURCES.cycles),
    }),
    `From ${sourcesOf(columns, CURVE_SOURCES.cycles)} (metrics.cycles): wall_tps of each cycle of the same workload after a dropped warm-up. It should stay level.`,
  );
  return `<section id="plots"><h2>Plots</h2><div class="plots">${figures.join('')}</div></section>`;
}

// ---------------------------------------------------------------------------------------------------------

function metricsList(metrics: Record<string, unknown> | undefined): string {
  if (!metrics) return '';
  const entries = Object.entries(metrics);
  if (!entries.length) return '';
  const items = entries.slice(0, CAP.metricKeys).map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(metricText(v))}</dd>`);
  const more =
    entries.length > CAP.metricKeys ? `<dt>…</dt><dd>${entries.length - CAP.metricKeys} more in results.json</dd>` : '';
  return `<dl class="metrics">${items.join('')}${more}</dl>`;
}

function metricText(v: unknown): string {
  if (typeof v === 'number') return fmtNum(v);
  if (typeof v === 'string') return v.length > 300 ? `${v.slice(0, 299)}…` : v;
  if (typeof v === 'boolean' || v === null) return String(v);
  if (Array.isArray(v)) {
    if (v.every((x) => typeof x === 'number')) {
      const shown = v
        .slice(0, 12)
        .map((x) => fmtNum(x as number))
        .join(', ');
      return `[${shown}${v.length > 12 ? `, … (${v.length} values)` : ''}]`;
    }
    return `${v.length} item${v.length === 1 ? '' : 's'}`;
  }
  try {
    const s = JSON.stringify(v);
    return s === undefined ? 'n/a' : s.length > 300 ? `${s.slice(0, 299)}…` : s;
  } catch {
    return 'n/a';
  }
}

function capped(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}\n… (${s.length - n} more characters in results.json)` : s;
}

function evidenceHtml(evidence: unknown[] | undefined): string {
  if (!evidence?.length) return '';
  const items = evidence.slice(0, CAP.evidence).map((e, i) => {
    const r = rec(e);
    const label = text(r.label) ?? `evidence ${i + 1}`;
    const facts: string[] = [];
    if (typeof r.status === 'number') facts.push(`status ${r.status}`);
    if (typeof r.ttftMs === 'number') facts.push(`ttft ${fmtNum(r.ttftMs)} ms`);
    if (typeof r.e2eMs === 'number') facts.push(`e2e ${fmtNum(r.e2eMs)} ms`);
    if (Array.isArray(r.tokenTimes)) facts.push(`${r.tokenTimes.length} token events`);
    if (Array.isArray(r.readTimes)) facts.push(`${r.readTimes.length} reads`);
    const wire =
      typeof r.wire === 'string'
        ? `<pre class="wire">${esc(capped(r.wire, CAP.wire))}</pre>`
        : typeof e === 'string'
          ? `<pre class="wire">${esc(capped(e, CAP.wire))}</pre>`
          : '';
    return `<div class="ev"><strong>${esc(label)}</strong>${facts.length ? ` <span class="muted">${esc(facts.join(' · '))}</span>` : ''}${wire}</div>`;
  });
  const more =
    evidence.length > CAP.evidence
      ? `<div class="muted small">… ${evidence.length - CAP.evidence} more in results.json</div>`
      : '';
  return `<div class="evidence">${items.join('')}${more}</div>`;
}

function matrixCell(col: Column, row: CheckResult): string {
  const c = col.checks.get(row.id);
  if (!c) return `<td class="o" data-o="n/a" data-column="${esc(col.label)}">${outcomeBadge('na', 'n/a')}</td>`;
  const facts = [
    `${c.level}`,
    c.durationMs !== undefined ? `${fmtNum(c.durationMs)} ms` : '',
    c.loopDelay && Number.isFinite(c.loopDelay.p99Ms) ? `client loop delay p99 ${fmtNum(c.loopDelay.p99Ms)} ms` : '',
  ]
    .filter(Boolean)
    .join(' · ');
  return (
    `<td class="o" data-o="${esc(c.outcome)}" data-column="${esc(col.label)}"><details><summary>${outcomeBadge(c.outcome)}</summary><div class="cell-body">` +
    `<div class="muted small">${esc(facts)}</div>` +
    `<pre class="msg">${esc(capped(c.message || '(no message)', CAP.message))}</pre>` +
    metricsList(c.metrics) +
    evidenceHtml(c.evidence) +
    `</div></details></td>`
  );
}

/** What each outcome means, with the badge the cells use (the footer says it in prose too). */
const OUTCOME_MEANING: Record<(typeof OUTCOMES)[number], string> = {
  pass: 'the requirement is met',
  fail: 'a MUST not met (or a SHOULD under strict mode), on clear evidence',
  warn: 'a SHOULD not met, or borderline evidence (strict mode fails only the clear ones)',
  inconclusive:
    'no verdict either way: too short, our client starved, or our budget ran out while the server still worked; never a failure',
  skip: 'the server lacks the capability (not declared or discovered)',
  known: 'an expected failure listed in the profile, with its reason',
  'known-passing': 'a known issue that now passes: update the profile',
  error: "our side went wrong (setup, harness), never the server's failure",
};

function legend(): string {
  return `<ul id="legend" class="muted">${OUTCOMES.map((o) => `<li data-legend="${esc(o)}">${outcomeBadge(o)} ${esc(OUTCOME_MEANING[o])}</li>`).join('')}</ul>`;
}

function matrixSection(columns: Column[], rows: CheckResult[]): string {
  if (!columns.length || !rows.length)
    return `<section id="conformance"><h2>Conformance matrix</h2><p class="muted">n/a: no checks in the results.</p></section>`;
  const head = columns
    .map(
      (c) =>
        `<th data-column="${esc(c.label)}">${esc(c.project)}<div class="muted small">${esc(c.machine)}${esc(c.label.slice(`${c.project} @ ${c.machine}`.length))}</div></th>`,
    )
    .join('');
  const out: string[] = [];
  let family = '';
  for (const r of rows) {
    if (r.family !== family) {
      family = r.family;
      out.push(`<tr class="fam"><th colspan="${columns.length + 1}">${esc(family)}</th></tr>`);
    }
    const allPass = columns.every((c) => {
      const o = c.checks.get(r.id)?.outcome;
      return o === undefined || o === 'pass' || o === 'skip';
    });
    const tip = [r.rationale, r.reference ? `Reference: ${r.reference}` : ''].filter(Boolean).join('\n');
    out.push(
      `<tr data-check="${esc(r.id)}"${allPass ? ' data-all-pass="true"' : ''}><td class="id" title="${esc(tip)}"><code>${esc(r.id)}</code> <span class="lvl">${esc(r.level)}</span>` +
        `<div class="muted small">${esc(r.title)}</div></td>${columns.map((c) => matrixCell(c, r)).join('')}</tr>`,
    );
  }
  return (
    `<section id="conformance"><h2>Conformance matrix</h2><p class="muted small">Checks × runs. Open a cell for the message (requirement, expected, actual), the figures and the wire excerpt. Hover a check id for its rationale and reference.</p>` +
    legend() +
    `<div id="tools" hidden><button type="button" data-act="open">open all problems</button><button type="button" data-act="close">close all</button>` +
    `<label><input type="checkbox" id="only-problems"> only rows with a problem</label>` +
    `<label>rows with outcome <select id="outcome-filter"><option value="">any</option>${OUTCOMES.map((o) => `<option value="${esc(o)}">${esc(o)}</option>`).join('')}</select></label></div>` +
    `<div class="scroll"><table id="matrix"><thead><tr><th>check</th>${head}</tr></thead><tbody>${out.join('')}</tbody></table></div></section>`
  );
}
