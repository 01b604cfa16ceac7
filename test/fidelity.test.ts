// The instrument's own fidelity: the clock conversion, stamped arrivals, the steady in-phase window, the client-lag
// allowance; the reference server's --stamp-send mode through real HTTP (harness and raw floor); the preflight; and a
// check made inconclusive by a measured client lag that could explain its figures.

import { type AddressInfo, createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { rawStream } from '../bench/floor-client.ts';
import { type ReferenceHandle, startReference } from '../fixtures/reference-server/spawn.ts';
import { grade, runCheck } from '../lib/check/check.ts';
import { StreamDecode } from '../lib/exchange/exchange.ts';
import { KeptReads } from '../lib/http/recorder.ts';
import {
  clientLag,
  describePreflight,
  lagSummary,
  monotonicOffset,
  type StampedArrival,
  sendTimeMs,
  stampedArrivals,
  stampedArrivalsInBytes,
  steadyWindow,
  stepMinima,
} from '../lib/measure/fidelity.ts';
import { freshMemory } from '../lib/model/memory.ts';
import type { BodyRead, FidelityPreflight, Recording } from '../lib/model/types.ts';
import { harnessStreams, runPreflight, type StampServer, startStampServer } from '../lib/run/preflight.ts';
import { checks as streamChecks } from '../suites/stream.ts';

const enc = new TextEncoder();
/** A 200 recording with nothing read yet (the test feeds its reads). */
const sseRecording = (tEnd: number): Recording => ({
  method: 'POST',
  url: 'x',
  t0Abs: 0,
  status: 200,
  headers: {},
  reads: [],
  tEnd,
  body: new Uint8Array(0),
  truncated: false,
});

describe('clock and stamps', () => {
  test('performance.now() + offset is process.hrtime in ms, within the measured bracket', () => {
    const { offsetMs, uncertaintyMs } = monotonicOffset();
    expect(uncertaintyMs).toBeGreaterThanOrEqual(0);
    const a = Number(process.hrtime.bigint()) / 1e6;
    const p = performance.now() + offsetMs;
    const b = Number(process.hrtime.bigint()) / 1e6;
    // p was read between a and b (up to the conversion error and double rounding).
    expect(p).toBeGreaterThanOrEqual(a - uncertaintyMs - 0.001);
    expect(p).toBeLessThanOrEqual(b + uncertaintyMs + 0.001);
  });

  test('an id of digits is a send time in ns; anything else is no stamp', () => {
    expect(sendTimeMs('1500000')).toBe(1.5);
    expect(sendTimeMs(undefined)).toBeUndefined();
    expect(sendTimeMs('12a')).toBeUndefined();
    expect(sendTimeMs('')).toBeUndefined();
  });

  test('arrivals, the window where every stream was live, and the lag summary', () => {
    // Stream 0 sends at 0..40 ms, stream 1 at 20..60 ms; their first sends (the role chunk on admission) do not open
    // the window: both decode from 30 (stream 1's second send) to 40.
    const streams = [
      { t0Abs: 100, events: [0, 10, 20, 30, 40].map((s) => ({ t: s + 1 - 100, id: String(s * 1e6) })) },
      {
        t0Abs: 100,
        events: [20, 30, 40, 50, 60]
          .map((s) => ({ t: s + 3 - 100, id: String(s * 1e6) }))
          .concat([{ t: 0, id: undefined as unknown as string }]),
      },
    ];
    const all = stampedArrivals(streams, 0);
    expect(all).toHaveLength(10);
    const steady = steadyWindow(all);
    expect(steady.map((a) => [a.stream, a.sendMs])).toEqual([
      [0, 30],
      [0, 40],
      [1, 30],
      [1, 40],
    ]);
    expect(lagSummary(steady)).toEqual({ n: 4, p50Ms: 2, p99Ms: 3, maxMs: 3 });
    expect(lagSummary([])).toBeUndefined();
    // Per step (sends within half a cadence of the step's first), the least-late event.
    const minima = stepMinima(steady, 10);
    expect(minima.map((a) => [a.sendMs, a.arriveMs - a.sendMs])).toEqual([
      [30, 1],
      [40, 1],
    ]);
  });

  test('raw bytes: each stamp arrives with the read that holds the blank line ending its event, chunked framing between', () => {
    const ev = (ns: number, data: string) => {
      const body = `id: ${ns}\ndata: ${data}\n\n`;
      return `${body.length.toString(16)}\r\n${body}\r\n`;
    };
    const wire = `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${ev(1_000_000, 'a')}${ev(2_000_000, 'b')}${ev(3_000_000, 'c')}0\r\n\r\n`;
    const bytes = enc.encode(wire);
    const cut1 = wire.indexOf('data: b') + 3; // event b split across reads 1 and 2
    const cut2 = wire.indexOf('data: c') + 8; // event c's last LF in read 3
    const reads: BodyRead[] = [
      { t: 10, bytes: bytes.slice(0, cut1) },
      { t: 20, bytes: bytes.slice(cut1, cut2) },
      { t: 30, bytes: bytes.slice(cut2) },
    ];
    const got = stampedArrivalsInBytes(reads, 5, 0.5);
    expect(got).toEqual([
      { stream: 5, sendMs: 1, arriveMs: 10.5 },
      { stream: 5, sendMs: 2, arriveMs: 20.5 },
      { stream: 5, sendMs: 3, arriveMs: 30.5 },
    ]);
  });
});

describe('client lag allowance', () => {
  const pre: FidelityPreflight = {
    streams: 32,
    cadenceMs: 10,
    durationMs: 900,
    lag: { n: 1920, p50Ms: 0.2, p99Ms: 1.5, maxMs: 4 },
    stepLag: { n: 60, p50Ms: 0.1, p99Ms: 0.8, maxMs: 0.9 },
    cpuUsPerEvent: 9,
  };

  test("the larger of the check's loop delay and the preflight's one-stream lag p99, with the figures in the source", () => {
    expect(clientLag({ p99Ms: 0.1, maxMs: 0.5 }, pre)).toMatchObject({ ms: 0.8 });
    expect(clientLag({ p99Ms: 10, maxMs: 25 }, pre).ms).toBe(25);
    expect(clientLag({ p99Ms: 0, maxMs: 0 }, pre).source).toMatch(
      /event-loop stall 0\.0 ms; preflight arrival lag p99 0\.8 ms for one stream \(1\.5 ms with 32 in phase\)/,
    );
    expect(clientLag({ p99Ms: 0, maxMs: 3 }).ms).toBe(3);
    expect(
      clientLag({ p99Ms: 0, maxMs: 3 }, { ...pre, lag: undefined, stepLag: undefined, error: 'spawn failed' }).source,
    ).toMatch(/no preflight figure \(spawn failed\)/);
  });

  test('describePreflight names the figures, or why there are none', () => {
    expect(describePreflight(pre)).toMatch(
      /p50 0\.20 ms, p99 1\.50 ms, max 4\.00 ms \(1920 events, 32 streams in phase every 10 ms, client CPU 9\.0 µs\/event\); one stream: p50 0\.10 ms, p99 0\.80 ms/,
    );
    expect(describePreflight({ streams: 32, cadenceMs: 10, durationMs: 5, error: 'boom' })).toMatch(
      /no measurement \(boom\)/,
    );
    expect(describePreflight(undefined)).toMatch(/not run/);
  });
});

describe('a stream longer than the recorder keeps is still decoded to its end', () => {
  // Eager, and lazy as send() decodes (the reads the recording keeps are replayed from it, not kept by the decoder).
  test.each([false, true])(
    'tokens, usage and metrics are complete; raw events, text and chunks stop at the byte cap (lazy %s)',
    (lazy) => {
      const chunk = (i: number) =>
        enc.encode(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: ` w${i}` } }] })}\n\n`);
      const rec = sseRecording(0);
      const cap = 2_000;
      const recorded = new KeptReads({ bytes: cap, reads: 20_000 });
      const decode = new StreamDecode('openai-chat', cap, lazy);
      const read = decode.reader({});
      const control = { progress() {}, abort() {}, overflow() {} };
      const n = 500;
      for (let i = 0; i <= n; i++) {
        const b =
          i < n
            ? chunk(i)
            : enc.encode(
                `data: ${JSON.stringify({ choices: [], usage: { completion_tokens: n } })}\n\ndata: [DONE]\n\n`,
              );
        read(i, b, control, recorded.keep(i, b));
      }
      rec.tEnd = n + 1;
      rec.truncated = recorded.truncated;
      recorded.finish(rec);
      const x = decode.finish(rec, true);
      expect(rec.truncated).toBe(true);
      expect(rec.body.length).toBe(cap);
      expect(x.events!.tokens).toHaveLength(n);
      expect(x.events!.tokens.at(-1)).toEqual({ t: n - 1, text: ` w${n - 1}`, kind: 'content' });
      expect(x.events!.usage?.completion_tokens).toBe(n);
      expect(x.events!.done).toBe(true);
      expect(x.metrics).toMatchObject({ completionTokens: n, tokenSource: 'usage', countedTokenEvents: n });
      const kept = x.sse!.events.length;
      expect(kept).toBeGreaterThan(10);
      expect(kept).toBeLessThan(60);
      expect(x.events!.chunks).toHaveLength(kept);
      expect(x.sse!.text.length).toBeLessThan(cap + 100);
      expect(
        (x.events!.chunks[3]!.json as { choices: { delta: { content: string } }[] }).choices[0]!.delta.content,
      ).toBe(' w3');
    },
  );
});

describe('reference server --stamp-send, through real HTTP', () => {
  let stamp: StampServer;
  let plain: ReferenceHandle;
  beforeAll(async () => {
    [stamp, plain] = await Promise.all([startStampServer({ slots: 32, cadenceMs: 10 }), startReference()]);
  }, 40_000);
  afterAll(async () => {
    await Promise.all([stamp?.stop(), plain?.stop()]);
  });

  test('every event carries its send time; streams are in phase; the harness and the raw floor see the same events', async () => {
    const { offsetMs } = monotonicOffset();
    const xs = await harnessStreams(stamp.url, 4, 30);
    const arrivals = stampedArrivals(
      xs.map((x) => ({ t0Abs: x.rec.t0Abs, events: x.sse!.events })),
      offsetMs,
    );
    for (const x of xs) {
      expect(x.rec.status).toBe(200);
      expect(x.sse!.events.every((e) => sendTimeMs(e.id) !== undefined)).toBe(true); // role, 30 tokens, finish, [DONE]
      expect(x.metrics?.completionTokens).toBe(30);
    }
    for (const a of arrivals) {
      expect(a.arriveMs - a.sendMs).toBeGreaterThan(0); // a client never has an event before it was written
      expect(a.arriveMs - a.sendMs).toBeLessThan(5_000);
    }
    // In phase: while all four are live, the sends of one step fall within a fraction of the 10 ms cadence.
    const steady = steadyWindow(arrivals).sort((a, b) => a.sendMs - b.sendMs);
    const steps: StampedArrival[][] = [];
    for (const a of steady) {
      const last = steps.at(-1);
      if (last && a.sendMs - last[0]!.sendMs < 5) last.push(a);
      else steps.push([a]);
    }
    expect(steps.length).toBeGreaterThan(10);
    expect(steps.filter((s) => s.length === 4).length / steps.length).toBeGreaterThan(0.8);
    const body = (i: number) => ({
      model: 'reference-model',
      messages: [{ role: 'user', content: `[request floor-test-${i}] Fidelity.` }],
      max_tokens: 30,
      stream: true,
      ignore_eos: true,
    });
    const raw = await Promise.all([0, 1].map((i) => rawStream(stamp.url, body(i))));
    expect(raw.map((r, i) => stampedArrivalsInBytes(r, i, offsetMs).length)).toEqual([33, 33]);
  }, 30_000);

  test("the preflight measures the harness's arrival lag at 32 streams in phase, per step, and its CPU per event (then stops the server)", async () => {
    const p = await runPreflight({ server: Promise.resolve(stamp) });
    expect(p.error).toBeUndefined();
    expect(p).toMatchObject({ streams: 32, cadenceMs: 10 });
    expect(p.lag!.n).toBeGreaterThanOrEqual(32 * 45);
    expect(p.lag!.p50Ms).toBeGreaterThan(0);
    expect(p.lag!.p50Ms).toBeLessThanOrEqual(p.lag!.p99Ms);
    expect(p.lag!.p99Ms).toBeLessThanOrEqual(p.lag!.maxMs);
    expect(p.cpuUsPerEvent).toBeGreaterThan(0);
    expect(p.stepLag!.n).toBeGreaterThanOrEqual(45); // one per in-phase step
    expect(p.stepLag!.p50Ms).toBeLessThanOrEqual(p.lag!.p50Ms);
    expect(stamp.process.exited()).toBeDefined();
  }, 40_000);

  test('without the flag no event carries an id (the mode changes nothing when off)', async () => {
    const raw = await rawStream(plain.baseUrl, {
      model: 'reference-model',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 5,
      stream: true,
    });
    const text = Buffer.concat(raw.map((r) => r.bytes)).toString('utf8');
    expect(text).toContain('data: [DONE]');
    expect(text).not.toMatch(/(^|\n)id:/);
  }, 20_000);
});

describe('the preflight of every run', () => {
  test('a stamping server that stops answering costs the bound, then an error in the figures', async () => {
    const silent = createServer((sock) => sock.on('data', () => undefined)); // accepts, reads, never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const port = (silent.address() as AddressInfo).port;
    const t0 = performance.now();
    const p = await runPreflight({
      server: Promise.resolve({
        url: `http://127.0.0.1:${port}`,
        pid: -1,
        process: undefined as never,
        stop: async () => undefined,
      }),
      boundMs: 500,
    });
    silent.close();
    expect(p.lag).toBeUndefined();
    expect(p.error).toMatch(/a stream failed/);
    expect(performance.now() - t0).toBeLessThan(10_000); // bounded by boundMs, not by the requests' 60 s header deadline
  }, 20_000);

  test('a stamping server that cannot start is an error in the figures, never a throw', async () => {
    const p = await runPreflight({ server: Promise.reject(new Error('no server here')) });
    expect(p).toMatchObject({ streams: 32, error: 'no server here' });
    expect(p.lag).toBeUndefined();
  });
});

describe('a measured client lag that could explain a timing verdict makes it inconclusive', () => {
  let burst: ReferenceHandle;
  beforeAll(async () => {
    burst = await startReference(['--fault', 'stream-burst-at-end']);
  }, 40_000);
  afterAll(async () => {
    await burst?.stop();
  });

  test('stream.spread on a server that flushes at the end: inconclusive, the lag named, when our client lagged longer than the request', async () => {
    const spread = streamChecks.find((c) => c.id === 'stream.spread')!;
    const base = {
      memory: freshMemory(),
      profile: burst.profile,
      server: burst.info,
      tier: 'quick' as const,
      strict: false,
      log: () => undefined,
    };
    const lagged: FidelityPreflight = {
      streams: 32,
      cadenceMs: 10,
      durationMs: 1000,
      lag: { n: 2000, p50Ms: 900, p99Ms: 25_000, maxMs: 30_000 },
      stepLag: { n: 60, p50Ms: 800, p99Ms: 20_000, maxMs: 21_000 },
    };
    // Without a lag this check fails on this fault (its fault proof in suites/stream.ts, run by test/proofs.test.ts).
    const laggedRun = await runCheck(spread, { ...base, memory: freshMemory(), runId: 'fid-b', preflight: lagged });
    expect(laggedRun.verdict.outcome).toBe('inconclusive');
    expect(grade(spread, laggedRun.verdict, burst.profile, true).outcome).toBe('inconclusive'); // never a failure, even strict
    expect(laggedRun.verdict.message).toMatch(
      /preflight arrival lag p99 20000 ms for one stream \(25000 ms with 32 in phase\)/,
    );
  }, 60_000);
});

describe('decoding at the end of the stream', () => {
  test('an NDJSON stream whose last line has no newline still counts that line (usage, done) in the figures', () => {
    const rec = sseRecording(30);
    const d = new StreamDecode('ollama-native', Infinity);
    d.push(10, enc.encode('{"message":{"content":"a"},"done":false}\n'));
    d.push(20, enc.encode('{"message":{"content":""},"done":true,"eval_count":7,"prompt_eval_count":3}'));
    const x = d.finish(rec, true);
    expect(x.events).toMatchObject({ done: true, usage: { completion_tokens: 7 } });
    expect(x.metrics).toMatchObject({ completionTokens: 7, tokenSource: 'usage' });
  });
});
