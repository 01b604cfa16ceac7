// context.prefill-scaling on reference-server curves with a known formula (fixtures/reference-server/faults/
// prefill.ts) and a 32768-token window: the quick tier measures up to 4096 tokens, and its extrapolated prefill at
// the window (the fixed cost removed) must be within ±25 % of the formula's value (docs/grading.md "Prefill
// scaling"). The same runs prove the verdicts both ways: linear + constant passes; a quadratic curve of a model
// whose width is unknown (21x by the old raw-TTFT figure, 128x with the fixed cost removed) is never a pass.
import { describe, expect, test } from 'vitest';
import { startReference } from '../fixtures/reference-server/spawn.ts';
import { runCheck } from '../lib/check/check.ts';
import { freshMemory } from '../lib/model/memory.ts';
import { checks } from '../suites/context.ts';

const WINDOW = 32_768;
const check = checks.find((c) => c.id === 'context.prefill-scaling')!;

async function measure(args: string[]) {
  const ref = await startReference(['--context-window', String(WINDOW), ...args]);
  try {
    const { verdict } = await runCheck(check, {
      memory: freshMemory(),
      profile: ref.profile,
      server: ref.info,
      tier: 'quick',
      strict: false,
      log: () => undefined,
    });
    return { verdict, m: verdict.metrics as Record<string, number | undefined> };
  } finally {
    await ref.stop();
  }
}

describe('context.prefill-scaling extrapolates known curves to a 32768-token window within ±25 %', () => {
  const cases = [
    {
      name: 'linear + constant: 15 ms + 0.1 ms·n',
      args: ['--fault', 'prefill-curve'],
      prefillMs: 0.1 * WINDOW,
      outcomes: ['pass'],
      says: ['close to linear'],
    },
    {
      name: 'quadratic + constant: 15 ms + n²/160000 ms',
      args: ['--fault', 'prefill-curve', '--fault-arg', 'linear=0', '--fault-arg', `quadratic=${1 / 160_000}`],
      prefillMs: WINDOW ** 2 / 160_000,
      outcomes: ['warn', 'fail'],
      says: [/\d+x \(95 % CI/, 'no model width'],
    },
    {
      name: 'quadratic + constant: 15 ms + n²/16000 ms, model width unknown',
      args: ['--fault', 'prefill-quadratic'],
      prefillMs: WINDOW ** 2 / 16_000,
      outcomes: ['warn', 'fail'],
      says: [/\d+x \(95 % CI/, 'no model width'],
    },
  ];
  for (const c of cases)
    test(c.name, { timeout: 60_000 }, async () => {
      const { verdict, m } = await measure(c.args);
      const got = m.windowPrefillS! * 1000;
      console.log(
        `[prefill extrapolation] ${c.name}: ${verdict.outcome}; window ${(got / 1000).toFixed(2)} s vs formula ${(c.prefillMs / 1000).toFixed(2)} s (${(((got - c.prefillMs) / c.prefillMs) * 100).toFixed(1)} %), fixed ${m.fixedMs?.toFixed(1)} ms, excess ${m.excess?.toFixed(1)}x (${m.excessLow?.toFixed(1)}–${m.excessHigh?.toFixed(1)})`,
      );
      expect(m.windowTokens).toBe(WINDOW);
      expect(got / c.prefillMs, verdict.message).toBeGreaterThanOrEqual(0.75);
      expect(got / c.prefillMs, verdict.message).toBeLessThanOrEqual(1.25);
      expect(c.outcomes, verdict.message).toContain(verdict.outcome);
      for (const s of c.says)
        if (typeof s === 'string') expect(verdict.message).toContain(s);
        else expect(verdict.message).toMatch(s);
    });
});
