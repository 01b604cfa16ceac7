// The health sentinel's judgement (lib/server/sentinel.ts judgeHealth): never "degraded" for a correct server whose
// probes a busy 2-core machine slows by up to 3x, always for the slowdowns it is for. Pure: seeded simulations.
import { expect, test } from 'vitest';
import { mulberry32 } from '../lib/measure/stats.ts';
import { figuresOf, judgeHealth, SENTINEL } from '../lib/server/sentinel.ts';

/** A probe of the reference server's shape (8 tokens, 8 ms steps) or a 3 tok/s server's (4 tokens), slowed by `load`. */
function probe(base: { ttftMs: number; stepMs: number; tokens: number }, load: number) {
  const ttftMs = base.ttftMs * load;
  const decodeMs = base.stepMs * (base.tokens - 1) * load;
  return { ttftMs, decodeMs, e2eMs: ttftMs + decodeMs, tokens: base.tokens };
}

const SHAPES = [
  { name: 'reference server', ttftMs: 17, stepMs: 8.7, tokens: 8 },
  { name: 'fast GPU server', ttftMs: 3, stepMs: 0.5, tokens: 8 },
  { name: '3 tok/s server', ttftMs: 900, stepMs: 333, tokens: 4 },
];

test('a correct server slowed by neighbours (each probe up to 3x, any mix) is never degraded', () => {
  const rnd = mulberry32(22);
  for (const shape of SHAPES) {
    for (let trial = 0; trial < 5_000; trial++) {
      // Baseline on a quiet machine or a busy one (each probe 1-3x), later probes 1-3x: the worst case is a quiet
      // baseline and three loaded probes, 3x.
      const base = figuresOf(
        [0, 1, 2].map(() => probe(shape, 1 + 2 * rnd() * rnd())),
        0,
      );
      const now = figuresOf(
        [0, 1, 2].map(() => probe(shape, 1 + 2 * rnd())),
        0,
      );
      const v = judgeHealth(base, now);
      if (v.degraded) throw new Error(`${shape.name}, trial ${trial}: ${v.figures}`);
    }
  }
});

test('one stalled probe among three does not make a median degraded', () => {
  const shape = SHAPES[0]!;
  const base = figuresOf(
    [1, 1, 1].map((l) => probe(shape, l)),
    0,
  );
  expect(
    judgeHealth(
      base,
      figuresOf(
        [1, 1, 50].map((l) => probe(shape, l)),
        0,
      ),
    ).degraded,
  ).toBe(false);
  expect(
    judgeHealth(
      base,
      figuresOf(
        [1, 50, 50].map((l) => probe(shape, l)),
        0,
      ),
    ).degraded,
  ).toBe(true);
});

test('the slowdowns it is for are degraded, with the figures named', () => {
  // The story: short requests 0.02 s before an over-window request, 5.5 s after it.
  const before = { ttftMs: 12, decodeMs: 8, e2eMs: 20, decodeTps: 1000 };
  const v = judgeHealth(before, { ttftMs: 5_490, decodeMs: 10, e2eMs: 5_500, decodeTps: 800 });
  expect(v.degraded).toBe(true);
  expect(v.figures).toMatch(/TTFT 12\.00 → 5490 ms \(458x\)/);
  // Decode SENTINEL.ratio times slower and more than the floor: degraded; a 3 tok/s server 4x slower too.
  const slow = SHAPES[2]!;
  const b = figuresOf([probe(slow, 1)], 0);
  const decode4x = { ...b, decodeMs: b.decodeMs * SENTINEL.ratio, e2eMs: b.ttftMs + b.decodeMs * SENTINEL.ratio };
  expect(judgeHealth(b, decode4x).degraded).toBe(true);
  // 10x slower but only 50 ms in all (a 5 ms probe): below the floor, not a finding.
  expect(judgeHealth({ ttftMs: 2, decodeMs: 3, e2eMs: 5 }, { ttftMs: 20, decodeMs: 30, e2eMs: 50 }).degraded).toBe(
    false,
  );
});
