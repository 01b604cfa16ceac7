// Who used the CPUs while the cycles ran (lib/machine-load.ts), and the rule that lets a neighbour's load, not the
// server, explain a trend (lib/cycles-grading.ts contention): excused only with a rise of other load AND a CPU-bound
// server whose own CPU fell about as much as its speed.
import { describe, expect, test } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpuSnapshot, cpuUse, processTreeJiffies, type CpuUse } from '../lib/machine-load.ts';
import { contention, gradeNoSlowdown, gradeTtftStable, type CycleSample } from '../lib/cycles-grading.ts';

const th = { relative: 0.2, absolute: 0, alpha: 0.05, minCycles: 5, starvedLoopP99Ms: 100 };
const ttftTh = { relative: 0.5, absolute: 30, alpha: 0.05, minCycles: 5, starvedLoopP99Ms: 100 };
const use = (other: number, server: number): CpuUse => ({ cores: 2, otherCores: other, serverCores: server, clientCores: 0.1 });

/** 9 cycles: speed steps from 430 to 340 tok/s at cycle 4 (the CI failure of stop 15), CPU use per cycle from f. */
function stepped(cpu: (c: number) => CpuUse | undefined, tps: (c: number) => number = (c) => (c < 4 ? 430 : 340), ttft: () => number = () => 12): CycleSample[] {
  return Array.from({ length: 9 }, (_, i) => {
    const c = i + 1;
    const u = cpu(c);
    return { cycle: c, wallTps: [0.99, 1, 1.01].map((f) => tps(c) * f), ttftMs: [0.98, 1, 1.03].map((f) => ttft() * f), ...(u ? { cpu: u } : {}) };
  });
}

describe('contention: a neighbour explains a trend only when the figures say so', () => {
  test('other load rose by 0.9 cores while the CPU-bound server lost CPU in step with its speed: inconclusive, with the figures', () => {
    const v = gradeNoSlowdown({ cycles: stepped((c) => (c < 4 ? use(0.05, 0.95) : use(0.95, 0.75))), thresholds: th });
    expect(v.outcome).toBe('inconclusive');
    expect(v.message).toMatch(/^the machine got busier while the cycles ran: other processes used 0\.05 cores in the first 3 cycles and 0\.95 in the last 3/);
    expect(v.message).toContain('per-cycle wall_tps 430');
  });
  test('the same drop on a quiet machine is still graded (a slowdown of the server)', () => {
    const v = gradeNoSlowdown({ cycles: stepped(() => use(0.05, 0.95)), thresholds: th });
    expect(['warn', 'fail']).toContain(v.outcome);
    expect(v.message).toMatch(/slowdown over cycles/);
  });
  test('a server that keeps its CPU while it slows (more CPU per token: its own fault) is not excused by a neighbour', () => {
    const v = gradeNoSlowdown({ cycles: stepped((c) => (c < 4 ? use(0.05, 0.95) : use(0.95, 0.95))), thresholds: th });
    expect(v.outcome).not.toBe('inconclusive');
  });
  test('a server that is not CPU-bound (sleeps, a GPU) cannot lose speed to a CPU neighbour', () => {
    const v = gradeNoSlowdown({ cycles: stepped((c) => (c < 4 ? use(0.05, 0.2) : use(0.95, 0.1))), thresholds: th });
    expect(v.outcome).not.toBe('inconclusive');
  });
  test('without the server\'s CPU (a server the suite did not start) nothing is excused', () => {
    const v = gradeNoSlowdown({ cycles: stepped((c) => ({ cores: 2, otherCores: c < 4 ? 0.05 : 0.95, clientCores: 0.1 })), thresholds: th });
    expect(v.outcome).not.toBe('inconclusive');
    expect(contention([{ cycle: 1, otherCores: 0 }, { cycle: 2, otherCores: 1 }], 1, 1.2)).toBeUndefined();
  });
  test('a drop far larger than the lost CPU explains (decay beside a neighbour) still fails', () => {
    const v = gradeNoSlowdown({ cycles: stepped((c) => (c < 4 ? use(0.05, 0.95) : use(0.95, 0.8)), (c) => 430 / (1 + 0.3 * c)), thresholds: th });
    expect(v.outcome).toBe('fail');
  });
  test('TTFT growth beside a neighbour that took the server\'s CPU is inconclusive too', () => {
    const v = gradeTtftStable({ cycles: stepped((c) => (c < 4 ? use(0.05, 0.95) : use(1.0, 0.5)), () => 400, () => 0).map((s) => ({ ...s, ttftMs: [0.98, 1, 1.03].map((f) => (s.cycle < 4 ? 40 : 75) * f) })), thresholds: ttftTh });
    expect(v.outcome).toBe('inconclusive');
    expect(v.message).toContain('the machine got busier');
  });
});

describe('/proc readings', () => {
  test.skipIf(!existsSync('/proc/stat'))('a busy child shows as server cores, our idle wait as little client CPU', async () => {
    const child = spawn(process.execPath, ['-e', 'const t = Date.now(); while (Date.now() - t < 1500) {}'], { stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 100));
      const a = cpuSnapshot(child.pid);
      await new Promise((r) => setTimeout(r, 800));
      const b = cpuSnapshot(child.pid);
      expect(a?.server).toBeDefined();
      const u = cpuUse(a!, b!)!;
      // A busy loop is one core; on a shared 2-core machine it gets most of one, never more.
      expect(u.serverCores).toBeGreaterThan(0.4);
      expect(u.serverCores).toBeLessThan(1.2);
      expect(u.clientCores).toBeLessThan(0.5);
      expect(u.otherCores).toBeGreaterThanOrEqual(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
  test('a process that is gone reads undefined, not zero', () => {
    expect(processTreeJiffies(2 ** 22 + 12345)).toBeUndefined();
  });
});
