// The health gate (lib/grading/health-gate.ts): no timing verdict passes on a server degraded right after its check.
import { describe, expect, test } from 'vitest';
import { gateTimingVerdict, type HealthAfterCheck } from '../lib/grading/health-gate.ts';
import type { Verdict } from '../lib/model/types.ts';

const sick: HealthAfterCheck = {
  degraded: true,
  figures: 'TTFT 17.6 → 392 ms (22x), decode 123 tok/s → 11.9 tok/s (10x the time)',
  lasting: true,
  waitedMs: 3_000,
};
const v = (outcome: Verdict['outcome'], extra: Partial<Verdict> = {}): Verdict => ({
  outcome,
  message: `${outcome}: close to linear`,
  ...extra,
});

describe('gateTimingVerdict', () => {
  test('healthy after the check, or no probe (sentinel off): the verdict unchanged', () => {
    const healthy: HealthAfterCheck = { degraded: false, figures: '', lasting: false, waitedMs: 0 };
    for (const h of [healthy, undefined])
      expect(gateTimingVerdict('cycles.no-slowdown', v('pass'), h)).toEqual(v('pass'));
  });

  test('a pass or a warn on a server degraded after it: inconclusive, naming the figures and the check as the cause', () => {
    for (const o of ['pass', 'warn'] as const) {
      const g = gateTimingVerdict('context.prefill-scaling', v(o, { borderline: true, metrics: { a: 1 } }), sick);
      expect(g.outcome).toBe('inconclusive');
      expect(g.borderline).toBeUndefined();
      expect(g.message).toContain('not graded: the server was degraded right after this check');
      expect(g.message).toContain('TTFT 17.6 → 392 ms');
      expect(g.message).toContain('degraded since context.prefill-scaling');
      expect(g.message).toContain('context.prefill-scaling is the check that made it so');
      expect(g.message).toContain(`its ${o} would grade the sickness`);
      expect(g.metrics).toMatchObject({
        a: 1,
        healthGate: { degradedAfter: 'context.prefill-scaling', lasting: true },
      });
    }
  });

  test('recovered within the wait: still not a pass (its points were measured sick), saying it recovered', () => {
    const g = gateTimingVerdict('parallel.scaling', v('pass'), { ...sick, lasting: false, waitedMs: 4_200 });
    expect(g.outcome).toBe('inconclusive');
    expect(g.message).toContain('recovered within 4.2 s');
  });

  test('a fail stays a fail (its finding holds on any server), saying the server was degraded after it', () => {
    const g = gateTimingVerdict('cycles.no-slowdown', v('fail'), sick);
    expect(g.outcome).toBe('fail');
    expect(g.message).toMatch(/^fail: close to linear\n\(measured while the server was degraded/);
  });

  test('inconclusive and skip stay as they are', () => {
    for (const o of ['inconclusive', 'skip'] as const) expect(gateTimingVerdict('x.y', v(o), sick)).toEqual(v(o));
  });
});
