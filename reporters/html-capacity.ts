// The HTML report's capacity section (results.json `capacity`): throughput vs concurrency with the saturation point
// marked, TTFT and ITL p50/p99 vs concurrency, goodput vs request rate, and each run's levels as a table. A figure
// that failed a certifying check on its level is drawn hollow with the reason in its tooltip, and listed with the
// reason in the table: shown, never silent. Pure; every string from the results passes through esc().

import { serverLevels } from '../lib/capacity/merge.ts';
import { levelName } from '../lib/capacity/peer-columns.ts';
import { flagReason } from '../lib/capacity/read.ts';
import type { CapacityLevel, CapacityTable } from '../lib/capacity/types.ts';
import { type PeerCell, peerTable } from './capacity-table.ts';
import { esc, fmtNum } from './html-escape.ts';
import type { Column } from './report-data.ts';
import { type PlotSeries, plotSvg } from './svg-plot.ts';

type WithCapacity = Column & { capacity: CapacityTable };

const sweep = (t: CapacityTable) =>
  serverLevels(t)
    .filter((l) => l.mode === 'concurrency' && l.concurrency !== undefined)
    .sort((a, b) => a.concurrency! - b.concurrency!);

const rates = (t: CapacityTable) =>
  serverLevels(t)
    .filter((l) => l.mode === 'rate' && l.ratePerS !== undefined && l.goodput)
    .sort((a, b) => a.ratePerS! - b.ratePerS!);

/** Figures each plotted value depends on: a flag on any of them (or on the level, or a client-bound level) flags it. */
const DEPENDS = {
  aggregate: ['aggregateTps', 'usage'],
  ttft: ['ttft'],
  itl: ['itl'],
  goodput: ['ttft', 'itl', 'e2e', 'goodput'],
} as const;

function point(l: CapacityLevel, x: number, y: number | null | undefined, dep: readonly string[], note?: string) {
  if (y === null || y === undefined) return [];
  const flagged = flagReason(l, dep);
  return [{ x, y, ...(note ? { note } : {}), ...(flagged ? { flagged } : {}) }];
}

function latencySeries(cols: WithCapacity[], pick: 'ttftMs' | 'itlMs', dep: readonly string[]): PlotSeries[] {
  return cols.flatMap((c) =>
    (['p50', 'p99'] as const).map((p) => ({
      name: `${c.label} ${p}`,
      points: sweep(c.capacity).flatMap((l) => point(l, l.concurrency!, l[pick][p], dep)),
    })),
  );
}

function levelRow(l: CapacityLevel, t: CapacityTable): string {
  const load = levelName(l);
  const pct = (p: { p50: number | null; p99: number | null }) =>
    `${fmtNum(p.p50 ?? undefined)} / ${fmtNum(p.p99 ?? undefined)}`;
  const sat = l.mode === 'concurrency' && t.saturation?.concurrency === l.concurrency && serverLevels(t).includes(l);
  const reasons = [
    ...l.flags.map((f) => `${f.figure}: ${f.reason}`),
    ...(l.client.clientBound ? [`client-bound: ${l.client.reason ?? 'our client had no headroom'}`] : []),
  ];
  return (
    `<tr data-level="${esc(load)}" data-machine="${esc(l.machine ?? '')}"${reasons.length ? ' data-flagged="true"' : ''}>` +
    `<td>${esc(load)}${sat ? ' <strong title="saturation point">◎ saturation</strong>' : ''}</td><td>${esc(l.machine ?? '')}</td>` +
    `<td class="num">${l.sent} / ${l.completed} / ${l.errored} / ${l.timedOut}</td>` +
    `<td class="num">${esc(fmtNum(l.aggregateTps))}${l.physicalBoundTps !== undefined ? ` <span class="muted small">(bound ${esc(fmtNum(l.physicalBoundTps))})</span>` : ''}</td>` +
    `<td class="num">${esc(pct(l.ttftMs))}</td><td class="num">${esc(pct(l.itlMs))}</td><td class="num">${esc(pct(l.e2eMs))}</td>` +
    `<td class="num">${esc(fmtNum(l.outputTokens ?? undefined))} / ${esc(fmtNum(l.streamedTokens))}</td>` +
    `<td class="num">${l.goodput ? `${esc(fmtNum(l.goodput.ratePerS))} req/s (${esc(fmtNum(l.goodput.fraction * 100))} %)` : 'n/a'}</td>` +
    `<td>${reasons.length ? `<ul class="flags">${reasons.map((r) => `<li>${esc(r)}</li>`).join('')}</ul>` : '<span class="muted">certified</span>'}</td></tr>`
  );
}

function workloadText(t: CapacityTable): string {
  const w = t.workload;
  const slo = t.slo
    ? ` · SLO ${Object.entries(t.slo)
        .map(([k, v]) => `${k.replace(/Ms$/, '')} ≤ ${fmtNum(v)} ms`)
        .join(', ')}`
    : '';
  const machines = t.machines && t.machines.length > 1 ? ` · merged from ${t.machines.join(', ')}` : '';
  return (
    (w.kind === 'dataset'
      ? `dataset ${w.file} (${w.format}, ${w.prompts} prompts)`
      : `synthetic, ${w.inputTokens} input / ${w.outputTokens} output tokens`) +
    slo +
    machines
  );
}

function peerCellHtml(c: PeerCell): string {
  const max =
    c.maxOf !== undefined
      ? ` <span class="muted small" title="too few requests for a percentile: it lies between the two largest of ${c.maxOf}">(~max of ${c.maxOf})</span>`
      : '';
  return c.flagged
    ? `<td class="num" data-flagged="${esc(c.flagged)}" title="${esc(c.flagged)}">${esc(c.text)}${max} !</td>`
    : `<td class="num">${esc(c.text)}${max}</td>`;
}

/** The levels in vLLM's column names (capacity.csv / capacity.json): a column per level, a row per figure. */
function peerTableHtml(t: CapacityTable): string {
  const { levels, rows } = peerTable(t);
  return (
    `<p class="muted small">In <code>vllm bench serve</code>'s terms (the same figures as capacity.csv and capacity.json beside results.json): a sweep level is its run at request_rate inf with max_concurrency = the streams; ITL over all gaps, the others over requests; ! flagged (hover for the reason); (~max of n): too few requests for a percentile, the value lies between their two largest.</p>` +
    `<div class="scroll"><table class="capacity-peer"><thead><tr><th>column</th>${levels.map((l) => `<th>${esc(l)}</th>`).join('')}</tr></thead><tbody>` +
    rows
      .map(
        (r) =>
          `<tr data-key="${esc(r.key)}"><td><code>${esc(r.key)}</code>${r.unit ? ` <span class="muted small">(${esc(r.unit)})</span>` : ''}</td>${r.cells.map(peerCellHtml).join('')}</tr>`,
      )
      .join('') +
    `</tbody></table></div>`
  );
}

function tableOf(c: WithCapacity): string {
  const t = c.capacity;
  const s = t.saturation;
  return (
    `<details class="capacity-levels" data-column="${esc(c.label)}"><summary><strong>${esc(c.label)}</strong> <span class="muted small">${esc(workloadText(t))}` +
    `${s ? ` · saturation at ${esc(fmtNum(s.concurrency))} streams, ${esc(fmtNum(s.aggregateTps))} tok/s (${esc(s.why)})` : ' · no saturation found'}</span></summary>` +
    `<div class="scroll"><table><thead><tr><th>level</th><th>machine</th><th>sent / completed / errored / timed out</th><th>aggregate tok/s</th>` +
    `<th>TTFT p50 / p99 (ms)</th><th>ITL p50 / p99 (ms)</th><th>e2e p50 / p99 (ms)</th><th>output tokens usage / streamed</th><th>goodput</th><th>flagged figures</th></tr></thead>` +
    `<tbody>${t.levels.map((l) => levelRow(l, t)).join('')}</tbody></table></div>${peerTableHtml(t)}</details>`
  );
}

export function capacitySection(columns: readonly Column[]): string {
  const cols = columns.filter((c): c is WithCapacity => c.capacity !== undefined);
  if (!cols.length) return '';
  const figures: string[] = [];
  const add = (svg: string, caption: string) =>
    figures.push(`<figure>${svg}<figcaption>${caption}</figcaption></figure>`);
  const marks = cols.flatMap((c) => {
    const s = c.capacity.saturation;
    return s
      ? [
          {
            x: s.concurrency,
            y: s.aggregateTps,
            series: c.label,
            label: `${c.label}: saturation at ${fmtNum(s.concurrency)} streams, ${fmtNum(s.aggregateTps)} tok/s (${s.why})`,
          },
        ]
      : [];
  });
  add(
    plotSvg({
      id: 'capacity-throughput',
      title: 'Capacity: aggregate throughput vs concurrency',
      xLabel: 'concurrent streams',
      yLabel: 'aggregate output tok/s',
      xScale: 'log2',
      series: cols.map((c) => ({
        name: c.label,
        points: sweep(c.capacity).flatMap((l) => point(l, l.concurrency!, l.aggregateTps, DEPENDS.aggregate)),
      })),
      marks,
      markLegend: 'saturation point',
    }),
    'Output tokens of all completed requests / the level’s wall time. The ring marks the saturation point: the level after which aggregate tok/s stopped rising beyond its noise band. Hollow: a figure a certifying check flagged on that level (hover for the reason).',
  );
  add(
    plotSvg({
      id: 'capacity-ttft',
      title: 'Capacity: TTFT p50 and p99 vs concurrency',
      xLabel: 'concurrent streams',
      yLabel: 'TTFT (ms)',
      xScale: 'log2',
      series: latencySeries(cols, 'ttftMs', DEPENDS.ttft),
    }),
    'Time to first token over the level’s requests. A p99 far above the p50 at saturation is starvation.',
  );
  add(
    plotSvg({
      id: 'capacity-itl',
      title: 'Capacity: ITL p50 and p99 vs concurrency',
      xLabel: 'concurrent streams',
      yLabel: 'inter-token latency (ms)',
      xScale: 'log2',
      series: latencySeries(cols, 'itlMs', DEPENDS.itl),
    }),
    'Gaps between tokens over all streams of the level. A burst-delivered stream shows near-zero gaps: flagged, not a decode rate.',
  );
  add(
    plotSvg({
      id: 'capacity-goodput',
      title: 'Capacity: goodput vs request rate',
      xLabel: 'offered request rate (req/s)',
      yLabel: 'goodput (req/s within the SLO)',
      // One series per arrival process: constant, Poisson and gamma runs at the same rate are different experiments.
      series: cols.flatMap((c) => {
        const byArrival = new Map<string, CapacityLevel[]>();
        for (const l of rates(c.capacity)) {
          const how = l.arrival === 'gamma' ? `gamma ${fmtNum(l.burstiness)}` : (l.arrival ?? 'constant');
          byArrival.set(how, [...(byArrival.get(how) ?? []), l]);
        }
        return [...byArrival].map(([how, ls]) => ({
          name: `${c.label} ${how}`,
          points: ls.flatMap((l) =>
            point(
              l,
              l.ratePerS!,
              l.goodput!.ratePerS,
              DEPENDS.goodput,
              `${fmtNum(l.goodput!.fraction * 100)} % of sent`,
            ),
          ),
        }));
      }),
    }),
    'Requests per second that met the SLO the user gave, at each offered rate (constant, or seeded Poisson or gamma arrivals).',
  );
  return (
    `<section id="capacity"><h2>Capacity</h2><p class="muted small">From results.json <code>capacity</code>: a concurrency sweep and request-rate runs, each level’s figures certified by the checks on that level’s own streams (real streaming, usage consistent with the stream, server timings, our client’s headroom).` +
    ` A merged table (several load machines) plots its merged levels; each machine’s own levels are in its table.</p>` +
    `<div class="plots">${figures.join('')}</div>${cols.map(tableOf).join('')}</section>`
  );
}
