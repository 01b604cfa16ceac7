// parallel.no-starvation at any speed: a stream is "one burst" only against the server's own decode rate.
import { describe, expect, test } from 'vitest';
import {
  arrivedInBurst,
  batchingFromSpeedup,
  gradeNoStarvation,
  refusedParallel,
  type StarvationStream,
} from '../lib/grading/parallel.ts';
import { pass, warn } from '../lib/model/verdict.ts';

const stream = (first: number, tokens: number, msPerToken: number): StarvationStream => ({
  status: 200,
  firstTokenAbs: first,
  lastTokenAbs: first + (tokens - 1) * msPerToken,
  tokens,
});

describe("bursts against the server's own rate", () => {
  test('an honest 3000 tok/s stream (24 tokens in 7.7 ms) is a burst against the old 0.5 ms-per-event rule, not against its rate', () => {
    const s = stream(0, 24, 1 / 3);
    expect(arrivedInBurst(s)).toBe(true);
    expect(arrivedInBurst(s, 3000)).toBe(false);
    // A flush from a 125 tok/s server is a burst against its rate.
    expect(arrivedInBurst(stream(0, 24, 0.01), 125)).toBe(true);
  });

  test('at 3000 tok/s, serialisation is still seen (and a correct server passes) when bursts are judged against the rate', () => {
    const together = [0, 1, 2, 3].map((i) => stream(i * 0.2, 24, 1 / 3));
    const serial = [0, 1, 2, 3].map((i) => stream(i * 8, 24, 1 / 3));
    const th = { minReps: 2, starvedLoopP99Ms: 100 };
    expect(
      gradeNoStarvation({ reps: [together, together], slots: 4, referenceTps: 3000, thresholds: th }).outcome,
    ).toBe('pass');
    expect(gradeNoStarvation({ reps: [serial, serial], slots: 4, referenceTps: 3000, thresholds: th }).outcome).toBe(
      'fail',
    );
    // Without the rate every 3000 tok/s stream looks like a burst: no evidence either way.
    expect(gradeNoStarvation({ reps: [serial, serial], slots: 4, thresholds: th }).outcome).toBe('inconclusive');
  });
});

describe('parallel.speedup-2 beside its grade', () => {
  test('refused parallel requests leave no speed to measure, each named with its status and Retry-After', () => {
    const v = refusedParallel([{ label: 'pair 1, request 2', status: 503, retryAfter: '1' }], 10);
    expect(v.outcome).toBe('inconclusive');
    expect(v.message).toBe(
      'the server refused 1 of 10 parallel request(s) (pair 1, request 2: HTTP 503, Retry-After 1), so no parallel speed can be measured',
    );
  });

  test('only a pass at the batching band counts as batching for the multi-slot checks', () => {
    const at = (estimate: number) => ({ speedup: { estimate, low: estimate - 0.2 } });
    expect(batchingFromSpeedup(pass('batching works', at(1.9)), 1.3)).toEqual({
      concurrency: 2,
      speedup: 1.9,
      low: 1.7,
      source: 'batching measured by parallel.speedup-2 (1.90x at 2 concurrent)',
    });
    expect(batchingFromSpeedup(pass('informational: serialised', at(1.0)), 1.3)).toBe(null);
    expect(batchingFromSpeedup(warn('no effective batching', at(1.9)), 1.3)).toBe(null);
  });
});
