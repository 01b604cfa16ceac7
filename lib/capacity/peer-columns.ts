// The capacity table in the columns of `vllm bench serve`'s result JSON (docs/capacity.md "Columns"): one row per level
// (a sweep level is vLLM's run at --request-rate inf with --max-concurrency = its streams), each figure under vLLM's
// name where the quantity is the same (request_throughput, output_throughput, mean_ttft_ms, p99_itl_ms, …), then ours:
// the sample count behind each distribution, whether its p90/p99 is the maximum (too few samples to be a percentile),
// and the certification beside every figure (burst delivery, usage, server timings, hardware bound, client-bound, and
// which columns a flag touches). Pure: written as capacity.csv and capacity.json next to results.json.
import { fmt } from '../model/verdict.ts';
import { serverLevels } from './merge.ts';
import { flagReason } from './read.ts';
import type { CapacityLevel, CapacityTable, FlagKind, Percentiles } from './types.ts';

/** The latency figures, by vLLM's names (`mean_<name>_ms` …), and the level's field each comes from. */
const LATENCIES = [
  ['ttft', 'ttftMs'],
  ['tpot', 'tpotMs'],
  ['itl', 'itlMs'],
  ['e2el', 'e2eMs'],
] as const;
type Latency = (typeof LATENCIES)[number][0];

/**
 * The flagged figures (certify.ts) each column depends on: a flag naming one of them, the whole level, or a
 * client-bound level marks the column. Output token counts come from usage where it is sent, so a usage flag touches
 * every figure counted in tokens.
 */
export const COLUMN_FIGURES: Record<string, readonly string[]> = {
  ttft: ['ttft'],
  tpot: ['tpot', 'usage'],
  itl: ['itl'],
  e2el: ['e2e'],
  total_output_tokens: ['usage'],
  request_throughput: [],
  request_goodput: ['ttft', 'itl', 'e2e', 'goodput'],
  output_throughput: ['aggregateTps', 'usage'],
  total_token_throughput: ['aggregateTps', 'usage'],
  input_throughput: [],
  aggregate_tps: ['aggregateTps', 'usage'],
};

type Cell = string | number | boolean | null;
export type PeerRow = Record<string, Cell>;

const num = (x: number | null | undefined): number | null =>
  x === null || x === undefined || !Number.isFinite(x) ? null : x;

/** vLLM's request_rate: "inf" for every request at once (a sweep level: a closed loop of --max-concurrency). */
function requestRate(l: CapacityLevel): Cell {
  return l.mode === 'concurrency' || l.arrival === 'at-once' || l.ratePerS === undefined ? 'inf' : l.ratePerS;
}

/** vLLM's burstiness: the gamma shape (1 Poisson), "inf" for constant spacing; 1 (vLLM's default) where unused. */
function burstiness(l: CapacityLevel): Cell {
  if (l.mode === 'rate' && (l.arrival === 'constant' || (l.arrival === undefined && l.burstiness === undefined)))
    return 'inf';
  return l.burstiness ?? 1;
}

/** Whether a flag of this kind is on the level: true / false; null when the check could not apply. */
const has = (l: CapacityLevel, k: FlagKind) => l.flags.some((f) => f.kind === k);

function delivery(l: CapacityLevel): string {
  if (has(l, 'burst')) return 'burst';
  if (has(l, 'not-judged')) return 'not judged';
  if (has(l, 'unserved')) return 'nothing served';
  return 'streamed';
}

function latencyCells(name: Latency, p: Percentiles | undefined): PeerRow {
  return {
    [`mean_${name}_ms`]: num(p?.mean),
    [`median_${name}_ms`]: num(p?.p50),
    [`std_${name}_ms`]: num(p?.std),
    [`p90_${name}_ms`]: num(p?.p90),
    [`p99_${name}_ms`]: num(p?.p99),
  };
}

function countCells(name: Latency, p: Percentiles | undefined): PeerRow {
  const known = p?.n !== undefined;
  return {
    [`n_${name}`]: p?.n ?? null,
    [`p90_${name}_is_max`]: known ? (p!.maxOnly ?? []).includes('p90') : null,
    [`p99_${name}_is_max`]: known ? (p!.maxOnly ?? []).includes('p99') : null,
  };
}

/** One level as a row: vLLM's columns first, then ours. */
export function peerRow(l: CapacityLevel, t: CapacityTable): PeerRow {
  const flagged = Object.keys(COLUMN_FIGURES).filter((c) => flagReason(l, COLUMN_FIGURES[c]!) !== undefined);
  const saturation =
    l.mode === 'concurrency' && t.saturation?.concurrency === l.concurrency && serverLevels(t).includes(l);
  return {
    level: levelName(l),
    mode: l.mode,
    machine: l.machine ?? null,
    max_concurrency: l.mode === 'concurrency' ? (l.concurrency ?? null) : (l.maxConcurrency ?? null),
    request_rate: requestRate(l),
    burstiness: burstiness(l),
    num_prompts: l.sent,
    duration: num(l.durationS),
    completed: l.completed,
    failed: l.errored + l.timedOut,
    total_input_tokens: l.inputTokens,
    total_output_tokens: l.totalOutputTokens ?? null,
    request_throughput: num(l.requestThroughput),
    request_goodput: num(l.goodput?.ratePerS),
    output_throughput: num(l.outputThroughput),
    total_token_throughput: num(l.totalTokenThroughput),
    input_throughput: num(l.inputThroughput),
    max_concurrent_requests: l.inFlight ?? null,
    ...Object.assign({}, ...LATENCIES.map(([name, field]) => latencyCells(name, l[field]))),
    ...Object.assign({}, ...LATENCIES.map(([name, field]) => countCells(name, l[field]))),
    aggregate_tps: l.aggregateTps,
    saturation,
    errored: l.errored,
    timed_out: l.timedOut,
    usage_output_tokens: l.outputTokens,
    streamed_tokens: l.streamedTokens,
    certified: l.flags.length === 0 && !l.client.clientBound,
    delivery: delivery(l),
    usage_consistent: !has(l, 'usage'),
    server_timings_agree: !has(l, 'timings'),
    beyond_hardware: l.physicalBoundTps === undefined ? null : has(l, 'hardware'),
    hardware_bound_tps: num(l.physicalBoundTps),
    client_bound: l.client.clientBound,
    client_cpu_us_per_event: num(l.client.cpuUsPerEvent),
    client_loop_lag_p99_ms: num(l.client.loopLagP99Ms),
    flagged_columns: flagged.join(' '),
    flag_reasons: [
      ...l.flags.map((f) => `${f.figure}: ${f.reason}`),
      ...(l.client.clientBound ? [`client-bound: ${l.client.reason ?? 'our client had no headroom'}`] : []),
    ].join(' | '),
  };
}

/** A level's name in the console, the HTML report, the checks' messages and the CSV: "4 streams", "2.00 req/s
 *  poisson", "2.00 req/s gamma 0.50", "rate inf" (every request at once). */
export function levelName(
  l: Pick<CapacityLevel, 'mode' | 'concurrency' | 'ratePerS' | 'arrival' | 'burstiness'>,
): string {
  if (l.mode === 'concurrency') return `${l.concurrency} streams`;
  if (l.arrival === 'at-once' || l.ratePerS === undefined) return 'rate inf';
  return `${fmt(l.ratePerS)} req/s ${l.arrival === 'gamma' ? `gamma ${fmt(l.burstiness)}` : (l.arrival ?? 'constant')}`;
}

export function peerRows(t: CapacityTable): PeerRow[] {
  return t.levels.map((l) => peerRow(l, t));
}

/** A CSV cell (RFC 4180): quoted when it holds a comma, a quote, a line break or leading/trailing space. */
export function csvCell(v: Cell): string {
  if (v === null) return '';
  const s = typeof v === 'number' ? String(Number(v.toPrecision(10))) : String(v);
  return /[",\r\n]|^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** Rows as CSV: the header is the first row's keys (every row has the same), CRLF line ends as RFC 4180 says. */
export function toCsv(rows: readonly PeerRow[]): string {
  if (!rows.length) return '';
  const keys = Object.keys(rows[0]!);
  return `${[keys.map(csvCell).join(','), ...rows.map((r) => keys.map((k) => csvCell(r[k] ?? null)).join(','))].join('\r\n')}\r\n`;
}

/** capacity.json: the workload and the saturation point, then one vLLM-named object per level in `runs`. */
export function capacityJson(t: CapacityTable, meta: { date?: string; model?: string }): Record<string, unknown> {
  return {
    about:
      'one object per capacity level; keys named as in vllm bench serve result JSON where the quantity is the same (docs/capacity.md "Columns")',
    ...(meta.date ? { date: meta.date } : {}),
    ...(meta.model ? { model_id: meta.model } : {}),
    backend: 'openai-chat',
    workload: t.workload,
    ...(t.slo ? { slo: t.slo } : {}),
    ...(t.saturation ? { saturation: t.saturation } : {}),
    ...(t.notes?.length ? { notes: t.notes } : {}),
    runs: peerRows(t),
  };
}
