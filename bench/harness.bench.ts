// Benchmarks of the instrument (Vitest bench): decoding must never be what limits a measurement, and the barrier
// must release N requests within a small spread. bench/fidelity.ts (run after these by `npm run bench`) measures
// the timestamps' fidelity end to end.
import { bench, describe } from 'vitest';
import { releaseTogether } from '../lib/measure/barrier.ts';
import { processStream, streamReads } from './throughput.ts';

// The per-event figures with their target (events/s per core, CPU time) are printed by bench/throughput.ts.
const reads = streamReads(512);
describe('recording and decoding a 512-token stream (live path: recorder, SSE, JSON, adapter, metrics)', () => {
  bench('processStream(512 events)', () => {
    processStream(reads);
  });
});

const spreads: number[] = [];
describe('barrier release spread (32 tasks)', () => {
  bench(
    'releaseTogether(32)',
    async () => {
      const r = await releaseTogether(
        Array.from({ length: 32 }, () => async () => performance.now()),
        { armDelayMs: 1 },
      );
      spreads.push(Math.max(...r.startTimes) - Math.min(...r.startTimes));
    },
    {
      iterations: 50,
      teardown: () => {
        const s = [...spreads].sort((a, b) => a - b);
        if (s.length)
          console.log(
            `barrier spread over ${s.length} runs: p50 ${s[Math.floor(s.length / 2)]!.toFixed(3)} ms, max ${s[s.length - 1]!.toFixed(3)} ms`,
          );
      },
    },
  );
});
