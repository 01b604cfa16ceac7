// The capacity table shown (reporters/html-capacity.ts, reporters/svg-plot.ts, reporters/seed-matrix.ts): plots carry
// each level's figures (read back from data-* attributes), the saturation point is marked, flagged figures are drawn
// hollow with their reason, hostile strings stay text, and the seed matrix gains its capacity column only where a run
// has a table. The browser rendering of the same plots is in test/html.test.ts.

import { describe, expect, test } from 'vitest';
import { mergeCapacity } from '../lib/capacity/merge.ts';
import { renderHtml } from '../reporters/html.ts';
import { matrixHtml, matrixMarkdown, matrixRows } from '../reporters/seed-matrix.ts';
import { plotSvg } from '../reporters/svg-plot.ts';
import { BURST_REASON, CLIENT_REASON, capacityResults, capacityTable } from './support/capacity-samples.ts';
import { HOSTILE, sampleResults } from './support/results-samples.ts';

interface Pt {
  series: string;
  x: number;
  y: number;
  flagged?: string;
}

const unescapeHtml = (s: string) =>
  s.replace(/&(lt|gt|quot|#39|amp);/g, (_, e: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[e]!);

function attr(tag: string, name: string): string | undefined {
  const m = tag.match(new RegExp(`\\s${name}="([^"]*)"`));
  return m ? unescapeHtml(m[1]!) : undefined;
}

function plot(html: string, id: string): { svg: string; points: Pt[] } {
  const m = html.match(new RegExp(`<svg\\b[^>]*data-plot="${id}"[^>]*>[\\s\\S]*?</svg>`));
  expect(m, `plot ${id}`).not.toBeNull();
  const svg = m![0];
  const points = [...svg.matchAll(/<circle class="pt"[^>]*>/g)].map((c) => ({
    series: attr(c[0], 'data-series')!,
    x: Number(attr(c[0], 'data-x')),
    y: Number(attr(c[0], 'data-y')),
    ...(attr(c[0], 'data-flagged') ? { flagged: attr(c[0], 'data-flagged') } : {}),
  }));
  return { svg, points };
}

describe('capacity in the HTML report', () => {
  const file = capacityResults('box-a');
  const html = renderHtml([file]);
  const label = 'capacity-sample @ box-a';

  test('throughput vs concurrency: every sweep level, the saturation point marked, the client-bound level hollow', () => {
    const { svg, points } = plot(html, 'capacity-throughput');
    expect(points.map((p) => [p.x, p.y])).toEqual([
      [1, 125],
      [2, 250],
      [4, 500],
      [8, 1000],
      [16, 1000],
      [32, 900],
    ]);
    expect(points.find((p) => p.x === 16)!.flagged).toBe(`client-bound: ${CLIENT_REASON}`);
    expect(points.filter((p) => p.flagged)).toHaveLength(1); // the burst flag is on ITL, not on the aggregate
    const mark = svg.match(/<g class="mark"[^>]*>/)![0];
    expect([attr(mark, 'data-x'), attr(mark, 'data-y'), attr(mark, 'data-series')]).toEqual(['8', '1000', label]);
    // Hollow markers and the ring have legend keys; the hostile reason is text, never markup.
    expect(svg).toContain('data-key="flagged figure (hollow; hover: why)"');
    expect(svg).toContain('data-key="saturation point"');
    expect(svg).toMatch(/<circle class="pt"[^>]*fill="#fff"[^>]*data-flagged=/);
  });

  test('TTFT and ITL p50/p99 per level; the burst-delivered level flagged on ITL only', () => {
    const ttft = plot(html, 'capacity-ttft').points;
    expect(ttft.filter((p) => p.series === `${label} p99`).map((p) => p.y)).toEqual([34, 38, 46, 62, 94, 158]);
    expect(ttft.filter((p) => p.series === `${label} p50`).map((p) => p.y)).toEqual([21, 22, 24, 28, 36, 52]);
    expect(ttft.filter((p) => p.flagged).map((p) => p.x)).toEqual([16, 16]); // client-bound flags every figure
    const itl = plot(html, 'capacity-itl').points;
    const at32 = itl.filter((p) => p.x === 32);
    expect(at32.map((p) => p.y).sort()).toEqual([0.02, 0.1]);
    for (const p of at32) expect(p.flagged).toBe(BURST_REASON);
  });

  test('goodput vs request rate, one series per arrival process', () => {
    const { points } = plot(html, 'capacity-goodput');
    expect(new Set(points.map((p) => p.series))).toEqual(new Set([`${label} poisson`]));
    expect(points.map((p) => [p.x, p.y])).toEqual([
      [2, 2],
      [4, 4],
      [8, 4],
    ]);
  });

  test('the levels table lists every flag with its reason; hostile strings stay text', () => {
    expect(html).toContain('<section id="capacity">');
    expect(html).toContain(BURST_REASON);
    expect(html.match(/<tr data-level="[^"]*"[^>]*data-flagged="true"/g)).toHaveLength(2);
    for (const s of [HOSTILE.img, HOSTILE.script]) expect(html).not.toContain(s);
    expect(html.match(/<script\b/g)).toHaveLength(1);
  });

  test('a capacity-only run opens on the capacity plots; the page is about its one server', () => {
    const at = (id: string) => html.indexOf(`<section id="${id}"`);
    expect(at('capacity')).toBeGreaterThan(0);
    expect(at('capacity')).toBeLessThan(at('runs'));
    expect(html).not.toContain('<section id="plots"'); // no empty conformance plots above it
    expect(html).toContain(`<title>LLM server conformance: ${file.header.project} @ box-a</title>`);
    expect(html).toContain('<h2>Headline figures</h2>');
    expect(html).not.toContain('seed study');
    // With the conformance checks' plots, those come first and the capacity section after them.
    const both = renderHtml([...sampleResults(), file]);
    expect(both.indexOf('<section id="plots"')).toBeGreaterThan(0);
    expect(both.indexOf('<section id="capacity"')).toBeGreaterThan(both.indexOf('<section id="plots"'));
    expect(both).toContain('<title>LLM server conformance report</title>');
    // The seed study's heading only where the study's comparison is built (scripts/matrix.ts).
    expect(renderHtml([file], { matrixHeading: "The seed study's comparison" })).toContain(
      '<h2>The seed study&#39;s comparison</h2>',
    );
  });

  test('runs without a table get no capacity section; odd tables render n/a, never throw', () => {
    expect(renderHtml(sampleResults())).not.toContain('id="capacity"');
    const odd = renderHtml([
      { ...file, capacity: { levels: [null, 5, { mode: 'concurrency' }, { mode: 'rate', startedAt: 1, endedAt: 2 }] } },
    ]);
    expect(odd).toContain('id="capacity"');
    expect(plot(odd, 'capacity-throughput').svg).toContain('data-empty="true"');
  });

  test('a merged table plots its merged levels, each machine keeps its rows', () => {
    const merged = mergeCapacity([
      { machine: 'a', table: capacityTable('a', 1000) },
      { machine: 'b', table: capacityTable('b', 9_000_000) },
    ]);
    const out = renderHtml([
      { ...file, header: { ...file.header, machine: { ...file.header.machine, label: 'a+b' } }, capacity: merged },
    ]);
    const pts = plot(out, 'capacity-throughput').points;
    expect(pts.map((p) => p.x)).toEqual([2, 4, 8, 16, 32, 64]);
    expect(pts.map((p) => p.y)).toEqual([250, 500, 1000, 2000, 2000, 1800]);
    // The runner's saturation rule over the merged sweep: 16 streams (8 per machine), ringed.
    expect(merged.saturation).toMatchObject({ concurrency: 16, aggregateTps: 2000 });
    expect(merged.saturation!.why).toMatch(/^merged over a, b: .*each machine's own: a 8 streams, b 8 streams/);
    const mark = plot(out, 'capacity-throughput').svg.match(/<g class="mark"[^>]*>/)![0];
    expect(attr(mark, 'data-x')).toBe('16');
    expect(out.match(/<tr data-level="[^"]*" data-machine="a"/g)).toHaveLength(9);
    expect(out.match(/<tr data-level="[^"]*" data-machine="a\+b"/g)).toHaveLength(9);
  });
});

describe('plot markers', () => {
  test('a flagged point is hollow with the reason in data-flagged and its tooltip', () => {
    const svg = plotSvg({
      id: 'f',
      title: 't',
      xLabel: 'x',
      yLabel: 'y',
      series: [
        {
          name: 's',
          points: [
            { x: 1, y: 1 },
            { x: 2, y: 2, flagged: `bad ${HOSTILE.attr}` },
          ],
        },
      ],
    });
    expect(svg).not.toContain(HOSTILE.attr);
    const flagged = [...svg.matchAll(/<circle class="pt"[^>]*><title>([^<]*)<\/title>/g)].filter((m) =>
      m[0].includes('data-flagged'),
    );
    expect(flagged).toHaveLength(1);
    expect(unescapeHtml(flagged[0]![1]!)).toContain(`FLAGGED: bad ${HOSTILE.attr}`);
    expect(svg).not.toContain('data-key="saturation point"');
  });
});

describe('seed matrix capacity column', () => {
  test('only where a run has a table; saturation tok/s and streams, flagged marked with its reason', () => {
    expect(matrixMarkdown(matrixRows(sampleResults()))).not.toContain('capacity (saturation)');
    const withCap = capacityResults('box-a');
    const rows = matrixRows([...sampleResults(), withCap]);
    const row = rows.find((r) => r.project === 'capacity-sample')!;
    expect(row.capacity).toMatchObject({ text: '1000 tok/s @ 8 streams', value: 1000 });
    expect(row.capacity!.flagged).toBeUndefined();
    const md = matrixMarkdown(rows);
    expect(md).toContain('| capacity (saturation) |');
    expect(md).toContain('1000 tok/s @ 8 streams');
    // Other rows read n/a in the column; the table keeps one cell per head.
    for (const line of md.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| server'))) {
      expect(line.split(' | ').length).toBe(
        md
          .split('\n')
          .find((l) => l.startsWith('| server'))!
          .split(' | ').length,
      );
    }
    // Saturation on a client-bound level: the figure is flagged, with the reason, in both forms.
    const t = capacityTable('box-a');
    t.saturation = { ...t.saturation!, concurrency: 16 };
    const flaggedRows = matrixRows([{ ...withCap, capacity: t }]);
    expect(flaggedRows[0]!.capacity!.flagged).toBe(`client-bound: ${CLIENT_REASON}`);
    expect(matrixMarkdown(flaggedRows)).toContain('**FLAGGED** (client-bound:');
    const h = matrixHtml(flaggedRows);
    expect(h).toMatch(/<td data-cell="capacity"[^>]*data-flagged="true"/);
    expect(h).not.toContain(HOSTILE.img);
  });

  test('no saturation: the peak, said to be one', () => {
    const t = capacityTable('m');
    delete t.saturation;
    const [row] = matrixRows([{ ...capacityResults('m'), capacity: t }]);
    expect(row!.capacity!.text).toBe('1000 tok/s @ 8 streams, no saturation in the sweep');
  });
});
