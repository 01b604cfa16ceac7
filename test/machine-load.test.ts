// Who used the CPUs while the cycles ran (lib/measure/machine-load.ts), and the rule that lets a neighbour's load, not the
// server, explain a trend (lib/grading/cycles.ts contention): excused only with a rise of other load AND a CPU-bound
// server whose own CPU fell about as much as its speed.

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  type CycleSample,
  contention,
  cyclesUndecided,
  gradeNoSlowdown,
  gradeTtftStable,
} from '../lib/grading/cycles.ts';
import { neighbourExplains } from '../lib/grading/healthy-after.ts';
import { type CpuUse, cpuSnapshot, cpuUse, processTreeJiffies } from '../lib/measure/machine-load.ts';
import { checks as cycleChecks, cyclesWorkload, trendThresholds } from '../suites/cycles.ts';

const th = { relative: 0.2, absolute: 0, alpha: 0.05, minCycles: 5, starvedLoopP99Ms: 100 };
const ttftTh = { relative: 0.5, absolute: 30, alpha: 0.05, minCycles: 5, starvedLoopP99Ms: 100 };
const use = (other: number, server: number): CpuUse => ({
  cores: 2,
  otherCores: other,
  serverCores: server,
  clientCores: 0.1,
});

/** 9 cycles: speed steps from 430 to 340 tok/s at cycle 4 (the CI failure of stop 15), CPU use per cycle from f. */
function stepped(
  cpu: (c: number) => CpuUse | undefined,
  tps: (c: number) => number = (c) => (c < 4 ? 430 : 340),
  ttft: () => number = () => 12,
): CycleSample[] {
  return Array.from({ length: 9 }, (_, i) => {
    const c = i + 1;
    const u = cpu(c);
    return {
      cycle: c,
      wallTps: [0.99, 1, 1.01].map((f) => tps(c) * f),
      ttftMs: [0.98, 1, 1.03].map((f) => ttft() * f),
      ...(u ? { cpu: u } : {}),
    };
  });
}

describe('contention: a neighbour explains a trend only when the figures say so', () => {
  test('other load rose by 0.9 cores while the CPU-bound server lost CPU in step with its speed: inconclusive, with the figures', () => {
    const v = gradeNoSlowdown({ cycles: stepped((c) => (c < 4 ? use(0.05, 0.95) : use(0.95, 0.75))), thresholds: th });
    expect(v.outcome).toBe('inconclusive');
    expect(v.message).toMatch(
      /^the machine got busier while the cycles ran: other processes used 0\.05 cores in the first 3 cycles and 0\.95 in the last 3/,
    );
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
  test("without the server's CPU (a server the suite did not start) nothing is excused", () => {
    const v = gradeNoSlowdown({
      cycles: stepped((c) => ({ cores: 2, otherCores: c < 4 ? 0.05 : 0.95, clientCores: 0.1 })),
      thresholds: th,
    });
    expect(v.outcome).not.toBe('inconclusive');
    expect(
      contention(
        [
          { cycle: 1, otherCores: 0 },
          { cycle: 2, otherCores: 1 },
        ],
        1,
        1.2,
      ),
    ).toBeUndefined();
  });
  test('a drop far larger than the lost CPU explains (decay beside a neighbour) still fails', () => {
    const v = gradeNoSlowdown({
      cycles: stepped(
        (c) => (c < 4 ? use(0.05, 0.95) : use(0.95, 0.8)),
        (c) => 430 / (1 + 0.3 * c),
      ),
      thresholds: th,
    });
    expect(v.outcome).toBe('fail');
  });
  test("TTFT growth beside a neighbour that took the server's CPU is inconclusive too", () => {
    const v = gradeTtftStable({
      cycles: stepped(
        (c) => (c < 4 ? use(0.05, 0.95) : use(1.0, 0.5)),
        () => 400,
        () => 0,
      ).map((s) => ({ ...s, ttftMs: [0.98, 1, 1.03].map((f) => (s.cycle < 4 ? 40 : 75) * f) })),
      thresholds: ttftTh,
    });
    expect(v.outcome).toBe('inconclusive');
    expect(v.message).toContain('the machine got busier');
  });
});

// The rule's thresholds (+0.25 cores, 0.5 cores CPU-bound, ×1.25 slack) were set from two CI runs; these properties
// hold them against every neighbour a seeded search finds, graded as the suite grades: the checks' default thresholds
// and the sequential rule of the quick tier (6 cycles, two more at a time while a trend is open, up to 10).
describe('contention over generated neighbours (the sequential rule, default thresholds)', () => {
  const trend = trendThresholds((id, name) => cycleChecks.find((c) => c.id === id)!.thresholds![name]!.value);
  const w = cyclesWorkload('quick');
  const jitter = fc.array(fc.double({ min: -0.15, max: 0.15, noNaN: true }), { minLength: 100, maxLength: 100 });
  /** A CPU-bound server (speed ∝ its own CPU) from 3 to 3000 tok/s; from cycle `onset` a neighbour takes `take` of its CPU. */
  const neighbour = fc.record({
    serverCores: fc.double({ min: 0.6, max: 1, noNaN: true }),
    onset: fc.integer({ min: 2, max: w.maxCycles }),
    take: fc.double({ min: 0.1, max: 0.6, noNaN: true }),
    spare: fc.double({ min: 0.05, max: 0.7, noNaN: true }),
    tps: fc.double({ min: 3, max: 3000, noNaN: true }),
    jitter,
  });
  type Neighbour = typeof neighbour extends fc.Arbitrary<infer T> ? T : never;
  function series(n: Neighbour, decayPerCycle = 0, withCpu = true): CycleSample[] {
    let k = 0;
    const j = () => 1 + n.jitter[k++ % n.jitter.length]!;
    // The neighbour uses at least the CPU the server lost (and at least 0.25 cores), plus some of the idle core.
    const neighbourCores = Math.max(0.25, n.take * n.serverCores) + n.spare;
    return Array.from({ length: w.maxCycles }, (_, i) => {
      const cycle = i + 1;
      const on = cycle >= n.onset;
      const server = n.serverCores * (on ? 1 - n.take : 1) * j();
      const speed = (n.tps * (server / n.serverCores)) / (1 + decayPerCycle * (cycle - 1));
      const cpu = {
        cores: 2,
        otherCores: 0.03 * j() + (on ? neighbourCores : 0),
        serverCores: server,
        clientCores: 0.1,
      };
      return {
        cycle,
        wallTps: [j(), j(), j()].map((f) => speed * f),
        ttftMs: [j(), j(), j()].map((f) => 40 * (n.serverCores / server) * f),
        ...(withCpu ? { cpu } : {}),
      };
    });
  }
  function graded(all: CycleSample[]): { slowdown: string; ttft: string; cycles: number } {
    let n = w.cycles;
    while (n < w.maxCycles && cyclesUndecided({ cycles: all.slice(0, n), ...trend })) n = Math.min(w.maxCycles, n + 2);
    const cycles = all.slice(0, n);
    return {
      slowdown: gradeNoSlowdown({ cycles, thresholds: trend.slowdown }).outcome,
      ttft: gradeTtftStable({ cycles, thresholds: trend.ttft }).outcome,
      cycles: n,
    };
  }

  const blamed = (g: { slowdown: string; ttft: string }) =>
    [g.slowdown, g.ttft].some((o) => o === 'fail' || o === 'warn');
  test("a neighbour that takes 10-60 % of a CPU-bound server's CPU, from any cycle, never fails or warns either check", () => {
    fc.assert(
      fc.property(neighbour, (n) => {
        const g = graded(series(n));
        expect(g.slowdown, `no-slowdown beside a neighbour, ${g.cycles} cycles`).not.toMatch(/^(fail|warn)$/);
        expect(g.ttft, `ttft-stable beside a neighbour, ${g.cycles} cycles`).not.toMatch(/^(fail|warn)$/);
      }),
      { numRuns: 2000, seed: 8 },
    );
  });
  test('without the CPU figures the same neighbours are blamed on the server (the property above is not vacuous)', () => {
    const samples = fc.sample(neighbour, { numRuns: 2000, seed: 8 });
    const withoutCpu = samples.map((n) => graded(series(n, 0, false)));
    // Measured (seed 8): 416 of 2000 warned or failed without the figures, 4 of them failed; 0 with the figures.
    expect(withoutCpu.filter(blamed).length).toBeGreaterThan(100);
    expect(withoutCpu.filter((g) => g.slowdown === 'fail' || g.ttft === 'fail').length).toBeGreaterThan(0);
  });
  test('a server decaying by 15-50 % per cycle beside the same neighbour still fails no-slowdown', () => {
    fc.assert(
      fc.property(neighbour, fc.double({ min: 0.15, max: 0.5, noNaN: true }), (n, decay) => {
        expect(graded(series(n, decay)).slowdown).toBe('fail');
      }),
      { numRuns: 2000, seed: 9 },
    );
  });
});

describe('context.healthy-after: a neighbour between the sets explains a slowdown only when the figures say so', () => {
  test('other load up 0.9 cores, the CPU-bound server down from 0.95 to 0.6 cores, speed down 1.5x: explained, with the figures', () => {
    expect(neighbourExplains(use(0.05, 0.95), use(0.95, 0.6), 1.5)).toMatch(
      /^the machine got busier between the normal requests before the long ones and after them: other processes used 0\.05 cores before and 0\.95 after/,
    );
  });
  test('a quiet machine, a server that kept its CPU, or a drop far beyond the lost CPU: not explained (graded as the server)', () => {
    expect(neighbourExplains(use(0.05, 0.95), use(0.05, 0.6), 1.5)).toBeUndefined();
    expect(neighbourExplains(use(0.05, 0.95), use(0.95, 0.95), 1.5)).toBeUndefined();
    expect(neighbourExplains(use(0.05, 0.95), use(0.95, 0.85), 3)).toBeUndefined();
    expect(neighbourExplains(undefined, use(0.95, 0.6), 1.5)).toBeUndefined();
  });
});

describe('/proc readings', () => {
  test.skipIf(!existsSync('/proc/stat'))(
    'a busy child shows as server cores, our idle wait as little client CPU',
    async () => {
      const child = spawn(process.execPath, ['-e', 'const t = Date.now(); while (Date.now() - t < 1500) {}'], {
        stdio: 'ignore',
      });
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
    },
  );
  test('a process that is gone reads undefined, not zero', () => {
    expect(processTreeJiffies(2 ** 22 + 12345)).toBeUndefined();
  });
});
