// The "Run the conformance checks" step of action.yml, in node rather than bash: macOS runners run composite steps
// with bash 3.2, where "${files[@]}" of an empty array under `set -u` is an "unbound variable" error (and other
// bash-4 features are missing). Inputs arrive as INPUT_* environment variables (never spliced into a script).
//
// It runs the suite through its CLI (bin/llm-server-conformance.mjs), then reads what the CLI left in the reports
// folder (<reports>/<project>/results.json and summary.md), compares with a baseline when one is given
// (reporters/compare.ts), writes the final summary.md (also appended to $GITHUB_STEP_SUMMARY), the step's outputs
// ($GITHUB_OUTPUT) and, when asked on a pull request, one sticky comment. Every exit path, a bad input included,
// writes the outputs and a summary.md, so the upload step always gets a real path.
//
// CONFORMANCE_ACTION_DRY_RUN=1 prints the CLI command as JSON instead of running it (self-tests).
// Exit status: the CLI's (0 gate passed, 1 gate failed, 3 server never ready, 4 internal error); 1 when
// fail-on-regression turns regressions into a failed gate; 2 on a bad input (or a Windows runner).

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ONLY_FAMILIES } from '../cli/args.ts';
import { CAPACITY_FLAGS, type CapacityFlag } from '../lib/capacity/config.ts';
import { CHECKS_OF } from '../lib/check/family-order.ts';
import { parseApis } from '../lib/config/apis.ts';
import { readJsonFile } from '../lib/config/json-file.ts';
import { redact, registerSecret } from '../lib/config/secrets.ts';
import { setupFailureOf } from '../lib/server/setup-failure.ts';
import { type Comparison, compareResults, formatComparison } from '../reporters/compare.ts';
import { gateFailed, mdEscape, OUTCOMES, type Tally, tally, toColumns } from '../reporters/render.ts';
import { normaliseResults } from '../reporters/report-data.ts';
import { projectDir, writeTextAtomic } from '../reporters/results.ts';
import type { ResultsFile } from '../reporters/results-types.ts';
import { summaryOf } from '../reporters/summary.ts';
import { stickyComment } from './action-comment.ts';

const ROOT = resolve(fileURLToPath(import.meta.url), '..', '..');
export const CLI = join(ROOT, 'bin', 'llm-server-conformance.mjs');

/** Every output of the run step, in the order action.yml declares them (test/action.test.ts holds the two together). */
export const OUTPUT_NAMES = [
  'gate',
  'reason',
  'exit-code',
  'score',
  'counts',
  ...OUTCOMES.map((o) => `count-${o}`),
  'regressions',
  'results',
  'summary',
  'reports-dir',
  'artifact-name',
] as const;
export type Outputs = Partial<Record<(typeof OUTPUT_NAMES)[number], string>>;

/** What the step needs even when its inputs are bad: where the reports go and what the artifact is called. */
export interface Basics {
  workspace: string;
  reportsDir: string;
  /** Project id: the profile id, "env" for base-url; "" when not given. */
  project: string;
  artifactName: string;
  /** Names the sticky comment of this job/leg: the artifact name without the run attempt. */
  commentKey: string;
}

export interface ActionPlan extends Basics {
  /** Arguments after the CLI's path. */
  args: string[];
  resultsPath: string;
  summaryPath: string;
  baseline?: string;
  failOnRegression: boolean;
  comment: boolean;
  /** Seconds the CLI waits for readiness (for the message when it gives up). */
  waitSeconds?: number;
}

export type Planned = ActionPlan | (Basics & { error: string });

const input = (env: NodeJS.ProcessEnv, name: string) => (env[`INPUT_${name}`] ?? '').trim();

/** GitHub's artifact names may not hold " : < > | * ? \r \n \ /; spaces make poor file names too. */
export function sanitiseArtifactName(name: string): string {
  return (
    name
      .replace(/["':<>|*?\r\n\\/\s]+/g, '-')
      .replace(/-{2,}/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 200) || 'conformance'
  );
}

/**
 * conformance-<project>-<job>-<os>-<arch>-<hash>[-attempt<n>]: `matrix` is invisible inside a composite action, so
 * the name is made from what is visible. The hash (6 hex) covers the inputs a matrix usually varies and the runner
 * image, so two legs of one job on one OS (node 20 and 22, two tiers, two servers) differ too.
 */
export function artifactName(env: NodeJS.ProcessEnv, project: string): { name: string; key: string } {
  const given = input(env, 'ARTIFACT_NAME');
  if (given) {
    const name = sanitiseArtifactName(given);
    return { name, key: name };
  }
  const varying = [
    'NODE_VERSION',
    'TIER',
    'STRICT',
    'PROJECT',
    'BASE_URL',
    'MODEL',
    'SERVERS_FILE',
    'FILES',
    'START',
    'MACHINE',
  ].map((n) => input(env, n));
  const hash = createHash('sha256')
    .update(JSON.stringify([...varying, env.ImageOS ?? '']))
    .digest('hex')
    .slice(0, 6);
  const os = (env.RUNNER_OS || process.platform).toLowerCase();
  const arch = (env.RUNNER_ARCH || process.arch).toLowerCase();
  const key = sanitiseArtifactName(
    `conformance-${project || 'unknown'}-${env.GITHUB_JOB || 'job'}-${os}-${arch}-${hash}`,
  );
  // A re-run of the job (attempt 2, 3, …) must not collide with the artifact of the first attempt.
  const attempt = Number(env.GITHUB_RUN_ATTEMPT);
  return { name: Number.isInteger(attempt) && attempt > 1 ? `${key}-attempt${attempt}` : key, key };
}

function projectOf(env: NodeJS.ProcessEnv): string {
  return input(env, 'PROJECT') || (input(env, 'BASE_URL') ? 'env' : '');
}

export function basicsOf(env: NodeJS.ProcessEnv): Basics {
  const workspace = env.GITHUB_WORKSPACE || process.cwd();
  const dir = input(env, 'REPORTS_DIR') || 'conformance-reports';
  const project = projectOf(env);
  const { name, key } = artifactName(env, project);
  return {
    workspace,
    reportsDir: isAbsolute(dir) ? dir : join(workspace, dir),
    project,
    artifactName: name,
    commentKey: key,
  };
}

/** "true" / "false" / empty (the default); anything else is a bad input rather than a silent false. */
function flag(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean | string {
  const v = input(env, name).toLowerCase();
  if (v === '') return fallback;
  if (v === 'true' || v === 'false') return v === 'true';
  return `input "${name.toLowerCase().replace(/_/g, '-')}" must be true or false, not "${input(env, name)}"`;
}

function positive(env: NodeJS.ProcessEnv, name: string): number | undefined | string {
  const v = input(env, name);
  if (!v) return undefined;
  const n = Number(v);
  if (!/^\d+(\.\d+)?$/.test(v) || !(n > 0))
    return `input "${name.toLowerCase().replace(/_/g, '-')}" must be a positive number of seconds, not "${v}"`;
  return n;
}

/**
 * The files input as families for --only: family names, or suites/<family>.test.ts paths (api-last's checks belong
 * to the api family; setup alone is a reachability check).
 */
export function familiesOf(files: string): string[] | { error: string } {
  const out: string[] = [];
  for (const token of files.split(/[\s,]+/).filter(Boolean)) {
    const m = /^(?:\.\/)?suites\/([a-z-]+)\.test\.ts$/.exec(token);
    const named = m ? m[1]! : token;
    const family = CHECKS_OF[named] ?? named;
    if (!ONLY_FAMILIES.includes(family))
      return {
        error: `input "files": "${token}" is neither a family nor suites/<family>.test.ts (families: ${ONLY_FAMILIES.join(', ')})`,
      };
    if (!out.includes(family)) out.push(family);
  }
  return out;
}

/**
 * The capacity inputs as CLI flags: "capacity: true" and vllm bench serve's names (max-concurrency, request-rate,
 * num-prompts, burstiness, input-len, output-len), each checked as the CLI checks it; a string says what is wrong.
 */
function capacityArgs(env: NodeJS.ProcessEnv, families: string[]): string[] | string {
  const on = flag(env, 'CAPACITY', false);
  if (typeof on === 'string') return on;
  const args = on ? ['--capacity'] : [];
  for (const f of Object.keys(CAPACITY_FLAGS) as CapacityFlag[]) {
    const v = input(env, f.toUpperCase().replace(/-/g, '_'));
    if (!v) continue;
    try {
      CAPACITY_FLAGS[f].parse(v);
    } catch (e) {
      return `input "${f}": ${(e as Error).message.replace(/^--[a-z-]+:?\s*/, '')}`;
    }
    if (!on && !families.includes('capacity'))
      return `input "${f}" shapes a capacity run: set "capacity: true" (or run the capacity family with "files")`;
    args.push(`--${f}`, v);
  }
  return args;
}

/** What the step runs, from its inputs: pure (the environment in, a plan or the reason out). */
export function planAction(env: NodeJS.ProcessEnv): Planned {
  const basics = basicsOf(env);
  const bad = (error: string): Planned => ({ ...basics, error });
  const abs = (p: string) => (isAbsolute(p) ? p : join(basics.workspace, p));
  const args: string[] = [];

  let baseUrl = input(env, 'BASE_URL');
  let model = input(env, 'MODEL');
  let keyEnv = input(env, 'API_KEY_ENV');
  const project = input(env, 'PROJECT');
  const serversFile = input(env, 'SERVERS_FILE');
  const start = input(env, 'START');
  const startCwd = input(env, 'START_CWD');
  if (baseUrl && project && project !== 'env')
    return bad(
      `input "base-url" runs the project "env"; leave "project" empty, or use "project" with "servers-file" instead of "base-url" (project is "${project}")`,
    );
  if (baseUrl && serversFile) return bad('give either "base-url" or "servers-file", not both');
  if (!baseUrl && !project)
    return bad(
      'input "project" (a profile id of your servers file) or "base-url" (an OpenAI-compatible server) is required',
    );
  if (!baseUrl && project === 'env') {
    // The older form: project "env" built from the OPENAI_* variables of the step.
    baseUrl = (env.OPENAI_BASE_URL ?? '').trim();
    if (!baseUrl) return bad('project "env" needs input "base-url" (or OPENAI_BASE_URL in the step\'s env)');
    model ||= (env.OPENAI_MODEL ?? '').trim();
    if (!keyEnv && env.OPENAI_API_KEY) keyEnv = 'OPENAI_API_KEY';
  }
  if (baseUrl) {
    if (!/^https?:\/\/[^\s]+$/i.test(baseUrl)) return bad('input "base-url" must be an http:// or https:// URL');
    args.push('--base-url', baseUrl);
    if (model) args.push('--model', model);
    const apis = input(env, 'APIS');
    if (apis)
      try {
        args.push('--apis', parseApis(apis, 'input "apis"').join(','));
      } catch (e) {
        return bad((e as Error).message);
      }
  } else {
    if (input(env, 'APIS'))
      return bad('input "apis" goes with "base-url" (a profile of your servers file names its own)');
    if (model) return bad('input "model" goes with "base-url" (a profile of your servers file names its own model)');
    if (!/^[A-Za-z0-9._-]+$/.test(project))
      return bad(`input "project" must be a profile id (letters, digits, . _ -), not "${project}"`);
    args.push('--servers', serversFile ? abs(serversFile) : join(ROOT, 'servers.json'), '--server', project);
  }
  if (keyEnv) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyEnv))
      return bad(
        'input "api-key-env" must be the NAME of an environment variable (letters, digits, _), not a key: the value given is not repeated here',
      );
    if (!env[keyEnv])
      return bad(
        `input "api-key-env" names ${keyEnv}, which is not set: give it to the step with env: (secrets are empty on pull requests from forks)`,
      );
    args.push('--api-key-env', keyEnv);
  }
  if (start) {
    if (!baseUrl)
      return bad('input "start" goes with "base-url" (a profile of your servers file gives its own start command)');
    // The action's steps run in the action's folder; a server's start command belongs to the user's checkout.
    args.push('--start', start, '--cwd', startCwd ? abs(startCwd) : basics.workspace);
  } else if (startCwd) return bad('input "start-cwd" needs "start"');

  const wait = positive(env, 'WAIT_SECONDS');
  if (typeof wait === 'string') return bad(wait);
  if (wait !== undefined) args.push('--wait', String(wait));
  const tier = input(env, 'TIER') || 'quick';
  if (tier !== 'quick' && tier !== 'full') return bad(`input "tier" must be quick or full, not "${tier}"`);
  args.push('--tier', tier);
  const strict = flag(env, 'STRICT', false);
  if (typeof strict === 'string') return bad(strict);
  if (strict) args.push('--strict');
  const families = familiesOf(input(env, 'FILES'));
  if ('error' in families) return bad(families.error);
  if (families.length) args.push('--only', families.join(','));
  const deadline = positive(env, 'DEADLINE_SECONDS');
  if (typeof deadline === 'string') return bad(deadline);
  if (deadline !== undefined) args.push('--deadline', String(deadline));
  args.push('--reports', basics.reportsDir);
  const machine = input(env, 'MACHINE');
  if (machine) args.push('--machine', machine);

  const capacity = capacityArgs(env, families);
  if (typeof capacity === 'string') return bad(capacity);
  args.push(...capacity);

  const comment = flag(env, 'COMMENT', false);
  if (typeof comment === 'string') return bad(comment);
  const failOnRegression = flag(env, 'FAIL_ON_REGRESSION', false);
  if (typeof failOnRegression === 'string') return bad(failOnRegression);
  const baseline = input(env, 'BASELINE');
  if (failOnRegression && !baseline)
    return bad('input "fail-on-regression" needs "baseline" (a results.json to compare with)');

  const dir = projectDir(basics.reportsDir, basics.project);
  return {
    ...basics,
    args,
    resultsPath: join(dir, 'results.json'),
    summaryPath: join(dir, 'summary.md'),
    ...(baseline ? { baseline: abs(baseline) } : {}),
    failOnRegression,
    comment,
    ...(wait !== undefined ? { waitSeconds: wait } : {}),
  };
}

// ------------------------------------------------------------------------------------------------------------
// Running the suite

export interface SuiteCommand {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
}

/** Runs the suite; resolves to its exit code (null when killed by a signal). Injectable for the self-tests. */
export type RunSuite = (cmd: SuiteCommand) => Promise<number | null>;

export function suiteCommand(plan: ActionPlan, env: NodeJS.ProcessEnv): SuiteCommand {
  const childEnv: NodeJS.ProcessEnv = { ...env, NO_COLOR: '1' };
  // The inputs travel as flags. The GitHub token (INPUT_GITHUB_TOKEN) must not reach the server under test, and the
  // step summary is this step's to write (once, with the gate and the comparison).
  for (const k of Object.keys(childEnv)) if (k.startsWith('INPUT_')) delete childEnv[k];
  delete childEnv.GITHUB_STEP_SUMMARY;
  return { command: process.execPath, args: [CLI, ...plan.args], cwd: ROOT, env: childEnv };
}

const spawnSuite: RunSuite = (cmd) =>
  new Promise((done) => {
    if (!existsSync(cmd.args[0]!)) {
      process.stderr.write(`conformance action: the suite's CLI is missing (${cmd.args[0]})\n`);
      return done(4);
    }
    const child = spawn(cmd.command, cmd.args, { cwd: cmd.cwd, env: cmd.env, stdio: 'inherit' });
    child.on('error', (e) => {
      process.stderr.write(`conformance action: could not run the suite's CLI: ${e.message}\n`);
      done(4);
    });
    child.on('exit', (code) => done(code));
  });

// ------------------------------------------------------------------------------------------------------------
// After the run

export type Gate = 'passed' | 'failed' | 'error';

function readResults(path: string): { file?: ResultsFile; note?: string } {
  if (!existsSync(path)) return { note: `no results file at ${path}` };
  try {
    return { file: normaliseResults(JSON.parse(readFileSync(path, 'utf8'))) };
  } catch (e) {
    return { note: `the results file ${path} could not be read: ${(e as Error).message}` };
  }
}

/** A baseline results file, or why it cannot serve as one (checked before the suite runs: a bad input). */
export function readBaseline(path: string): { raw: unknown } | { error: string } {
  let raw: unknown;
  try {
    raw = readJsonFile(path);
  } catch (e) {
    return { error: `input "baseline": ${(e as Error).message.split('\n')[0]}` };
  }
  const checks = (raw as { checks?: unknown } | null)?.checks;
  if (!checks || typeof checks !== 'object')
    return { error: `input "baseline": ${path} is not a results file (no "checks")` };
  return { raw };
}

/** The gate and its reason from the CLI's exit code (the contract), before any baseline. */
export function gateOf(
  code: number | null,
  results: ResultsFile | undefined,
  waitSeconds?: number,
): { gate: Gate; reason: string; exit: number } {
  if (code === 0) {
    if (!results) return { gate: 'error', reason: 'the suite exited 0 but left no results file', exit: 4 };
    return { gate: 'passed', reason: 'no check failed or errored', exit: 0 };
  }
  if (code === 1) {
    if (!results || !gateFailed(toColumns([results])))
      return { gate: 'failed', reason: 'the suite reported a failed gate', exit: 1 };
    const c = tallyOf(results).counts;
    return {
      gate: 'failed',
      reason: `${c.fail} fail, ${c.error} error${results.errors?.length ? `, ${results.errors.length} run error(s)` : ''}`,
      exit: 1,
    };
  }
  // Stopped before its checks (results.json says what stopped it): a gate of its own reason, never counts.
  const stopped = results ? setupFailureOf(results.header.server) : undefined;
  if (code === 2)
    return {
      gate: 'error',
      reason: stopped
        ? `configuration error: ${stopped.summary} (exit 2)`
        : 'the suite refused its arguments (usage error, exit 2)',
      exit: 2,
    };
  if (code === 3)
    return {
      gate: 'error',
      reason: stopped
        ? `the server never became ready: ${stopped.summary} (exit 3)`
        : `the server never became ready${waitSeconds ? ` within ${waitSeconds} s` : ''} (exit 3)`,
      exit: 3,
    };
  if (code === null) return { gate: 'error', reason: 'the suite was killed by a signal', exit: 4 };
  // SIGINT or SIGTERM (a cancelled job): the suite wrote every report from the checks that finished.
  if (code === 130 || code === 143)
    return {
      gate: 'error',
      reason: `the run was interrupted (exit ${code}): the reports hold the checks that finished`,
      exit: code,
    };
  return { gate: 'error', reason: `internal error of the suite (exit ${code})`, exit: code };
}

/** Counts as the badge makes them: the project's column (repeated checks merged), then render.ts's tally. */
export function tallyOf(results: ResultsFile): Tally {
  const col = toColumns([results])[0];
  return tally(col ? col.checks : []);
}

function countOutputs(t: Tally | undefined): Outputs {
  const out: Record<string, string> = {};
  for (const o of OUTCOMES) out[`count-${o}`] = t ? String(t.counts[o]) : '';
  out.counts = t ? JSON.stringify(t.counts) : '';
  // The conformance badge's figure: passed (pass + known-passing) over graded (neither skip nor inconclusive).
  out.score = t ? `${t.passed}/${t.graded}` : '';
  return out as Outputs;
}

const MAX_LISTED = 30;

/** The regressions as lines, from formatComparison's own wording (one formatter for the terminal and here). */
function regressionLines(c: Comparison): string[] {
  return formatComparison(c, { all: true })
    .split('\n')
    .filter((l) => l.startsWith('  REGRESSION '))
    .map((l) => l.slice('  REGRESSION '.length).trim());
}

function baselineMarkdown(c: Comparison, path: string, failOnRegression: boolean): string {
  const lines = regressionLines(c);
  const out = [
    `### Compared with the baseline`,
    '',
    `Baseline \`${mdEscape(path)}\` (${mdEscape(`${c.old.project} @ ${c.old.machine}, ${c.old.date || 'date n/a'}`)}).`,
  ];
  out.push(
    '',
    c.regressions
      ? `**${c.regressions} regression${c.regressions === 1 ? '' : 's'}**${failOnRegression ? ' (fail-on-regression: the gate fails)' : ' (reported, not gating: fail-on-regression is false)'}`
      : 'No regressions.',
  );
  if (lines.length) {
    out.push('');
    for (const l of lines.slice(0, MAX_LISTED)) out.push(`- ${mdEscape(l)}`);
    if (lines.length > MAX_LISTED) out.push(`- … and ${lines.length - MAX_LISTED} more (see the full comparison)`);
  }
  out.push(
    '',
    '<details><summary>Full comparison</summary>',
    '',
    '```text',
    formatComparison(c, { old: path }).replace(/```/g, "'''"),
    '```',
    '',
    '</details>',
  );
  return out.join('\n');
}

/** A path as the user wrote it: relative to the workspace when inside it. */
function shown(workspace: string, path: string): string {
  const rel = relative(workspace, path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

const GATE_MD: Record<Gate, string> = { passed: '✅ passed', failed: '❌ **failed**', error: '💥 **error**' };

function gateMarkdown(gate: Gate, reason: string, exit: number, artifact: string): string {
  return `### Gate: ${GATE_MD[gate]}\n\n${mdEscape(reason)} · exit code ${exit} · artifact \`${mdEscape(artifact)}\``;
}

function runLink(env: NodeJS.ProcessEnv): string | undefined {
  if (!env.GITHUB_REPOSITORY || !env.GITHUB_RUN_ID) return undefined;
  return `${(env.GITHUB_SERVER_URL || 'https://github.com').replace(/\/+$/, '')}/${env.GITHUB_REPOSITORY}/actions/runs/${env.GITHUB_RUN_ID}`;
}

export function commentBody(o: {
  project: string;
  gate: Gate;
  reason: string;
  tally?: Tally;
  comparison?: Comparison;
  failOnRegression: boolean;
  artifact: string;
  link?: string;
}): string {
  const out = [`### LLM server conformance: ${mdEscape(o.project)} — gate ${GATE_MD[o.gate]}`, '', mdEscape(o.reason)];
  if (o.tally) {
    const c = o.tally.counts;
    out.push(
      '',
      `**${o.tally.passed}/${o.tally.graded} passed** · ${c.fail} fail · ${c.error} error · ${c.warn} warn · ${c.inconclusive} inconclusive · ${c.known} known · ${c['known-passing']} known-passing · ${c.skip} skip`,
    );
  }
  if (o.comparison) {
    const lines = regressionLines(o.comparison);
    out.push(
      '',
      o.comparison.regressions
        ? `**${o.comparison.regressions} regression${o.comparison.regressions === 1 ? '' : 's'}** against the baseline${o.failOnRegression ? ' (fail-on-regression)' : ''}`
        : 'No regressions against the baseline.',
    );
    for (const l of lines.slice(0, 10)) out.push(`- ${mdEscape(l)}`);
    if (lines.length > 10) out.push(`- … and ${lines.length - 10} more (job summary)`);
  }
  out.push('', `${o.link ? `[The run](${o.link})` : 'The run'} · artifact \`${mdEscape(o.artifact)}\``);
  return out.join('\n');
}

// ------------------------------------------------------------------------------------------------------------
// Writing

/** Output lines for $GITHUB_OUTPUT: one line each (newlines would end a value early). */
export function outputLines(outputs: Outputs): string {
  return OUTPUT_NAMES.map((n) => `${n}=${redact((outputs[n] ?? '').replace(/[\r\n]+/g, ' '))}\n`).join('');
}

function writeAll(env: NodeJS.ProcessEnv, summaryPath: string, markdown: string, outputs: Outputs): void {
  const text = redact(markdown);
  writeTextAtomic(summaryPath, text);
  if (env.GITHUB_STEP_SUMMARY) appendFileSync(env.GITHUB_STEP_SUMMARY, `${text}\n`);
  if (env.GITHUB_OUTPUT) appendFileSync(env.GITHUB_OUTPUT, outputLines({ ...outputs, summary: summaryPath }));
}

/** A reports folder that exists: the one asked for, else one under the runner's temp folder. */
function usableDir(dir: string, env: NodeJS.ProcessEnv): string {
  try {
    mkdirSync(dir, { recursive: true });
    return dir;
  } catch {
    const fallback = join(env.RUNNER_TEMP || tmpdir(), 'conformance-reports');
    mkdirSync(fallback, { recursive: true });
    return fallback;
  }
}

/** The step refuses (bad input, Windows, an internal error): outputs and a summary naming the problem, then `exit`. */
function refuse(env: NodeJS.ProcessEnv, b: Basics, problem: string, exit: number, log: (s: string) => void): number {
  const reportsDir = usableDir(b.reportsDir, env);
  const what = exit === 2 ? 'Bad input' : 'Error';
  log(`::error::conformance action: ${redact(problem)}`);
  const md = `## LLM server conformance: not run\n\n**${what}:** ${mdEscape(problem)}\n\n${gateMarkdown('error', problem, exit, b.artifactName)}\n`;
  writeAll(env, join(reportsDir, 'summary.md'), md, {
    gate: 'error',
    reason: problem,
    'exit-code': String(exit),
    ...countOutputs(undefined),
    'reports-dir': reportsDir,
    'artifact-name': b.artifactName,
  });
  return exit;
}

export interface MainDeps {
  runSuite?: RunSuite;
  /** Log lines (GitHub reads ::warning:: / ::error:: from stdout). */
  log?: (line: string) => void;
}

export async function main(env: NodeJS.ProcessEnv = process.env, deps: MainDeps = {}): Promise<number> {
  const write = deps.log ?? ((s: string) => process.stdout.write(`${s}\n`));
  // One line each: a newline from an input must not start a workflow command (::set-env, ::add-mask…) of its own.
  const log = (s: string) => write(s.replace(/[\r\n]+/g, ' '));
  const token = input(env, 'GITHUB_TOKEN');
  registerSecret(token);
  let basics: Basics | undefined;
  try {
    basics = basicsOf(env);
    if (env.RUNNER_OS === 'Windows' || process.platform === 'win32') {
      return refuse(
        env,
        basics,
        'Windows runners are not supported (the suite is tested on Linux and macOS): use ubuntu-* or macos-*',
        2,
        log,
      );
    }
    const plan = planAction(env);
    if ('error' in plan) return refuse(env, plan, plan.error, 2, log);
    const baseline = plan.baseline ? readBaseline(plan.baseline) : undefined;
    if (baseline && 'error' in baseline) return refuse(env, plan, baseline.error, 2, log);
    return await runAndReport(env, plan, baseline?.raw, deps.runSuite ?? spawnSuite, log, token);
  } catch (e) {
    const b = basics ?? {
      workspace: process.cwd(),
      reportsDir: join(env.RUNNER_TEMP || tmpdir(), 'conformance-reports'),
      project: '',
      artifactName: 'conformance',
      commentKey: 'conformance',
    };
    return refuse(env, b, `internal error of the action: ${(e as Error).message}`, 4, log);
  }
}

async function runAndReport(
  env: NodeJS.ProcessEnv,
  plan: ActionPlan,
  baseline: unknown,
  runSuite: RunSuite,
  log: (s: string) => void,
  token: string,
): Promise<number> {
  mkdirSync(plan.reportsDir, { recursive: true });
  // A results file or summary left by an earlier run in the same folder must not pass for this run's.
  rmSync(plan.resultsPath, { force: true });
  rmSync(plan.summaryPath, { force: true });
  const cmd = suiteCommand(plan, env);
  if (env.CONFORMANCE_ACTION_DRY_RUN === '1') {
    log(JSON.stringify({ command: [cmd.command, ...cmd.args], cwd: cmd.cwd }));
    if (env.GITHUB_OUTPUT)
      appendFileSync(
        env.GITHUB_OUTPUT,
        outputLines({
          results: plan.resultsPath,
          summary: plan.summaryPath,
          'reports-dir': plan.reportsDir,
          'artifact-name': plan.artifactName,
        }),
      );
    return 0;
  }
  const code = await runSuite(cmd);
  const { file: results, note } = readResults(plan.resultsPath);
  let { gate, reason, exit } = gateOf(code, results, plan.waitSeconds);
  if (note && gate !== 'passed') reason += ` (${note})`;
  // A run stopped before its checks counted nothing against the server: no counts, no score.
  const t = results && !setupFailureOf(results.header.server) ? tallyOf(results) : undefined;

  let comparison: Comparison | undefined;
  if (baseline !== undefined && results) {
    comparison = compareResults(baseline, results);
    if (comparison.regressions && plan.failOnRegression) {
      const why = `${comparison.regressions} regression${comparison.regressions === 1 ? '' : 's'} against the baseline (fail-on-regression)`;
      if (gate === 'passed') ({ gate, reason, exit } = { gate: 'failed', reason: why, exit: 1 });
      else if (gate === 'failed') reason += `; ${why}`;
    }
  }

  // The suite's own summary (the CLI writes it), else one rendered from the results, then the gate and the comparison.
  const suiteMd = existsSync(plan.summaryPath)
    ? readFileSync(plan.summaryPath, 'utf8').trimEnd()
    : results
      ? summaryOf(toColumns([results])).trimEnd()
      : `## LLM server conformance: ${mdEscape(plan.project)}\n\nNo results: ${mdEscape(note ?? 'none written')}.`;
  const parts = [suiteMd, gateMarkdown(gate, reason, exit, plan.artifactName)];
  if (comparison)
    parts.push(baselineMarkdown(comparison, shown(plan.workspace, plan.baseline!), plan.failOnRegression));
  else if (plan.baseline) parts.push(`### Compared with the baseline\n\nNot compared: this run left no results.`);
  writeAll(env, plan.summaryPath, `${parts.join('\n\n')}\n`, {
    gate,
    reason,
    'exit-code': String(exit),
    ...countOutputs(t),
    regressions: comparison ? String(comparison.regressions) : '',
    results: results ? plan.resultsPath : '',
    'reports-dir': plan.reportsDir,
    'artifact-name': plan.artifactName,
  });
  log(
    `conformance action: gate ${gate} (${redact(reason)}), exit code ${exit}${t ? `, score ${t.passed}/${t.graded}` : ''}${comparison ? `, ${comparison.regressions} regression(s) against the baseline` : ''}`,
  );

  if (plan.comment) {
    const body = commentBody({
      project: plan.project,
      gate,
      reason,
      tally: t,
      comparison,
      failOnRegression: plan.failOnRegression,
      artifact: plan.artifactName,
      link: runLink(env),
    });
    log((await stickyComment(env, token, plan.commentKey, redact(body, [token]))).line);
  }
  return exit;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exit(await main());
