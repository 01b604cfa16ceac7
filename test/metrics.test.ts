import { describe, expect, test } from 'vitest';
import { decodeSse } from '../lib/decode/stream-decoder.ts';
import { openaiChatEvents } from '../lib/decode/stream-events.ts';
import { aggregateWallTps, requestMetrics, speedup } from '../lib/measure/request-metrics.ts';
import type { BodyRead } from '../lib/model/types.ts';

const enc = new TextEncoder();
const reads = (...parts: [number, string][]): BodyRead[] => parts.map(([t, s]) => ({ t, bytes: enc.encode(s) }));
const tok = (...ts: number[]) => ts.map((t) => ({ t, text: 'x' }));

describe('requestMetrics', () => {
  test('ttft ignores comments, the role-only chunk, content "" and content null', () => {
    const sse = decodeSse(
      reads(
        [5, ': keep-alive\n\n'],
        [10, 'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'],
        [20, 'data: {"choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}\n\n'],
        [25, 'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}\n\n'],
        [30, ': ping\n\n'],
        [100, 'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'],
        [150, 'data: {"choices":[{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}]}\n\n'],
        [160, 'data: [DONE]\n\n'],
      ),
    );
    const ev = openaiChatEvents(sse);
    const m = requestMetrics({ tEnd: 160, tokens: ev.tokens });
    expect(m.ttftMs).toBe(100);
    expect(m.countedTokenEvents).toBe(2);
  });

  test('hand-computed: wall_tps, gen_tps, tpot, itl from counted events', () => {
    // 4 token events at 100, 150, 200, 300 ms; stream ends at 400 ms
    const m = requestMetrics({ tEnd: 400, tokens: tok(100, 150, 200, 300) });
    expect(m.ttftMs).toBe(100);
    expect(m.e2eMs).toBe(400);
    expect(m.completionTokens).toBe(4);
    expect(m.tokenSource).toBe('counted');
    expect(m.wallTps).toBeCloseTo(10, 12); // 4 / 0.4 s
    expect(m.genTps).toBeCloseTo(15, 12); // (4 - 1) / 0.2 s
    expect(m.tpotMs).toBeCloseTo(100, 12); // (400 - 100) / 3
    expect(m.itlMs).toEqual([50, 50, 100]);
    expect(m.reasons).toEqual([]);
  });

  test('usage.completion_tokens wins over the event count', () => {
    const m = requestMetrics({ tEnd: 400, tokens: tok(100, 150, 200, 300), usageCompletionTokens: 10 });
    expect(m.completionTokens).toBe(10);
    expect(m.tokenSource).toBe('usage');
    expect(m.countedTokenEvents).toBe(4);
    expect(m.wallTps).toBeCloseTo(25, 12); // 10 / 0.4 s
    expect(m.genTps).toBeCloseTo(45, 12); // 9 / 0.2 s
    expect(m.tpotMs).toBeCloseTo(300 / 9, 12);
    expect(m.itlMs).toEqual([50, 50, 100]); // itl is always per event
  });

  test('neither usage nor token events: undefined, never 0', () => {
    const m = requestMetrics({ tEnd: 400, tokens: [] });
    expect(m.ttftMs).toBeUndefined();
    expect(m.completionTokens).toBeUndefined();
    expect(m.tokenSource).toBeUndefined();
    expect(m.wallTps).toBeUndefined();
    expect(m.genTps).toBeUndefined();
    expect(m.tpotMs).toBeUndefined();
    expect(m.reasons.length).toBeGreaterThan(0);
  });

  test('zero-length windows give undefined with a reason, never Infinity or NaN', () => {
    // a buffered stream: every token event in the same instant, usage says 500 tokens
    const burst = requestMetrics({ tEnd: 200, tokens: tok(200, 200, 200), usageCompletionTokens: 500 });
    expect(burst.genTps).toBeUndefined();
    expect(burst.reasons.some((r) => r.startsWith('gen_tps: zero-length window'))).toBe(true);
    expect(burst.tpotMs).toBeUndefined();
    expect(burst.reasons.some((r) => r.startsWith('tpot: zero-length window'))).toBe(true);
    expect(burst.wallTps).toBeCloseTo(2500, 9); // e2e is a real window

    const instant = requestMetrics({ tEnd: 0, tokens: tok(0), usageCompletionTokens: 1 });
    expect(instant.wallTps).toBeUndefined();
    expect(instant.reasons.some((r) => r.startsWith('wall_tps: zero-length window'))).toBe(true);

    for (const m of [burst, instant]) {
      for (const v of [m.ttftMs, m.wallTps, m.genTps, m.tpotMs]) {
        if (v !== undefined) expect(Number.isFinite(v)).toBe(true);
      }
    }
  });

  test('one token: gen_tps and tpot need two', () => {
    const m = requestMetrics({ tEnd: 120, tokens: tok(100) });
    expect(m.wallTps).toBeCloseTo(1 / 0.12, 12);
    expect(m.genTps).toBeUndefined();
    expect(m.tpotMs).toBeUndefined();
    expect(m.itlMs).toEqual([]);
  });
});

describe('aggregate wall_tps and speedup', () => {
  const T0 = 10_000; // absolute performance.now() of the barrier release
  // alone: 100 tokens in 1 s
  const single = requestMetrics({ tEnd: 1000, tokens: tok(100), usageCompletionTokens: 100 }).wallTps!;

  test('a fully serial pair (B starts when A ends) scores speedup 1.0', () => {
    const pair = [
      { startAbs: T0, endAbs: T0 + 1000, completionTokens: 100 },
      { startAbs: T0, endAbs: T0 + 2000, completionTokens: 100 }, // released with A, served after it
    ];
    expect(single).toBeCloseTo(100, 12);
    expect(aggregateWallTps(pair)).toBeCloseTo(100, 12); // 200 tokens / 2 s
    expect(speedup(aggregateWallTps(pair), single)).toBeCloseTo(1.0, 12);

    // the tempting alternative: summing each request's own wall_tps (100 + 50) would claim 1.5x
    const summed = pair.reduce((s, r) => s + r.completionTokens / ((r.endAbs - r.startAbs) / 1000), 0);
    expect(summed / single).toBeCloseTo(1.5, 12);
  });

  test('a perfectly parallel pair scores speedup 2.0', () => {
    const pair = [
      { startAbs: T0, endAbs: T0 + 1000, completionTokens: 100 },
      { startAbs: T0, endAbs: T0 + 1000, completionTokens: 100 },
    ];
    expect(speedup(aggregateWallTps(pair), single)).toBeCloseTo(2.0, 12);
  });

  test('window from the first start to the last end', () => {
    expect(
      aggregateWallTps([
        { startAbs: 0, endAbs: 500, completionTokens: 30 },
        { startAbs: 100, endAbs: 1500, completionTokens: 120 },
      ]),
    ).toBeCloseTo(100, 12); // 150 tokens / 1.5 s
  });

  test('unknown tokens, no requests or zero window: undefined', () => {
    expect(aggregateWallTps([])).toBeUndefined();
    expect(aggregateWallTps([{ startAbs: 0, endAbs: 1000, completionTokens: undefined }])).toBeUndefined();
    expect(aggregateWallTps([{ startAbs: 5, endAbs: 5, completionTokens: 3 }])).toBeUndefined();
    expect(speedup(undefined, 100)).toBeUndefined();
    expect(speedup(100, 0)).toBeUndefined();
    expect(speedup(100, undefined)).toBeUndefined();
  });
});
