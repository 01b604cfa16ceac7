// Line plots as self-contained SVG strings, drawn at build time (no script, no fonts or images fetched).
// Pure: series in, markup out. Every point carries its values in data-* attributes (and a <title> that a
// browser shows on hover), so a test can read the data back from the markup and a reader can recompute it.
import { esc, fmtNum, numAttr } from './html-escape.ts';

interface PlotPoint {
  x: number;
  y: number;
  /** Extra text for the point's tooltip (e.g. "p99 ttft 310 ms"). */
  note?: string;
  /** Why the figure cannot be trusted as the server's: drawn hollow, the reason in its tooltip and data-flagged. */
  flagged?: string;
}

/** A marked point (e.g. a sweep's saturation point): a ring and a dashed drop line, with its label as tooltip. */
interface PlotMark {
  x: number;
  y: number;
  label: string;
  /** The series it belongs to (its colour). */
  series?: string;
}

export interface PlotSeries {
  name: string;
  points: PlotPoint[];
}

type Scale = 'linear' | 'log2' | 'log10';

interface PlotSpec {
  /** Stable id: becomes data-plot on the <svg>. */
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  series: PlotSeries[];
  xScale?: Scale;
  yScale?: Scale;
  /** Linear y axes start at zero unless told otherwise (throughput and latency are ratio scales). */
  yFromZero?: boolean;
  width?: number;
  height?: number;
  marks?: PlotMark[];
  /** Legend text of the mark (default "marked point"). */
  markLegend?: string;
}

/** Okabe–Ito: distinguishable with the common colour-vision deficiencies. */
const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#F0E442'];
const DASHES = ['', '6 3', '2 3', '8 3 2 3'];

interface Axis {
  min: number;
  max: number;
  ticks: number[];
  map(v: number): number;
}

/** Round steps (1, 2, 2.5, 5 × 10^k) covering [min, max] with about `count` intervals. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max < min) [min, max] = [max, min];
  if (max === min) {
    const pad = min === 0 ? 1 : Math.abs(min) * 0.1;
    min -= pad;
    max += pad;
  }
  const raw = (max - min) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 2.5, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
  const start = Math.floor(min / step + 1e-9) * step;
  const end = Math.ceil(max / step - 1e-9) * step;
  const out: number[] = [];
  for (let i = 0; start + i * step <= end + step * 1e-9 && i < 60; i++) out.push(round(start + i * step, step));
  return out;
}

function round(v: number, step: number): number {
  const digits = Math.max(0, -Math.floor(Math.log10(step)) + 2);
  return Number(v.toFixed(Math.min(digits, 12)));
}

function logBase(scale: Scale): number {
  return scale === 'log2' ? 2 : 10;
}

function makeAxis(values: number[], scale: Scale, fromZero: boolean, lo: number, hi: number): Axis {
  if (scale !== 'linear') {
    const b = logBase(scale);
    const pos = values.filter((v) => v > 0);
    const lmin = Math.floor(Math.log(Math.min(...pos)) / Math.log(b) + 1e-9);
    let lmax = Math.ceil(Math.log(Math.max(...pos)) / Math.log(b) - 1e-9);
    if (lmax === lmin) lmax = lmin + 1;
    const every = Math.max(1, Math.ceil((lmax - lmin) / 8));
    const ticks: number[] = [];
    for (let e = lmin; e <= lmax; e += every) ticks.push(b ** e);
    const min = b ** lmin;
    const max = b ** lmax;
    const span = Math.log(max) - Math.log(min);
    return { min, max, ticks, map: (v) => lo + ((Math.log(v) - Math.log(min)) / span) * (hi - lo) };
  }
  let vmin = Math.min(...values);
  let vmax = Math.max(...values);
  if (fromZero) {
    vmin = Math.min(0, vmin);
    vmax = Math.max(0, vmax);
  }
  const ticks = niceTicks(vmin, vmax, 5);
  const min = Math.min(ticks[0]!, vmin);
  const max = Math.max(ticks[ticks.length - 1]!, vmax);
  const span = max - min || 1;
  return { min, max, ticks, map: (v) => lo + ((v - min) / span) * (hi - lo) };
}

/** Points a scale can draw: finite, and positive on a log axis. */
function drawable(p: PlotPoint, xs: Scale, ys: Scale): boolean {
  return (
    typeof p?.x === 'number' &&
    typeof p?.y === 'number' &&
    Number.isFinite(p.x) &&
    Number.isFinite(p.y) &&
    (xs === 'linear' || p.x > 0) &&
    (ys === 'linear' || p.y > 0)
  );
}

/** Rough width of 12px sans-serif text (no font metrics at build time); generous so items do not collide. */
function textWidth(s: string): number {
  return s.length * 7;
}

/** Legend items placed left to right, wrapping at `right`; names longer than 40 characters are shortened. */
function layoutLegend(
  names: string[],
  left: number,
  right: number,
): { rows: number; items: Array<{ x: number; row: number; text: string }> } {
  const items: Array<{ x: number; row: number; text: string }> = [];
  let x = left;
  let row = 0;
  for (const name of names) {
    const text = name.length > 40 ? `${name.slice(0, 39)}…` : name;
    const w = 24 + textWidth(text) + 70; // swatch + label + room for " (no data)" and a gap
    if (x > left && x + w > right) {
      row++;
      x = left;
    }
    items.push({ x, row, text });
    x += w;
  }
  return { rows: Math.max(1, row + 1), items };
}

/** Tick label: powers of two from 1024 up as binary thousands (16k for 16384, as prompt sizes are named). */
function tickLabel(v: number, scale: Scale): string {
  if (scale === 'log2' && v >= 1024 && Number.isInteger(Math.log2(v)))
    return v >= 1048576 ? `${v / 1048576}M` : `${v / 1024}k`;
  return fmtNum(v);
}

const f = (v: number) => (Math.round(v * 10) / 10).toString();

/** The plot as an <svg> string. Series without drawable points are listed in the legend as "no data". */
export function plotSvg(spec: PlotSpec): string {
  const W = spec.width ?? 640;
  const xs = spec.xScale ?? 'linear';
  const ys = spec.yScale ?? 'linear';
  const series = (Array.isArray(spec.series) ? spec.series : []).map((s) => ({
    name: String(s?.name ?? 'unnamed'),
    points: (Array.isArray(s?.points) ? s.points : []).filter((p) => drawable(p, xs, ys)).sort((a, b) => a.x - b.x),
  }));
  const all = series.flatMap((s) => s.points);

  // Legend below the plot: items laid out left to right by estimated text width, wrapping.
  const marks = (Array.isArray(spec.marks) ? spec.marks : []).filter((m) => drawable(m, xs, ys));
  const anyFlagged = all.some((p) => p.flagged);
  // Keys after the series: what a hollow marker and a ring mean, present only when the plot has them.
  const keys = [
    ...(anyFlagged ? ['flagged figure (hollow; hover: why)'] : []),
    ...(marks.length ? [spec.markLegend ?? 'marked point'] : []),
  ];
  const legend = layoutLegend([...series.map((s) => s.name), ...keys], 64, W - 20);
  const legendRows = legend.rows;
  const plotH = spec.height ?? 300;
  const m = { l: 64, r: 20, t: 34, b: 46 };
  const H = m.t + plotH + m.b + legendRows * 18 + 6;
  const x0 = m.l;
  const x1 = W - m.r;
  const y0 = m.t + plotH; // bottom of the plot area
  const y1 = m.t;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" ` +
      `data-plot="${esc(spec.id)}" data-x-label="${esc(spec.xLabel)}" data-y-label="${esc(spec.yLabel)}" data-x-scale="${xs}" data-y-scale="${ys}" ` +
      `data-series-count="${series.length}" data-point-count="${all.length}"${all.length ? '' : ' data-empty="true"'} font-family="system-ui, sans-serif" font-size="12">`,
  );
  out.push(`<title>${esc(spec.title)}</title>`);
  out.push(`<text x="${W / 2}" y="20" text-anchor="middle" font-size="14" font-weight="600">${esc(spec.title)}</text>`);
  out.push(`<rect x="${x0}" y="${y1}" width="${x1 - x0}" height="${plotH}" fill="#fff" stroke="#999"/>`);

  if (all.length === 0) {
    out.push(
      `<text x="${(x0 + x1) / 2}" y="${(y0 + y1) / 2}" text-anchor="middle" fill="#666">n/a — no data in the results</text>`,
    );
  } else {
    const ax = makeAxis(
      all.map((p) => p.x),
      xs,
      false,
      x0 + 8,
      x1 - 8,
    );
    const ay = makeAxis(
      all.map((p) => p.y),
      ys,
      spec.yFromZero ?? ys === 'linear',
      y0,
      y1,
    );
    // Grid and ticks.
    for (const t of ax.ticks) {
      const x = ax.map(t);
      if (x < x0 - 0.5 || x > x1 + 0.5) continue;
      out.push(`<line x1="${f(x)}" y1="${y1}" x2="${f(x)}" y2="${y0}" stroke="#eee"/>`);
      out.push(`<line x1="${f(x)}" y1="${y0}" x2="${f(x)}" y2="${y0 + 5}" stroke="#333"/>`);
      out.push(
        `<text class="tick x" x="${f(x)}" y="${y0 + 18}" text-anchor="middle" data-value="${numAttr(t)}">${esc(tickLabel(t, xs))}</text>`,
      );
    }
    for (const t of ay.ticks) {
      const y = ay.map(t);
      if (y > y0 + 0.5 || y < y1 - 0.5) continue;
      out.push(`<line x1="${x0}" y1="${f(y)}" x2="${x1}" y2="${f(y)}" stroke="#eee"/>`);
      out.push(`<line x1="${x0 - 5}" y1="${f(y)}" x2="${x0}" y2="${f(y)}" stroke="#333"/>`);
      out.push(
        `<text class="tick y" x="${x0 - 8}" y="${f(y + 4)}" text-anchor="end" data-value="${numAttr(t)}">${esc(tickLabel(t, ys))}</text>`,
      );
    }
    series.forEach((s, i) => {
      const colour = PALETTE[i % PALETTE.length]!;
      const dash = DASHES[Math.floor(i / PALETTE.length) % DASHES.length]!;
      out.push(`<g class="series" data-series="${esc(s.name)}" data-points="${s.points.length}">`);
      if (s.points.length > 1) {
        const pts = s.points.map((p) => `${f(ax.map(p.x))},${f(ay.map(p.y))}`).join(' ');
        out.push(
          `<polyline points="${pts}" fill="none" stroke="${colour}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`,
        );
      }
      for (const p of s.points) {
        const tip = `${s.name}: ${spec.xLabel} = ${fmtNum(p.x)}, ${spec.yLabel} = ${fmtNum(p.y)}${p.note ? ` (${p.note})` : ''}${p.flagged ? ` FLAGGED: ${p.flagged}` : ''}`;
        // A flagged figure is hollow (white fill, coloured ring): seen as different without colour, reason on hover.
        const paint = p.flagged
          ? `r="4.5" fill="#fff" stroke="${colour}" stroke-width="2" data-flagged="${esc(p.flagged)}"`
          : `r="3.5" fill="${colour}"`;
        out.push(
          `<circle class="pt" cx="${f(ax.map(p.x))}" cy="${f(ay.map(p.y))}" ${paint} ` +
            `data-series="${esc(s.name)}" data-x="${numAttr(p.x)}" data-y="${numAttr(p.y)}"><title>${esc(tip)}</title></circle>`,
        );
      }
      out.push(`</g>`);
    });
    for (const mk of marks) {
      const i = series.findIndex((s) => s.name === mk.series);
      const colour = i >= 0 ? PALETTE[i % PALETTE.length]! : '#000';
      const [mx, my] = [f(ax.map(mk.x)), f(ay.map(mk.y))];
      out.push(
        `<g class="mark" data-series="${esc(mk.series ?? '')}" data-x="${numAttr(mk.x)}" data-y="${numAttr(mk.y)}" data-mark="${esc(mk.label)}">` +
          `<line x1="${mx}" y1="${my}" x2="${mx}" y2="${y0}" stroke="${colour}" stroke-dasharray="3 3"/>` +
          `<circle cx="${mx}" cy="${my}" r="8" fill="none" stroke="${colour}" stroke-width="2"/><title>${esc(mk.label)}</title></g>`,
      );
    }
  }
  // Axis labels.
  out.push(
    `<text x="${(x0 + x1) / 2}" y="${y0 + 36}" text-anchor="middle" fill="#333">${esc(spec.xLabel)}${xs === 'linear' ? '' : ` (${xs} scale)`}</text>`,
  );
  out.push(
    `<text x="16" y="${(y0 + y1) / 2}" text-anchor="middle" fill="#333" transform="rotate(-90 16 ${(y0 + y1) / 2})">${esc(spec.yLabel)}${ys === 'linear' ? '' : ` (${ys} scale)`}</text>`,
  );
  // Legend.
  series.forEach((s, i) => {
    const colour = PALETTE[i % PALETTE.length]!;
    const dash = DASHES[Math.floor(i / PALETTE.length) % DASHES.length]!;
    const { x: lx, row, text: label } = legend.items[i]!;
    const ly = y0 + m.b + row * 18 + 4;
    out.push(
      `<g class="legend" data-series="${esc(s.name)}"><line x1="${lx}" y1="${ly}" x2="${lx + 18}" y2="${ly}" stroke="${colour}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ''}/>` +
        `<circle cx="${lx + 9}" cy="${ly}" r="3" fill="${colour}"/><text x="${lx + 24}" y="${ly + 4}">${esc(label)}${s.points.length ? '' : ' (no data)'}<title>${esc(s.name)}</title></text></g>`,
    );
  });
  keys.forEach((k, j) => {
    const { x: lx, row, text: label } = legend.items[series.length + j]!;
    const ly = y0 + m.b + row * 18 + 4;
    const glyph =
      j === 0 && anyFlagged
        ? `<circle cx="${lx + 9}" cy="${ly}" r="4.5" fill="#fff" stroke="#333" stroke-width="2"/>`
        : `<circle cx="${lx + 9}" cy="${ly}" r="7" fill="none" stroke="#333" stroke-width="2"/>`;
    out.push(
      `<g class="legend-key" data-key="${esc(k)}">${glyph}<text x="${lx + 24}" y="${ly + 4}">${esc(label)}</text></g>`,
    );
  });
  out.push('</svg>');
  return out.join('');
}
