import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { bandAbove, pause, pollUntil, readSpread, stallShare } from '../lib/measure/timing.ts';

describe('pause and pollUntil', () => {
  test('pause resolves after about the time asked, and at once when aborted', async () => {
    const t0 = performance.now();
    await pause(30);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(25);
    const ac = new AbortController();
    const t1 = performance.now();
    const p = pause(10_000, ac.signal);
    ac.abort();
    await p;
    expect(performance.now() - t1).toBeLessThan(1_000);
    await pause(-5); // non-positive: immediate
  });

  test('pollUntil stops at the first satisfying value', async () => {
    let n = 0;
    const r = await pollUntil(
      async () => ++n,
      (v) => v >= 3,
      { intervalMs: 5, deadlineMs: 2_000 },
    );
    expect(r).toMatchObject({ ok: true, value: 3, polls: 3 });
  });

  test('pollUntil is bounded in time and in count', async () => {
    let n = 0;
    const t0 = performance.now();
    const r = await pollUntil(
      async () => ++n,
      () => false,
      { intervalMs: 10, deadlineMs: 60 },
    );
    expect(r.ok).toBe(false);
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(r.polls).toBeLessThanOrEqual(60 / 10 + 2);
  });
});

const toks = (...xs: [number, string][]) => xs.map(([t, text]) => ({ t, text }));

describe('readSpread', () => {
  test('a steady stream: one token per read, ~5 % in the last 5 %', () => {
    const tokens = Array.from({ length: 100 }, (_, i) => ({ t: 10 + i * 10, text: 'ab' }));
    const s = readSpread({ tokens, tEnd: 1_010 })!;
    expect(s.reads).toBe(100);
    expect(s.maxReadShare).toBeCloseTo(0.01, 10);
    expect(s.lateShare).toBeGreaterThan(0.03);
    expect(s.lateShare).toBeLessThan(0.08);
  });

  test('a burst at the end: one read carries everything, all of it late', () => {
    const tokens = Array.from({ length: 100 }, () => ({ t: 1_000, text: 'ab' }));
    const s = readSpread({ tokens, tEnd: 1_001 })!;
    expect(s).toMatchObject({ reads: 1, maxReadShare: 1, maxReadAt: 1_000, maxReadEvents: 100, lateShare: 1 });
  });

  test('weights by code points, not events (several tokens in one event count as much as split ones)', () => {
    const s = readSpread({ tokens: toks([10, 'x'], [20, 'xxx'], [30, '🙂é']), tEnd: 1_000 })!;
    expect(s.chars).toBe(6);
    expect(s.maxReadShare).toBeCloseTo(0.5, 10);
    expect(s.maxReadAt).toBe(20);
  });

  test('no generated text: undefined, never a share over zero', () => {
    expect(readSpread({ tokens: [], tEnd: 100 })).toBeUndefined();
    expect(readSpread({ tokens: toks([5, '']), tEnd: 100 })).toBeUndefined();
  });

  test('shares stay within [0, 1] and the largest read is at least 1 / reads (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ t: fc.integer({ min: 0, max: 1_000 }), text: fc.string({ minLength: 1, maxLength: 5 }) }),
          { minLength: 1, maxLength: 50 },
        ),
        fc.integer({ min: 1_000, max: 2_000 }),
        (raw, tEnd) => {
          const tokens = [...raw].sort((a, b) => a.t - b.t);
          const s = readSpread({ tokens, tEnd })!;
          expect(s.maxReadShare).toBeGreaterThan(0);
          expect(s.maxReadShare).toBeLessThanOrEqual(1 + 1e-12);
          expect(s.lateShare).toBeGreaterThanOrEqual(0);
          expect(s.lateShare).toBeLessThanOrEqual(1 + 1e-12);
          expect(s.maxReadShare).toBeGreaterThanOrEqual(1 / s.reads - 1e-12);
        },
      ),
      { seed: 7, numRuns: 200 },
    );
  });
});

describe('stallShare and bandAbove', () => {
  test('a stall excuses at most its share of the whole request time', () => {
    expect(stallShare(50, 0, 1_000)).toBeCloseTo(0.05, 10);
    expect(stallShare(5_000, 0, 1_000)).toBe(1);
    expect(stallShare(10, 500, 500)).toBe(1); // no window: cannot tell
    expect(stallShare(-3, 0, 100)).toBe(0);
  });

  test('bandAbove: pass at or under the threshold, fail only when the lower bound is past it', () => {
    expect(bandAbove(0.1, 0.05, 0.5)).toBe('pass');
    expect(bandAbove(0.5, 0.4, 0.5)).toBe('pass');
    expect(bandAbove(0.9, 0.6, 0.5)).toBe('fail');
    expect(bandAbove(0.9, 0.4, 0.5)).toBe('borderline');
    expect(bandAbove(0.9, undefined, 0.5)).toBe('borderline');
    expect(bandAbove(undefined, 0.9, 0.5)).toBeUndefined();
  });
});
