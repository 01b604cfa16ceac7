// The capacity table as text: one row per level (streams or request rate), the figures that matter to someone sizing
// a server, a `!` beside every flagged figure and the reasons under the table; then the same levels in the terms of
// `vllm bench serve` (one column per level, one row per figure, named as vLLM's result JSON names it: capacity.csv
// and capacity.json hold the same), a percentile from too few requests shown as the maximum it is. Used by the
// console reporter and by the capacity.sweep check's message; plain text, no colour. peerTable() is the HTML's too.
import { MIN_SAMPLES } from '../lib/capacity/level.ts';
import { COLUMN_FIGURES, levelName, type PeerRow, peerRow } from '../lib/capacity/peer-columns.ts';
import { flagReason } from '../lib/capacity/read.ts';
import type { CapacityLevel, CapacityTable, Percentiles } from '../lib/capacity/types.ts';

const n = (x: number | null | undefined, digits = 1) =>
  x === null || x === undefined || !Number.isFinite(x) ? '-' : Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(digits);

function flagged(l: CapacityLevel, figure: string): string {
  return l.flags.some((f) => f.figure === figure || f.figure === 'level') ? '!' : '';
}

export function capacityLines(t: CapacityTable): string[] {
  const head = [
    'level',
    'sent',
    'ok',
    'err',
    't/o',
    'agg tok/s',
    'tok/s/stream p50',
    'TTFT p50/p99 ms',
    'ITL p50/p99 ms',
    'e2e p50/p99 ms',
    'out usage/streamed',
    'goodput/s',
    'client',
  ];
  const rows = t.levels.map((l) => [
    `${levelName(l)}${t.saturation && l.mode === 'concurrency' && l.concurrency === t.saturation.concurrency ? ' *' : ''}`,
    String(l.sent),
    String(l.completed),
    String(l.errored),
    String(l.timedOut),
    `${n(l.aggregateTps)}${flagged(l, 'aggregateTps')}`,
    `${n(l.tpsPerStream.p50)}${flagged(l, 'tpsPerStream')}`,
    `${n(l.ttftMs.p50)}/${n(l.ttftMs.p99)}${flagged(l, 'ttft')}`,
    `${n(l.itlMs.p50, 2)}/${n(l.itlMs.p99, 2)}${flagged(l, 'itl')}`,
    `${n(l.e2eMs.p50)}/${n(l.e2eMs.p99)}`,
    `${l.outputTokens ?? '-'}/${l.streamedTokens}${flagged(l, 'usage')}`,
    l.goodput ? n(l.goodput.ratePerS, 2) : '-',
    `${l.client.clientBound ? 'BOUND ' : ''}${n(l.client.cpuUsPerEvent, 0)} µs/ev, lag p99 ${n(l.client.loopLagP99Ms)} ms`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const w = t.workload;
  const out = [
    `Capacity (${w.kind === 'synthetic' ? `synthetic prompts ${w.inputTokens} tokens in, ${w.outputTokens} out` : `${w.format} dataset ${w.file}, ${w.prompts} prompts`}${t.slo ? `; SLO ${sloText(t)}` : ''}):`,
    line(head),
    ...rows.map(line),
  ];
  out.push(
    t.saturation
      ? `* saturation at ${t.saturation.concurrency} streams, ${n(t.saturation.aggregateTps)} tok/s: ${t.saturation.why}`
      : 'no saturation point found (the aggregate still rose at the last level measured)',
  );
  for (const note of t.notes ?? []) out.push(`note: ${note}`);
  for (const l of t.levels) for (const f of l.flags) out.push(`! ${levelName(l)}: ${f.reason}`);
  return [...out, '', ...peerLines(t)];
}

/** One figure of one level: its text, the reason it is flagged, whether it is a percentile of too few samples. */
export interface PeerCell {
  text: string;
  flagged?: string;
  /** The samples behind a percentile from too few of them: it lies between their two largest, "~max of n". */
  maxOf?: number;
}

interface PeerRowSpec {
  /** The column name of capacity.csv / capacity.json (vLLM's where the quantity is the same). */
  key: string;
  unit?: string;
  cell: (l: CapacityLevel, r: PeerRow) => PeerCell;
}

const LATENCY_FIELDS = { ttft: 'ttftMs', tpot: 'tpotMs', itl: 'itlMs', e2el: 'e2eMs' } as const;

/** A figure as the table prints it: whole numbers as they are, others to 2 decimals below 10, 1 below 100, then none. */
function figure(x: unknown, digits?: number): string {
  if (typeof x !== 'number') return x === null || x === undefined ? '-' : String(x);
  return Number.isInteger(x) ? String(x) : n(x, digits ?? (Math.abs(x) < 10 ? 2 : 1));
}

function flaggedCell(l: CapacityLevel, text: string, group: string): PeerCell {
  const flagged = flagReason(l, COLUMN_FIGURES[group] ?? []);
  return { text, ...(flagged ? { flagged } : {}) };
}

function latencyRows(name: keyof typeof LATENCY_FIELDS): PeerRowSpec[] {
  const stats = [
    ['mean', 'mean'],
    ['median', 'p50'],
    ['std', 'std'],
    ['p90', 'p90'],
    ['p99', 'p99'],
  ] as const;
  return stats.map(([prefix, field]) => ({
    key: `${prefix}_${name}_ms`,
    cell: (l) => {
      const p: Percentiles | undefined = l[LATENCY_FIELDS[name]];
      const c = flaggedCell(l, figure(p?.[field]), name);
      const tooFew = (field === 'p90' || field === 'p99') && p?.maxOnly?.includes(field) && p.n !== undefined;
      return tooFew ? { ...c, maxOf: p!.n! } : c;
    },
  }));
}

const PEER_ROWS: PeerRowSpec[] = [
  { key: 'max_concurrency', cell: (_, r) => ({ text: figure(r.max_concurrency) }) },
  { key: 'request_rate', unit: 'req/s', cell: (_, r) => ({ text: figure(r.request_rate) }) },
  { key: 'burstiness', cell: (_, r) => ({ text: figure(r.burstiness) }) },
  { key: 'completed', cell: (_, r) => ({ text: `${r.completed} of ${r.num_prompts}` }) },
  { key: 'duration', unit: 's', cell: (_, r) => ({ text: figure(r.duration) }) },
  ...(['request_throughput', 'output_throughput', 'input_throughput', 'total_token_throughput'] as const).map(
    (key): PeerRowSpec => ({
      key,
      unit: key === 'request_throughput' ? 'req/s' : 'tok/s',
      cell: (l, r) => flaggedCell(l, figure(r[key]), key),
    }),
  ),
  ...latencyRows('ttft'),
  ...latencyRows('tpot'),
  ...latencyRows('itl'),
  ...latencyRows('e2el'),
  {
    key: 'n ttft / tpot / itl / e2el',
    cell: (_, r) => ({ text: [r.n_ttft, r.n_tpot, r.n_itl, r.n_e2el].map((x) => figure(x, 0)).join(' / ') }),
  },
];

/** The levels in vLLM's terms: a column per level (its name, `*` on the saturation level), a row per figure. */
export function peerTable(t: CapacityTable): {
  levels: string[];
  rows: Array<{ key: string; unit?: string; cells: PeerCell[] }>;
} {
  const rows = t.levels.map((l) => peerRow(l, t));
  return {
    levels: t.levels.map((l, i) => `${levelName(l)}${rows[i]!.saturation ? ' *' : ''}`),
    rows: PEER_ROWS.map((spec) => ({
      key: spec.key,
      ...(spec.unit ? { unit: spec.unit } : {}),
      cells: t.levels.map((l, i) => spec.cell(l, rows[i]!)),
    })),
  };
}

/** A cell as text: `!` when flagged, "(~max of n)" for a percentile of too few samples. */
const peerCellText = (c: PeerCell) =>
  `${c.text}${c.maxOf !== undefined ? ` (~max of ${c.maxOf})` : ''}${c.flagged ? '!' : ''}`;

/** The peer table as text lines, with what `!` and "~max of" mean. */
export function peerLines(t: CapacityTable): string[] {
  if (!t.levels.length) return [];
  const { levels, rows } = peerTable(t);
  const head = ['', ...levels];
  const body = rows.map((r) => [`${r.key}${r.unit ? ` (${r.unit})` : ''}`, ...r.cells.map(peerCellText)]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const tooFew = rows.some((r) => r.cells.some((c) => c.maxOf !== undefined));
  return [
    "In vllm bench serve's terms (capacity.csv and capacity.json beside results.json; a sweep level is its run at request_rate inf and max_concurrency = the streams; ITL over all gaps, the others over requests):",
    line(head),
    ...body.map(line),
    ...(rows.some((r) => r.cells.some((c) => c.flagged)) ? ['! flagged: the reasons are listed above the table'] : []),
    ...(tooFew
      ? [
          `(~max of n): a percentile from too few requests to have one above it lies between the two largest of them, the maximum rather than a percentile: a p99 needs at least ${MIN_SAMPLES.p99.value} requests, a p90 ${MIN_SAMPLES.p90.value} (--num-prompts ${MIN_SAMPLES.p99.value})`,
        ]
      : []),
  ];
}

function sloText(t: CapacityTable): string {
  const s = t.slo!;
  return [
    s.ttftP99Ms !== undefined ? `TTFT ≤ ${s.ttftP99Ms} ms` : '',
    s.itlP99Ms !== undefined ? `ITL p99 ≤ ${s.itlP99Ms} ms` : '',
    s.e2eP99Ms !== undefined ? `e2e ≤ ${s.e2eP99Ms} ms` : '',
  ]
    .filter(Boolean)
    .join(', ');
}
