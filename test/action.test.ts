// The composite action (action.yml) must run on macOS runners, whose bash is 3.2: there an empty array expanded under
// `set -u` ("${files[@]}" with no files) is an "unbound variable" error, and bash-4 features are missing. Debian has
// no bash 3.2 (neither apt nor npm carries it, and its source site is not reachable from here), so: the step's logic
// lives in node (scripts/action-run.ts), every `run:` of action.yml is checked for bash-4-only constructs, and each is
// executed under `bash --posix` with `set -euo pipefail` and no files given.
//
// The run step's own logic (scripts/action-run.ts: inputs, artifact name, gate, outputs, summary, baseline, sticky
// comment) is simulated with GitHub's variables: the suite-running part is injected (a function that leaves a results
// fixture where the CLI would), and the GitHub REST API is a local stand-in on 127.0.0.1.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ROOT } from '../lib/config/profile.ts';
import { compareResults } from '../reporters/compare.ts';
import { tally, toColumns } from '../reporters/render.ts';
import type { ResultsFile } from '../reporters/results-types.ts';
import { summaryOf } from '../reporters/summary.ts';
import {
  artifactName,
  CLI,
  familiesOf,
  main,
  OUTPUT_NAMES,
  planAction,
  type SuiteCommand,
  sanitiseArtifactName,
} from '../scripts/action-run.ts';

const ACTION = readFileSync(join(ROOT, 'action.yml'), 'utf8');

/** Every step's `run:` text with its step name (block scalars `run: |` and one-liners). */
function runBlocks(yml: string): Array<{ step: string; script: string }> {
  const out: Array<{ step: string; script: string }> = [];
  const lines = yml.split('\n');
  let step = '';
  for (let i = 0; i < lines.length; i++) {
    const name = /^\s*- name:\s*(.+)$/.exec(lines[i]!);
    if (name) step = name[1]!.trim();
    const m = /^(\s*)run:\s*(.*)$/.exec(lines[i]!);
    if (!m) continue;
    if (m[2] === '|' || m[2] === '|-') {
      const body: string[] = [];
      const indent = m[1]!.length;
      while (i + 1 < lines.length && (lines[i + 1]!.trim() === '' || lines[i + 1]!.search(/\S/) > indent))
        body.push(lines[++i]!);
      const cut = Math.min(...body.filter((l) => l.trim()).map((l) => l.search(/\S/)));
      out.push({
        step,
        script: body
          .map((l) => l.slice(cut))
          .join('\n')
          .trim(),
      });
    } else {
      out.push({ step, script: m[2]!.trim() });
    }
  }
  return out;
}

/** Constructs bash 3.2 lacks (or, for arrays, mishandles under `set -u` when empty). */
const BASH4_ONLY: Array<[RegExp, string]> = [
  [/\[[@*]\]/, 'array expansion ("${a[@]}": unbound when empty under set -u in bash < 4.4)'],
  [/\b(declare|local|typeset)\s+-[a-zA-Z]*[An]/, 'associative array or nameref (declare -A / -n)'],
  [/\b(mapfile|readarray|coproc)\b/, 'mapfile / readarray / coproc'],
  [/\$\{[^}]*(,,|\^\^|,|\^)\}/, 'case modification ${x,,} / ${x^^}'],
  [/\$\{[^}]*@[QEPAaKkLUu]\}/, 'parameter transformation ${x@Q}'],
  [/\|&|&>>/, '|& or &>>'],
  [/;;&|;&/, 'case fall-through ;& / ;;&'],
  [/globstar|\bwait\s+-n\b|\$EPOCH(SECONDS|REALTIME)/, 'globstar, wait -n, $EPOCHSECONDS'],
  [/\bread\s+[^\n]*-a\b/, 'read -a into an array (then expanded: see arrays)'],
];

/** Run a step's script the strict way (bash --posix, set -euo pipefail) from the suite's root, like the action does. */
function runStep(script: string, env: NodeJS.ProcessEnv, timeout = 30_000) {
  return spawnSync('bash', ['--posix', '--noprofile', '--norc', '-euo', 'pipefail', '-c', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout,
    env,
  });
}

/** The `- name:` of every step (uses-steps without a name are skipped), with its lines. */
function steps(yml: string): Array<{ name: string; text: string }> {
  const body = yml.slice(yml.indexOf('\n  steps:\n'));
  return body
    .split(/\n    - /)
    .slice(1)
    .map((t) => ({ name: /^name:\s*(.+)$/m.exec(t)?.[1]?.trim() ?? /uses:\s*(\S+)/.exec(t)?.[1] ?? '', text: t }));
}

/** Keys of a top-level mapping (inputs:, outputs:) with the lines under each. */
function section(yml: string, name: string): Map<string, string> {
  const m = new RegExp(`^${name}:\\n((?:  .*\\n|\\n)+)`, 'm').exec(yml);
  const out = new Map<string, string>();
  let key = '';
  for (const line of (m?.[1] ?? '').split('\n')) {
    const k = /^  ([a-z-]+):\s*$/.exec(line);
    if (k) out.set((key = k[1]!), '');
    else if (key) out.set(key, `${out.get(key)}${line}\n`);
  }
  return out;
}

describe('action.yml runs under bash 3.2', () => {
  const blocks = runBlocks(ACTION);
  const script = (step: string) => blocks.find((b) => b.step === step)!.script;

  test('its steps are the ones we expect, and the run step is one node command', () => {
    expect(blocks.map((b) => b.step)).toEqual([
      'Refuse Windows runners',
      'Compute the npm cache key',
      'Install the conformance suite',
      'Run the conformance checks',
    ]);
    expect(script('Run the conformance checks')).toBe('node --import tsx scripts/action-run.ts');
    expect(script('Install the conformance suite')).toBe('npm ci --prefer-offline --no-audit --no-fund');
  });

  test('no run block uses a bash-4-only construct', () => {
    const found = blocks.flatMap((b) =>
      BASH4_ONLY.filter(([re]) => re.test(b.script)).map(([, what]) => `${b.step}: ${what}`),
    );
    expect(found).toEqual([]);
    // The lint catches what broke before: the old step read the files into an array and expanded it.
    const old =
      'read -r -a files <<< "$INPUT_FILES"\nNO_COLOR=1 npx vitest run --project "$INPUT_PROJECT" "${files[@]}"';
    expect(BASH4_ONLY.filter(([re]) => re.test(old)).map(([, w]) => w)).toHaveLength(2);
  });

  test('the run step, under bash --posix with set -euo pipefail and no files, runs the whole catalogue through the CLI: no empty argument', () => {
    const ws = mkdtempSync(join(tmpdir(), 'action-'));
    const outputs = join(ws, 'github-output');
    writeFileSync(outputs, '');
    const r = runStep(script('Run the conformance checks'), {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      GITHUB_WORKSPACE: ws,
      GITHUB_OUTPUT: outputs,
      CONFORMANCE_ACTION_DRY_RUN: '1',
      RUNNER_OS: 'Linux',
      RUNNER_ARCH: 'X64',
      GITHUB_JOB: 'conformance',
      INPUT_PROJECT: 'my-server',
      INPUT_SERVERS_FILE: '.github/conformance/servers.json',
      INPUT_FILES: '',
      INPUT_STRICT: 'true',
      INPUT_TIER: 'quick',
      INPUT_REPORTS_DIR: 'conformance-reports',
      INPUT_MACHINE: '',
    });
    expect(r.status, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout.trim()) as { command: string[]; cwd: string };
    expect(plan.command.slice(1)).toEqual([
      CLI,
      '--servers',
      join(ws, '.github/conformance/servers.json'),
      '--server',
      'my-server',
      '--tier',
      'quick',
      '--strict',
      '--reports',
      join(ws, 'conformance-reports'),
    ]);
    expect(plan.command).not.toContain('');
    const out = readFileSync(outputs, 'utf8');
    expect(out).toContain(`reports-dir=${join(ws, 'conformance-reports')}\n`);
    expect(out).toContain(`results=${join(ws, 'conformance-reports', 'my-server', 'results.json')}\n`);
    expect(out).toMatch(/^artifact-name=conformance-my-server-conformance-linux-x64-[0-9a-f]{6}$/m);
  });

  test('on Windows the first step refuses with one ::error:: line', () => {
    expect(ACTION).toMatch(/- name: Refuse Windows runners\n\s+if: runner.os == 'Windows'\n/);
    const r = runStep(script('Refuse Windows runners'), { PATH: process.env.PATH });
    expect(r.status).toBe(1);
    expect(r.stdout.trim().split('\n')).toEqual([expect.stringMatching(/^::error::.*Windows/)]);
  });

  test("the npm cache key: the action's own lockfile hash, runner OS and arch, node version; actions/cache on ~/.npm uses it", () => {
    const ws = mkdtempSync(join(tmpdir(), 'action-key-'));
    const outputs = join(ws, 'github-output');
    writeFileSync(outputs, '');
    const r = runStep(script('Compute the npm cache key'), {
      PATH: process.env.PATH,
      GITHUB_OUTPUT: outputs,
      RUNNER_OS: 'macOS',
      RUNNER_ARCH: 'ARM64',
    });
    expect(r.status, r.stderr).toBe(0);
    const lock = createHash('sha256')
      .update(readFileSync(join(ROOT, 'package-lock.json')))
      .digest('hex')
      .slice(0, 16);
    expect(readFileSync(outputs, 'utf8')).toMatch(
      new RegExp(`^key=conformance-npm-macos-arm64-node\\d+\\.\\d+\\.\\d+-${lock}\\n$`),
    );
    const cache = steps(ACTION).find((s) => s.name === 'actions/cache@v4')!.text;
    expect(cache).toMatch(/path: ~\/\.npm\n/);
    expect(cache).toContain('key: ${{ steps.npm-key.outputs.key }}');
    expect(steps(ACTION).find((s) => s.name === 'Compute the npm cache key')!.text).toContain('id: npm-key');
  });

  test('the upload step uses the computed artifact name; every output declared is one the run step writes; every input reaches it', () => {
    const upload = steps(ACTION).find((s) => s.name === 'Upload the reports')!.text;
    expect(upload).toContain('name: ${{ steps.run.outputs.artifact-name }}');
    expect(upload).toContain('path: ${{ steps.run.outputs.reports-dir }}');
    const outputs = section(ACTION, 'outputs');
    expect([...outputs.keys()]).toEqual([...OUTPUT_NAMES]);
    for (const [k, text] of outputs) expect(text, k).toContain(`value: \${{ steps.run.outputs.${k} }}`);
    const run = steps(ACTION).find((s) => s.name === 'Run the conformance checks')!.text;
    for (const k of section(ACTION, 'inputs').keys()) {
      if (k === 'upload') continue; // read by the upload step's `if`
      expect(run, k).toContain(`INPUT_${k.toUpperCase().replace(/-/g, '_')}: \${{ inputs.${k} }}`);
    }
  });

  test.skipIf(!existsSync(CLI))(
    'for real: the step runs the given files against the reference server through the CLI and writes the reports where it says',
    () => {
      const ws = mkdtempSync(join(tmpdir(), 'action-run-'));
      const outputs = join(ws, 'github-output');
      writeFileSync(outputs, '');
      const r = runStep(
        script('Run the conformance checks'),
        {
          ...process.env,
          GITHUB_WORKSPACE: ws,
          GITHUB_OUTPUT: outputs,
          GITHUB_STEP_SUMMARY: '',
          INPUT_PROJECT: 'reference',
          INPUT_FILES: ' suites/setup.test.ts\n',
          INPUT_REPORTS_DIR: 'out',
          INPUT_STRICT: 'false',
          INPUT_TIER: '',
          INPUT_SERVERS_FILE: '',
          INPUT_MACHINE: 'action-test',
        },
        120_000,
      );
      expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
      const results = JSON.parse(readFileSync(join(ws, 'out', 'reference', 'results.json'), 'utf8')) as {
        header: { machine: { label: string } };
        checks: Array<{ id: string; outcome: string }>;
      };
      expect(results.header.machine.label).toBe('action-test');
      // The health sentinel ends every partial run (docs/grading.md "Health sentinel"), so a files-only run has two checks.
      expect(results.checks.map((c) => `${c.id} ${c.outcome}`)).toEqual([
        'setup.server-ready pass',
        'health.sentinel pass',
      ]);
      expect(readFileSync(outputs, 'utf8')).toContain('gate=passed\n');
      expect(readFileSync(join(ws, 'out', 'reference', 'summary.md'), 'utf8')).toContain('### Gate: ✅ passed');
    },
    130_000,
  );
});

describe('planAction: inputs to CLI arguments', () => {
  const base = { GITHUB_WORKSPACE: '/ws', INPUT_PROJECT: 'p' };
  const args = (env: NodeJS.ProcessEnv) => {
    const p = planAction(env);
    if ('error' in p) throw new Error(p.error);
    return p.args;
  };
  const error = (env: NodeJS.ProcessEnv) => {
    const p = planAction(env);
    return 'error' in p ? p.error : undefined;
  };

  test("a profile: --servers (the suite's own servers.json unless given) and --server; files as --only families", () => {
    expect(args(base)).toEqual([
      '--servers',
      join(ROOT, 'servers.json'),
      '--server',
      'p',
      '--tier',
      'quick',
      '--reports',
      '/ws/conformance-reports',
    ]);
    expect(
      args({
        ...base,
        INPUT_SERVERS_FILE: 'conf/s.json',
        INPUT_FILES: '  suites/api.test.ts\n\t./suites/sse.test.ts stream,api ',
      }),
    ).toEqual([
      '--servers',
      '/ws/conf/s.json',
      '--server',
      'p',
      '--tier',
      'quick',
      '--only',
      'api,sse,stream',
      '--reports',
      '/ws/conformance-reports',
    ]);
  });

  test('base-url: project "env", model, api key variable by name, start in the workspace by default, wait, deadline, strict, machine', () => {
    const env = {
      GITHUB_WORKSPACE: '/ws',
      INPUT_BASE_URL: 'http://127.0.0.1:{port}/v1',
      INPUT_MODEL: 'tiny',
      INPUT_API_KEY_ENV: 'MY_KEY',
      MY_KEY: 'k-123456',
      INPUT_START: 'python -m srv --port {port}',
      INPUT_WAIT_SECONDS: '300',
      INPUT_DEADLINE_SECONDS: ' 1200 ',
      INPUT_STRICT: 'TRUE',
      INPUT_MACHINE: 'gh',
      INPUT_REPORTS_DIR: '/abs/r',
    };
    expect(args(env)).toEqual([
      '--base-url',
      'http://127.0.0.1:{port}/v1',
      '--model',
      'tiny',
      '--api-key-env',
      'MY_KEY',
      '--start',
      'python -m srv --port {port}',
      '--cwd',
      '/ws',
      '--wait',
      '300',
      '--tier',
      'quick',
      '--strict',
      '--deadline',
      '1200',
      '--reports',
      '/abs/r',
      '--machine',
      'gh',
    ]);
    expect(planAction(env)).toMatchObject({
      project: 'env',
      resultsPath: '/abs/r/env/results.json',
      summaryPath: '/abs/r/env/summary.md',
    });
    expect(args({ ...env, INPUT_START_CWD: 'server' })).toContain('/ws/server');
    expect(args({ ...env, INPUT_PROJECT: 'env' })).toContain('--base-url');
    expect(JSON.stringify(planAction(env))).not.toContain('k-123456');
  });

  test('apis: with base-url, names checked and passed on as --apis', () => {
    const env = { GITHUB_WORKSPACE: '/ws', INPUT_BASE_URL: 'http://h:1', INPUT_APIS: ' openai-chat, ollama ' };
    expect(args(env).slice(0, 4)).toEqual(['--base-url', 'http://h:1', '--apis', 'openai-chat,ollama-native']);
    expect(error({ ...env, INPUT_APIS: 'openai-chat,soap' })).toMatch(/input "apis": unknown API "soap"; the APIs are/);
    expect(error({ GITHUB_WORKSPACE: '/ws', INPUT_PROJECT: 'p', INPUT_APIS: 'ollama' })).toMatch(
      /input "apis" goes with "base-url"/,
    );
  });

  test('project "env" without base-url reads OPENAI_BASE_URL / OPENAI_MODEL / OPENAI_API_KEY of the step', () => {
    expect(
      args({
        GITHUB_WORKSPACE: '/ws',
        INPUT_PROJECT: 'env',
        OPENAI_BASE_URL: 'http://h:1/v1',
        OPENAI_MODEL: 'm',
        OPENAI_API_KEY: 'sk-abcdef',
      }),
    ).toEqual([
      '--base-url',
      'http://h:1/v1',
      '--model',
      'm',
      '--api-key-env',
      'OPENAI_API_KEY',
      '--tier',
      'quick',
      '--reports',
      '/ws/conformance-reports',
    ]);
  });

  test("capacity inputs, named as vllm bench serve's flags, pass as those flags; a bad one names the input", () => {
    const cap = {
      ...base,
      INPUT_CAPACITY: 'true',
      INPUT_MAX_CONCURRENCY: '8',
      INPUT_REQUEST_RATE: '2,4,inf',
      INPUT_NUM_PROMPTS: '200',
      INPUT_BURSTINESS: '0.5',
      INPUT_INPUT_LEN: '128',
      INPUT_OUTPUT_LEN: '32',
    };
    expect(args(cap).join(' ')).toContain(
      '--capacity --max-concurrency 8 --request-rate 2,4,inf --num-prompts 200 --burstiness 0.5 --input-len 128 --output-len 32',
    );
    expect(args({ ...base, INPUT_FILES: 'capacity', INPUT_NUM_PROMPTS: '100' })).toContain('--num-prompts');
    expect(args(base)).not.toContain('--capacity');
    expect(error({ ...base, INPUT_NUM_PROMPTS: '100' })).toMatch(
      /"num-prompts" shapes a capacity run: set "capacity: true"/,
    );
    expect(error({ ...cap, INPUT_REQUEST_RATE: '2,soon' })).toBe(
      'input "request-rate": "soon" is not a request rate (req/s above 0, or inf), e.g. 2,4,inf',
    );
    expect(error({ ...cap, INPUT_OUTPUT_LEN: '1' })).toMatch(/^input "output-len": needs a whole number of at least 2/);
    expect(error({ ...cap, INPUT_CAPACITY: 'yes' })).toBe('input "capacity" must be true or false, not "yes"');
  });

  test('bad inputs are refused with the reason', () => {
    expect(error({ GITHUB_WORKSPACE: '/ws' })).toMatch(/"project" .* or "base-url" .* is required/);
    expect(error({ ...base, INPUT_TIER: 'huge' })).toBe('input "tier" must be quick or full, not "huge"');
    expect(error({ ...base, INPUT_STRICT: 'yes' })).toBe('input "strict" must be true or false, not "yes"');
    expect(error({ ...base, INPUT_FILES: 'suites/nope.test.ts' })).toMatch(
      /"suites\/nope.test.ts" is neither a family/,
    );
    expect(error({ ...base, INPUT_WAIT_SECONDS: '5m' })).toMatch(/"wait-seconds" must be a positive number/);
    expect(error({ ...base, INPUT_DEADLINE_SECONDS: '0' })).toMatch(/"deadline-seconds" must be a positive number/);
    expect(error({ ...base, INPUT_BASE_URL: 'http://h/v1' })).toMatch(/"base-url" runs the project "env"/);
    expect(error({ GITHUB_WORKSPACE: '/ws', INPUT_BASE_URL: 'h:8000' })).toMatch(/http:\/\/ or https:\/\//);
    expect(error({ GITHUB_WORKSPACE: '/ws', INPUT_BASE_URL: 'http://h/v1', INPUT_SERVERS_FILE: 's.json' })).toMatch(
      /either "base-url" or "servers-file"/,
    );
    expect(error({ ...base, INPUT_START: 'serve' })).toMatch(/"start" goes with "base-url"/);
    expect(error({ ...base, INPUT_START_CWD: 'x' })).toMatch(/"start-cwd" needs "start"/);
    expect(error({ ...base, INPUT_API_KEY_ENV: 'MY_KEY' })).toMatch(/names MY_KEY, which is not set/);
    expect(error({ ...base, INPUT_API_KEY_ENV: 'sk-live-secret-value' })).toMatch(/NAME of an environment variable/);
    expect(error({ ...base, INPUT_API_KEY_ENV: 'sk-live-secret-value' })).not.toContain('secret-value');
    expect(error({ ...base, INPUT_FAIL_ON_REGRESSION: 'true' })).toMatch(/needs "baseline"/);
    expect(error({ GITHUB_WORKSPACE: '/ws', INPUT_PROJECT: 'env' })).toMatch(/OPENAI_BASE_URL/);
    // Where the reports go and the artifact name are known even then: the outputs can still be written.
    expect(planAction({ GITHUB_WORKSPACE: '/ws', INPUT_TIER: 'huge' })).toMatchObject({
      reportsDir: '/ws/conformance-reports',
      artifactName: expect.stringMatching(/^conformance-unknown-/),
    });
  });

  test('files: family names or suites/<family>.test.ts, deduplicated; anything else is refused', () => {
    expect(familiesOf('')).toEqual([]);
    expect(familiesOf('suites/setup.test.ts api api')).toEqual(['setup', 'api']);
    expect(familiesOf('test/action.test.ts')).toEqual({ error: expect.stringContaining('families: setup, api') });
  });
});

describe('artifact name: unique per job and matrix leg, sanitised, overridable', () => {
  const leg = {
    GITHUB_JOB: 'conformance',
    RUNNER_OS: 'Linux',
    RUNNER_ARCH: 'X64',
    INPUT_NODE_VERSION: '20',
    INPUT_TIER: 'quick',
  };
  test('the runner and the matrix-varying inputs make it; a re-run adds the attempt (the comment key stays)', () => {
    const a = artifactName(leg, 'p');
    expect(a.name).toMatch(/^conformance-p-conformance-linux-x64-[0-9a-f]{6}$/);
    expect(a.key).toBe(a.name);
    expect(artifactName({ ...leg, INPUT_NODE_VERSION: '22' }, 'p').name).not.toBe(a.name);
    expect(artifactName({ ...leg, ImageOS: 'ubuntu24' }, 'p').name).not.toBe(a.name);
    expect(artifactName({ ...leg, RUNNER_OS: 'macOS', RUNNER_ARCH: 'ARM64' }, 'p').name).toMatch(
      /^conformance-p-conformance-macos-arm64-/,
    );
    expect(artifactName({ ...leg, GITHUB_RUN_ATTEMPT: '1' }, 'p').name).toBe(a.name);
    expect(artifactName({ ...leg, GITHUB_RUN_ATTEMPT: '3' }, 'p')).toEqual({ name: `${a.name}-attempt3`, key: a.name });
  });
  test('characters artifact names may not hold are replaced; the input overrides', () => {
    expect(sanitiseArtifactName('a"b:c<d>e|f*g?h\r\ni\\j/k l')).toBe('a-b-c-d-e-f-g-h-i-j-k-l');
    expect(artifactName({ ...leg, GITHUB_JOB: 'my job/x' }, 'a:b').name).toMatch(
      /^conformance-a-b-my-job-x-linux-x64-/,
    );
    expect(artifactName({ ...leg, INPUT_ARTIFACT_NAME: ' reports: nightly ' }, 'p')).toEqual({
      name: 'reports-nightly',
      key: 'reports-nightly',
    });
  });
});

// ------------------------------------------------------------------------------------------------------------
// The run step simulated: GitHub's variables, an injected suite run, files read back.

const FIXTURES = join(ROOT, 'fixtures', 'results');
const fixture = (name: string) => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as ResultsFile;

/** The fault run with its one fail graded warn: a gate that passes, with regressions against the reference run. */
function passingRegressed(): ResultsFile {
  const f = fixture('reference-fault-perf-serialise.json');
  return { ...f, checks: f.checks.map((c) => (c.outcome === 'fail' ? { ...c, outcome: 'warn' as const } : c)) };
}

interface Sim {
  code: number;
  ws: string;
  env: NodeJS.ProcessEnv;
  outputs: Record<string, string>;
  outputText: string;
  stepSummary: string;
  log: string[];
  calls: SuiteCommand[];
}

/** GitHub's variables for one job/leg (workspace, output and step-summary files, runner, job). */
function githubEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const ws = mkdtempSync(join(tmpdir(), 'action-sim-'));
  writeFileSync(join(ws, 'github-output'), '');
  writeFileSync(join(ws, 'step-summary'), '# earlier step\n');
  return {
    PATH: process.env.PATH,
    GITHUB_WORKSPACE: ws,
    GITHUB_OUTPUT: join(ws, 'github-output'),
    GITHUB_STEP_SUMMARY: join(ws, 'step-summary'),
    GITHUB_JOB: 'conformance',
    GITHUB_RUN_ID: '4242',
    GITHUB_RUN_ATTEMPT: '1',
    GITHUB_REPOSITORY: 'acme/server',
    GITHUB_SERVER_URL: 'https://github.example',
    GITHUB_EVENT_NAME: 'push',
    RUNNER_OS: 'Linux',
    RUNNER_ARCH: 'X64',
    RUNNER_TEMP: ws,
    INPUT_PROJECT: 'reference',
    INPUT_TIER: 'quick',
    INPUT_NODE_VERSION: '20',
    INPUT_REPORTS_DIR: 'conformance-reports',
    ...extra,
  };
}

/** A stand-in for the CLI: leaves `file` (and, like the CLI, its summary.md) in the reports folder and exits `code`. */
function fakeSuite(
  file: ResultsFile | undefined,
  code: number | null,
  calls: SuiteCommand[],
  opts: { summary?: boolean } = {},
) {
  return async (cmd: SuiteCommand): Promise<number | null> => {
    calls.push(cmd);
    const at = (f: string) => cmd.args[cmd.args.indexOf(f) + 1]!;
    const project = cmd.args.includes('--server') ? at('--server') : 'env';
    if (file) {
      const dir = join(at('--reports'), project);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'results.json'), JSON.stringify(file));
      if (opts.summary) writeFileSync(join(dir, 'summary.md'), summaryOf(toColumns([file])));
    }
    return code;
  };
}

function parseOutputs(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n').filter(Boolean))
    out[line.slice(0, line.indexOf('='))] = line.slice(line.indexOf('=') + 1);
  return out;
}

async function simulate(
  env: NodeJS.ProcessEnv,
  file: ResultsFile | undefined,
  code: number | null,
  opts: { summary?: boolean } = {},
): Promise<Sim> {
  const calls: SuiteCommand[] = [];
  const log: string[] = [];
  const exit = await main(env, { runSuite: fakeSuite(file, code, calls, opts), log: (s) => log.push(s) });
  const outputText = readFileSync(env.GITHUB_OUTPUT!, 'utf8');
  return {
    code: exit,
    ws: env.GITHUB_WORKSPACE!,
    env,
    outputs: parseOutputs(outputText),
    outputText,
    stepSummary: readFileSync(env.GITHUB_STEP_SUMMARY!, 'utf8'),
    log,
    calls,
  };
}

describe('the run step, simulated for two matrix legs of one job', () => {
  test('same job, same OS, node 20 and 22; then macOS: distinct artifact names, every output set, summary.md in each reports folder', async () => {
    const legs = [
      githubEnv({ INPUT_NODE_VERSION: '20' }),
      githubEnv({ INPUT_NODE_VERSION: '22' }),
      githubEnv({ INPUT_NODE_VERSION: '20', RUNNER_OS: 'macOS', RUNNER_ARCH: 'ARM64' }),
    ];
    const sims = [];
    for (const [i, env] of legs.entries())
      sims.push(await simulate(env, fixture('reference.json'), 0, { summary: i === 0 }));
    const names = sims.map((s) => s.outputs['artifact-name']);
    expect(new Set(names).size).toBe(3);
    for (const name of names)
      expect(name).toMatch(/^conformance-reference-conformance-(linux-x64|macos-arm64)-[0-9a-f]{6}$/);
    const t = tally(fixture('reference.json').checks);
    for (const s of sims) {
      expect(s.code).toBe(0);
      // Every output, exactly once, one line each.
      expect(Object.keys(s.outputs).sort()).toEqual([...OUTPUT_NAMES].sort());
      expect(s.outputText.split('\n').filter(Boolean)).toHaveLength(OUTPUT_NAMES.length);
      const reports = join(s.ws, 'conformance-reports');
      expect(s.outputs).toMatchObject({
        gate: 'passed',
        'exit-code': '0',
        score: `${t.passed}/${t.graded}`,
        'count-pass': String(t.counts.pass ?? 0),
        'count-skip': String(t.counts.skip ?? 0),
        'count-fail': '0',
        'count-error': '0',
        regressions: '',
        'reports-dir': reports,
        results: join(reports, 'reference', 'results.json'),
        summary: join(reports, 'reference', 'summary.md'),
      });
      expect(JSON.parse(s.outputs.counts!)).toEqual(t.counts);
      const md = readFileSync(join(reports, 'reference', 'summary.md'), 'utf8');
      expect(md).toContain('## LLM server conformance: reference @ vm');
      expect(md).toContain('### Gate: ✅ passed');
      expect(md).toContain(s.outputs['artifact-name']);
      // Appended to the step summary, after what an earlier step wrote, once.
      expect(s.stepSummary).toBe(`# earlier step\n${md}\n`);
      // The CLI ran once, with the flags, in the suite's folder; no INPUT_* (the token) and no step summary reached it.
      expect(s.calls).toHaveLength(1);
      expect(s.calls[0]!.args).toEqual([
        CLI,
        '--servers',
        join(ROOT, 'servers.json'),
        '--server',
        'reference',
        '--tier',
        'quick',
        '--reports',
        reports,
      ]);
      expect(Object.keys(s.calls[0]!.env).filter((k) => k.startsWith('INPUT_') || k === 'GITHUB_STEP_SUMMARY')).toEqual(
        [],
      );
      expect(s.log.join('\n')).toContain('gate passed');
    }
  });

  test('a failing run: gate failed, exit 1, counts and score from the results as the badge has them', async () => {
    const f = fixture('reference-fault-stream-burst-at-end.json');
    const s = await simulate(githubEnv(), f, 1);
    expect(s.code).toBe(1);
    const t = tally(toColumns([f])[0]!.checks);
    expect(s.outputs).toMatchObject({
      gate: 'failed',
      'exit-code': '1',
      reason: '4 fail, 0 error',
      'count-fail': '4',
      'count-warn': '4',
      score: `${t.passed}/${t.graded}`,
    });
    const md = readFileSync(s.outputs.summary!, 'utf8');
    expect(md).toContain('❌ **fail**'); // rendered from results.json: this CLI stand-in wrote no summary.md
    expect(md).toContain('### Gate: ❌ **failed**');
  });

  test('a server that never became ready (exit 3, no results): gate error, exit 3, the summary says so', async () => {
    const s = await simulate(
      githubEnv({
        INPUT_BASE_URL: 'http://127.0.0.1:{port}/v1',
        INPUT_PROJECT: '',
        INPUT_START: 'python -m srv --port {port}',
        INPUT_WAIT_SECONDS: '30',
      }),
      undefined,
      3,
    );
    expect(s.code).toBe(3);
    expect(s.outputs).toMatchObject({ gate: 'error', 'exit-code': '3', results: '', score: '', 'count-pass': '' });
    expect(s.outputs.reason).toMatch(/never became ready within 30 s/);
    expect(s.outputs.summary).toBe(join(s.ws, 'conformance-reports', 'env', 'summary.md'));
    expect(readFileSync(s.outputs.summary!, 'utf8')).toMatch(/No results[\s\S]*Gate: 💥 \*\*error\*\*/);
    expect(s.calls[0]!.args).toContain('--start');
    expect(s.calls[0]!.args[s.calls[0]!.args.indexOf('--cwd') + 1]).toBe(s.ws);
  });

  test('a run stopped before its checks (results.json says why): the reason quotes it, no count or score', async () => {
    const f = fixture('reference.json');
    const failure = {
      kind: 'config',
      summary: 'the model "gpt-4o" is not served at http://127.0.0.1:9; it serves ["reference-model"]',
      requirement: 'requests name a model the server serves (--model)',
      expected: '"gpt-4o" among the ids GET /v1/models lists, or a request naming it answered',
      actual: 'GET /v1/models lists ["reference-model"]; … → HTTP 404: model_not_found',
    };
    const stopped: ResultsFile = {
      ...f,
      header: { ...f.header, server: { ...f.header.server, setupFailure: failure } },
      checks: [{ ...f.checks.find((c) => c.id === 'setup.server-ready')!, outcome: 'error', message: failure.summary }],
    };
    const s = await simulate(githubEnv(), stopped, 2);
    expect(s.code).toBe(2);
    expect(s.outputs).toMatchObject({ gate: 'error', 'exit-code': '2', score: '', 'count-error': '' });
    expect(s.outputs.reason).toBe(`configuration error: ${failure.summary} (exit 2)`);
    expect(readFileSync(s.outputs.summary!, 'utf8')).toContain('### CONFIGURATION ERROR: no check was run');
  });

  test("a results file left by an earlier run in the same folder never passes for this run's", async () => {
    const env = githubEnv();
    const dir = join(env.GITHUB_WORKSPACE!, 'conformance-reports', 'reference');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'results.json'), JSON.stringify(fixture('reference.json')));
    const s = await simulate(env, undefined, 0);
    expect(s.outputs).toMatchObject({ gate: 'error', 'exit-code': '4', results: '' });
    expect(s.code).toBe(4);
  });
});

describe('the run step on a bad input', () => {
  test('outputs (gate error, exit code 2, reports-dir, artifact-name) and a summary.md naming the problem, then exit 2; nothing run', async () => {
    const s = await simulate(githubEnv({ INPUT_TIER: 'huge' }), fixture('reference.json'), 0);
    expect(s.code).toBe(2);
    expect(s.calls).toEqual([]);
    const reports = join(s.ws, 'conformance-reports');
    expect(Object.keys(s.outputs).sort()).toEqual([...OUTPUT_NAMES].sort());
    expect(s.outputs).toMatchObject({
      gate: 'error',
      'exit-code': '2',
      'reports-dir': reports,
      summary: join(reports, 'summary.md'),
      reason: 'input "tier" must be quick or full, not "huge"',
    });
    expect(s.outputs['artifact-name']).toMatch(/^conformance-reference-conformance-linux-x64-/);
    const md = readFileSync(join(reports, 'summary.md'), 'utf8');
    expect(md).toContain('**Bad input:** input "tier" must be quick or full, not "huge"');
    expect(s.stepSummary).toContain('**Bad input:**');
    expect(s.log).toEqual(['::error::conformance action: input "tier" must be quick or full, not "huge"']);
  });

  test('an input with a newline cannot start a workflow command of its own: the log line stays one line', async () => {
    const s = await simulate(githubEnv({ INPUT_TIER: 'huge\n::add-mask::x' }), fixture('reference.json'), 0);
    expect(s.code).toBe(2);
    expect(s.log).toHaveLength(1);
    expect(s.log[0]).not.toMatch(/[\r\n]/);
    expect(s.outputText.split('\n').filter((l) => l.startsWith('::'))).toEqual([]);
  });

  test('a baseline that is not there is a bad input, found before anything runs', async () => {
    const s = await simulate(githubEnv({ INPUT_BASELINE: 'base/results.json' }), fixture('reference.json'), 0);
    expect(s.code).toBe(2);
    expect(s.calls).toEqual([]);
    expect(s.outputs.reason).toMatch(/^input "baseline": .*base\/results.json could not be read/);
  });

  test('a Windows runner is refused the same way, with one clear line', async () => {
    const s = await simulate(githubEnv({ RUNNER_OS: 'Windows' }), fixture('reference.json'), 0);
    expect(s.code).toBe(2);
    expect(s.calls).toEqual([]);
    expect(s.outputs.gate).toBe('error');
    expect(s.log).toEqual([expect.stringMatching(/^::error::.*Windows runners are not supported/)]);
  });
});

describe('the run step with a baseline', () => {
  const baselinePath = join(FIXTURES, 'reference.json');
  const expected = compareResults(fixture('reference.json'), passingRegressed()).regressions;

  test('a run against itself: 0 regressions, the gate as it was', async () => {
    const s = await simulate(
      githubEnv({ INPUT_BASELINE: baselinePath, INPUT_FAIL_ON_REGRESSION: 'true' }),
      fixture('reference.json'),
      0,
    );
    expect(s.code).toBe(0);
    expect(s.outputs).toMatchObject({ gate: 'passed', regressions: '0' });
    expect(readFileSync(s.outputs.summary!, 'utf8')).toMatch(/### Compared with the baseline[\s\S]*No regressions\./);
  });

  test('regressions are reported (summary, step summary, output) and do not gate without fail-on-regression', async () => {
    expect(expected).toBeGreaterThan(0);
    const s = await simulate(githubEnv({ INPUT_BASELINE: baselinePath }), passingRegressed(), 0);
    expect(s.code).toBe(0);
    expect(s.outputs).toMatchObject({ gate: 'passed', 'exit-code': '0', regressions: String(expected) });
    const md = readFileSync(s.outputs.summary!, 'utf8');
    expect(md).toContain(`**${expected} regressions** (reported, not gating`);
    expect(md).toContain('- parallel.speedup-2'); // the serialising server lost its batching speedup
    expect(md).toContain('<summary>Full comparison</summary>');
    expect(s.stepSummary).toContain(`**${expected} regressions**`);
  });

  test('fail-on-regression: the same run fails the step (exit 1, gate failed with the reason)', async () => {
    const s = await simulate(
      githubEnv({ INPUT_BASELINE: baselinePath, INPUT_FAIL_ON_REGRESSION: 'true' }),
      passingRegressed(),
      0,
    );
    expect(s.code).toBe(1);
    expect(s.outputs).toMatchObject({
      gate: 'failed',
      'exit-code': '1',
      regressions: String(expected),
      reason: `${expected} regressions against the baseline (fail-on-regression)`,
    });
    expect(readFileSync(s.outputs.summary!, 'utf8')).toContain('### Gate: ❌ **failed**');
  });

  test('a failing run against the baseline: still failed, the regressions added to the reason', async () => {
    const s = await simulate(
      githubEnv({ INPUT_BASELINE: baselinePath, INPUT_FAIL_ON_REGRESSION: 'true' }),
      fixture('reference-fault-perf-serialise.json'),
      1,
    );
    expect(s.code).toBe(1);
    expect(s.outputs.reason).toMatch(/^1 fail, 0 error; \d+ regressions against the baseline/);
  });
});

// ------------------------------------------------------------------------------------------------------------
// The sticky comment, against a local stand-in of the GitHub REST API.

interface Recorded {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

describe('the sticky pull request comment (a local stand-in of the GitHub REST API)', () => {
  const TOKEN = `ghs_${'a1B2c3D4e5'.repeat(4)}`;
  let server: Server;
  let api = '';
  const requests: Recorded[] = [];
  let comments: Array<{ id: number; body: string }> = [];
  let fail = false;
  let nextId = 1000;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => {
        body += d.toString();
      });
      req.on('end', () => {
        requests.push({ method: req.method!, path: req.url!, headers: req.headers, body });
        const send = (status: number, data: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(data));
        };
        if (fail) return send(500, { message: 'Server Error' });
        const url = new URL(req.url!, 'http://x');
        if (req.method === 'GET' && url.pathname === '/repos/acme/server/issues/7/comments') {
          const per = Number(url.searchParams.get('per_page'));
          const page = Number(url.searchParams.get('page'));
          return send(200, comments.slice((page - 1) * per, page * per));
        }
        if (req.method === 'POST' && url.pathname === '/repos/acme/server/issues/7/comments') {
          const c = { id: nextId++, body: (JSON.parse(body) as { body: string }).body };
          comments.push(c);
          return send(201, c);
        }
        const m = /^\/repos\/acme\/server\/issues\/comments\/(\d+)$/.exec(url.pathname);
        if (req.method === 'PATCH' && m) {
          const c = comments.find((x) => x.id === Number(m[1]));
          if (!c) return send(404, { message: 'Not Found' });
          c.body = (JSON.parse(body) as { body: string }).body;
          return send(200, c);
        }
        send(404, { message: 'Not Found' });
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  function prEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
    const env = githubEnv({
      GITHUB_EVENT_NAME: 'pull_request',
      GITHUB_API_URL: api,
      INPUT_COMMENT: 'true',
      INPUT_GITHUB_TOKEN: TOKEN,
      ...extra,
    });
    const event = join(env.GITHUB_WORKSPACE!, 'event.json');
    writeFileSync(event, JSON.stringify({ action: 'synchronize', number: 7, pull_request: { number: 7 } }));
    return { ...env, GITHUB_EVENT_PATH: event };
  }

  test("first run POSTs, second run PATCHes the same comment; another marker's comment is left alone; pages are read", async () => {
    // 120 comments before ours: the lookup must read page 2 of per_page=100.
    comments = Array.from({ length: 120 }, (_, i) => ({
      id: i + 1,
      body: i === 5 ? '<!-- llm-server-conformance:other-leg -->\nanother leg' : `chat ${i}`,
    }));
    requests.length = 0;
    const first = await simulate(prEnv(), fixture('reference.json'), 0);
    expect(first.code).toBe(0);
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /repos/acme/server/issues/7/comments?per_page=100&page=1',
      'GET /repos/acme/server/issues/7/comments?per_page=100&page=2',
      'POST /repos/acme/server/issues/7/comments',
    ]);
    const mine = comments.find((c) =>
      c.body.includes(`<!-- llm-server-conformance:${first.outputs['artifact-name']} -->`),
    )!;
    expect(mine.id).toBe(1000);
    expect(mine.body).toContain('gate ✅ passed');
    expect(mine.body).toContain(`**${first.outputs.score} passed**`);
    expect(mine.body).toContain('[The run](https://github.example/acme/server/actions/runs/4242)');
    expect(first.log.at(-1)).toMatch(/posted a pull request comment \(#7\)/);

    requests.length = 0;
    const second = await simulate(prEnv({ INPUT_BASELINE: join(FIXTURES, 'reference.json') }), passingRegressed(), 0);
    expect(second.outputs['artifact-name']).toBe(first.outputs['artifact-name']);
    expect(requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /repos/acme/server/issues/7/comments?per_page=100&page=1',
      'GET /repos/acme/server/issues/7/comments?per_page=100&page=2',
      'PATCH /repos/acme/server/issues/comments/1000',
    ]);
    expect(comments).toHaveLength(121);
    expect(comments.find((c) => c.id === 1000)!.body).toMatch(/\*\*\d+ regressions\*\* against the baseline/);
    expect(comments.find((c) => c.id === 6)!.body).toBe('<!-- llm-server-conformance:other-leg -->\nanother leg');
    expect(second.log.at(-1)).toMatch(/updated the pull request comment \(#7, comment 1000\)/);

    // A second leg of the job (another OS) has its own comment.
    requests.length = 0;
    await simulate(prEnv({ RUNNER_OS: 'macOS' }), fixture('reference.json'), 0);
    expect(requests.at(-1)!.method).toBe('POST');
    expect(comments).toHaveLength(122);
  });

  test('the token travels only in the Authorization header: never in a path, a body, another header, the outputs, the summaries or the log', async () => {
    comments = [];
    requests.length = 0;
    const s = await simulate(prEnv(), fixture('reference-fault-stream-burst-at-end.json'), 1);
    expect(requests.length).toBeGreaterThan(0);
    for (const r of requests) {
      expect(r.headers.authorization).toBe(`Bearer ${TOKEN}`);
      expect(r.headers.accept).toBe('application/vnd.github+json');
      expect(r.headers['x-github-api-version']).toBe('2022-11-28');
      const { authorization: _, ...rest } = r.headers;
      expect(`${r.path}\n${r.body}\n${JSON.stringify(rest)}`).not.toContain(TOKEN);
    }
    const everything = [
      s.outputText,
      s.stepSummary,
      readFileSync(s.outputs.summary!, 'utf8'),
      s.log.join('\n'),
      JSON.stringify(comments),
      JSON.stringify(s.calls.map((c) => c.env)),
    ].join('\n');
    expect(everything).not.toContain(TOKEN);
  });

  test('a 500 from the API is one warning line; the exit code and the gate are unchanged', async () => {
    fail = true;
    try {
      const s = await simulate(prEnv(), fixture('reference-fault-stream-burst-at-end.json'), 1);
      expect(s.code).toBe(1);
      expect(s.outputs.gate).toBe('failed');
      expect(s.log.at(-1)).toMatch(
        /^::warning::conformance action: could not post the pull request comment \(the gate is unchanged\): GET .* HTTP 500/,
      );
      expect(s.log.join('\n')).not.toContain(TOKEN);
      const ok = await simulate(prEnv(), fixture('reference.json'), 0);
      expect(ok.code).toBe(0);
      expect(ok.log.at(-1)).toMatch(/^::warning::/);
    } finally {
      fail = false;
    }
  });

  test('not a pull_request event: one line saying no comment was posted and why, no request', async () => {
    requests.length = 0;
    const s = await simulate({ ...prEnv(), GITHUB_EVENT_NAME: 'push' }, fixture('reference.json'), 0);
    expect(s.code).toBe(0);
    expect(requests).toEqual([]);
    expect(s.log.at(-1)).toBe('conformance action: no pull request comment posted: not a pull_request event (push)');
  });

  test('comment: false (the default) makes no request and prints nothing about comments', async () => {
    requests.length = 0;
    const s = await simulate({ ...prEnv(), INPUT_COMMENT: '' }, fixture('reference.json'), 0);
    expect(requests).toEqual([]);
    expect(s.log.join('\n')).not.toMatch(/comment/);
  });
});

test('docs/github-action.md lists every input and output action.yml declares', () => {
  const doc = readFileSync(join(ROOT, 'docs', 'github-action.md'), 'utf8');
  const block = (name: string) => ACTION.split(`\n${name}:\n`)[1]!.split(/\n[a-z]+:/)[0]!;
  const names = (text: string) => [...text.matchAll(/^ {2}([a-z-]+):$/gm)].map((m) => m[1]!);
  const declared = [...names(block('inputs')), ...names(block('outputs'))];
  expect(declared.length).toBeGreaterThan(30);
  expect(declared.filter((n) => !doc.includes(`| \`${n}\` |`))).toEqual([]);
});
