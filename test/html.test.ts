// The HTML report (reporters/html.ts) and its plots (reporters/svg-plot.ts), built from hand-made and from real
// results files: the plots carry the data (read back from data-* attributes), the matrix has every check × run,
// hostile strings stay text, nothing is fetched from outside. With Chromium (always when CONFORMANCE_REQUIRE_CHROMIUM=1, as in our CI) the page is
// opened headless: no console errors, no requests, JS-free cells, and a screenshot in reports/html-screenshot.png.

import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ROOT } from '../lib/config/profile.ts';
import { compileSchema, schemaErrors } from '../lib/config/schemas.ts';
import { renderHtml } from '../reporters/html.ts';
import { columnsOf, normaliseResults } from '../reporters/report-data.ts';
import { niceTicks, plotSvg } from '../reporters/svg-plot.ts';
import { capacityResults } from './support/capacity-samples.ts';
import { FIXTURE_DIR, realResultsFiles } from './support/real-results.ts';
import { HOSTILE, sampleResults } from './support/results-samples.ts';

// ---------------------------------------------------------------------------------------------------------
// A small reader for the markup we write (no DOM library: the structure is ours and regular).

function unescapeHtml(s: string): string {
  return s.replace(
    /&(lt|gt|quot|#39|amp);/g,
    (_, e: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[e]!,
  );
}

/** Attributes of one start tag, values unescaped. */
function attrs(tag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of tag.matchAll(/\s([a-zA-Z_:][-a-zA-Z0-9_:.]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g)) {
    out[m[1]!.toLowerCase()] = unescapeHtml(m[2] ?? m[3] ?? m[4] ?? '');
  }
  return out;
}

/** Every start tag in the document. */
function startTags(html: string): string[] {
  return [...html.matchAll(/<[a-zA-Z][^>]*>/g)].map((m) => m[0]);
}

interface PlotData {
  attrs: Record<string, string>;
  points: Array<{ series: string; x: number; y: number }>;
  legend: string[];
}

function plots(html: string): Map<string, PlotData> {
  const out = new Map<string, PlotData>();
  for (const m of html.matchAll(/<svg\b[^>]*>[\s\S]*?<\/svg>/g)) {
    const svg = m[0];
    const a = attrs(svg.slice(0, svg.indexOf('>') + 1));
    const points = [...svg.matchAll(/<circle class="pt"[^>]*>/g)].map((c) => {
      const p = attrs(c[0]);
      return { series: p['data-series']!, x: Number(p['data-x']), y: Number(p['data-y']) };
    });
    const legend = [...svg.matchAll(/<g class="legend"[^>]*>/g)].map((g) => attrs(g[0])['data-series']!);
    out.set(a['data-plot']!, { attrs: a, points, legend });
  }
  return out;
}

/** The conformance matrix: check id → column label → outcome. */
function matrix(html: string): Map<string, Map<string, string>> {
  const start = html.indexOf('<section id="conformance">');
  const section = html.slice(start, html.indexOf('</section>', start));
  const out = new Map<string, Map<string, string>>();
  for (const row of section.split('<tr data-check="').slice(1)) {
    const id = unescapeHtml(row.slice(0, row.indexOf('"')));
    const cells = new Map<string, string>();
    for (const c of row.matchAll(/<td class="o"[^>]*>/g)) {
      const a = attrs(c[0]);
      cells.set(a['data-column']!, a['data-o']!);
    }
    out.set(id, cells);
  }
  return out;
}

function headlineRow(html: string, column: string): Record<string, { value: string; phantom: boolean }> {
  const start = html.indexOf('<table id="headline">');
  const table = html.slice(start, html.indexOf('</table>', start));
  const row = table.split('<tr data-column="').find((r) => unescapeHtml(r.slice(0, r.indexOf('"'))) === column);
  expect(row, `headline row for ${column}`).toBeDefined();
  const out: Record<string, { value: string; phantom: boolean }> = {};
  for (const m of row!.matchAll(/<td class="num" data-figure[^>]*>/g)) {
    const a = attrs(m[0]);
    out[a['data-figure']!] = { value: a['data-value']!, phantom: a['data-phantom'] === 'true' };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Independent readings of the input (the shapes the checks write), to compare the plots against.

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});
const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const byX = (a: { x: number }, b: { x: number }) => a.x - b.x;

function expectedScaling(metrics: unknown): Array<{ x: number; y: number }> {
  const curve = asObj(metrics).curve;
  return (Array.isArray(curve) ? curve : [])
    .map(asObj)
    .filter((p) => finite(p.concurrency) && finite(p.aggregateTps) && p.concurrency > 0 && p.aggregateTps > 0)
    .map((p) => ({ x: p.concurrency as number, y: p.aggregateTps as number }))
    .sort(byX);
}
function expectedPrefill(metrics: unknown): Array<{ x: number; y: number }> {
  // The checks write { tokens, ttftMsP50 }; the hand-made runs also use { promptTokens, ttftMs }.
  const curve = asObj(metrics).curve;
  return (Array.isArray(curve) ? curve : [])
    .map(asObj)
    .map((p) => ({ x: p.tokens ?? p.promptTokens, y: p.ttftMsP50 ?? p.ttftMs }))
    .filter((p): p is { x: number; y: number } => finite(p.x) && finite(p.y) && p.x > 0 && p.y > 0)
    .sort(byX);
}
function expectedCycles(metrics: unknown): Array<{ x: number; y: number }> {
  const cycles = asObj(metrics).cycles;
  if (!Array.isArray(cycles)) return [];
  if (cycles.every((c) => typeof c === 'number')) return cycles.map((y, i) => ({ x: i + 1, y: y as number }));
  return cycles
    .map(asObj)
    .filter((c) => finite(c.cycle) && finite(c.wallTps))
    .map((c) => ({ x: c.cycle as number, y: c.wallTps as number }))
    .sort(byX);
}

function pointsOf(p: PlotData | undefined, series: string) {
  return (p?.points ?? [])
    .filter((q) => q.series === series)
    .map(({ x, y }) => ({ x, y }))
    .sort((a, b) => a.x - b.x);
}

/** The invariants every report must meet, whatever its input. */
function assertReport(html: string, files: unknown[]): void {
  const cols = columnsOf(files.map(normaliseResults));
  // Matrix: every check of every column, every column for every check (n/a where a run lacks it).
  const m = matrix(html);
  const allIds = new Set(cols.flatMap((c) => [...c.checks.keys()]));
  expect(new Set(m.keys())).toEqual(allIds);
  for (const id of allIds) {
    const row = m.get(id)!;
    expect(new Set(row.keys()), id).toEqual(new Set(cols.map((c) => c.label)));
    for (const c of cols) expect(row.get(c.label), `${id} × ${c.label}`).toBe(c.checks.get(id)?.outcome ?? 'n/a');
  }
  // Plots: present, one legend entry per column, and the points are the data (last file per column wins).
  const p = plots(html);
  expect([...p.keys()].sort()).toEqual(['throughput-per-cycle', 'throughput-vs-concurrency', 'ttft-vs-prompt-length']);
  for (const plot of p.values()) expect(plot.legend).toEqual(cols.map((c) => c.label));
  for (const c of cols) {
    const m = (id: string) => c.checks.get(id)?.metrics;
    expect(pointsOf(p.get('throughput-vs-concurrency'), c.label), `scaling ${c.label}`).toEqual(
      expectedScaling(m('parallel.scaling')),
    );
    expect(pointsOf(p.get('ttft-vs-prompt-length'), c.label), `prefill ${c.label}`).toEqual(
      expectedPrefill(m('context.prefill-scaling')),
    );
    expect(pointsOf(p.get('throughput-per-cycle'), c.label), `cycles ${c.label}`).toEqual(
      expectedCycles(m('cycles.no-slowdown')),
    );
  }
  assertOffline(html);
}

/** Nothing is loaded from anywhere: no src/href/url()/@import, no <link>/<iframe>/<object>, a CSP that forbids fetching. */
function assertOffline(html: string): void {
  for (const tag of startTags(html)) {
    const a = attrs(tag);
    for (const k of ['src', 'href', 'xlink:href', 'action', 'poster', 'srcset', 'formaction', 'background'])
      expect(a[k], `${k} in ${tag.slice(0, 80)}`).toBeUndefined();
    // No event-handler attribute anywhere (an escaping slip would show up here first).
    for (const k of Object.keys(a)) expect(k.startsWith('on'), `attribute ${k} in ${tag.slice(0, 120)}`).toBe(false);
  }
  expect(html).not.toMatch(/<(link|iframe|object|embed|img|base|meta\s+http-equiv="refresh")\b/i);
  expect(html).not.toMatch(/url\s*\(/i);
  expect(html).not.toMatch(/@import/i);
  const csp = startTags(html)
    .map(attrs)
    .find((a) => a['http-equiv'] === 'Content-Security-Policy');
  expect(csp?.content).toMatch(/default-src 'none'/);
  expect(csp?.content).not.toMatch(/script-src[^;]*'unsafe-inline'/);
  // The only absolute URLs are the SVG namespace and text (a check's reference), never an attribute value.
  for (const tag of startTags(html)) {
    for (const [k, v] of Object.entries(attrs(tag)))
      if (k !== 'xmlns' && k !== 'title')
        expect(v, `${k}=${v.slice(0, 60)}`).not.toMatch(/^\s*(https?:|\/\/|javascript:|data:)/i);
  }
}

// ---------------------------------------------------------------------------------------------------------

describe('svg plot', () => {
  test('every drawable point is in the markup with its exact values', () => {
    const series = [
      {
        name: 'a',
        points: [
          { x: 1, y: 10.123456789 },
          { x: 2, y: 20 },
          { x: 4, y: 39.5 },
        ],
      },
      {
        name: 'b <x>',
        points: [
          { x: 1, y: 5 },
          { x: 4, y: NaN },
          { x: 8, y: Infinity },
          { x: 0, y: 3 },
        ],
      },
    ];
    const svg = plotSvg({ id: 'p1', title: 'T & t', xLabel: 'x', yLabel: 'y', xScale: 'log2', series });
    const p = plots(svg).get('p1')!;
    expect(pointsOf(p, 'a')).toEqual(series[0]!.points);
    expect(pointsOf(p, 'b <x>')).toEqual([{ x: 1, y: 5 }]); // NaN, Infinity and x = 0 (log axis) are not drawable
    expect(p.attrs['data-point-count']).toBe('4');
    expect(svg).toContain('<title>T &amp; t</title>');
    expect(svg).toContain('b &lt;x&gt;');
    expect(svg).not.toContain('b <x>');
    // A <title> per point (hover text) and axis ticks with their values.
    expect(svg.match(/<circle class="pt"[^>]*><title>[^<]+<\/title><\/circle>/g)).toHaveLength(4);
    const ticks = [...svg.matchAll(/<text class="tick x"[^>]*>/g)].map((t) => Number(attrs(t[0])['data-value']));
    expect(ticks).toEqual([1, 2, 4]);
  });

  test('no data gives a labelled empty frame, not an error', () => {
    for (const series of [
      [],
      [{ name: 'x', points: [] }],
      [{ name: 'y', points: [{ x: NaN, y: 1 }] }],
      undefined as never,
      [{ name: 'z', points: 'nope' as never }],
    ]) {
      const svg = plotSvg({ id: 'e', title: 'empty', xLabel: 'x', yLabel: 'y', series });
      expect(svg).toContain('data-empty="true"');
      expect(svg).toContain('n/a');
    }
  });

  test('ticks are round and cover the data', () => {
    expect(niceTicks(0, 1040, 5)).toEqual([0, 250, 500, 750, 1000, 1250]);
    expect(niceTicks(3.2, 3.2)).toEqual([2.8, 3, 3.2, 3.4, 3.6]);
    const t = niceTicks(-7, 13);
    expect(t[0]).toBeLessThanOrEqual(-7);
    expect(t[t.length - 1]).toBeGreaterThanOrEqual(13);
  });
});

describe('html report from hand-made results', () => {
  const files = sampleResults();
  const html = renderHtml(files, {
    generatedAt: '2026-11-29T12:00:00Z',
    sources: ['a/results.json', 'b/results.json'],
  });

  test('matrix has every check × run and the plots carry the data', () => {
    assertReport(html, files);
    const p = plots(html);
    // The seed's shapes: a batching server rises, a serialising one stays flat, a decaying one falls.
    expect(pointsOf(p.get('throughput-per-cycle'), 'mlx-vlm @ m4-pro').map((q) => q.y)).toEqual([
      790, 610, 402, 220, 96, 31, 9.8, 3.5,
    ]);
    expect(pointsOf(p.get('throughput-vs-concurrency'), 'mlx-vlm @ m4-pro').every((q) => q.y === 50)).toBe(true);
  });

  test('columns name their machine; figures side by side, phantom gen_tps marked', () => {
    expect(html).toContain('mlx-openai-server @ m2-max');
    expect(html).toContain('mlx-vlm @ m4-pro');
    const good = headlineRow(html, 'mlx-openai-server @ m2-max');
    expect(good).toMatchObject({
      wall_tps_p50: { value: '52.1', phantom: false },
      ttft_p50: { value: '48.2' },
      gen_tps_p50: { value: '55.3', phantom: false },
      speedup: { value: '2.17' },
      aggregate_tps_peak: { value: '1040' },
    });
    const phantom = headlineRow(html, 'vllm-mlx @ m2-max');
    expect(phantom.gen_tps_p50).toEqual({ value: '14000', phantom: true });
    expect(phantom.wall_tps_p50!.phantom).toBe(false);
    expect(html).toContain('tokens held and flushed in one write at the end');
    expect(headlineRow(html, 'mlx-vlm @ m4-pro').gen_tps_p50).toEqual({ value: '', phantom: false }); // n/a
    expect(html).toMatch(/interrupted \(partial results\)/);
    expect(html).toContain('1 run error outside the checks');
    expect(html).toContain('suites/context.test.ts: failed to load: &lt;img');
  });

  test('hostile strings stay text', () => {
    for (const s of Object.values(HOSTILE)) expect(html).not.toContain(s);
    expect(html.match(/<script\b/g)).toHaveLength(1);
    expect(html).toContain('&lt;/script&gt;&lt;script&gt;window.__pwned = 1&lt;/script&gt;');
    expect(html).toContain('&lt;img src=x onerror=&quot;window.__pwned = 2&quot;&gt;');
    assertOffline(html);
  });

  test('the same input gives the same bytes', () => {
    expect(
      renderHtml(sampleResults(), {
        generatedAt: '2026-11-29T12:00:00Z',
        sources: ['a/results.json', 'b/results.json'],
      }),
    ).toBe(html);
  });

  test('odd input renders n/a instead of throwing', () => {
    const odd: unknown[] = [
      null,
      42,
      'results',
      [],
      {},
      { header: null, checks: 'nope' },
      {
        header: { project: 'odd', machine: { label: 'm' } },
        checks: [
          null,
          { id: 7 },
          { title: 'no id' },
          {
            id: 'parallel.scaling',
            outcome: 'weird',
            metrics: { curve: 'nope' },
            evidence: [null, 5, { wire: 7, label: {} }],
          },
          { id: 'cycles.no-slowdown', outcome: 'pass', metrics: { cycles: [null, 'a', NaN, -3, { cycle: 'x' }] } },
          {
            id: 'context.prefill-scaling',
            outcome: 'pass',
            metrics: {
              curve: [
                { tokens: 0, ttftMsP50: 5 },
                { tokens: 100, ttftMsP50: -1 },
              ],
            },
          },
          {
            id: 'metrics.gen-tps-plausible',
            outcome: 'fail',
            message: 42,
            metrics: { workload: 'x', streams: 'y', gen_tps_p50: 'fast' },
          },
        ],
      },
    ];
    for (const input of [[], odd, undefined as never]) {
      const out = renderHtml(input);
      expect(out.startsWith('<!doctype html>')).toBe(true);
      expect(out).toContain('n/a');
      assertOffline(out);
    }
    const out = renderHtml(odd);
    expect(matrix(out).get('parallel.scaling')?.get('odd @ m')).toBe('error'); // an unknown outcome is our problem, shown as error
    const p = plots(out);
    for (const plot of p.values()) expect(plot.attrs['data-empty']).toBe('true');
    // A plain list of numbers is per-cycle throughput at cycles 1, 2, …; what is not a finite number is left out.
    const listed = plots(
      renderHtml([
        {
          header: { project: 'odd', machine: { label: 'm' } },
          checks: [{ id: 'cycles.no-slowdown', outcome: 'pass', metrics: { cycles: [null, NaN, 42, 7] } }],
        },
      ]),
    );
    expect(pointsOf(listed.get('throughput-per-cycle'), 'odd @ m')).toEqual([
      { x: 3, y: 42 },
      { x: 4, y: 7 },
    ]);
  });
});

describe('html report from real results files', () => {
  const real = realResultsFiles();
  test('the captured runs are results files as the schema defines them (recapture them when it changes)', () => {
    const validate = compileSchema('results.schema.json');
    const captured = real.filter((r) => r.path.startsWith(FIXTURE_DIR));
    expect(captured.length).toBeGreaterThanOrEqual(3);
    for (const r of captured) expect(validate(r.data) ? [] : schemaErrors(validate), r.path).toEqual([]);
  });

  test('captured runs of the reference server (and local reports) render with their data', () => {
    expect(real.length, 'fixtures/results/*.json').toBeGreaterThan(0);
    const files = real.map((r) => r.data);
    const html = renderHtml(files, { sources: real.map((r) => r.path) });
    assertReport(html, files);
    // The reference server batches (4 slots): its captured curve has points and rises.
    const ref = real.find((r) => r.path.startsWith(FIXTURE_DIR) && asObj(asObj(r.data).header).project === 'reference');
    expect(ref, 'a captured reference run in fixtures/results').toBeDefined();
    if (ref) {
      const label = columnsOf(files.map(normaliseResults)).find(
        (c) => c.header.date === asObj(asObj(ref.data).header).date && c.project === 'reference',
      )!.label;
      const pts = pointsOf(plots(html).get('throughput-vs-concurrency'), label);
      expect(pts.length).toBeGreaterThanOrEqual(2);
      expect(pts[pts.length - 1]!.y).toBeGreaterThan(pts[0]!.y);
    }
  });

  test('merged with the hand-made runs of other machines', () => {
    const files = [...real.map((r) => r.data), ...sampleResults()];
    assertReport(renderHtml(files), files);
  });

  test('npm run html writes one self-contained file', () => {
    const captured = real.filter((r) => r.path.startsWith(FIXTURE_DIR));
    const dir = mkdtempSync(join(tmpdir(), 'html-test-'));
    try {
      const out = join(dir, 'index.html');
      const r = spawnSync(
        process.execPath,
        ['--import', 'tsx', 'scripts/html.ts', ...captured.map((x) => x.path), '--out', out],
        { cwd: ROOT, encoding: 'utf8', timeout: 30_000 },
      );
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/html: wrote .*index\.html/);
      const html = readFileSync(out, 'utf8');
      assertReport(
        html,
        captured.map((x) => x.data),
      );
      writeFileSync(join(dir, 'broken.json'), '{"header": ');
      const bad = spawnSync(
        process.execPath,
        ['--import', 'tsx', 'scripts/html.ts', join(dir, 'broken.json'), '--out', out],
        { cwd: ROOT, encoding: 'utf8', timeout: 30_000 },
      );
      expect(bad.status).toBe(1);
      expect(readFileSync(out, 'utf8')).toMatch(
        /broken\.json:1:12: not valid JSON: expected a value, found the end of the file/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---------------------------------------------------------------------------------------------------------

// CONFORMANCE_CHROMIUM: a Chromium elsewhere (e.g. Debian's package unpacked without installing it).
const CHROMIUM = process.env.CONFORMANCE_CHROMIUM || '/usr/bin/chromium';
// Only our own CI insists on the browser (.ci/run installs it); a fork's CI without it skips with one line.
const REQUIRED = process.env.CONFORMANCE_REQUIRE_CHROMIUM === '1';

describe('html report in a browser', () => {
  test('headless Chromium: no console errors, no requests, cells open, screenshot saved', {
    timeout: 90_000,
  }, async (t) => {
    if (!existsSync(CHROMIUM)) {
      if (!REQUIRED) {
        t.skip(`no Chromium at ${CHROMIUM}: install Debian's chromium (bash .ci/run-deps.sh) to run the browser test`);
        return;
      }
      throw new Error(
        `CONFORMANCE_REQUIRE_CHROMIUM=1 but ${CHROMIUM} is missing: .ci/run-deps.sh should have installed Debian's chromium`,
      );
    }
    const { chromium } = await import('playwright-core');
    const files = [
      ...realResultsFiles({ includeReports: false }).map((r) => r.data),
      ...sampleResults(),
      capacityResults('box-a'),
    ];
    const dir = mkdtempSync(join(tmpdir(), 'html-browser-'));
    const page = join(dir, 'index.html');
    writeFileSync(
      page,
      renderHtml(files, {
        generatedAt: 'self-test',
        sources: ['fixtures/results/*.json', 'test/support/results-samples.ts'],
      }),
    );
    const ctx = await chromium.launchPersistentContext(join(dir, 'profile'), {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1400, height: 900 },
    });
    try {
      const tab = ctx.pages()[0] ?? (await ctx.newPage());
      const problems: string[] = [];
      const requests: string[] = [];
      tab.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`console.${m.type()}: ${m.text()}`);
      });
      tab.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      tab.on('dialog', (d) => {
        problems.push(`dialog: ${d.message()}`);
        void d.dismiss();
      });
      tab.on('request', (r) => {
        if (!r.url().startsWith('file://')) requests.push(r.url());
      });
      await tab.goto(`file://${page}`, { waitUntil: 'load' });

      expect(await tab.evaluate('window.__pwned')).toBeUndefined();
      expect(await tab.locator('img').count()).toBe(0);
      expect(await tab.locator('svg.plot').count()).toBe(7); // 3 + the capacity section's 4
      // Cells open without JavaScript (details/summary) …
      const firstFail = tab.locator('#matrix td[data-o="fail"] details').first();
      await firstFail.locator('summary').click();
      expect(await firstFail.getAttribute('open')).not.toBeNull();
      expect(await firstFail.locator('pre.msg').isVisible()).toBe(true);
      // … and the tiny script (allowed by its CSP hash) runs.
      expect(await tab.locator('#tools').isVisible()).toBe(true);
      await tab.locator('#tools button[data-act="open"]').click();
      const openFails = await tab.locator('#matrix td[data-o="fail"] details[open]').count();
      expect(openFails).toBe(await tab.locator('#matrix td[data-o="fail"]').count());
      await tab.locator('#tools button[data-act="close"]').click();
      // The outcome filter keeps exactly the rows with a cell of that outcome, and "any" shows them all again.
      await tab.locator('#outcome-filter').selectOption('fail');
      const shown = await tab.locator('#matrix tr[data-check]:not([hidden])').count();
      expect(shown).toBeGreaterThan(0);
      expect(shown).toBe(await tab.locator('#matrix tr[data-check]:has(td[data-o="fail"])').count());
      await tab.locator('#outcome-filter').selectOption('');
      expect(await tab.locator('#matrix tr[data-check][hidden]').count()).toBe(0);
      expect(await tab.locator('#legend li[data-legend="inconclusive"]').isVisible()).toBe(true);
      // The headline table in the page matches the plots' data for one run.
      const circles = await tab.locator('svg[data-plot="throughput-vs-concurrency"] circle.pt').count();
      expect(circles).toBeGreaterThan(0);
      // The capacity plots render: points laid out inside the frame, the flagged one hollow, the saturation ring drawn.
      for (const id of ['capacity-throughput', 'capacity-ttft', 'capacity-itl', 'capacity-goodput']) {
        const svg = tab.locator(`svg[data-plot="${id}"]`);
        expect(await svg.isVisible(), id).toBe(true);
        const box = (await svg.boundingBox())!;
        expect(box.width, id).toBeGreaterThan(200);
        const pts = svg.locator('circle.pt');
        expect(await pts.count(), id).toBeGreaterThan(2);
        const p = (await pts.first().boundingBox())!;
        expect(p.x >= box.x && p.x <= box.x + box.width && p.y >= box.y && p.y <= box.y + box.height, id).toBe(true);
      }
      const hollow = tab.locator('svg[data-plot="capacity-throughput"] circle.pt[data-flagged]');
      expect(await hollow.count()).toBe(1);
      expect(await hollow.getAttribute('fill')).toBe('#fff');
      expect(await hollow.locator('title').textContent()).toContain('FLAGGED: client-bound');
      expect(await tab.locator('svg[data-plot="capacity-throughput"] g.mark').isVisible()).toBe(true);
      await tab.locator('details.capacity-levels summary').first().click();
      expect(await tab.locator('details.capacity-levels tr[data-flagged]').first().isVisible()).toBe(true);

      mkdirSync(join(ROOT, 'reports'), { recursive: true });
      await tab.screenshot({ path: join(ROOT, 'reports', 'html-screenshot.png'), fullPage: true });
      expect(problems).toEqual([]);
      expect(requests).toEqual([]);
    } finally {
      await ctx.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
