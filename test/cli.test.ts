// The CLI's own logic, without a server: usage errors name the problem, families map to files, the gate and exit
// code follow from a results file, a client library that is not installed is a skip with the install command.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import stringWidth from 'string-width';
import { expect, test, vi } from 'vitest';
import { EXIT, helpText, parseCommand, RUN_OPTIONS, UsageError } from '../cli/args.ts';
import { explain, loadCatalogue } from '../cli/catalogue.ts';
import { main } from '../cli/main.ts';
import { closest } from '../cli/options.ts';
import { clock, eta, fileProgress, fitWidth, heartbeatEveryMs, heartbeatLine, liveLine } from '../cli/progress.ts';
import { familyFilters, judgeRun, runConformance, runEnvironment } from '../cli/run.ts';
import { DRIVERS, missingClient } from '../lib/clients/drivers.ts';
import { ROOT } from '../lib/config/profile.ts';
import type { ResultsFile } from '../reporters/results-types.ts';

const usage = (argv: string[]) => {
  try {
    parseCommand(argv);
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
  throw new Error(`no usage error for ${argv.join(' ')}`);
};

test('usage errors say what is wrong', () => {
  expect(usage([])).toMatch(/say which server: --base-url URL, or --servers FILE --server ID/);
  expect(usage(['--base-url', 'http://x', '--servers', 's.json'])).toMatch(/give one/);
  expect(usage(['--servers', 's.json'])).toMatch(/--servers FILE needs --server ID/);
  expect(usage(['--base-url', 'http://x', '--tier', 'fast'])).toMatch(/--tier must be quick or full, not "fast"/);
  expect(usage(['--base-url', 'http://x', '--only', 'sse,nope'])).toMatch(
    /--only: unknown family "nope"; families: setup, api, sse/,
  );
  expect(usage(['--base-url', 'http://x', '--only', 'sse', '--skip', 'api'])).toMatch(/give one/);
  expect(usage(['--base-url', 'http://x', '--wait', 'soon'])).toMatch(
    /--wait needs a number of seconds ≥ 0, not "soon"/,
  );
  expect(usage(['--base-url', 'http://x', '--deadline', '3'])).toMatch(/--deadline needs a number of seconds ≥ 10/);
  expect(usage(['--base-url', 'http://x', '--api-key-env', 'sk-123'])).toMatch(
    /NAME of an environment variable, not "sk-123" \(never the key itself\)/,
  );
  expect(usage(['--base-url', 'http://x', '--fail-on-regression'])).toMatch(/needs --baseline/);
  expect(usage(['--base-url', 'http://x', '--bogus'])).toBe(
    'unknown option --bogus (llm-server-conformance --help lists them)',
  );
  expect(usage(['--servers', 's.json', '--server', 'a', '--start', 'x'])).toMatch(
    /--start and --cwd go with --base-url/,
  );
  expect(usage(['explain'])).toMatch(/explain needs one check id/);
});

test('an unknown flag or command gets the nearest known one; a flag without its value says what it takes', () => {
  expect(usage(['--modle', 'x'])).toBe(
    'unknown option --modle; did you mean --model? (llm-server-conformance --help lists them)',
  );
  expect(usage(['--base-url', 'http://x', '--jsn'])).toBe(
    'unknown option --jsn (llm-server-conformance --help lists them)',
  );
  expect(usage(['list', '--jsn'])).toBe(
    'unknown option --jsn; did you mean --json? (llm-server-conformance list --help lists them)',
  );
  expect(usage(['--base-url', 'http://x', '--wiat=5'])).toMatch(/^unknown option --wiat; did you mean --wait\?/);
  expect(usage(['--base-url', 'http://x', '--capa'])).toMatch(/did you mean --capacity\?/); // a unique prefix
  expect(usage(['lst'])).toMatch(/^unknown command "lst"; did you mean list\?/);
  expect(usage(['--base-url', 'http://x', '--model'])).toMatch(/^--model needs a value \(M\): model id to request/);
  expect(closest('modle', ['model', 'mode'])).toBe('model');
  expect(closest('xyz', ['model', 'wait'])).toBeUndefined();
  // Every option of a run is in the help (generated from the one table).
  for (const name of Object.keys(RUN_OPTIONS)) expect(helpText()).toContain(`--${name}`);
});

test("every command takes --help (exit 0) in the installed CLI's words, and rejects an unknown flag (exit 2)", async () => {
  const printed: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((s: string) => void printed.push(s));
  const err = vi.spyOn(console, 'error').mockImplementation((s: string) => void printed.push(s));
  try {
    for (const cmd of ['list', 'explain', 'report', 'compare', 'merge']) {
      printed.length = 0;
      expect(await main([cmd, '--help']), cmd).toBe(EXIT.passed);
      expect(printed.join('\n'), cmd).toMatch(new RegExp(`^usage: llm-server-conformance ${cmd} `));
      expect(printed.join('\n'), cmd).not.toMatch(/npm run/);
      expect(await main(['help', cmd]), cmd).toBe(EXIT.passed);
      printed.length = 0;
      expect(await main([cmd, '--jsn']), cmd).toBe(EXIT.usage);
      expect(printed.join('\n'), cmd).toMatch(/unknown option --jsn/);
    }
  } finally {
    log.mockRestore();
    err.mockRestore();
  }
});

test('a full command line becomes the run options and the environment the run reads', () => {
  const cmd = parseCommand([
    '--base-url',
    'http://127.0.0.1:{port}',
    '--model',
    'm',
    '--api-key-env',
    'MY_KEY',
    '--start',
    'serve --port {port}',
    '--wait',
    '900',
    '--tier',
    'full',
    '--strict',
    '--skip',
    'errors,clients',
    '--deadline',
    '1200',
    '--reports',
    'out',
    '--machine',
    'ci-box',
  ]);
  expect(cmd.kind).toBe('run');
  if (cmd.kind !== 'run') return;
  const { env, project } = runEnvironment(cmd.options, '/home/u/proj');
  expect(project).toBe('env');
  expect(env).toMatchObject({
    OPENAI_BASE_URL: 'http://127.0.0.1:{port}',
    OPENAI_MODEL: 'm',
    CONFORMANCE_API_KEY_ENV: 'MY_KEY',
    CONFORMANCE_START: 'serve --port {port}',
    CONFORMANCE_START_CWD: '/home/u/proj',
    CONFORMANCE_WAIT_S: '900',
    CONFORMANCE_TIER: 'full',
    CONFORMANCE_STRICT: '1',
    CONFORMANCE_DEADLINE_S: '1200',
    CONFORMANCE_REPORTS_DIR: '/home/u/proj/out',
    CONFORMANCE_MACHINE: 'ci-box',
    CONFORMANCE_PROJECTS: 'env',
  });
  const files = runEnvironment({ serversFile: 'cfg/servers.json', server: 'mine' }, '/home/u/proj');
  expect(files.project).toBe('mine');
  expect(files.env).toMatchObject({
    SERVERS_FILE: '/home/u/proj/cfg/servers.json',
    CONFORMANCE_REPORTS_DIR: '/home/u/proj/conformance-reports',
  });
  expect(parseCommand(['-h'])).toEqual({ kind: 'help', text: helpText() });
  expect(parseCommand(['list', '--json'])).toEqual({ kind: 'list', json: true });
});

test('--apis declares APIs (unknown names listed); --server alone is a bundled profile, a wrong id lists the ids', async () => {
  const cmd = parseCommand(['--base-url', 'http://x', '--apis', 'openai-chat,ollama']);
  expect(cmd.kind === 'run' && runEnvironment(cmd.options, '/u').env.CONFORMANCE_APIS).toBe(
    'openai-chat,ollama-native',
  );
  expect(usage(['--base-url', 'http://x', '--apis', 'openai-chat,soap'])).toMatch(
    /--apis: unknown API "soap"; the APIs are openai-chat, openai-completions, anthropic-messages, ollama-native/,
  );
  expect(usage(['--server', 'reference', '--apis', 'openai-chat'])).toMatch(/--apis go with --base-url/);
  const bundled = parseCommand(['--server', 'reference']);
  expect(bundled.kind === 'run' && runEnvironment(bundled.options, '/u').env.SERVERS_FILE).toBe(
    join(ROOT, 'servers.json'),
  );
  await expect(runConformance({ server: 'nope' })).rejects.toThrow(
    /no server "nope" in the bundled servers.json; its servers: reference, mlx-openai-server,/,
  );
  expect(parseCommand(['reference-server', '--port', '0'])).toEqual({
    kind: 'reference-server',
    argv: ['--port', '0'],
  });
});

test('--only and --skip select suite files: setup always, health.sentinel in every --only, api-last with api', () => {
  expect(familyFilters({})).toEqual([]);
  expect(familyFilters({ only: ['setup'] })).toEqual(['suites/setup.test.ts', 'suites/health.test.ts']);
  expect(familyFilters({ only: ['api', 'sse'] })).toEqual([
    'suites/setup.test.ts',
    'suites/api.test.ts',
    'suites/sse.test.ts',
    'suites/api-last.test.ts',
    'suites/health.test.ts',
  ]);
  expect(familyFilters({ only: ['stream'] })).toEqual([
    'suites/setup.test.ts',
    'suites/stream.test.ts',
    'suites/health.test.ts',
  ]);
  const skipped = familyFilters({ skip: ['api', 'errors'] });
  expect(skipped).toContain('suites/setup.test.ts');
  expect(skipped).toContain('suites/cycles.test.ts');
  expect(skipped.some((f) => /api|errors/.test(f))).toBe(false);
});

test('the gate and the exit code come from the results file', () => {
  const reference = JSON.parse(readFileSync(join(ROOT, 'fixtures/results/reference.json'), 'utf8')) as ResultsFile;
  const passing: ResultsFile = {
    ...reference,
    checks: reference.checks.map((c) =>
      c.outcome === 'fail' || c.outcome === 'error' ? { ...c, outcome: 'pass' } : c,
    ),
    errors: [],
  };
  expect(judgeRun(passing, {})).toMatchObject({ exitCode: EXIT.passed, gate: 'passed' });
  expect(judgeRun(passing, { regressions: 2, failOnRegression: true })).toMatchObject({
    exitCode: EXIT.failed,
    gate: 'failed',
    reason: expect.stringMatching(/^2 regression/),
  });
  expect(judgeRun(passing, { regressions: 2 })).toMatchObject({ exitCode: EXIT.passed });
  const failing: ResultsFile = {
    ...passing,
    checks: [...passing.checks.slice(1), { ...passing.checks[0]!, outcome: 'fail' }],
  };
  expect(judgeRun(failing, {})).toMatchObject({
    exitCode: EXIT.failed,
    gate: 'failed',
    reason: expect.stringMatching(/^1 fail, 0 error/),
  });
  const neverReady: ResultsFile = {
    ...failing,
    header: {
      ...failing.header,
      server: {
        ...failing.header.server,
        readiness: { ready: false, waitedMs: 5000, reason: 'server "x" was not ready within 5.0 s' },
      },
    },
  };
  expect(judgeRun(neverReady, {})).toMatchObject({
    exitCode: EXIT.neverReady,
    gate: 'never-ready',
    reason: expect.stringContaining('not ready within 5.0 s'),
  });
  expect(judgeRun(undefined, {})).toMatchObject({ exitCode: EXIT.internal, gate: 'error' });
  const t = judgeRun(passing, {});
  expect(t.score.graded).toBe(
    t.counts.pass + t.counts.fail + t.counts.warn + t.counts.known + t.counts['known-passing'] + t.counts.error,
  );
});

test('list and explain cover every check: id, level, rationale, reference, and a way to reproduce it', async () => {
  const entries = await loadCatalogue();
  expect(entries.length).toBeGreaterThanOrEqual(85);
  expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
  for (const e of entries) {
    expect(e.id).toMatch(/^[a-z0-9-]+\.[a-z0-9-]+$/);
    expect(e.rationale.length).toBeGreaterThan(10);
    expect(e.reference.length).toBeGreaterThan(5);
    const text = explain(e);
    expect(text).toContain(`${e.id} [${e.level}]`);
    expect(text).toMatch(/Reproduce by hand[\s\S]*curl/);
  }
});

test('a client library that is not installed is named with the command that installs it', () => {
  const openai = DRIVERS.find((d) => d.id === 'openai')!;
  expect(missingClient(openai)).toBeUndefined(); // installed in this checkout (devDependencies)
  const absent = { ...openai, packages: ['openai', 'conformance-no-such-package'] };
  expect(missingClient(absent)).toEqual({
    packages: ['conformance-no-such-package'],
    install: 'npm install conformance-no-such-package@latest',
  });
  const ai = DRIVERS.find((d) => d.id === 'ai-sdk')!;
  expect(missingClient({ ...ai, packages: ['ai-missing', ...ai.packages] })!.install).toBe(
    'npm install ai-missing@latest',
  );
  // The pins the install command uses are the package's own.
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    peerDependencies: Record<string, string>;
    peerDependenciesMeta: Record<string, { optional: boolean }>;
  };
  for (const d of DRIVERS) for (const p of d.packages) expect(manifest.peerDependenciesMeta[p]?.optional, p).toBe(true);
});

test('progress: N/M, the check in flight, a heartbeat for CI logs, plain text that fits a terminal', () => {
  const s = {
    done: 62,
    planned: 91,
    current: { id: 'capacity.sweep', ms: 35_000, note: '4 streams: 12/12 served' },
    elapsedMs: 62_000,
    eta: 40_000,
  };
  expect(liveLine(s)).toBe('▶ 62/91 checks · capacity.sweep 0:35 · 1:02 elapsed · ETA ~0:40 · 4 streams: 12/12 served');
  expect(heartbeatLine(s)).toBe('… still running capacity.sweep (0:35) · 62/91 checks · 1:02 elapsed · ETA ~0:40');
  expect(heartbeatLine({ ...s, current: { id: 'sse.done-terminator', ms: 300 }, eta: undefined })).toBe(
    '… 62/91 checks · sse.done-terminator (0:00) · 1:02 elapsed',
  );
  for (const line of [liveLine(s), heartbeatLine(s)]) expect(line).not.toMatch(/[\u001b\r]/);
  // A line after 10 s without output; every 60 s once a check has run two minutes (a long capacity run).
  expect(heartbeatEveryMs(5_000)).toBe(10_000);
  expect(heartbeatEveryMs(130_000)).toBe(60_000);
  expect(clock(3_725_000)).toBe('1:02:05');
  // Wide characters take two cells: the live line is cut by cells, never inside a character.
  const wide = `▶ 1/2 checks · ${'東京🙂'.repeat(30)}`;
  const cut = fitWidth(wide, 40);
  expect(stringWidth(cut)).toBeLessThanOrEqual(39);
  expect(cut.endsWith('…')).toBe(true);
  expect(cut).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  expect(fitWidth('short', 40)).toBe('short');
});

test('the ETA: none without evidence, then the typical time left at the run pace, held while a long check runs', () => {
  const files = () => [
    fileProgress('setup', 1, false),
    fileProgress('api', 5, false),
    fileProgress('parallel', 4, false),
    fileProgress('capacity', 5, true),
  ];
  const f = files();
  // Nothing finished, or too little (setup alone is 3 % of the typical total): no ETA.
  expect(eta(f, { atLastDoneMs: 0, sinceLastDoneMs: 0 })).toBeUndefined();
  f[0]!.done.push('setup.server-ready');
  f[1]!.done.push('api.a', 'api.b');
  expect(eta(f, { atLastDoneMs: 10_000, sinceLastDoneMs: 0 })).toBeUndefined();
  // api and parallel done, at twice their typical time: what is left (the capacity run) is estimated at that pace.
  f[1]!.done.push('api.c', 'api.d', 'api.e');
  f[2]!.done.push('parallel.speedup-2', 'parallel.scaling', 'parallel.no-starvation', 'parallel.isolation');
  const typicalDone = 1_500 + 1_900 + 11_000;
  const left = eta(f, { atLastDoneMs: 2 * typicalDone, sinceLastDoneMs: 0, current: 'capacity.sweep' })!;
  expect(left).toBeCloseTo(2 * 40_000, -2);
  // While the sweep runs the time left goes down; past its typical time it holds at what the checks after it need.
  const later = eta(f, { atLastDoneMs: 2 * typicalDone, sinceLastDoneMs: 30_000, current: 'capacity.sweep' })!;
  expect(later).toBeCloseTo(left - 30_000, -2);
  const overrun = eta(f, { atLastDoneMs: 2 * typicalDone, sinceLastDoneMs: 300_000, current: 'capacity.sweep' })!;
  expect(overrun).toBeGreaterThan(0);
  expect(overrun).toBeCloseTo(2 * 500, -2); // the four checks after the sweep share 0.5 s of the typical capacity run
});
