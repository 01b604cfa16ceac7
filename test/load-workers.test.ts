// Load generation over worker threads (lib/measure/load-workers.ts): one clock for every worker, verified against a
// common event and against the stamping server's send times; streams split and started together.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { clientBound, runLoad, share, type WorkerCost, workerSkew } from '../lib/exchange/load-workers.ts';
import { type StampServer, startStampServer } from '../lib/run/preflight.ts';

describe('worker clocks', () => {
  test('two workers see a common event after it happened and within a few ms of it, on the converted clock; and raw performance.now() agrees within a process', async () => {
    const s = await workerSkew(2, 20);
    for (let w = 0; w < 2; w++) {
      const slack = s.uncertaintyMs[w]! + s.mainUncertaintyMs + 0.01;
      // Never before the event (the clocks agree); at least once soon after it (wake-up latency, a loaded machine).
      expect(s.minDelayMs[w]).toBeGreaterThanOrEqual(-slack);
      expect(s.minDelayMs[w]).toBeLessThan(5);
      for (const d of s.delaysMs[w]!) expect(d).toBeGreaterThanOrEqual(-slack);
      // Node gives the threads of one process one time origin: the raw readings agree too. (Against the server's
      // stamps, in another process, only the converted times do: the test below.)
      expect(Math.abs(s.rawMinDelayMs[w]! - s.minDelayMs[w]!)).toBeLessThan(slack + 0.05);
    }
  });
});

test('streams are dealt round-robin, every stream to exactly one worker', async () => {
  expect([0, 1, 2].map((w) => share(8, 3, w))).toEqual([
    [0, 3, 6],
    [1, 4, 7],
    [2, 5],
  ]);
  await expect(() =>
    runLoad({ baseUrl: 'http://127.0.0.1:1', model: 'm', streams: 1, workers: 2, maxTokens: 1 }),
  ).rejects.toThrow(/workers ≤ streams/);
});

describe('runLoad against the stamping server', () => {
  let server: StampServer;
  beforeAll(async () => {
    server = await startStampServer({ slots: 8, cadenceMs: 10 });
  });
  afterAll(() => server?.stop());

  test('8 streams over 2 workers: all complete, start at the common instant, and every stamped event arrives after the server sent it', async () => {
    const r = await runLoad({
      baseUrl: server.url,
      model: 'reference-model',
      streams: 8,
      workers: 2,
      maxTokens: 30,
      warmStreams: 2,
    });
    expect(r.requests.map((q) => q.stream)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(new Set(r.requests.map((q) => q.worker))).toEqual(new Set([0, 1]));
    for (const q of r.requests) {
      expect(q.failure).toBeUndefined();
      expect(q.status).toBe(200);
      expect(q.tokenMs).toHaveLength(30);
      expect(q.startMs).toBeGreaterThanOrEqual(r.startAtMs - 0.01);
      expect(q.stamps.length).toBe(q.events);
      // The server's hrtime stamps and our converted times are one clock: no event arrives before it was sent.
      for (const s of q.stamps) expect(s.arriveMs - s.sendMs).toBeGreaterThan(-0.05);
    }
    for (const w of r.workers) {
      expect(w.streams).toBe(4);
      expect(w.events).toBe(4 * 33); // role, 30 tokens, finish, [DONE]
      expect(w.wallMs).toBeGreaterThan(0);
    }
  });
});

describe('a level is client-bound when a worker could not keep up', () => {
  const w = (o: Partial<WorkerCost>): WorkerCost => ({
    worker: 0,
    streams: 16,
    events: 1000,
    threadCpuMs: 200,
    wallMs: 1000,
    loopDelayP99Ms: 1.2,
    loopDelayMaxMs: 3,
    clockUncertaintyMs: 0.0001,
    ...o,
  });
  test('headroom on every worker: not client-bound', () => {
    expect(clientBound([w({}), w({ worker: 1, threadCpuMs: 500 })])).toEqual({ bound: false, reasons: [] });
  });
  test('a saturated thread or a stalling loop makes it client-bound, naming the worker and the figure', () => {
    expect(clientBound([w({}), w({ worker: 1, threadCpuMs: 930 })]).reasons).toEqual([
      'worker 1: its thread was 93 % busy (bound 80 %)',
    ]);
    expect(clientBound([w({ loopDelayP99Ms: 12.5 })]).reasons).toEqual([
      'worker 0: event-loop delay p99 12.5 ms (bound 5 ms)',
    ]);
  });
});
