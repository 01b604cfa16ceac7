// The seed study's matrix from results files (reporters/seed-matrix.ts), the pins of fixtures/seed-study.ts, and
// the memory pile-up fault behind emu-mlx-vlm. Pure functions over real captured results; no server here (the
// verdicts themselves are pinned through real HTTP in test/verdict-matrix.test.ts).

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { buildHooks } from '../fixtures/reference-server/faults.ts';
import type { StepContext } from '../fixtures/reference-server/scheduler.ts';
import {
  COMMON_NON_PASS,
  deviationsOf,
  EMULATIONS,
  matrixEnv,
  pinnedDeviations,
  studyMarkdown,
  unpinnedSkips,
} from '../fixtures/seed-study.ts';
import { loadServers, ROOT } from '../lib/config/profile.ts';
import { renderHtml } from '../reporters/html.ts';
import type { ResultsFile } from '../reporters/results-types.ts';
import { matrixHtml, matrixMarkdown, matrixRows, SCORE_DEFINITION, scoreOf } from '../reporters/seed-matrix.ts';
import { spliceMatrixBlock } from '../scripts/matrix.ts';
import { allChecks, families } from '../suites/catalogue.ts';

const fixture = (name: string) =>
  JSON.parse(readFileSync(join(ROOT, 'fixtures', 'results', name), 'utf8')) as ResultsFile;
const MACHINES_DIR = join(ROOT, 'fixtures', 'results', 'machines');
const machineFiles = (): ResultsFile[] =>
  readdirSync(MACHINES_DIR)
    .filter((n) => n.endsWith('.json'))
    .sort()
    .map((n) => JSON.parse(readFileSync(join(MACHINES_DIR, n), 'utf8')) as ResultsFile);

describe('perf-memory-pileup: the decay is keyed on memory held, released with the connection', () => {
  const step = (hooks: ReturnType<typeof buildHooks>) =>
    hooks.stepMs(8, { active: 1, served: 0, stepIndex: 0, sequences: [], baseMs: 8 } as StepContext);
  const done = (hooks: ReturnType<typeof buildHooks>, connection: number, completionTokens: number) =>
    hooks.onRequestDone({
      api: 'chat',
      requestNumber: 1,
      promptTokens: 50,
      window: 4096,
      stream: true,
      connection,
      completionTokens,
    });

  test('requests that generate nothing leave no memory behind, however many', () => {
    const h = buildHooks(['perf-memory-pileup']);
    for (let i = 0; i < 500; i++) done(h, 1, 0);
    expect(step(h)).toBe(8);
  });

  test('each generated token held slows every later step, up to maxFactor; closing the connection frees it', () => {
    const h = buildHooks(['perf-memory-pileup'], { kib: '1024', mib: '10', maxFactor: '4' });
    done(h, 1, 5); // 5 MiB held
    expect(step(h)).toBeCloseTo(8 * 1.5, 6);
    done(h, 2, 5); // memory is global: another connection's garbage slows this one too
    expect(step(h)).toBeCloseTo(8 * 2, 6);
    done(h, 1, 100);
    expect(step(h)).toBe(8 * 4); // capped
    h.onConnectionClose(1);
    expect(step(h)).toBeCloseTo(8 * 1.5, 6); // only connection 2's 5 MiB left
    h.onConnectionClose(2);
    expect(step(h)).toBe(8);
  });

  test('emu-mlx-vlm runs it (and no longer the requests-since-start decay)', () => {
    const p = loadServers().find((s) => s.id === 'emu-mlx-vlm')!;
    expect(p.start!.command).toContain('perf-memory-pileup');
    expect(p.start!.command).not.toContain('perf-cycle-decay');
  });
});

describe('matrix rows from real results', () => {
  const ref = fixture('reference.json');
  const burst = fixture('reference-fault-stream-burst-at-end.json');
  const serial = fixture('reference-fault-perf-serialise.json');

  test('the reference run: every figure the study tabulated, read from the check it belongs to', () => {
    const [r] = matrixRows([ref]);
    expect(r!.label).toBe(`reference @ ${ref.header.machine.label}`);
    const g = ref.checks.find((c) => c.id === 'metrics.gen-tps-plausible')!.metrics as {
      workload: { wall_tps_p50: number; ttft_p50_ms: number };
    };
    expect(r!.wallTps.value).toBeCloseTo(g.workload.wall_tps_p50, 9);
    expect(r!.ttft.value).toBeCloseTo(g.workload.ttft_p50_ms, 9);
    const s = ref.checks.find((c) => c.id === 'parallel.speedup-2')!.metrics as { speedup: { estimate: number } };
    expect(r!.speedup2.value).toBeCloseTo(s.speedup.estimate, 9);
    expect(r!.speedup2.from).toBe('parallel.speedup-2');
    expect(r!.bestScaling.text).toMatch(/× @ 4$/);
    expect(r!.streaming.text).toMatch(/^yes/);
    expect(r!.phantom.text).toMatch(/^no \(gen_tps/);
    expect(r!.servedWindow.text).toBe('4096 (= trained)');
    expect(r!.overWindow.text).toBe('400 (context exceeded)');
    expect(r!.cyclesSlope.text).toMatch(/tok\/s per cycle/);
  });

  test('a buffered stream reads "no" with its cause, and its gen_tps is PHANTOM', () => {
    const [r] = matrixRows([burst]);
    expect(r!.streaming.text).toMatch(/^no: /);
    expect(['fail', 'warn']).toContain(r!.streaming.outcome);
    expect(r!.phantom.text).toMatch(/^PHANTOM/);
  });

  test('score: pass / (pass + fail + warn + known); inconclusive, skip and error left out and counted', () => {
    const s = scoreOf(serial.checks);
    const count = (o: string) => serial.checks.filter((c) => c.outcome === o).length;
    expect(s.skip).toBe(count('skip'));
    expect(s.passed + s.graded - s.passed + s.inconclusive + s.skip + s.error).toBe(serial.checks.length);
    expect(s.ratio).toBeCloseTo(s.passed / s.graded, 12);
    // A known failure counts against; an inconclusive one is left out.
    const known = scoreOf([
      { ...ref.checks[0]!, outcome: 'known' },
      { ...ref.checks[1]!, outcome: 'warn' },
      { ...ref.checks[2]!, outcome: 'inconclusive' },
    ]);
    expect(known).toMatchObject({ passed: 0, graded: 2, known: 1, inconclusive: 1 });
  });

  test('Markdown and HTML carry the table and the score definition; hostile text is escaped', () => {
    const rows = matrixRows([ref, serial]);
    const md = matrixMarkdown(rows);
    expect(md).toContain('| server @ machine | wall_tps_p50 (tok/s) | ttft_p50 (ms) | speedup(2) |');
    expect(md).toContain(SCORE_DEFINITION);
    expect(md.split('\n').filter((l) => l.startsWith('| ref')).length).toBe(2);
    const evil = { ...ref, header: { ...ref.header, project: '<img src=x onerror=alert(1)>|x' } };
    const html = matrixHtml(matrixRows([evil]));
    expect(html).not.toContain('<img');
    expect(matrixMarkdown(matrixRows([evil]))).toContain('\\|x');
    expect(renderHtml([ref])).toContain('<section id="seed-matrix">');
  });

  test('odd input renders as n/a, never throws', () => {
    const rows = matrixRows([
      {},
      {
        header: { project: 'p' },
        checks: [{ id: 'parallel.speedup-2', outcome: 'pass', metrics: { speedup: 'fast' } }],
      },
    ]);
    expect(rows.length).toBe(2);
    expect(matrixMarkdown(rows)).toContain('n/a');
    expect(matrixMarkdown([])).toContain('No results');
  });
});

describe('several machines, shards merged: one column per server @ machine', () => {
  test('two result sets under different CONFORMANCE_MACHINE labels, one of them sharded, give one row per server @ machine', () => {
    const files = machineFiles();
    const labels = new Set(files.map((f) => f.header.machine.label));
    expect(labels.size).toBe(2);
    expect(files.some((f) => f.header.shard)).toBe(true);
    const rows = matrixRows(files);
    const keys = new Set(files.map((f) => `${f.header.project} @ ${f.header.machine.label}`));
    expect(rows.map((r) => r.label).sort()).toEqual([...keys].sort());
    const sharded = rows.find((r) => r.shards.length > 0)!;
    expect(sharded.shards).toEqual(['1/2', '2/2']);
    // The merged column holds both shards' checks: as many as an unsharded run of the same project.
    const whole = files.find((f) => !f.header.shard && f.header.project === sharded.project)!;
    expect(sharded.score.graded + sharded.score.skip + sharded.score.inconclusive + sharded.score.error).toBe(
      whole.checks.length,
    );
    for (const r of rows) {
      expect(r.machineInfo.chip, `${r.label}: chip recorded`).toBeTruthy();
      expect(r.machineInfo.memGiB, `${r.label}: memory recorded`).toBeGreaterThan(0);
    }
    const md = matrixMarkdown(rows);
    for (const l of labels) expect(md).toContain(`**${l}**`);
  });
});

describe('the pins of fixtures/seed-study.ts', () => {
  const ids = new Set(Object.values(families).flatMap((f) => f.checks.map((c) => c.id)));
  const profiles = new Map(loadServers().map((p) => [p.id, p]));

  test('every pinned check exists, every emulation has a profile, every finding runs in CI', () => {
    for (const e of EMULATIONS) {
      expect(profiles.has(e.project), e.project).toBe(true);
      expect(e.findings.length, e.project).toBeGreaterThan(0);
      for (const v of [...e.findings, ...e.otherNonPass]) {
        expect(ids.has(v.check), `${e.project}: ${v.check}`).toBe(true);
        expect(v.reason.length, `${e.project}: ${v.check} has a reason`).toBeGreaterThan(10);
      }
      for (const f of e.findings)
        if (!f.outcomes.includes('pass'))
          expect(e.ci, `${e.project}: finding ${f.check} runs in CI`).toContain(f.check);
      for (const id of e.ci) expect(ids.has(id), id).toBe(true);
    }
    for (const v of COMMON_NON_PASS) expect(ids.has(v.check)).toBe(true);
  });

  test('deviations name the check, what was expected and why', () => {
    const emu = EMULATIONS.find((e) => e.project === 'emu-mlx-omni-server')!;
    const ok = new Map([
      ['parallel.speedup-2', { outcome: 'fail' as const, message: 'parallel requests are slower: speedup 0.85x' }],
    ]);
    expect(deviationsOf(emu, ok)).toEqual([]);
    const moved = deviationsOf(
      emu,
      new Map([['parallel.speedup-2', { outcome: 'pass' as const, message: 'batching works' }]]),
    );
    expect(moved[0]).toMatch(/parallel\.speedup-2: pass, expected fail/);
    const noCause = deviationsOf(
      emu,
      new Map([['parallel.speedup-2', { outcome: 'fail' as const, message: 'something else' }]]),
    );
    expect(noCause[0]).toMatch(/does not name the cause/);
    const unlisted = deviationsOf(
      emu,
      new Map([['sse.role-first', { outcome: 'warn' as const, message: 'SHOULD not met' }]]),
    );
    expect(unlisted[0]).toMatch(/sse\.role-first: warn, not listed/);
    expect(
      deviationsOf(emu, new Map([['context.max-accepted', { outcome: 'skip' as const, message: 'full tier only' }]])),
    ).toEqual([]);
    expect(
      deviationsOf(emu, new Map([['stream.spread', { outcome: 'inconclusive' as const, message: 'starved' }]])),
    ).toEqual([]);
    expect(pinnedDeviations([])).toEqual([]);
  });

  test('every check the matrix runs on an emulation and its profile would skip is pinned as a skip (a new family cannot break `npm run matrix` unnoticed)', () => {
    for (const e of EMULATIONS) expect(unpinnedSkips(e, profiles.get(e.project)!, allChecks), e.project).toEqual([]);
    // Both ways: an emulation that no longer offers Ollama's API, its ollama checks unpinned; a pinned skip removed.
    const llama = EMULATIONS.find((e) => e.project === 'emu-llama.cpp')!;
    const noOllama = { ...profiles.get(llama.project)!, apis: ['openai-chat' as const] };
    const found = unpinnedSkips(llama, noOllama, allChecks);
    expect(
      found.some((l) =>
        /emu-llama\.cpp ollama\.\S+: the matrix would skip it \(profile "emu-llama\.cpp" does not declare capability "ollama-native"/.test(
          l,
        ),
      ),
      found.join('\n'),
    ).toBe(true);
    const maxAccepted = allChecks.filter((c) => c.id === 'context.max-accepted');
    expect(unpinnedSkips(llama, profiles.get(llama.project)!, maxAccepted)).toEqual([]);
    const vllm = EMULATIONS.find((e) => e.project === 'emu-vllm-mlx')!;
    const unpinned = { ...vllm, otherNonPass: vllm.otherNonPass.filter((v) => v.check !== 'parallel.no-starvation') };
    expect(unpinnedSkips(unpinned, profiles.get(vllm.project)!, allChecks)).toEqual([
      expect.stringMatching(
        /^emu-vllm-mlx parallel\.no-starvation: the matrix would skip it \(.*1 slot.*not pinned as a skip$/,
      ),
    ]);
  });

  test('the capacity sweep is data per emulation: the matrix asks for it where the entry says, and a capacity check elsewhere is a deviation', () => {
    const withCapacity = EMULATIONS.filter((e) => e.capacity).map((e) => e.project);
    expect(withCapacity).toEqual(['emu-llama.cpp']);
    expect(matrixEnv('emu-llama.cpp')).toEqual({ CONFORMANCE_CAPACITY: '1' });
    expect(matrixEnv('emu-omlx')).toEqual({});
    const omlx = EMULATIONS.find((e) => e.project === 'emu-omlx')!;
    const llama = EMULATIONS.find((e) => e.project === 'emu-llama.cpp')!;
    const sweep = new Map([['capacity.sweep', { outcome: 'pass' as const, message: 'saturated at 4' }]]);
    expect(deviationsOf(omlx, sweep)[0]).toMatch(
      /emu-omlx capacity\.sweep: ran, but the matrix runs no capacity sweep/,
    );
    expect(deviationsOf(llama, sweep)).toEqual([]);
    const failed = new Map([['capacity.no-starvation', { outcome: 'fail' as const, message: 'starved' }]]);
    expect(deviationsOf(llama, failed)[0]).toMatch(/capacity\.no-starvation: fail, not listed/);
  });

  test('the study table names every emulated server and what we measured', () => {
    const rows = matrixRows([fixture('reference.json')]);
    const md = studyMarkdown(rows);
    for (const e of EMULATIONS) expect(md).toContain(`\`${e.project}\``);
    expect(md).toContain('not run');
  });
});

test('docs/seed-matrix.md splice replaces only the marked section', () => {
  const page = 'a\n<!-- matrix:begin -->\nold\n<!-- matrix:end -->\nb\n';
  expect(spliceMatrixBlock(page, 'new table')).toBe('a\n<!-- matrix:begin -->\nnew table\n<!-- matrix:end -->\nb\n');
  expect(() => spliceMatrixBlock('no markers', 'x')).toThrow(/matrix:begin/);
});
