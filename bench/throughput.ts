// In-memory throughput of the harness's per-event work (tinybench): everything the recording path does with a
// stream's bytes except the network — the recorder's bookkeeping per read, the live token detector, then the decode
// the checks read (SSE decoding, JSON, flavour adapter, metrics). Target: ≥ 500,000 events/s on one core.
//   node --import tsx bench/throughput.ts [--json]
import { Bench } from 'tinybench';
import { StreamDecode } from '../lib/exchange/exchange.ts';
import { KeptReads, MAX_RECORDED_BYTES } from '../lib/http/recorder.ts';
import { recordingCaps } from '../lib/http/transport.ts';
import type { BodyRead, Recording } from '../lib/model/types.ts';

export const TARGET_EVENTS_PER_S = 500_000;

const enc = new TextEncoder();
const WORDS = [' the', ' river', ' café', ' 東京', ' crosses', ' city', ' with', ' light'];

/** A chat-completion chunk of about 150 bytes, as llama.cpp and vLLM send them. */
export function chunkBytes(i: number): Uint8Array {
  const json = JSON.stringify({
    id: 'chatcmpl-7f3a',
    object: 'chat.completion.chunk',
    created: 1733000000,
    model: 'qwen3-30b',
    choices: [{ index: 0, delta: { content: WORDS[i % WORDS.length] }, finish_reason: null }],
  });
  return enc.encode(`data: ${json}\n\n`);
}

/** The reads of one recorded stream: `events` token chunks, one per read, then usage and [DONE]. */
export function streamReads(events: number, perRead = 1): BodyRead[] {
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < events; i++) chunks.push(chunkBytes(i));
  chunks.push(
    enc.encode(
      `data: ${JSON.stringify({ id: 'chatcmpl-7f3a', object: 'chat.completion.chunk', created: 1733000000, model: 'qwen3-30b', choices: [], usage: { prompt_tokens: 12, completion_tokens: events, total_tokens: events + 12 } })}\n\ndata: [DONE]\n\n`,
    ),
  );
  const reads: BodyRead[] = [];
  for (let i = 0; i < chunks.length; i += perRead) {
    const group = chunks.slice(i, i + perRead);
    reads.push({ t: 40 + i * 10, bytes: group.length === 1 ? group[0]! : Buffer.concat(group) });
  }
  return reads;
}

const control = { progress() {}, abort() {}, overflow() {} };

/** What the harness does with one stream's reads, minus the socket: the recorder's bookkeeping, the live decode. */
export function processStream(reads: readonly BodyRead[]): number {
  const rec: Recording = {
    method: 'POST',
    url: 'http://127.0.0.1/v1/chat/completions',
    t0Abs: 0,
    status: 200,
    headers: { 'content-type': 'text/event-stream' },
    reads: [],
    tEnd: 0,
    body: new Uint8Array(0),
    truncated: false,
  };
  const kept = new KeptReads(recordingCaps(MAX_RECORDED_BYTES)); // the recorder's own bookkeeping
  const decode = new StreamDecode('openai-chat', MAX_RECORDED_BYTES, true); // lazy, as send() decodes
  const onRead = decode.reader({});
  for (const r of reads) onRead(r.t, r.bytes, control, kept.keep(r.t, r.bytes));
  rec.tEnd = reads[reads.length - 1]!.t;
  rec.truncated = kept.truncated;
  kept.finish(rec);
  const x = decode.finish(rec, true);
  void x.events?.chunks; // the decode the checks read, built on first read
  return x.metrics?.countedTokenEvents ?? 0;
}

export interface ThroughputRow {
  name: string;
  eventsPerStream: number;
  bytesPerEvent: number;
  /** Median time per stream (ms) over the benchmark's samples. */
  p50MsPerStream: number;
  eventsPerSecond: number;
  usPerEvent: number;
  samples: number;
}

export async function runThroughput(): Promise<ThroughputRow[]> {
  const cases = [
    { name: 'one event per read (per-token writes)', reads: streamReads(1000, 1) },
    { name: '16 events per read (bursty / batched writes)', reads: streamReads(1000, 16) },
  ];
  // CPU time of this process, not wall time: on a shared machine the wall clock counts other people's work, and the
  // target is per core. (getrusage: all threads, so GC helper threads count too.)
  const cpuNow = () => {
    const c = process.cpuUsage();
    return (c.user + c.system) / 1000;
  };
  const bench = new Bench({ time: 1500, warmupTime: 300, now: cpuNow });
  for (const c of cases)
    bench.add(c.name, () => {
      processStream(c.reads);
    });
  // The machine's ceiling for any decoder that parses each event: JSON.parse of the same payloads, nothing else.
  const payloads = cases[0]!.reads
    .map((r) =>
      new TextDecoder()
        .decode(r.bytes)
        .split('\n\n')
        .filter((x) => x.startsWith('data: {'))
        .map((x) => x.slice(6)),
    )
    .flat();
  const ceiling = "reference: JSON.parse of each event's data alone (no decoder can beat it)";
  bench.add(ceiling, () => {
    for (const d of payloads) JSON.parse(d);
  });
  await bench.run();
  const rows = [...cases, { name: ceiling, reads: cases[0]!.reads }];
  return rows.map((c) => {
    const task = bench.getTask(c.name)!;
    const r = task.result;
    if (r.state !== 'completed')
      throw new Error(`benchmark ${c.name}: ${r.state}${'error' in r ? `: ${r.error}` : ''}`);
    const events = c.reads.reduce((n, rd) => n + (new TextDecoder().decode(rd.bytes).match(/\n\n/g)?.length ?? 0), 0);
    const bytes = c.reads.reduce((n, rd) => n + rd.bytes.length, 0);
    const p50 = r.latency.p50;
    return {
      name: c.name,
      eventsPerStream: events,
      bytesPerEvent: Math.round(bytes / events),
      p50MsPerStream: p50,
      eventsPerSecond: events / (p50 / 1000),
      usPerEvent: (p50 * 1000) / events,
      samples: r.latency.samplesCount,
    };
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const rows = await runThroughput();
  if (process.argv.includes('--json')) process.stdout.write(`${JSON.stringify(rows)}\n`);
  else
    for (const r of rows)
      console.log(
        `${r.name}: ${Math.round(r.eventsPerSecond).toLocaleString('en')} events/s (${r.usPerEvent.toFixed(2)} µs/event, ${r.bytesPerEvent} B/event, ${r.samples} samples); target ≥ ${TARGET_EVENTS_PER_S.toLocaleString('en')}`,
      );
}
