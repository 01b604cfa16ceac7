// The capacity table as text: one row per level (streams or request rate), the figures that matter to someone sizing
// a server, a `!` beside every flagged figure and the reasons under the table. Used by the console reporter and by the
// capacity.sweep check's message; plain text, no colour.
import type { CapacityLevel, CapacityTable } from '../lib/capacity/types.ts';

const n = (x: number | null | undefined, digits = 1) =>
  x === null || x === undefined || !Number.isFinite(x) ? '-' : Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(digits);

function flagged(l: CapacityLevel, figure: string): string {
  return l.flags.some((f) => f.figure === figure || f.figure === 'level') ? '!' : '';
}

function levelName(l: CapacityLevel): string {
  return l.mode === 'concurrency' ? `${l.concurrency} streams` : `${n(l.ratePerS)} req/s ${l.arrival}`;
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
      : 'no saturation point found (the aggregate kept rising to the last level measured)',
  );
  for (const l of t.levels) for (const f of l.flags) out.push(`! ${levelName(l)}: ${f.reason}`);
  return out;
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
