// The serving concurrency measured when a server does not report it (lib/measure/serving.ts): judged only when every
// repetition finds the same count and the waiting stream really waited for a running one's end.
import { expect, test } from 'vitest';
import { judgeServing, type ServingRep } from '../lib/exchange/serving.ts';

const queued = (concurrency: number, waitedMs = 1600, afterEndMs = 15): ServingRep => ({
  concurrency,
  waitedMs,
  untilEndMs: waitedMs - afterEndMs,
  afterEndMs,
});

test('two repetitions that agree measure the count, saying "measured" with the figures', () => {
  const one = judgeServing([queued(1), queued(1, 1700, 20)], 30);
  expect(one.concurrency).toBe(1);
  expect(one.how).toContain("measured (not reported): the server serves one at a time: a second stream's first token");
  expect(one.how).toContain('in 2 of 2 repetitions');
  expect(judgeServing([queued(4), queued(4)], 30).how).toContain('the server serves 4 at once');
});

test('no count from repetitions that disagree, from one alone, or from a broken one', () => {
  expect(judgeServing([queued(1), queued(2)], 30).concurrency).toBeUndefined();
  expect(judgeServing([queued(1)], 30).concurrency).toBeUndefined();
  const broken = judgeServing([{ broken: 'stream 2 got no token (HTTP 503): refused, not queued' }], 30);
  expect(broken).toEqual({
    how: 'serving concurrency not measured: stream 2 got no token (HTTP 503): refused, not queued',
  });
});

test('a stream that barely waited, or started long after the end, is not a full server', () => {
  // 50 ms of waiting with a 30 ms lone TTFT: the running stream happened to end just then.
  expect(judgeServing([queued(1, 50, 5), queued(1)], 30).how).toContain('not measured');
  // First token 3 s after the end it waited for: a slow server, not a queue.
  expect(judgeServing([queued(1, 4000, 3000), queued(1)], 30).how).toContain('not measured');
});

test('every stream served while the others ran: more than the ladder holds, not a count', () => {
  const more = judgeServing([{ allServed: 9 }], 30);
  expect(more.concurrency).toBeUndefined();
  expect(more.how).toContain('more than 8');
});
