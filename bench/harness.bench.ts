// Benchmarks of the instrument: decoding must never be what limits a measurement, and the barrier
// must release N requests within a small spread.
import { bench, describe } from 'vitest';
import { decodeSse } from '../lib/sse.ts';
import { openaiChatEvents } from '../lib/stream-events.ts';
import { requestMetrics } from '../lib/metrics.ts';
import { releaseTogether } from '../lib/barrier.ts';
import type { BodyRead } from '../lib/types.ts';

const enc = new TextEncoder();
const reads: BodyRead[] = [];
for (let i = 0; i < 512; i++) {
  const json = JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: ` tok${i} café` }, finish_reason: null }] });
  reads.push({ t: i * 8, bytes: enc.encode(`data: ${json}\n\n`) });
}
reads.push({ t: 4100, bytes: enc.encode('data: [DONE]\n\n') });

describe('decoding a 512-token stream', () => {
  bench('decodeSse + openaiChatEvents + requestMetrics', () => {
    const ev = openaiChatEvents(decodeSse(reads));
    requestMetrics({ tEnd: 4100, tokens: ev.tokens });
  });
});

const spreads: number[] = [];
describe('barrier release spread (32 tasks)', () => {
  bench(
    'releaseTogether(32)',
    async () => {
      const r = await releaseTogether(Array.from({ length: 32 }, () => async () => performance.now()), { armDelayMs: 1 });
      spreads.push(Math.max(...r.startTimes) - Math.min(...r.startTimes));
    },
    {
      iterations: 50,
      teardown: () => {
        const s = [...spreads].sort((a, b) => a - b);
        if (s.length) console.log(`barrier spread over ${s.length} runs: p50 ${s[Math.floor(s.length / 2)]!.toFixed(3)} ms, max ${s[s.length - 1]!.toFixed(3)} ms`);
      },
    },
  );
});
