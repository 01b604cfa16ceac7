// The stream family's verdict rules (lib/grading/stream.ts), fed hand-made figures: each rule shown passing and
// failing with the words its message must say. No HTTP: the proofs (test/proofs.test.ts) show the same rules on the
// reference server and its faults.
import { describe, expect, test } from 'vitest';
import {
  brokenLongStreams,
  gradeCancelByCounters,
  gradeCancelByDelay,
  gradeHeadersEarly,
  gradeSpread,
  gradeTtftBeforeEnd,
  itlOf,
  orphanNotCancellable,
  tooFewLongStreams,
} from '../lib/grading/stream.ts';
import type { Recording } from '../lib/model/types.ts';

const long = { sizes: [128, 128, 128], minTokens: 32, sizing: 'sized from 100 tok/s' };
const noLag = { ms: 0, source: 'longest event-loop stall 0.0 ms' };

describe('stream.ttft-before-end', () => {
  const streams = (ttft: number, e2e: number) =>
    [0, 1, 2].map((i) => ({ ttftMs: ttft + i, e2eMs: e2e + i, completionTokens: 128, tokenEvents: 128, reads: 40 }));
  const grade = (ttft: number, e2e: number, lag = noLag) =>
    gradeTtftBeforeEnd({ streams: streams(ttft, e2e), long, maxRatio: 0.5, lag, evidence: [] });

  test('a first token long before the end passes, with both medians', () => {
    const v = grade(50, 2000);
    expect(v.outcome).toBe('pass');
    expect(v.message).toContain('median TTFT 51.0 ms vs median end-to-end 2001 ms');
  });
  test('a first token with the last fails, naming each stream', () => {
    const v = grade(1990, 2000);
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('before the end of the stream');
    expect(v.message).toContain('stream 1: TTFT 1990 ms, end 2000 ms, 128 tokens in 128 events over 40 reads');
  });
  test("a ratio our client's lag could explain is inconclusive, never a fail", () => {
    const v = grade(1990, 2000, { ms: 1900, source: 'a stall' });
    expect(v.outcome).toBe('inconclusive');
    expect(v.message).toContain("our client's own lag of up to 1900 ms (a stall) could explain");
  });
});

/** A stream's recording: its request time and a body for the failure's bytes. */
const rec = (tEnd: number): Recording => ({
  method: 'POST',
  url: 'http://127.0.0.1/v1/chat/completions',
  t0Abs: 0,
  status: 200,
  headers: {},
  reads: [],
  tEnd,
  body: new TextEncoder().encode('data: {"choices":[]}\n\n'),
  truncated: false,
});

describe('stream.spread', () => {
  const even = { tokens: Array.from({ length: 40 }, (_, i) => ({ t: 50 * i, text: 'ab' })), rec: rec(2000) };
  const burst = { tokens: Array.from({ length: 40 }, () => ({ t: 1990, text: 'ab' })), rec: rec(2000) };
  const grade = (s: (typeof even)[], lag = noLag) =>
    gradeSpread({ streams: s, long, maxReadShare: 0.2, maxLateShare: 0.25, lag, evidence: [] });

  test('tokens spread over the request pass', () => {
    const v = grade([even, even, even]);
    expect(v.outcome).toBe('pass');
    expect(v.message).toContain('largest single read 2.5 % of the text');
    expect(v.message).toContain('last 5 % of the request time');
  });
  test('every token in one read at the end fails, with the read and the late share of each stream', () => {
    const v = grade([burst, burst, burst]);
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('stream 1: one read at 1990 ms carried 100.0 % of the text (40 of 40 token events');
    expect(v.message).toContain('100.0 % of the text arrived after 1900 ms, in the last 5 %');
    expect(v.message).toContain('Bytes:');
  });
  test("a burst our client's lag could explain is inconclusive; a stream without text has nothing to time", () => {
    expect(grade([burst, burst, burst], { ms: 5000, source: 'a stall' }).outcome).toBe('inconclusive');
    const v = grade([even, { tokens: [], rec: rec(2000) }]);
    expect(v).toMatchObject({ outcome: 'inconclusive', message: 'a stream carried no generated text to time' });
  });
});

describe('stream.headers-early', () => {
  const grade = (headersMs: number, prefillEndMs: number) =>
    gradeHeadersEarly({
      requests: [0, 1, 2].map((i) => ({ headersMs: headersMs + i, prefillEndMs: prefillEndMs + i })),
      promptTokens: [3000, 3000, 3000],
      prefillTps: 6000,
      minPrefillMs: 100,
      maxHeadersShare: 0.5,
      lag: noLag,
      evidence: [],
    });

  test('headers early in a long prefill pass', () => {
    const v = grade(5, 500);
    expect(v.outcome).toBe('pass');
    expect(v.message).toContain('headers after 6.0 ms, first token after 501 ms (headers at 1.2 % of the prefill');
  });
  test('headers only with the first token fail, naming each request', () => {
    const v = grade(495, 500);
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('the status and headers came only with the first token');
    expect(v.message).toContain('request 1: headers 495 ms, first token 500 ms');
  });
  test('a prefill too short to time is inconclusive', () => {
    const v = grade(45, 50);
    expect(v.outcome).toBe('inconclusive');
    expect(v.message).toContain('prefill too short to tell');
  });
});

describe('stream.cancel-frees-slot by the busy counter', () => {
  const base = {
    source: '/slots',
    baseline: 0,
    busyDuring: 1,
    tokensBeforeAbort: 8,
    orphanMaxTokens: 508,
    itlMs: 10,
    remainingMs: 5000,
    forced: true,
    freeWithinMs: 1000,
    evidence: [],
  };
  const freedAt = (ms: number) => ({ ok: true, value: 0, elapsedMs: ms, polls: 3 });
  const stillBusy = { ok: false, value: 1, elapsedMs: 1000, polls: 50 };

  test('a counter back at its baseline soon after the disconnect passes', () => {
    const v = gradeCancelByCounters({ ...base, polled: freedAt(30) });
    expect(v?.outcome).toBe('pass');
    expect(v?.message).toBe(
      '/slots: busy 0 → 1 during the stream → 0 30 ms after the client disconnected (after 8 of 508 tokens)',
    );
  });
  test('a counter freed only when the orphan would have ended fails; freed between, it warns', () => {
    const v = gradeCancelByCounters({ ...base, polled: stillBusy, drained: { ok: true, elapsedMs: 4000 } });
    expect(v?.outcome).toBe('fail');
    expect(v?.message).toContain('still 1 busy 1000 ms after the client disconnected');
    expect(v?.message).toContain('when the orphaned generation would have run to its end');
    const slow = gradeCancelByCounters({ ...base, polled: stillBusy, drained: { ok: true, elapsedMs: 500 } });
    expect(slow).toMatchObject({ outcome: 'warn', borderline: true });
    expect(slow?.message).toContain('slow to free the slot: /slots back to 0 only 1500 ms after');
  });
  test('a counter that never drops is stale: no evidence', () => {
    expect(gradeCancelByCounters({ ...base, polled: stillBusy, drained: { ok: false, elapsedMs: 11000 } })).toBe(
      undefined,
    );
  });
  test('without forceLength a release later than a few tokens may be the natural end: inconclusive', () => {
    const v = gradeCancelByCounters({ ...base, forced: false, polled: freedAt(300) });
    expect(v?.outcome).toBe('inconclusive');
    expect(v?.message).toContain('without forceLength the model may simply have finished');
  });
});

describe('stream.cancel-frees-slot by the all-slots-busy delay', () => {
  const base = {
    slots: 4,
    slotsNote: '',
    baselineTtftMs: 100,
    freeWithinMs: 1000,
    allowedMs: 1300,
    itlMs: 10,
    remainingMs: 5000,
    orphanMaxTokens: 508,
    forced: true,
    evidence: [],
  };

  test('a probe served soon after the disconnect passes', () => {
    const v = gradeCancelByDelay({ ...base, probeInTime: true, probeDelayMs: 150 });
    expect(v.outcome).toBe('pass');
    expect(v.message).toContain(
      'all 4 slots busy; 150 ms after they were disconnected the waiting probe got its first token',
    );
  });
  test('no first token in twice the allowance fails; a late one warns; without forceLength, inconclusive', () => {
    const v = gradeCancelByDelay({ ...base, probeInTime: false });
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain(
      'no first token 2600 ms after all 4 streams were disconnected: the orphaned generations kept the slots',
    );
    expect(gradeCancelByDelay({ ...base, probeInTime: true, probeDelayMs: 2000 })).toMatchObject({
      outcome: 'warn',
      borderline: true,
    });
    expect(gradeCancelByDelay({ ...base, forced: false, probeInTime: true, probeDelayMs: 150 }).outcome).toBe(
      'inconclusive',
    );
  });
});

describe('streams that leave nothing to judge', () => {
  test('an orphan that never started streaming: too slow (inconclusive), not served (fail), textless (once more, then inconclusive)', () => {
    const o = {
      timedOut: false,
      textless: '',
      attempt: 1,
      events: 3,
      maxTokens: 500,
      tokensBeforeAbort: 8,
      startBoundMs: 30000,
      evidence: [],
    };
    expect(orphanNotCancellable({ ...o, timedOut: true })?.message).toBe(
      'no 8 token events within 30000 ms: too slow to test cancellation',
    );
    expect(orphanNotCancellable({ ...o, problem: 'HTTP 500' })).toMatchObject({ outcome: 'fail' });
    expect(orphanNotCancellable({ ...o, textless: ' (1 of 1 textless)' })).toBe(undefined);
    expect(orphanNotCancellable({ ...o, textless: ' (1 of 1 textless)', attempt: 2 })?.message).toContain(
      'no orphan stream of 2 carried text',
    );
    expect(orphanNotCancellable(o)?.message).toContain('the generation ended after 3 token event(s)');
  });

  test('a broken long stream fails before any timing; complete ones pass through', () => {
    expect(brokenLongStreams([undefined, undefined], [])).toBe(undefined);
    const v = brokenLongStreams([undefined, 'stalled: HTTP 200 after 3 reads'], []);
    expect(v?.outcome).toBe('fail');
    expect(v?.message).toContain('Actual:   request 2: stalled: HTTP 200 after 3 reads');
  });

  test('fewer than 2 long streams: textless, cut by the budget, or too short, each said so', () => {
    const o = {
      long,
      completionTokens: [5, 6, 7],
      tokenSource: 'usage',
      usable: 1,
      recorded: 3,
      textless: '',
      what: 'the long streams were recorded',
    };
    expect(tooFewLongStreams({ ...o, textless: ' (textless)' }).message).toBe(
      '1 of 3 streams carried text to time (textless); the long streams were recorded needs 2 (sized from 100 tok/s)',
    );
    expect(tooFewLongStreams({ ...o, short: '1 of 3 streams recorded' }).message).toContain(
      '1 of 3 streams recorded; ',
    );
    const v = tooFewLongStreams(o);
    expect(v.outcome).toBe('inconclusive');
    expect(v.message).toContain(
      'responses too short to judge: completion tokens [5,6,7] (from usage), need at least 32',
    );
  });

  test('time per token: the mean gap over the span, or from the one read to the abort', () => {
    expect(itlOf({ times: [0, 0, 0, 30] })).toBe(10);
    expect(itlOf({ times: [5, 5], firstAbs: 100 }, 140)).toBe(20);
    expect(itlOf({ times: [] }, 140)).toBe(undefined);
  });
});
