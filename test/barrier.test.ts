import { describe, expect, test } from 'vitest';
import { releaseTogether } from '../lib/measure/barrier.ts';

describe('releaseTogether', () => {
  test('all N are released after the gate, none before; start order recorded', async () => {
    const N = 16;
    const started: number[] = [];
    let startedWhenArmed = -1;
    const tasks = Array.from({ length: N }, (_, i) => async () => {
      started.push(i);
      await new Promise((r) => setTimeout(r, (i * 7) % 5)); // finish in a different order than started
      return i * 10;
    });
    const r = await releaseTogether(tasks, {
      armDelayMs: 20,
      onArmed: () => {
        startedWhenArmed = started.length;
      },
    });

    expect(startedWhenArmed).toBe(0); // nothing ran while the tasks were parked on the gate
    expect(r.results).toEqual(Array.from({ length: N }, (_, i) => ({ status: 'fulfilled', value: i * 10 })));
    expect([...r.order].sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
    expect(started).toEqual(r.order);
    expect(r.startTimes).toHaveLength(N);
    for (const s of r.startTimes) expect(s).toBeGreaterThanOrEqual(r.releasedAt);
    // For the record only (no timing assertion): spread of the N starts after the gate.
    console.log(
      `barrier: ${N} tasks, start spread ${(Math.max(...r.startTimes) - Math.min(...r.startTimes)).toFixed(3)} ms, ` +
        `first start ${(Math.min(...r.startTimes) - r.releasedAt).toFixed(3)} ms after release`,
    );
  });

  test('rejections are collected, not thrown (async rejection and synchronous throw)', async () => {
    const r = await releaseTogether<string>(
      [
        async () => 'ok',
        async () => {
          throw new Error('async boom');
        },
        () => {
          throw new Error('sync boom');
        },
      ],
      { armDelayMs: 0 },
    );
    expect(r.results.map((x) => x.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect((r.results[1] as PromiseRejectedResult).reason.message).toBe('async boom');
    expect((r.results[2] as PromiseRejectedResult).reason.message).toBe('sync boom');
    expect(r.order).toHaveLength(3);
  });

  test('no tasks', async () => {
    const r = await releaseTogether([], { armDelayMs: 0 });
    expect(r.results).toEqual([]);
    expect(r.startTimes).toEqual([]);
  });
});
