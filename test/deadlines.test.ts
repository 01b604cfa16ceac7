// Who owns a deadline (lib/measure/deadlines.ts), the pace it is sized from (lib/measure/pace.ts), the shared recording cache's abort
// policy (lib/http/recordings.ts), the client's own lag (lib/measure/client-lag.ts) and token counts without usage (lib/measure/request-metrics.ts).

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { runCheck } from '../lib/check/check.ts';
import { shared } from '../lib/exchange/recordings.ts';
import { clientAllowanceMs, startLagSampler } from '../lib/measure/client-lag.ts';
import {
  BUDGET_FACTOR,
  budgetText,
  endedByUs,
  endingOf,
  PREFILL_FACTOR,
  requestDeadlines,
  STALL_FACTOR,
  stallLimitMs,
} from '../lib/measure/deadlines.ts';
import {
  decodeMsPerToken,
  describePace,
  expectedMs,
  observations,
  observe,
  type PaceObservation,
  paceOf,
  repetitionsFor,
  tokensFor,
} from '../lib/measure/pace.ts';
import { requestMetrics, tokenCountOf } from '../lib/measure/request-metrics.ts';
import type { CheckContext } from '../lib/model/check.ts';
import { freshMemory } from '../lib/model/memory.ts';
import type { Deadlines, Profile, Recording } from '../lib/model/types.ts';

const BASE: Deadlines = { connectMs: 2_000, headersMs: 15_000, tokenIdleMs: 5_000, totalMs: 30_000 };
const obs = (tokens: number, e2eMs: number, ttftMs: number, extra: Partial<PaceObservation> = {}): PaceObservation => ({
  at: 0,
  tokens,
  tokenSource: 'usage',
  e2eMs,
  ttftMs,
  ...extra,
});

describe('the stall rule and request deadlines', () => {
  test("silence is judged against the stream's own gap, never below the floor", () => {
    expect(stallLimitMs(5_000, undefined)).toBe(5_000);
    expect(stallLimitMs(5_000, 8)).toBe(5_000); // 125 tok/s: 50 gaps are 400 ms, the floor wins
    expect(stallLimitMs(5_000, 333)).toBe(STALL_FACTOR * 333); // 3 tok/s: 16.7 s
    expect(stallLimitMs(5_000, 0)).toBe(5_000);
  });

  test("the profile's deadlines are floors; a slow server and a long prompt raise them; explicit ones are kept", () => {
    expect(requestDeadlines(BASE, undefined, {})).toEqual({ ...BASE });
    // 3 tok/s, 100 ms TTFT, 32 tokens: ~10.8 s expected.
    const slow = paceOf([obs(32, 10_800, 100, { promptTokens: 20 })])!;
    const d = requestDeadlines(BASE, slow, { maxTokens: 32, promptChars: 300 });
    expect(d.totalMs).toBeGreaterThanOrEqual(BUDGET_FACTOR * 10_000);
    expect(d.tokenIdleMs).toBeGreaterThanOrEqual(2 * 10_000); // a flush of the whole answer is no stall
    expect(d.headersMs).toBeGreaterThanOrEqual(2 * 10_000); // a server holding even its headers until the end is a burst
    // A 40,000-character prompt at the assumed 200 tok/s of prefill: ~67 s expected, the first token may take 10x.
    const long = requestDeadlines(BASE, undefined, { maxTokens: 1, promptChars: 40_000 });
    expect(long.headersMs).toBeGreaterThanOrEqual(PREFILL_FACTOR * 60_000);
    expect(requestDeadlines(BASE, slow, { maxTokens: 32 }, { tokenIdleMs: 500, totalMs: 1_000 })).toMatchObject({
      tokenIdleMs: 500,
      totalMs: 1_000,
    });
  });

  test("property: deadlines never fall below the profile's, whatever the pace", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.05, max: 5_000, noNaN: true }),
        fc.integer({ min: 1, max: 4096 }),
        fc.integer({ min: 0, max: 500_000 }),
        (perTok, n, chars) => {
          const p = paceOf([obs(16, perTok * 16, perTok)])!;
          const d = requestDeadlines(BASE, p, { maxTokens: n, promptChars: chars });
          return (
            d.headersMs >= BASE.headersMs &&
            d.tokenIdleMs >= BASE.tokenIdleMs &&
            d.totalMs >= BASE.totalMs &&
            d.totalMs > d.tokenIdleMs
          );
        },
      ),
      { numRuns: 300, seed: 8 },
    );
  });

  test("who ended a recording: stalls and resets are the server's, our deadlines and aborts are ours", () => {
    const rec = (kind?: NonNullable<Recording['failure']>['kind']): Pick<Recording, 'failure' | 'status' | 'tEnd'> => ({
      status: 200,
      tEnd: 10,
      ...(kind ? { failure: { kind, message: kind } } : {}),
    });
    expect(endingOf(rec())).toEqual({ by: 'server', kind: 'complete' });
    expect(endingOf(rec('token-idle'))).toMatchObject({ by: 'server', kind: 'stalled' });
    expect(endingOf(rec('headers-timeout'))).toMatchObject({ by: 'server', kind: 'stalled' });
    expect(endingOf(rec('reset'))).toMatchObject({ by: 'server', kind: 'broken' });
    expect(endedByUs(rec('total-timeout'))).toBe(true);
    expect(endedByUs(rec('aborted'))).toBe(true);
    expect(endingOf(rec('connect'))).toMatchObject({ by: 'us', kind: 'unreachable' });
    expect(budgetText('the streams were recorded', paceOf([obs(32, 10_800, 100)]), 'request 1 cut short')).toMatch(
      /our time budget ran out .* 3\.0 tok\/s/,
    );
  });
});

describe('the pace', () => {
  test('per-token time is the slower of the recent median and the latest request (a neighbour just arrived)', () => {
    const p = paceOf([obs(48, 400, 10), obs(48, 400, 10), obs(48, 400, 10), obs(48, 16_000, 10)])!;
    expect(p.perTokenMs).toBeCloseTo(16_000 / 48, 6);
    expect(describePace(p)).toContain('3.0 tok/s');
    expect(paceOf([])).toBeUndefined();
  });

  test('a flushed stream gives no TPOT (its decode looks infinitely fast) and no TTFT; the wall time sizes it', () => {
    const flush = paceOf([obs(48, 400, 399.9)])!;
    expect(flush.tpotMs).toBeUndefined();
    expect(flush.ttftMs).toBeUndefined();
    expect(decodeMsPerToken(flush)).toBeCloseTo(400 / 48, 6);
    // An honest 2400 tok/s stream: TPOT ~0.42 ms, not the 12-token probe's overhead-heavy wall time.
    const fast = paceOf([obs(12, 9, 4.4)])!;
    expect(decodeMsPerToken(fast)).toBeCloseTo(4.6 / 11, 6);
  });

  test('long prompts and one-token requests tell the prefill rate, not the decode pace', () => {
    const p = paceOf([obs(1, 500, 495, { promptTokens: 3000 }), obs(48, 400, 10, { promptTokens: 20 })])!;
    expect(p.samples).toBe(1);
    expect(p.prefillTps).toBeCloseTo(3000 / 0.495, 0);
  });

  test('sizing: tokens for a target time within bounds; budgets in expected time; repetitions that fit', () => {
    expect(tokensFor({ perTokenMs: 333, targetMs: 2_000, min: 32, max: 1024 })).toBe(32); // 3 tok/s: the minimum
    expect(tokensFor({ perTokenMs: 8, targetMs: 2_000, min: 32, max: 1024 })).toBe(250);
    expect(tokensFor({ perTokenMs: 0.2, targetMs: 2_000, min: 32, max: 1024 })).toBe(1024); // 5000 tok/s: the cap
    expect(expectedMs({ perTokenMs: 333, ttftMs: 100 }, 32, 3)).toBeCloseTo(3 * (100 + 32 * 333), 6);
    expect(repetitionsFor(10_000, 45_000, 2, 3)).toBe(3);
    expect(repetitionsFor(30_000, 45_000, 2, 3)).toBe(0);
  });

  test('the store keeps the last few requests per server', () => {
    const m = freshMemory();
    for (let i = 0; i < 20; i++) observe(m, 'a', obs(10, 100 + i, 5));
    observe(m, 'a', obs(0, 10, 5)); // nothing generated: ignored
    expect(observations(m, 'a')).toHaveLength(8);
    expect(observations(m, 'b')).toHaveLength(0);
    expect(observations(freshMemory(), 'a')).toHaveLength(0);
  });
});

describe('token counts without usage', () => {
  test('one token per event where events look like single tokens; estimated from the text where they carry several', () => {
    expect(tokenCountOf([{ text: ' river' }, { text: ' stone' }, { text: '.' }])).toEqual({
      tokens: 3,
      source: 'counted',
    });
    // 16 events of ~32 characters each (8 tokens per event, vLLM --stream-interval 8): not "16 tokens".
    const many = Array.from({ length: 16 }, () => ({ text: ' the river crosses the old town' }));
    const c = tokenCountOf(many);
    expect(c.source).toBe('estimated');
    expect(c.tokens).toBe(Math.round((16 * 31) / 4));
    // With this server's own characters per token learned from usage.
    expect(tokenCountOf(many, 6.2).tokens).toBe(80);
    const m = requestMetrics({ tEnd: 1000, tokens: many.map((e, i) => ({ t: 10 + i * 60, text: e.text })) });
    expect(m.tokenSource).toBe('estimated');
    expect(m.completionTokens).toBe(124);
    expect(
      requestMetrics({ tEnd: 1000, tokens: many.map((e, i) => ({ t: i, text: e.text })), usageCompletionTokens: 128 })
        .tokenSource,
    ).toBe('usage');
  });

  test('the count without sorting equals the median rule over any event sizes and any calibration', () => {
    // The rule as written before the fast path: median of the events' code points, then counted or estimated.
    const byMedian = (texts: string[], cpt?: number) => {
      const sizes = texts.map((s) => [...s].length).sort((a, b) => a - b);
      const n = sizes.length;
      const med = n ? (n % 2 ? sizes[(n - 1) / 2]! : (sizes[n / 2 - 1]! + sizes[n / 2]!) / 2) : 0;
      const several = med > 8 || (cpt !== undefined && med > 1.5 * cpt);
      if (!several) return { tokens: n, source: 'counted' };
      const chars = sizes.reduce((a, b) => a + b, 0);
      return { tokens: Math.max(n, Math.round(chars / (cpt && cpt > 0 ? cpt : 4))), source: 'estimated' };
    };
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 14 }), { maxLength: 40 }),
        fc.option(fc.double({ min: 0, max: 12, noNaN: true }), { nil: undefined }),
        (texts, cpt) => {
          expect(
            tokenCountOf(
              texts.map((text) => ({ text })),
              cpt,
            ),
          ).toEqual(byMedian(texts, cpt));
        },
      ),
    );
  });
});

describe("our client's lag", () => {
  test('the sampler measures lateness, not its sampling interval; a busy loop shows up', async () => {
    const s = startLagSampler();
    await new Promise((r) => setTimeout(r, 60));
    const idle = s.read();
    const end = performance.now() + 40;
    while (performance.now() < end) {
      /* hold the loop */
    }
    await new Promise((r) => setTimeout(r, 10));
    const busy = s.stop();
    expect(idle.maxMs).toBeLessThan(busy.maxMs);
    expect(busy.maxMs).toBeGreaterThanOrEqual(30);
    expect(s.read()).toEqual(busy);
  });

  test("the allowance is the measured lag (plus one interval), or a preflight's when that is larger", () => {
    expect(clientAllowanceMs({ maxMs: 3 })).toBe(4);
    expect(clientAllowanceMs(undefined)).toBe(0);
    expect(clientAllowanceMs({ maxMs: 3 }, { maxMs: 12, source: 'preflight' })).toBe(12);
  });
});

describe('the shared recording cache', () => {
  let memory = freshMemory();
  const ctxOf = (id: string, aborted = false): CheckContext =>
    ({
      memory,
      owner: id,
      runId: 'r',
      baseUrl: 'http://127.0.0.1:1',
      profile: { id: 'p', model: 'm' },
      check: { id },
      signal: { aborted },
    }) as unknown as CheckContext;
  const cut: Recording = {
    method: 'POST',
    url: 'u',
    t0Abs: 0,
    status: 200,
    headers: {},
    reads: [],
    tEnd: 5,
    body: new Uint8Array(),
    truncated: false,
    failure: { kind: 'aborted', message: "the check's 60000 ms bound ran out" },
  };
  const whole: Recording = { ...cut, failure: undefined };

  test('recorded once and shared; a recording our side cut short is incomplete, recorded again once by the next check, then kept', async () => {
    memory = freshMemory();
    let n = 0;
    const rec = (r: Recording) => async () => {
      n++;
      return [r];
    };
    const a = await shared(ctxOf('a'), 'x', rec(whole), (v) => v);
    const b = await shared(ctxOf('b'), 'x', rec(whole), (v) => v);
    expect(n).toBe(1);
    expect(b).toBe(a);
    expect(a.incomplete).toBeUndefined();
    expect(a.recordedBy).toBe('a');

    n = 0;
    const c = await shared(ctxOf('c'), 'y', rec(cut), (v) => v);
    expect(c.incomplete).toContain('cut short by our side');
    const d = await shared(ctxOf('d'), 'y', rec(cut), (v) => v); // records again, once
    expect(n).toBe(2);
    expect(d.incomplete).toBeDefined();
    const e = await shared(ctxOf('e'), 'y', rec(whole), (v) => v); // no third attempt
    expect(n).toBe(2);
    expect(e.incomplete).toBeDefined();

    n = 0;
    await expect(
      shared(
        ctxOf('f'),
        'z',
        async () => {
          n++;
          throw new Error('harness');
        },
        () => [],
      ),
    ).rejects.toThrow('harness');
    const g = await shared(ctxOf('g'), 'z', rec(whole), (v) => v); // a throw is not cached
    expect(n).toBe(2);
    expect(g.incomplete).toBeUndefined();
  });
});

describe("a check's own bound", () => {
  const profile: Profile = {
    id: 'p',
    baseUrl: 'http://127.0.0.1:9',
    model: 'm',
    apis: ['openai-chat'],
    readiness: { kind: 'completion' },
    startTimeoutMs: 1000,
    slots: 1,
    deterministic: false,
    context: { discovery: 'none' },
  };
  const server = { baseUrl: 'http://127.0.0.1:9', identity: {} };
  const def = (run: (ctx: CheckContext) => Promise<import('../lib/model/types.ts').Verdict>) => ({
    id: 'x.bound',
    title: 't',
    level: 'MUST' as const,
    rationale: 'r',
    reference: 'r',
    requires: [],
    timeoutMs: 50,
    run,
  });

  test('a check that grades what it has when told its bound ran out keeps its verdict', async () => {
    const { verdict } = await runCheck(
      def(
        (ctx) =>
          new Promise((resolve) =>
            ctx.signal.addEventListener('abort', () =>
              resolve({ outcome: 'inconclusive', message: 'cut short, graded by the check' }),
            ),
          ),
      ),
      { memory: freshMemory(), profile: { ...profile }, server, log: () => undefined },
    );
    expect(verdict).toMatchObject({ outcome: 'inconclusive', message: 'cut short, graded by the check' });
  });

  test('a check that cannot answer after its bound is inconclusive, naming the bound: never an error, never a fail', async () => {
    const { verdict } = await runCheck(
      def(() => new Promise(() => undefined)),
      { memory: freshMemory(), profile: { ...profile }, server, log: () => undefined },
    );
    expect(verdict.outcome).toBe('inconclusive');
    expect(verdict.message).toMatch(/our time budget ran out before x\.bound finished \(its bound of 0\.1 s/);
  });
});
