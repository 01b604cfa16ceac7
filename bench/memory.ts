// Memory per recorded stream (run with --expose-gc): 32 streams of 50,000 token events each, every read through the
// recorder's bookkeeping (KeptReads) and the live decode (StreamDecode), exactly as send() does, each read a fresh
// Buffer as a socket gives it; the Exchanges are kept, as a check keeps its recordings until it has graded them.
//   node --expose-gc --import tsx bench/memory.ts [streams] [tokens]

import { type Exchange, StreamDecode } from '../lib/exchange/exchange.ts';
import { KeptReads, MAX_RECORDED_BYTES } from '../lib/http/recorder.ts';
import { recordingCaps } from '../lib/http/transport.ts';
import type { Recording } from '../lib/model/types.ts';
import { chunkBytes } from './throughput.ts';

const streams = Number(process.argv[2] ?? 32);
const tokens = Number(process.argv[3] ?? 50_000);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

function used(): number {
  gc!();
  gc!();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

const control = { progress() {}, abort() {}, overflow() {} };
const enc = new TextEncoder();
const tail = enc.encode(
  `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 12, completion_tokens: tokens, total_tokens: tokens + 12 } })}\n\ndata: [DONE]\n\n`,
);

function recordOne(): Exchange {
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
  let bytes = 0;
  for (let i = 0; i <= tokens; i++) {
    const b = Buffer.from(i < tokens ? chunkBytes(i) : tail); // a fresh buffer per read, as from a socket
    bytes += b.length;
    const t = 50 + i * 10;
    onRead(t, b, control, kept.keep(t, b));
  }
  rec.tEnd = 50 + tokens * 10;
  rec.truncated = kept.truncated;
  kept.finish(rec);
  const x = decode.finish(rec, true);
  if (x.metrics?.countedTokenEvents !== tokens || x.events?.usage?.completion_tokens !== tokens)
    throw new Error(`stream decoded wrong: ${x.metrics?.countedTokenEvents} token events`);
  wireBytes = bytes;
  return x;
}

let wireBytes = 0;
const before = used();
const kept: Exchange[] = [];
const t0 = performance.now();
for (let i = 0; i < streams; i++) kept.push(recordOne());
const ms = performance.now() - t0;
const after = used();
const perStream = (after - before) / streams;
process.stdout.write(
  `${JSON.stringify({
    streams,
    tokens,
    wireBytesPerStream: wireBytes,
    bytesPerStream: Math.round(perStream),
    bytesPerEvent: perStream / tokens,
    totalMiB: (after - before) / 2 ** 20,
    retainedRawBytesCap: MAX_RECORDED_BYTES,
    truncated: kept[0]!.rec.truncated,
    retainedEvents: kept[0]!.sse!.events.length,
    tokenEvents: kept[0]!.events!.tokens.length,
    cpuMs: ms,
  })}\n`,
);
