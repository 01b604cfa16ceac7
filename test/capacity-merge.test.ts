// Several load machines, one capacity table (lib/capacity/merge.ts, scripts/merge.ts, docs/capacity-machines.md).
// The rule on hand-made tables (both ways: a level one machine did not run and windows that did not overlap as
// scheduled are flagged; tables of different workloads or one label twice refuse to merge), then the merge proven
// on two local "machines": two processes with their own --machine label load one reference server on the same start
// schedule, and `llm-server-conformance merge` makes one table of their results files.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type ReferenceHandle, startReference } from '../fixtures/reference-server/spawn.ts';
import { mergeCapacity, serverLevels } from '../lib/capacity/merge.ts';
import { readCapacity } from '../lib/capacity/read.ts';
import type { CapacityLevel, CapacityTable } from '../lib/capacity/types.ts';
import { ROOT } from '../lib/config/profile.ts';
import { compileSchema, schemaErrors } from '../lib/config/schemas.ts';
import { BURST_REASON, capacityTable, level } from './support/capacity-samples.ts';

const table = (machine: string, levels: CapacityLevel[]): CapacityTable => ({
  workload: { kind: 'synthetic', inputTokens: 8, outputTokens: 24 },
  levels,
  machines: [machine],
});

describe('merge rule', () => {
  test('per-machine levels kept with their machine and clock; merged level: sums over the longest window', () => {
    // Clocks 1 h apart: only durations cross machines.
    const a = table('a', [
      level({ machine: 'a', concurrency: 2, t0: 1_000_000, windowMs: 2000, tokens: 400, sent: 2 }),
    ]);
    const b = table('b', [
      level({
        machine: 'b',
        concurrency: 2,
        t0: 4_600_000,
        windowMs: 1800,
        tokens: 300,
        sent: 2,
        flags: [{ figure: 'itl', reason: BURST_REASON }],
      }),
    ]);
    a.levels[0]!.goodput = { ratePerS: 1, fraction: 1 }; // 2 good requests in 2 s
    b.levels[0]!.goodput = { ratePerS: 0.5, fraction: 0.5 }; // 0.9 good in 1.8 s
    const m = mergeCapacity([
      { machine: 'a', table: a },
      { machine: 'b', table: b },
    ]);
    expect(m.machines).toEqual(['a', 'b']);
    expect(m.levels.filter((l) => l.machine === 'a')[0]!.startedAt).toBe(1_000_000);
    expect(m.levels.filter((l) => l.machine === 'b')[0]!.startedAt).toBe(4_600_000);
    const [merged] = serverLevels(m);
    expect(merged).toMatchObject({
      machine: 'a+b',
      concurrency: 4,
      sent: 4,
      completed: 4,
      startedAt: 0,
      endedAt: 2000,
    });
    expect(merged!.aggregateTps).toBeCloseTo(350); // (400 + 300) tokens / 2 s, not 200 + 166.7
    expect(merged!.goodput!.ratePerS).toBeCloseTo(1.45); // (2 + 0.9) good / 2 s
    expect(merged!.goodput!.fraction).toBeCloseTo(0.75);
    expect(merged!.flags).toEqual([{ figure: 'itl', reason: `[b] ${BURST_REASON}` }]);
    expect(merged!.ttftMs).toEqual(a.levels[0]!.ttftMs); // equal inputs: the bound is the value
    expect(m.saturation).toBeUndefined(); // one level: a rise that stops at the sweep's bound is no saturation
  });

  test('a level one machine did not run, and windows that did not overlap as scheduled, are flagged', () => {
    const a = table('a', [
      level({ machine: 'a', concurrency: 1, t0: 0, windowMs: 1000, tokens: 100 }),
      level({ machine: 'a', concurrency: 2, t0: 5000, windowMs: 1000, tokens: 200 }),
    ]);
    const b = table('b', [level({ machine: 'b', concurrency: 1, t0: 0, windowMs: 2000, tokens: 100 })]);
    const merged = serverLevels(
      mergeCapacity([
        { machine: 'a', table: a },
        { machine: 'b', table: b },
      ]),
    );
    expect(merged.map((l) => l.concurrency)).toEqual([2, 2]);
    expect(merged[0]!.flags.map((f) => f.figure)).toEqual(['aggregateTps']);
    expect(merged[0]!.flags[0]!.reason).toMatch(/machine windows differ: a 1\.00 s, b 2\.00 s/);
    expect(merged[1]!.flags[0]).toMatchObject({ figure: 'level' });
    expect(merged[1]!.flags[0]!.reason).toMatch(/measured by a only \(b ran no such level\)/);
  });

  test('different workloads or one label twice refuse to merge', () => {
    const a = capacityTable('a');
    const other = { ...capacityTable('b'), workload: { kind: 'synthetic' as const, inputTokens: 1, outputTokens: 2 } };
    expect(() =>
      mergeCapacity([
        { machine: 'a', table: a },
        { machine: 'b', table: other },
      ]),
    ).toThrow(/another workload/);
    expect(() =>
      mergeCapacity([
        { machine: 'a', table: a },
        { machine: 'a', table: a },
      ]),
    ).toThrow(/two tables from machine "a"/);
    expect(() => mergeCapacity([])).toThrow(/no capacity tables/);
  });
});

function run(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    const t = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`${args.join(' ')} did not finish in ${timeoutMs} ms`));
    }, timeoutMs);
    p.on('close', (code) => {
      clearTimeout(t);
      resolve({ code, out, err });
    });
  });
}

describe('two load machines against one reference server', () => {
  let ref: ReferenceHandle;
  let dir: string;
  beforeAll(async () => {
    ref = await startReference(['--slots', '8', '--decode-tps', '100']);
    dir = mkdtempSync(join(tmpdir(), 'capacity-merge-'));
  }, 30_000);
  afterAll(async () => {
    await ref?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('same start schedule, clocks kept apart, one merged table', { timeout: 60_000 }, async () => {
    const model = ref.info.model?.value ?? ref.profile.model;
    // Both processes start each level at the agreed epoch time on their own clock (here the same host's).
    const startAt = Date.now() + 4000;
    const load = (machine: string) =>
      run(
        [
          '--import',
          'tsx',
          'test/support/capacity-load.ts',
          '--base-url',
          ref.baseUrl,
          '--model',
          model,
          '--machine',
          machine,
          '--levels',
          '1,2',
          '--start-at',
          String(startAt),
          '--spacing-ms',
          '2000',
          '--max-tokens',
          '24',
          '--out',
          join(dir, `${machine}.json`),
        ],
        30_000,
      );
    const [a, b] = await Promise.all([load('box-a'), load('box-b')]);
    expect(a.code, a.err).toBe(0);
    expect(b.code, b.err).toBe(0);
    const out = join(dir, 'merged.json');
    const m = await run(
      ['bin/llm-server-conformance.mjs', 'merge', join(dir, 'box-a.json'), join(dir, 'box-b.json'), '--out', out],
      30_000,
    );
    expect(m.code, m.err).toBe(0);
    expect(m.out).toMatch(/merge: box-a, box-b → 2 merged levels, wrote/);
    const merged = JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>;
    // The merged file is a results file as the (strict) schema defines it, as each machine's own is.
    const validate = compileSchema('results.schema.json');
    for (const [name, data] of [
      ['merged', merged],
      ['box-a', JSON.parse(readFileSync(join(dir, 'box-a.json'), 'utf8'))],
    ] as const)
      expect(validate(data) ? [] : schemaErrors(validate), name).toEqual([]);
    expect((merged.header as { machine: { label: string } }).machine.label).toBe('box-a+box-b');
    const t = readCapacity(merged.capacity)!;
    expect(t.machines).toEqual(['box-a', 'box-b']);
    const own = (machine: string) => t.levels.filter((l) => l.machine === machine);
    expect(own('box-a').map((l) => l.concurrency)).toEqual([1, 2]);
    expect(own('box-b').map((l) => l.concurrency)).toEqual([1, 2]);
    const levels = serverLevels(t);
    expect(levels.map((l) => l.concurrency)).toEqual([2, 4]);
    for (const [i, l] of levels.entries()) {
      const parts = [own('box-a')[i]!, own('box-b')[i]!];
      expect(l.sent).toBe(parts[0]!.sent + parts[1]!.sent);
      expect(l.completed).toBe(l.sent);
      // The rule, recomputed from the machines' own levels: Σ tokens / the longest own window.
      const w = Math.max(...parts.map((p) => p.endedAt - p.startedAt));
      expect(l.endedAt - l.startedAt).toBe(w);
      expect(l.aggregateTps).toBeCloseTo(((parts[0]!.outputTokens! + parts[1]!.outputTokens!) * 1000) / w, 6);
      // Ground truth, possible here only because both "machines" share this host's clock: the tokens over the union
      // of the two windows. The merged rate agrees within the start skew the schedule left (a few ms of ~250 ms).
      const union = Math.max(...parts.map((p) => p.endedAt)) - Math.min(...parts.map((p) => p.startedAt));
      const truth = ((parts[0]!.outputTokens! + parts[1]!.outputTokens!) * 1000) / union;
      expect(l.aggregateTps / truth).toBeGreaterThanOrEqual(1);
      expect(l.aggregateTps / truth, `skew: union ${union} ms vs longest window ${w} ms`).toBeLessThan(1.5);
      // Batching server, the two machines' streams overlapped: the merged level is served faster than either alone.
      expect(l.aggregateTps).toBeGreaterThan(Math.max(...parts.map((p) => p.aggregateTps)));
    }
  });

  test('merge refuses what is not a capacity table, naming the file', async () => {
    const r = await run(
      ['--import', 'tsx', 'scripts/merge.ts', join(ROOT, 'package.json'), join(ROOT, 'package.json')],
      20_000,
    );
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/package\.json is not a results file/);
    const one = await run(['--import', 'tsx', 'scripts/merge.ts', 'only-one.json'], 20_000);
    expect(one.code).toBe(2);
    expect(one.err).toMatch(/give at least two results files/);
  });
});
