// lib/grading/phantom.ts: delivery and physics rules for phantom gen_tps, on hand-made and randomised streams.

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  assessPhysical,
  assessStream,
  causeLabel,
  genTpsAtLeast,
  maxPlausibleTps,
  phantomFromEvidence,
  physicalBoundTps,
  physicalFlag,
  rateTps,
} from '../lib/grading/phantom.ts';

/** n token events, one per read, every `gap` ms after `ttft`. */
function steady(n: number, ttft: number, gap: number): number[] {
  return Array.from({ length: n }, (_, i) => ttft + i * gap);
}

describe('assessStream', () => {
  test('a normal stream (role chunk, then one event per 8 ms) is not flagged', () => {
    const tokens = steady(48, 12, 8);
    const a = assessStream({
      tokenTimes: tokens,
      readTimes: [2, ...tokens, tokens[47] + 0.2],
      e2eMs: tokens[47] + 0.3,
    });
    expect(a.phantom).toBe(false);
    expect(a.causes).toEqual([]);
    expect(a.figures.genTps).toBeCloseTo(125, 6);
    expect(a.figures.maxEventsInOneRead).toBe(1);
  });

  test('role chunk at once, every content token in one read at the end: phantom, cause named', () => {
    const end = 390;
    const a = assessStream({ tokenTimes: Array(48).fill(end), readTimes: [3, end], e2eMs: end + 0.1 });
    expect(a.phantom).toBe(true);
    expect(a.causes.map((c) => c.kind)).toEqual(['late-content-after-role', 'one-read', 'burst']);
    expect(a.causes[0].detail).toContain('role chunk');
    expect(a.causes[1].detail).toContain('48 of 48 token events arrived in one read');
    expect(a.figures.genTps).toBeUndefined(); // zero-length window: never Infinity
    expect(a.figures.genTpsAtLeast).toBe(47000);
  });

  test('the whole response at the end (headers too): phantom, "whole response"', () => {
    const a = assessStream({ tokenTimes: Array(20).fill(300), readTimes: [300], e2eMs: 300.2 });
    expect(a.phantom).toBe(true);
    expect(a.causes[0].kind).toBe('whole-response-at-end');
  });

  test('tokens spread over a few reads within a millisecond, from a server that generates 125 tok/s: burst', () => {
    const tokens = Array.from({ length: 30 }, (_, i) => 200 + Math.floor(i / 5) * 0.1);
    const a = assessStream({
      tokenTimes: tokens,
      readTimes: [1, ...new Set(tokens)],
      e2eMs: 201,
      referenceTps: 125,
      referenceSource: 'server-reported timings.predicted_per_second',
    });
    expect(a.phantom).toBe(true);
    expect(a.causes.map((c) => c.kind)).toContain('burst');
    expect(a.causes.map((c) => c.kind)).not.toContain('one-read');
    expect(a.causes.find((c) => c.kind === 'burst')!.detail).toContain('125 tok/s (server-reported');
  });

  test('a correct 2400 tok/s server (0.5 ms median gaps, reads merging a few events) is not phantom, with or without its reported rate', () => {
    // 1024 tokens at 2400 tok/s; the client reads 1 to 4 events at a time.
    const times: number[] = [];
    let t = 4;
    for (let i = 0; times.length < 1024; i++) {
      const k = Math.min(1 + (i % 4), 1024 - times.length);
      t += (k * 1000) / 2400;
      for (let j = 0; j < k; j++) times.push(t);
    }
    const e2e = t + 0.3;
    for (const ref of [{ referenceTps: 2400 }, { referenceTps: 2300 }, {}]) {
      const a = assessStream({
        tokenTimes: times,
        readTimes: [1, ...new Set(times)],
        e2eMs: e2e,
        completionTokens: 1024,
        clientStallMs: 2,
        ...ref,
      });
      expect(a.phantom, JSON.stringify(ref)).toBe(false);
      expect(a.inconclusive).toBeUndefined();
    }
  });

  test('a flush from a 3000 tok/s server (2048 tokens in one read at the end) is phantom against its reported rate, even with a 40 ms client stall', () => {
    const end = 690;
    const a = assessStream({
      tokenTimes: Array(2048).fill(end),
      readTimes: [2, end],
      e2eMs: end + 0.2,
      completionTokens: 2048,
      clientStallMs: 40,
      referenceTps: 3000,
    });
    expect(a.phantom).toBe(true);
    expect(a.causes.map((c) => c.kind)).toEqual(['late-content-after-role', 'one-read', 'burst']);
  });

  test('a long prefill before a normal decode is not flagged (late first token alone is no evidence)', () => {
    const tokens = steady(40, 30_000, 10);
    const a = assessStream({ tokenTimes: tokens, readTimes: [1, ...tokens], e2eMs: tokens[39] + 1 });
    expect(a.phantom).toBe(false);
  });

  test('too few token events are never judged', () => {
    const a = assessStream({ tokenTimes: Array(5).fill(100), readTimes: [100], e2eMs: 100 });
    expect(a.phantom).toBe(false);
    expect(a.tooShort).toBe(true);
  });

  test('a client stall long enough to merge reads makes it inconclusive, a short one does not', () => {
    const base = { tokenTimes: Array(48).fill(390), readTimes: [3, 390], e2eMs: 390 };
    // 48 events at up to 375 tok/s span >= 125 ms: a 100 ms stall could merge half of them.
    const stalled = assessStream({ ...base, clientStallMs: 100, maxPlausibleTps: 375 });
    expect(stalled.phantom).toBe(false);
    expect(stalled.inconclusive).toMatch(/lagged up to 100 ms/);
    const fine = assessStream({ ...base, clientStallMs: 12, maxPlausibleTps: 375 });
    expect(fine.phantom).toBe(true);
  });

  test('property: streams with one event per read and gaps >= 2 ms are never flagged, whatever the jitter and coalescing', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 8, max: 300 }),
        fc.double({ min: 2, max: 80, noNaN: true }),
        fc.double({ min: 0, max: 60_000, noNaN: true }),
        fc.array(fc.double({ min: 0, max: 3, noNaN: true }), { minLength: 300, maxLength: 300 }),
        fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 300, maxLength: 300 }),
        (n, gap, ttft, jitter, groups) => {
          // Up to 3 events may share a read (Nagle, a busy client), each read >= gap apart.
          const times: number[] = [];
          let t = ttft;
          let g = 0;
          while (times.length < n) {
            const k = Math.min(groups[g % groups.length], n - times.length);
            for (let i = 0; i < k; i++) times.push(t);
            t += gap + jitter[g % jitter.length];
            g++;
          }
          const a = assessStream({ tokenTimes: times, readTimes: [0, ...times], e2eMs: t });
          return !a.phantom;
        },
      ),
      { numRuns: 500, seed: 5 },
    );
  });
});

describe('physics', () => {
  test('the seed figure: 400 GB/s over 1.7 GB per token caps a stream near 235 tok/s', () => {
    expect(physicalBoundTps({ memoryBandwidthGBs: 400, activeBytesPerTokenGB: 1.7 })).toBeCloseTo(235.3, 1);
    const hw = { memoryBandwidthGBs: 400, activeBytesPerTokenGB: 1.7 };
    expect(assessPhysical(120, hw)!.above).toBe(false);
    expect(assessPhysical(14000, hw)!.above).toBe(true);
    expect(assessPhysical(14000, hw)!.detail).toContain('above the physical bound');
    // 300 tok/s is above the bound but inside the 1.5x margin.
    expect(assessPhysical(300, hw)!.above).toBe(false);
  });

  test('speculative decoding lifts the bound by the factor, and only then', () => {
    const hw = { memoryBandwidthGBs: 400, activeBytesPerTokenGB: 1.7 };
    expect(assessPhysical(600, hw)!.above).toBe(true);
    expect(assessPhysical(600, { ...hw, speculativeDecoding: true })!.above).toBe(false);
    expect(assessPhysical(600, { ...hw, speculativeDecoding: true })!.detail).toContain('speculative decoding');
    expect(maxPlausibleTps({ ...hw, speculativeDecoding: true })).toBeCloseTo((400 / 1.7) * 1.5 * 4, 6);
  });

  test('no hardware, no rate, no bound: undefined rather than a verdict', () => {
    expect(physicalBoundTps(undefined)).toBeUndefined();
    expect(physicalBoundTps({ memoryBandwidthGBs: 0, activeBytesPerTokenGB: 1 })).toBeUndefined();
    expect(assessPhysical(undefined, { memoryBandwidthGBs: 1, activeBytesPerTokenGB: 1 })).toBeUndefined();
    expect(physicalFlag(100, undefined)).toBeUndefined();
  });

  test('rates never come out as Infinity or NaN', () => {
    expect(rateTps(10, 0)).toBeUndefined();
    expect(rateTps(undefined, 10)).toBeUndefined();
    expect(genTpsAtLeast(48, 0)).toBe(47000);
    expect(genTpsAtLeast(1, 0)).toBeUndefined();
  });
});

describe('reporter side (plain JSON from results files)', () => {
  test('phantomFromEvidence flags when at least half of the judged streams are phantom', () => {
    const good = { label: 's1', tokenTimes: steady(20, 10, 8), readTimes: [1, ...steady(20, 10, 8)], e2eMs: 170 };
    const bad = { label: 's2', tokenTimes: Array(20).fill(170), readTimes: [2, 170], e2eMs: 170 };
    expect(phantomFromEvidence([good, good])).toBeUndefined();
    const f = phantomFromEvidence([good, bad]);
    expect(f?.flagged).toBe(1);
    expect(f?.detail).toContain('s2:');
    expect(causeLabel(f!.kinds)).toContain('one read');
    expect(phantomFromEvidence('not evidence')).toBeUndefined();
    expect(phantomFromEvidence([{ label: 'x' }, null, 3])).toBeUndefined();
  });

  test('physicalFlag uses the profile hardware of the results header', () => {
    expect(physicalFlag(14000, { memoryBandwidthGBs: 400, activeBytesPerTokenGB: 1.7 })?.kinds).toEqual([
      'above-physical-bound',
    ]);
    expect(physicalFlag(120, { memoryBandwidthGBs: 400, activeBytesPerTokenGB: 1.7 })).toBeUndefined();
  });
});

describe('server-reported timings, per source and unit (lib/decode/server-timings.ts serverDecode)', async () => {
  const { serverDecode } = await import('../lib/decode/server-timings.ts');
  test('llama.cpp timings (ms): predicted_per_second, else predicted_n / predicted_ms; prompt_ms as the pre-token time', () => {
    expect(
      serverDecode({ source: 'timings', t: 0, value: { predicted_per_second: 125, prompt_ms: 12 } }, 48),
    ).toMatchObject({ tps: 125, tpsField: 'timings.predicted_per_second', preMs: 12 });
    expect(
      serverDecode({ source: 'timings', t: 0, value: { predicted_n: 50, predicted_ms: 400 } }, 48).tps,
    ).toBeCloseTo(125, 9);
  });
  test('vLLM metrics (ms), oMLX usage keys (s), Ollama (ns)', () => {
    expect(
      serverDecode({ source: 'metrics', t: 0, value: { generation_time_ms: 400, time_to_first_token_ms: 30 } }, 50),
    ).toMatchObject({ tps: 125, preMs: 30 });
    expect(
      serverDecode({ source: 'usage', t: 0, value: { generation_duration: 0.4, time_to_first_token: 0.03 } }, 50),
    ).toMatchObject({ tps: 125, preMs: 30 });
    expect(
      serverDecode(
        { source: 'ollama', t: 0, value: { eval_count: 50, eval_duration: 400e6, prompt_eval_duration: 30e6 } },
        50,
      ),
    ).toMatchObject({ tps: 125, preMs: 30 });
    expect(serverDecode({ source: 'timings', t: 0, value: {} }, 50).tps).toBeUndefined();
  });
});
