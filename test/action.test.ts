// The composite action (action.yml) must run on macOS runners, whose bash is 3.2: there an empty array expanded under
// `set -u` ("${files[@]}" with no files) is an "unbound variable" error, and bash-4 features are missing. Debian has
// no bash 3.2 (neither apt nor npm carries it, and its source site is not reachable from here), so: the step's logic
// lives in node (scripts/action-run.ts), every `run:` of action.yml is checked for bash-4-only constructs, and each is
// executed under `bash --posix` with `set -euo pipefail` and no files given.
import { describe, test, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../lib/profile.ts';
import { planAction } from '../scripts/action-run.ts';

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
      while (i + 1 < lines.length && (lines[i + 1]!.trim() === '' || lines[i + 1]!.search(/\S/) > indent)) body.push(lines[++i]!);
      const cut = Math.min(...body.filter((l) => l.trim()).map((l) => l.search(/\S/)));
      out.push({ step, script: body.map((l) => l.slice(cut)).join('\n').trim() });
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
  return spawnSync('bash', ['--posix', '--noprofile', '--norc', '-euo', 'pipefail', '-c', script], { cwd: ROOT, encoding: 'utf8', timeout, env });
}

describe('action.yml runs under bash 3.2', () => {
  const blocks = runBlocks(ACTION);

  test('its steps are the ones we expect, and the run step is one node command', () => {
    expect(blocks.map((b) => b.step)).toEqual(['Install the conformance suite', 'Run the conformance checks']);
    expect(blocks[1]!.script).toBe('node --import tsx scripts/action-run.ts');
  });

  test('no run block uses a bash-4-only construct', () => {
    const found = blocks.flatMap((b) => BASH4_ONLY.filter(([re]) => re.test(b.script)).map(([, what]) => `${b.step}: ${what}`));
    expect(found).toEqual([]);
    // The lint catches what broke before: the old step read the files into an array and expanded it.
    const old = 'read -r -a files <<< "$INPUT_FILES"\nNO_COLOR=1 npx vitest run --project "$INPUT_PROJECT" "${files[@]}"';
    expect(BASH4_ONLY.filter(([re]) => re.test(old)).map(([, w]) => w)).toHaveLength(2);
  });

  test('the run step, under bash --posix with set -euo pipefail and no files, runs the whole catalogue: no empty argument', () => {
    const ws = mkdtempSync(join(tmpdir(), 'action-'));
    const outputs = join(ws, 'github-output');
    writeFileSync(outputs, '');
    const r = runStep(blocks[1]!.script, {
      PATH: process.env.PATH, HOME: process.env.HOME, GITHUB_WORKSPACE: ws, GITHUB_OUTPUT: outputs, CONFORMANCE_ACTION_DRY_RUN: '1',
      INPUT_PROJECT: 'my-server', INPUT_SERVERS_FILE: '.github/conformance/servers.json', INPUT_FILES: '', INPUT_STRICT: 'true', INPUT_TIER: 'quick', INPUT_REPORTS_DIR: 'conformance-reports', INPUT_MACHINE: '',
    });
    expect(r.status, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout.trim()) as { args: string[]; env: Record<string, string> };
    expect(plan.args).toEqual(['run', '--project', 'my-server']);
    expect(plan.env).toEqual({
      CONFORMANCE_REPORTS_DIR: join(ws, 'conformance-reports'), CONFORMANCE_TIER: 'quick', NO_COLOR: '1',
      SERVERS_FILE: join(ws, '.github/conformance/servers.json'), CONFORMANCE_STRICT: '1',
    });
    expect(readFileSync(outputs, 'utf8')).toBe(`reports-dir=${join(ws, 'conformance-reports')}\nresults=${join(ws, 'conformance-reports', 'my-server', 'results.json')}\n`);
  });

  test('for real: the step runs the given files against the reference server and writes the reports where it says', () => {
    const ws = mkdtempSync(join(tmpdir(), 'action-run-'));
    const outputs = join(ws, 'github-output');
    writeFileSync(outputs, '');
    const r = runStep(blocks[1]!.script, {
      ...process.env, GITHUB_WORKSPACE: ws, GITHUB_OUTPUT: outputs, GITHUB_STEP_SUMMARY: '',
      INPUT_PROJECT: 'reference', INPUT_FILES: ' suites/setup.test.ts\n', INPUT_REPORTS_DIR: 'out', INPUT_STRICT: 'false', INPUT_TIER: '', INPUT_SERVERS_FILE: '', INPUT_MACHINE: 'action-test',
    }, 120_000);
    expect(r.status, `${r.stdout}\n${r.stderr}`).toBe(0);
    const results = JSON.parse(readFileSync(join(ws, 'out', 'reference', 'results.json'), 'utf8')) as { header: { machine: { label: string } }; checks: Array<{ id: string; outcome: string }> };
    expect(results.header.machine.label).toBe('action-test');
    expect(results.checks.map((c) => `${c.id} ${c.outcome}`)).toEqual(['setup.server-ready pass']);
    expect(existsSync(join(ws, 'out', 'junit.xml'))).toBe(true);
  }, 130_000);
});

describe('planAction', () => {
  const base = { GITHUB_WORKSPACE: '/ws', INPUT_PROJECT: 'p' };
  test('files split on any whitespace; none gives no argument at all', () => {
    expect(planAction({ ...base, INPUT_FILES: '' })).toMatchObject({ args: ['run', '--project', 'p'] });
    expect(planAction({ ...base })).toMatchObject({ args: ['run', '--project', 'p'] });
    expect(planAction({ ...base, INPUT_FILES: '  suites/api.test.ts\n\tsuites/sse.test.ts  ' })).toMatchObject({ args: ['run', '--project', 'p', 'suites/api.test.ts', 'suites/sse.test.ts'] });
  });
  test('paths resolve against the workspace unless absolute; defaults; strict only for "true"', () => {
    const p = planAction({ ...base, INPUT_REPORTS_DIR: '/abs/r', INPUT_SERVERS_FILE: 'conf/s.json', INPUT_STRICT: 'yes' });
    expect(p).toMatchObject({ reportsDir: '/abs/r', env: { SERVERS_FILE: '/ws/conf/s.json', CONFORMANCE_TIER: 'quick' } });
    expect((p as { env: Record<string, string> }).env.CONFORMANCE_STRICT).toBeUndefined();
    expect(planAction({ ...base })).toMatchObject({ reportsDir: '/ws/conformance-reports' });
    expect(planAction({ ...base, INPUT_DEADLINE_SECONDS: ' 1200 ' })).toMatchObject({ env: { CONFORMANCE_DEADLINE_S: '1200' } });
  });
  test('bad inputs are refused with the reason', () => {
    expect(planAction({ GITHUB_WORKSPACE: '/ws' })).toEqual({ error: expect.stringMatching(/"project" is required/) });
    expect(planAction({ ...base, INPUT_TIER: 'huge' })).toEqual({ error: 'input "tier" must be quick or full, not "huge"' });
  });
});
