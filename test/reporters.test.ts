// Reporters end to end: a REAL Vitest run (child process) against the reference server, then its real output is
// read back: results.json against its schema, badge JSON and SVG, the Markdown summary, the console table, JUnit.
// `npm run report` must rebuild the same summary and badges from results.json alone. An interrupted run must keep
// what it measured. The render functions are also exercised on hand-made results (merging, phantom flags, banners).

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, test, vi } from 'vitest';
import { EXIT } from '../cli/args.ts';
import { judgeRun } from '../cli/run.ts';
import { ROOT } from '../lib/config/profile.ts';
import { compileSchema, schemaErrors } from '../lib/config/schemas.ts';
import { median } from '../lib/measure/stats.ts';
import BadgesReporter from '../reporters/badges.ts';
import ConsoleTableReporter from '../reporters/console.ts';
import JunitReporter from '../reporters/junit.ts';
import {
  badgeSpecs,
  gateFailed,
  renderConsole,
  renderMarkdown,
  tally,
  toColumns,
  workloadRows,
} from '../reporters/render.ts';
import ResultsReporter from '../reporters/results.ts';
import type { CheckResult, ResultsFile } from '../reporters/results-types.ts';
import SummaryReporter, { writeSummary } from '../reporters/summary.ts';
import { parseArgs, runReport } from '../scripts/report.ts';
import { families } from '../suites/catalogue.ts';

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: string;
}

/** Run node with `args` in a child process; `until` may stop it early (with `signal`) once a condition holds. */
function childRun(
  args: string[],
  env: Record<string, string | undefined>,
  o: { until?: (out: string) => boolean; signal?: NodeJS.Signals; cwd?: string } = {},
): Promise<Run & { signalledAt?: number; exitedAt: number }> {
  return new Promise((resolve, reject) => {
    const childEnv: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...env };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
    const child = spawn(process.execPath, args, {
      cwd: o.cwd ?? ROOT,
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    let poll: NodeJS.Timeout | undefined;
    let signalledAt: number | undefined;
    if (o.until) {
      poll = setInterval(() => {
        if (o.until!(out)) {
          clearInterval(poll);
          signalledAt = Date.now();
          child.kill(o.signal ?? 'SIGTERM');
        }
      }, 20);
    }
    const limit = setTimeout(() => child.kill('SIGKILL'), 100_000);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(limit);
      if (poll) clearInterval(poll);
      resolve({ code, signal, out, exitedAt: Date.now(), ...(signalledAt ? { signalledAt } : {}) });
    });
  });
}

/** Run vitest in a child process. */
const vitestRun = (args: string[], env: Record<string, string | undefined>) =>
  childRun([join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', ...args], env);

const validateResults = compileSchema('results.schema.json');
const readJson = (p: string) => JSON.parse(readFileSync(p, 'utf8')) as unknown;

describe('a real run: api + metrics against the reference server', () => {
  const dir = mkdtempSync(join(tmpdir(), 'reporters-'));
  const reports = join(dir, 'reports');
  let run: Run;
  let results: ResultsFile;

  beforeAll(async () => {
    // api-last.test.ts (api.unknown-model) sorts first by name and runs last: the reports must show the run's order.
    const files = ['suites/api.test.ts', 'suites/metrics.test.ts', 'suites/api-last.test.ts'];
    run = await vitestRun(['--project', 'reference', ...files], {
      CONFORMANCE_REPORTS_DIR: reports,
      GITHUB_STEP_SUMMARY: undefined,
      CONFORMANCE_MACHINE: 'ci-box',
    });
    results = readJson(join(reports, 'reference', 'results.json')) as ResultsFile;
  }, 110_000);

  test('results.json validates against fixtures/schemas/results.schema.json', () => {
    const ok = validateResults(results);
    expect(schemaErrors(validateResults), 'schema violations').toEqual([]);
    expect(ok).toBe(true);
  });

  test('header: suite, project, machine label, discovered server identity, profile without {port} secrets', () => {
    expect(results.header.project).toBe('reference');
    expect(results.header.machine.label).toBe('ci-box');
    expect(results.header.suite.name).toBe('llm-server-conformance');
    expect((results.header.server as { identity?: { name?: string } }).identity?.name).toBe('reference-server');
    expect((results.header.profile as { id?: string }).id).toBe('reference');
    expect(results.finished?.reason).toMatch(/passed|failed/);
  });

  test('every api and metrics check is in it, with outcome, level, message and reference', () => {
    const expected = [...families.api.checks, ...families.metrics.checks, ...families['api-last'].checks].map(
      (c) => c.id,
    );
    expect(results.checks.map((c) => c.id).sort()).toEqual(expected.sort());
    const declared = new Map([...families.api.checks, ...families.metrics.checks].map((c) => [c.id, c.provides]));
    for (const c of results.checks) {
      expect(c.message.length, c.id).toBeGreaterThan(0);
      expect(c.reference.length, c.id).toBeGreaterThan(0);
      // What it provides, as declared (the reports read headline figures by it: reporters/figures.ts).
      expect(c.provides, c.id).toEqual(declared.get(c.id));
    }
    expect(results.checks.find((c) => c.id === 'metrics.gen-tps-plausible')?.provides).toContain('wall_tps_p50');
  });

  test('exit status follows the gate: non-zero exactly when a check failed or errored', () => {
    const gate = results.checks.some((c) => c.outcome === 'fail' || c.outcome === 'error');
    expect(run.code === 0, run.out.slice(-3000)).toBe(!gate);
  });

  test('figures are recomputable from the file: workload medians from its samples, no phantom on a correct server', () => {
    const plausible = results.checks.find((c) => c.id === 'metrics.gen-tps-plausible')!;
    const w = plausible.metrics!.workload as {
      gen_tps_p50: number;
      wall_tps_p50: number;
      samples: { gen_tps: number; wall_tps: number }[];
    };
    expect(w.gen_tps_p50).toBeCloseTo(median(w.samples.map((s) => s.gen_tps))!, 9);
    expect(w.wall_tps_p50).toBeCloseTo(median(w.samples.map((s) => s.wall_tps))!, 9);
    const ev = plausible.evidence as { tokenTimes: number[]; readTimes: number[]; e2eMs: number }[];
    expect(ev).toHaveLength(3);
    expect(ev[0].tokenTimes.length).toBeGreaterThanOrEqual(8);
    const rows = workloadRows(toColumns([results])[0]);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.filter((r) => r.phantom)).toEqual([]);
  });

  test('badges: shields.io endpoint JSON and SVG for the stable names, conformance count from results.json', () => {
    const bdir = join(reports, 'reference', 'badges');
    // Only the families that ran have a badge: no "n/a" batching or long-context badge for an api + metrics run.
    expect(readdirSync(bdir).sort()).toEqual(
      ['conformance', 'streaming'].flatMap((n) => [`${n}.json`, `${n}.svg`]).sort(),
    );
    const t = tally(results.checks);
    const conf = readJson(join(bdir, 'conformance.json')) as Record<string, unknown>;
    expect(conf).toEqual({
      schemaVersion: 1,
      label: 'conformance',
      message: `${t.passed}/${t.graded}`,
      color: expect.any(String),
    });
    const streaming = readJson(join(bdir, 'streaming.json')) as Record<string, unknown>;
    expect(streaming.label).toBe('streaming');
    expect(['real', 'phantom', 'buffered']).toContain(streaming.message);
    const svg = readFileSync(join(bdir, 'conformance.svg'), 'utf8');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain(`conformance: ${t.passed}/${t.graded}`);
  });

  test('summary.md (no GITHUB_STEP_SUMMARY): title, tally, every check, the workload row', () => {
    const md = readFileSync(join(reports, 'reference', 'summary.md'), 'utf8');
    expect(md).toContain('## LLM server conformance: reference @ ci-box');
    const t = tally(results.checks);
    expect(md).toContain(`**${t.passed}/${t.graded} passed**`);
    for (const c of results.checks) expect(md).toContain(`\`${c.id}\``);
    expect(md).toContain('### Workloads');
    expect(md).toMatch(/1 stream, \d+\/\d+\/\d+ tokens/); // the metrics sample's lengths, sized from the measured speed
  });

  test("console: a person's view — what did not pass, then one gate line with the counts and the reports", () => {
    expect(run.out).toContain('conformance — reference @ ci-box');
    expect(run.out).not.toMatch(/outcome\s+level\s+check\s+message/); // every check: --verbose only
    const t = tally(results.checks);
    const gates = run.out.match(/^GATE: .*$/gm) ?? [];
    expect(gates).toEqual([
      expect.stringMatching(
        new RegExp(
          `^GATE: (passed|FAILED) — ${t.total} checks: ${t.counts.pass} pass, ${t.counts.fail} fail, .* · reports: ${reports.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/index.html$`,
        ),
      ),
    ]);
    expect(run.out).not.toContain('HTML report:'); // its path is on the gate line
  });

  test('JUnit XML goes next to the results (CONFORMANCE_REPORTS_DIR), one test case per check with its outcome', () => {
    const xml = readFileSync(join(reports, 'junit.xml'), 'utf8');
    expect(xml).toContain('<testsuites');
    expect(xml).toContain('<testsuite name="reference @ ci-box"');
    // The same outcomes as results.json, check by check; skipped ones say why.
    for (const c of results.checks) {
      const tc = new RegExp(`<testcase [^>]*name="${c.id.replace(/\./g, '\\.')} — [^>]*>[\\s\\S]*?</testcase>`).exec(
        xml,
      )?.[0];
      expect(tc, c.id).toBeDefined();
      expect(tc).toContain(`<property name="conformance.outcome" value="${c.outcome}"/>`);
      if (c.outcome === 'skip' || c.outcome === 'inconclusive')
        expect(tc).toMatch(new RegExp(`<skipped type="${c.outcome}" message="${c.outcome.toUpperCase()} `));
      if (c.outcome === 'fail') expect(tc).toContain('<failure type="fail"');
    }
  });

  test('npm run report rebuilds the same summary and badges from results.json alone', () => {
    const out2 = join(dir, 'rebuilt');
    let printed = '';
    const r = runReport({
      files: [join(reports, 'reference', 'results.json')],
      out: out2,
      env: {},
      print: (s) => {
        printed += s;
      },
    });
    expect(r.notes).toEqual([]);
    expect(r.ok).toBe(true);
    expect(readFileSync(join(out2, 'reference', 'summary.md'), 'utf8')).toBe(
      readFileSync(join(reports, 'reference', 'summary.md'), 'utf8'),
    );
    for (const f of readdirSync(join(reports, 'reference', 'badges'))) {
      expect(readFileSync(join(out2, 'reference', 'badges', f), 'utf8'), f).toBe(
        readFileSync(join(reports, 'reference', 'badges', f), 'utf8'),
      );
    }
    expect(printed).toContain('conformance — reference @ ci-box');
    // Rendered console text equals what the live reporter printed (same function, same data).
    expect(run.out).toContain(renderConsole(toColumns([results]), { reports: join(reports, 'index.html') }));
    expect(printed).toContain(`reports: ${join(out2, 'index.html')}`);
    // The results keep the run's order: api, metrics, then api.unknown-model (api-last.test.ts).
    const ids = results.checks.map((c) => c.id);
    expect(ids.slice(0, families.api.checks.length)).toEqual(families.api.checks.map((c) => c.id));
    expect(ids.at(-1)).toBe('api.unknown-model');
    const junit = readFileSync(join(reports, 'junit.xml'), 'utf8');
    expect(junit.indexOf('name="api.unknown-model')).toBeGreaterThan(junit.indexOf('name="metrics.gen-tps-plausible'));
  });
});

test('Ctrl-C during a capacity sweep (SIGINT to the CLI): the levels printed as they ended, every report from what finished, marked interrupted, the server stopped, exit 130', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'reporters-int-'));
  const reports = join(dir, 'reports');
  const file = join(reports, 'tiny-capacity', 'results.json');
  const ref = (
    JSON.parse(readFileSync(join(ROOT, 'servers.json'), 'utf8')) as {
      servers: Array<Record<string, unknown> & { id: string }>;
    }
  ).servers.find((p) => p.id === 'reference')!;
  // A short sweep (1, 2 and 4 streams of 8 tokens, no rate runs): its first level ends within seconds, the rest run on.
  const tiny = {
    ...ref,
    id: 'tiny-capacity',
    start: {
      command: ['node', '--import', 'tsx', join(ROOT, 'fixtures/reference-server/main.ts'), '--port', '{port}'],
    },
    capacity: { maxConcurrency: 4, rounds: 3, minLevelMs: 0, inputTokens: 16, outputTokens: 8, rateFractions: [] },
  };
  writeFileSync(join(dir, 'servers.json'), JSON.stringify({ servers: [tiny] }));
  const level =
    /^ {2}▸ capacity\.sweep: (\d+) streams: \d+\/\d+ served, [\d.]+ tok\/s aggregate, TTFT p50\/p99 [\d.-]+\/[\d.-]+ ms, ITL p50 [\d.-]+ ms, (still rising|saturated)/gm;
  const run = await childRun(
    [
      join(ROOT, 'bin', 'llm-server-conformance.mjs'),
      '--servers',
      'servers.json',
      '--server',
      'tiny-capacity',
      '--only',
      'capacity',
      '--reports',
      reports,
    ],
    // No preflight, no sentinel: seconds this test does not need.
    {
      GITHUB_STEP_SUMMARY: undefined,
      CONFORMANCE_REPORTS_DIR: undefined,
      CONFORMANCE_PREFLIGHT: '0',
      CONFORMANCE_HEALTH_SENTINEL: '0',
    },
    { until: (out) => /▸ capacity\.sweep: 1 streams/.test(out), signal: 'SIGINT', cwd: dir },
  );
  expect(run.code, run.out.slice(-3000)).toBe(EXIT.interrupted);
  expect(run.exitedAt - run.signalledAt!, 'from the signal to the exit').toBeLessThan(5_000);
  // The CLI's progress, not on a terminal: plain lines, each level as it ended (the channel a check reports progress on).
  expect(run.out).not.toContain('\x1b');
  expect([...run.out.matchAll(level)].map((m) => Number(m[1]))[0], run.out).toBe(1);
  // One line says what happened.
  expect(
    run.out.match(
      /^llm-server-conformance: INTERRUPTED by SIGINT during capacity\.sweep: 1 of 7 checks finished; every report written/gm,
    ),
    run.out,
  ).toHaveLength(1);
  expect(run.out).not.toMatch(/^GATE: /m);
  const results = readJson(file) as ResultsFile;
  expect(validateResults(results), schemaErrors(validateResults).join('\n')).toBe(true);
  expect(results.header.interrupted).toMatchObject({ signal: 'SIGINT', running: 'capacity.sweep', planned: 7 });
  expect(results.finished).toBeUndefined();
  expect(results.checks.map((c) => c.id)).toEqual(['setup.server-ready']);
  // Every report, from the same checks.
  for (const f of ['tiny-capacity/summary.md', 'tiny-capacity/badges/conformance.json', 'junit.xml', 'index.html'])
    expect(existsSync(join(reports, f)), f).toBe(true);
  expect(readFileSync(join(reports, 'tiny-capacity', 'summary.md'), 'utf8')).toContain('interrupted: partial results');
  expect(readFileSync(join(reports, 'junit.xml'), 'utf8').match(/<testcase /g)).toHaveLength(1);
  // The server the suite started is gone.
  const pid = (results.header.server as { startedPid?: number }).startedPid!;
  expect(pid).toBeGreaterThan(0);
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 40 && alive(); i++) await new Promise((r) => setTimeout(r, 50));
  expect(alive(), `server pid ${pid}`).toBe(false);
  // Rebuilt from the file, the gate is never "passed", and the CLI's judgement agrees.
  let printed = '';
  runReport({ files: [file], out: join(dir, 'rebuilt'), env: {}, print: (s) => (printed += s) });
  expect(printed).toMatch(
    /^GATE: INTERRUPTED by SIGINT during capacity\.sweep, not judged — 1 of 7 checks finished: /m,
  );
  expect(printed).not.toContain('GATE: passed');
  expect(judgeRun(results, {})).toMatchObject({ gate: 'interrupted', exitCode: EXIT.interrupted });
}, 110_000);

describe('a real run against a server that flushes its stream (--fault stream-role-now-content-at-end)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'reporters-phantom-'));
  const reports = join(dir, 'reports');
  let run: Run;
  let results: ResultsFile;

  beforeAll(async () => {
    const ref = (
      JSON.parse(readFileSync(join(ROOT, 'servers.json'), 'utf8')) as {
        servers: Array<Record<string, unknown> & { id: string; start: { command: string[] } }>;
      }
    ).servers.find((p) => p.id === 'reference')!;
    const phantom = {
      ...ref,
      id: 'phantom',
      start: { command: [...ref.start.command, '--fault', 'stream-role-now-content-at-end'] },
    };
    writeFileSync(join(dir, 'servers.json'), JSON.stringify({ servers: [phantom] }));
    run = await vitestRun(['--project', 'phantom', 'suites/metrics.test.ts'], {
      SERVERS_FILE: join(dir, 'servers.json'),
      CONFORMANCE_REPORTS_DIR: reports,
      GITHUB_STEP_SUMMARY: undefined,
    });
    results = readJson(join(reports, 'phantom', 'results.json')) as ResultsFile;
  }, 110_000);

  test('the MUST check fails naming the cause, and the run exits non-zero', () => {
    const c = results.checks.find((x) => x.id === 'metrics.gen-tps-plausible')!;
    expect(c.outcome).toBe('fail');
    expect(c.message).toContain('role chunk');
    expect(run.code).not.toBe(0);
    expect(validateResults(results), schemaErrors(validateResults).join('\n')).toBe(true);
  });

  test('console, summary and badge mark the figure PHANTOM with the cause, recomputed from results.json', () => {
    // A flush of a few hundred tokens may come in one read or in a few 64 KiB ones: "one read" is not always a cause.
    expect(run.out).toMatch(
      /^PHANTOM metrics\.gen-tps-plausible[^(]* \(role first, content at end(, one read)?, burst\)/m,
    );
    expect(renderConsole(toColumns([results]), { verbose: true })).toMatch(
      /n\/a PHANTOM \(role first, content at end(, one read)?, burst\)/,
    );
    expect(run.out).toContain('GATE: FAILED');
    expect(readFileSync(join(reports, 'phantom', 'summary.md'), 'utf8')).toContain('**PHANTOM**');
    expect(readJson(join(reports, 'phantom', 'badges', 'streaming.json'))).toMatchObject({
      message: 'phantom',
      color: 'red',
    });
    const rows = workloadRows(toColumns([results])[0]);
    expect(rows.find((r) => r.check === 'metrics.gen-tps-plausible')?.phantom?.label).toContain('burst');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Render functions on hand-made results

function check(id: string, outcome: CheckResult['outcome'], extra: Partial<CheckResult> = {}): CheckResult {
  return {
    id,
    title: id,
    family: id.split('.')[0],
    level: 'MUST',
    outcome,
    message: `${outcome} message`,
    rationale: 'r',
    reference: 'ref',
    ...extra,
  };
}

function file(
  project: string,
  machine: string,
  checks: CheckResult[],
  o: { date?: string; shard?: string; hardware?: unknown } = {},
): ResultsFile {
  return {
    header: {
      suite: { name: 'llm-server-conformance', version: '0.1.0' },
      date: o.date ?? '2026-01-01T00:00:00.000Z',
      project,
      profile: { id: project, ...(o.hardware ? { hardware: o.hardware } : {}) },
      server: { identity: { name: 'srv', version: '1.2.3' } },
      machine: { label: machine, platform: 'linux', arch: 'x64', cpus: 2, memGiB: 8, node: 'v20' },
      tier: 'quick',
      strict: false,
      ...(o.shard ? { shard: o.shard } : {}),
    },
    checks,
    finished: { date: '2026-01-01T00:01:00.000Z', reason: 'passed' },
  };
}

describe('render', () => {
  test('hand-made files validate against the schema (the fixture shape is the real shape)', () => {
    const f = file('x', 'm', [check('a.b', 'pass')], { shard: '1/2' });
    expect(validateResults(f), schemaErrors(validateResults).join('\n')).toBe(true);
  });

  test('several machines give one column each, named by machine; shards of one machine merge', () => {
    const cols = toColumns([
      file('omlx', 'm2-max', [check('api.a', 'pass')], { shard: '1/2' }),
      file('omlx', 'm2-max', [check('api.b', 'fail')], { shard: '2/2' }),
      file('omlx', 'm4-pro', [check('api.a', 'pass'), check('api.b', 'pass')]),
    ]);
    expect(cols.map((c) => c.label)).toEqual(['omlx @ m2-max', 'omlx @ m4-pro']);
    expect(cols[0].checks.map((c) => c.id)).toEqual(['api.a', 'api.b']);
    expect(cols[0].files).toBe(2);
    const text = renderConsole(cols);
    expect(text).toContain('[1] omlx @ m2-max');
    expect(text).toContain('[2] omlx @ m4-pro');
    const md = renderMarkdown(cols);
    expect(md).toContain('| check | omlx @ m2-max | omlx @ m4-pro |');
    expect(gateFailed(cols)).toBe(true);
  });

  test('a phantom workload is marked PHANTOM with its cause, from evidence and from the physical bound', () => {
    const burst = { label: 'stream 1', tokenTimes: Array(40).fill(300), readTimes: [2, 300], e2eMs: 300.5 };
    const wl = {
      name: '1 stream',
      requests: 1,
      wall_tps_p50: 120,
      ttft_p50_ms: 300,
      gen_tps_p50: 14000,
      tokens_usage: 40,
      tokens_counted: 40,
    };
    const f = file('vllm-mlx', 'm', [check('stream.x', 'pass', { metrics: { workload: wl }, evidence: [burst] })], {
      hardware: { memoryBandwidthGBs: 400, activeBytesPerTokenGB: 1.7 },
    });
    const rows = workloadRows(toColumns([f])[0]);
    expect(rows[0].phantom?.label).toContain('role first, content at end');
    expect(rows[0].phantom?.label).toContain('above physical bound');
    const text = renderConsole(toColumns([f]), { verbose: true });
    expect(text).toMatch(/14000 PHANTOM \(role first, content at end, one read, burst, above physical bound\)/);
    expect(text).toContain('40 / 40');
    // A person's console names the phantom stream even when its check passed.
    expect(renderConsole(toColumns([f]))).toContain('PHANTOM stream.x (role first, content at end, one read, burst)');
    expect(renderMarkdown(toColumns([f]))).toContain('**PHANTOM**');
  });

  test('a known issue that now passes is printed prominently, first and last, and in the summary', () => {
    const f = file('ollama', 'm', [check('context.over-window-400', 'known-passing'), check('api.a', 'pass')]);
    const text = renderConsole(toColumns([f]));
    const lines = text.split('\n');
    expect(lines[0]).toContain('!!! KNOWN ISSUE NOW PASSES: context.over-window-400');
    expect(lines.filter((l) => l.includes('KNOWN ISSUE NOW PASSES')).length).toBe(2);
    expect(renderMarkdown(toColumns([f]))).toContain('**Known issue now passes: `context.over-window-400`**');
    expect(gateFailed(toColumns([f]))).toBe(false);
  });

  test('badges: conformance count, batching speedup figure, long context 400 ok, streaming phantom', () => {
    const f = file('mlx-openai-server', 'm', [
      check('api.a', 'pass'),
      check('api.b', 'warn'),
      check('api.c', 'skip'),
      check('parallel.speedup-2', 'pass', { metrics: { speedup: { estimate: 2.1734, low: 2, high: 2.3 } } }),
      check('context.over-window-400', 'pass'),
      check('context.within-window', 'pass'),
      check('metrics.gen-tps-plausible', 'fail'),
    ]);
    const b = Object.fromEntries(badgeSpecs(toColumns([f])[0]).map((s) => [s.name, s]));
    expect(b.conformance).toMatchObject({ message: '4/6', color: 'red' });
    expect(b.batching).toMatchObject({ label: 'batching', message: '2.17x', color: 'brightgreen' });
    expect(b['long-context']).toMatchObject({ label: 'long context', message: '400 ok' });
    expect(b.streaming).toMatchObject({ message: 'phantom', color: 'red' });
  });

  test('odd metrics never crash the renderers', () => {
    const weird = [
      check('a.b', 'error', {
        metrics: { workload: 'nope', speedup: { estimate: 'x' } },
        evidence: [null, 1, { tokenTimes: 'x' }] as unknown[],
      }),
      check('a.c', 'pass', { metrics: { workloads: [null, { gen_tps_p50: Infinity }], wall_tps_p50: NaN } }),
      check('a.d', 'warn', { message: 'line|with|pipes\n<b>second</b>' }),
    ];
    const cols = toColumns([file('p', 'm', weird)]);
    expect(() => renderConsole(cols)).not.toThrow();
    expect(renderMarkdown(cols)).toContain('line\\|with\\|pipes');
    expect(() => badgeSpecs(cols[0])).not.toThrow();
  });

  test('writeSummary: summary.md always; the same text appended to the step summary only when GITHUB_STEP_SUMMARY is set', () => {
    const dir = mkdtempSync(join(tmpdir(), 'summary-'));
    const step = join(dir, 'step-summary.md');
    writeFileSync(step, 'earlier step\n');
    expect(writeSummary('## one', join(dir, 'a'), {})).toBe(join(dir, 'a', 'summary.md'));
    expect(readFileSync(join(dir, 'a', 'summary.md'), 'utf8')).toBe('## one');
    expect(readFileSync(step, 'utf8')).toBe('earlier step\n');
    expect(writeSummary('## two', join(dir, 'b'), { GITHUB_STEP_SUMMARY: step })).toBe(join(dir, 'b', 'summary.md'));
    expect(readFileSync(join(dir, 'b', 'summary.md'), 'utf8')).toBe('## two');
    expect(readFileSync(step, 'utf8')).toBe('earlier step\n## two\n');
    writeSummary('## two, again', join(dir, 'b'), { GITHUB_STEP_SUMMARY: '' });
    expect(readFileSync(step, 'utf8')).toBe('earlier step\n## two\n');
  });

  test('report CLI arguments', () => {
    expect(parseArgs(['a.json', '--out', 'x', '--only', 'badges'])).toEqual({
      files: ['a.json'],
      out: 'x',
      parts: ['badges'],
    });
    expect(parseArgs(['--only=nope'])).toHaveProperty('error');
    expect(parseArgs(['--bogus'])).toHaveProperty('error');
  });

  test('reporters never throw, whatever they are handed, and say clearly that they failed', async () => {
    const printed: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    });
    try {
      for (const r of [
        new ResultsReporter(),
        new ConsoleTableReporter(),
        new SummaryReporter(),
        new BadgesReporter(),
        new JunitReporter(),
      ]) {
        await expect(Promise.resolve().then(() => r.onTestRunEnd([], [], 'passed'))).resolves.toBeUndefined();
        await expect(
          Promise.resolve().then(() => r.onTestRunEnd([{ project: null } as never], [], 'failed')),
        ).resolves.toBeUndefined();
      }
    } finally {
      spy.mockRestore();
    }
    for (const name of ['results', 'console', 'summary', 'badges', 'junit'])
      expect(printed.join('')).toContain(`[conformance ${name} reporter] ERROR`);
    expect(existsSync(join(ROOT, 'reports', 'undefined'))).toBe(false);
  });
});
