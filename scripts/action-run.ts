// The "Run the conformance checks" step of action.yml, in node rather than bash: macOS runners run composite steps
// with bash 3.2, where "${files[@]}" of an empty array under `set -u` is an "unbound variable" error (and other
// bash-4 features are missing). Inputs arrive as environment variables (never spliced into a script).
//
//   INPUT_PROJECT, INPUT_SERVERS_FILE, INPUT_FILES, INPUT_STRICT, INPUT_TIER, INPUT_REPORTS_DIR, INPUT_MACHINE,
//   INPUT_DEADLINE_SECONDS (→ CONFORMANCE_DEADLINE_S, the whole run's bound, where the suite reads it)
//   GITHUB_WORKSPACE (relative paths resolve against it), GITHUB_OUTPUT (reports-dir= and results= are appended)
//   CONFORMANCE_ACTION_DRY_RUN=1 prints the command and environment as JSON instead of running them (self-tests).
//
// Exit status: Vitest's (non-zero on any fail or error), 2 on a bad input.
import { appendFileSync, mkdirSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface ActionPlan {
  /** Arguments after `vitest`. */
  args: string[];
  /** Environment additions for the run. */
  env: Record<string, string>;
  /** Lines for $GITHUB_OUTPUT. */
  outputs: string[];
  reportsDir: string;
}

/** What the step runs, from its inputs: pure, so the self-tests check it without running anything. */
export function planAction(env: NodeJS.ProcessEnv): ActionPlan | { error: string } {
  const workspace = env.GITHUB_WORKSPACE || process.cwd();
  const abs = (p: string) => (isAbsolute(p) ? p : join(workspace, p));
  const project = (env.INPUT_PROJECT ?? '').trim();
  if (!project) return { error: 'input "project" is required (a profile id of your servers file, or "env")' };
  const tier = (env.INPUT_TIER ?? '').trim() || 'quick';
  if (tier !== 'quick' && tier !== 'full') return { error: `input "tier" must be quick or full, not "${tier}"` };
  const reportsDir = abs((env.INPUT_REPORTS_DIR ?? '').trim() || 'conformance-reports');
  const out: Record<string, string> = { CONFORMANCE_REPORTS_DIR: reportsDir, CONFORMANCE_TIER: tier, NO_COLOR: '1' };
  const serversFile = (env.INPUT_SERVERS_FILE ?? '').trim();
  if (serversFile) out.SERVERS_FILE = abs(serversFile);
  if ((env.INPUT_STRICT ?? '').trim() === 'true') out.CONFORMANCE_STRICT = '1';
  const machine = (env.INPUT_MACHINE ?? '').trim();
  if (machine) out.CONFORMANCE_MACHINE = machine;
  const deadline = (env.INPUT_DEADLINE_SECONDS ?? '').trim();
  if (deadline) out.CONFORMANCE_DEADLINE_S = deadline;
  // Space-separated test files or families; none given runs the whole catalogue (no empty argument, ever).
  const files = (env.INPUT_FILES ?? '').split(/\s+/).filter(Boolean);
  return {
    args: ['run', '--project', project, ...files],
    env: out,
    outputs: [`reports-dir=${reportsDir}`, `results=${join(reportsDir, project, 'results.json')}`],
    reportsDir,
  };
}

export function main(env: NodeJS.ProcessEnv = process.env): number {
  const plan = planAction(env);
  if ('error' in plan) {
    process.stderr.write(`conformance action: ${plan.error}\n`);
    return 2;
  }
  mkdirSync(plan.reportsDir, { recursive: true });
  if (env.GITHUB_OUTPUT) appendFileSync(env.GITHUB_OUTPUT, `${plan.outputs.join('\n')}\n`);
  if (env.CONFORMANCE_ACTION_DRY_RUN === '1') {
    process.stdout.write(`${JSON.stringify({ args: plan.args, env: plan.env })}\n`);
    return 0;
  }
  const root = resolve(fileURLToPath(import.meta.url), '..', '..');
  const r = spawnSync(process.execPath, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), ...plan.args], { cwd: root, env: { ...env, ...plan.env }, stdio: 'inherit' });
  if (r.error) {
    process.stderr.write(`conformance action: could not run vitest: ${r.error.message}\n`);
    return 1;
  }
  return r.status ?? 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) process.exit(main());
