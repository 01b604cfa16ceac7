// runConformance(): one run of the catalogue against one server, driven through Vitest (the engine the checks are
// written for), with the reports in the caller's folder. The CLI and the package's programmatic API both call it.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startVitest } from 'vitest/node';
import { CAPACITY_FLAGS, type CapacityFlag } from '../lib/capacity/config.ts';
import { loadDataset } from '../lib/capacity/dataset.ts';
import { CHECKS_OF, FAMILY_ORDER } from '../lib/check/family-order.ts';
import { readJsonFile } from '../lib/config/json-file.ts';
import { DEFAULT_SERVERS_FILE, envProfile, loadServers, ProfileError, ROOT } from '../lib/config/profile.ts';
import { isJsonObject } from '../lib/json.ts';
import type { ApiFlavour, Outcome } from '../lib/model/types.ts';
import { setupFailureOf } from '../lib/server/setup-failure.ts';
import { compareResults, formatComparison } from '../reporters/compare.ts';
import { CONFORMANCE_REPORTERS } from '../reporters/list.ts';
import { gateFailed, tally, toColumns } from '../reporters/render.ts';
import { projectDir } from '../reporters/results.ts';
import type { ResultsFile } from '../reporters/results-types.ts';
import { CAPACITY_OPTION, EXIT, UsageError } from './args.ts';

export interface RunOptions {
  /** An OpenAI-compatible server's root (project id "env"); may hold {port} when `start` is given. */
  baseUrl?: string;
  model?: string;
  /** NAME of the environment variable holding the API key (default OPENAI_API_KEY). */
  apiKeyEnv?: string;
  /** APIs the server offers (with baseUrl): named ones are declared, the others probed at setup (default openai-chat). */
  apis?: ApiFlavour[];
  /** Shell command that starts the server (with baseUrl). */
  start?: string;
  /** Folder `start` runs in (default: the current folder). */
  cwd?: string;
  /** A profile id (instead of baseUrl), in serversFile or else in the bundled servers.json. */
  serversFile?: string;
  server?: string;
  /** Bound on the wait for readiness (default: the profile's startTimeoutMs). */
  waitSeconds?: number;
  tier?: 'quick' | 'full';
  strict?: boolean;
  /** Families to run, or to leave out (setup always runs). */
  only?: string[];
  skip?: string[];
  /** Bound on the checks, counted from readiness. */
  deadlineSeconds?: number;
  /** Default ./conformance-reports in the current folder. */
  reportsDir?: string;
  /** A results.json to compare with; failOnRegression makes a regression fail the gate. */
  baseline?: string;
  failOnRegression?: boolean;
  machine?: string;
  /** Run the capacity family (docs/capacity.md), with an SLO for goodput and a dataset of prompts. */
  capacity?: boolean;
  /** `ttft-p99=500,itl-p99=50` (ms). */
  slo?: string;
  dataset?: string;
  /** Capacity, as `vllm bench serve` names them (docs/capacity.md): the sweep's bound or its levels, and the most a
   *  rate run keeps in flight (--max-concurrency); rate runs at these req/s, 'inf' all at once (--request-rate);
   *  requests per rate run and at least per sweep level (--num-prompts); gamma shape of the gaps, 1 Poisson
   *  (--burstiness); synthetic prompt and answer lengths (--input-len, --output-len). */
  maxConcurrency?: number | number[];
  requestRate?: number | 'inf' | Array<number | 'inf'>;
  numPrompts?: number;
  burstiness?: number | 'inf';
  inputLen?: number;
  outputLen?: number;
  /** Progress on the console: a live line on a TTY, plain lines otherwise, or none. */
  progress?: 'tty' | 'lines' | 'none';
  /** Every check on the console (as it ends and in the final table), not only what did not pass. */
  verbose?: boolean;
}

/** never-ready and config-error: the run stopped before its checks (nothing is counted against the server). */
export type Gate = 'passed' | 'failed' | 'never-ready' | 'config-error' | 'error' | 'interrupted';

export interface RunResult {
  exitCode: (typeof EXIT)[keyof typeof EXIT];
  gate: Gate;
  /** One line saying why, e.g. "2 fail, 0 error" or the readiness failure. */
  reason: string;
  project: string;
  reportsDir: string;
  resultsPath: string;
  /** The results file as written (absent when the run wrote none). */
  results?: ResultsFile;
  counts: Record<Outcome, number>;
  /** passed / graded, as the badge shows it (graded leaves skip and inconclusive out). */
  score: { passed: number; graded: number };
  /** Regressions against the baseline, when one was given. */
  regressions?: number;
}

/** Families every --only run has: setup, and health (the sentinel's final word: a slowdown any chosen check caused). */
const ALWAYS_ONLY = ['setup', 'health'];

/** The Vitest file filters for the families asked for (setup always, health in every --only; api-last goes with api). */
export function familyFilters(o: Pick<RunOptions, 'only' | 'skip'>): string[] {
  if (!o.only && !o.skip) return [];
  const chosen = FAMILY_ORDER.filter((f) => {
    if (f === 'setup' || (o.only && ALWAYS_ONLY.includes(f))) return true;
    const family = CHECKS_OF[f] ?? f;
    return o.only ? o.only.includes(family) : !o.skip!.includes(family);
  });
  return chosen.map((f) => `suites/${f}.test.ts`);
}

/** The environment a run needs, from the options: what vitest.config.ts and the setup read. */
export function runEnvironment(o: RunOptions, cwd: string): { env: Record<string, string>; project: string } {
  const env: Record<string, string> = { CONFORMANCE_REPORTS_DIR: resolve(cwd, o.reportsDir ?? 'conformance-reports') };
  let project: string;
  if (o.baseUrl) {
    project = 'env';
    env.OPENAI_BASE_URL = o.baseUrl;
    if (o.model) env.OPENAI_MODEL = o.model;
    if (o.apiKeyEnv) env.CONFORMANCE_API_KEY_ENV = o.apiKeyEnv;
    if (o.apis) env.CONFORMANCE_APIS = o.apis.join(',');
    if (o.start) {
      env.CONFORMANCE_START = o.start;
      env.CONFORMANCE_START_CWD = resolve(cwd, o.cwd ?? '.');
    }
  } else {
    if (!o.server)
      throw new UsageError('say which server: baseUrl, or server (with serversFile, or a bundled profile)');
    project = o.server;
    env.SERVERS_FILE = o.serversFile ? resolve(cwd, o.serversFile) : DEFAULT_SERVERS_FILE;
  }
  env.CONFORMANCE_PROJECTS = project;
  if (o.waitSeconds !== undefined) env.CONFORMANCE_WAIT_S = String(o.waitSeconds);
  if (o.tier) env.CONFORMANCE_TIER = o.tier;
  if (o.strict) env.CONFORMANCE_STRICT = '1';
  if (o.deadlineSeconds !== undefined) env.CONFORMANCE_DEADLINE_S = String(o.deadlineSeconds);
  if (o.machine) env.CONFORMANCE_MACHINE = o.machine;
  if (o.capacity) env.CONFORMANCE_CAPACITY = '1';
  if (o.slo) env.CONFORMANCE_SLO = o.slo;
  if (o.dataset) env.CONFORMANCE_DATASET = resolve(cwd, o.dataset);
  if (o.verbose) env.CONFORMANCE_VERBOSE = '1';
  Object.assign(env, capacityEnvironment(o));
  return { env, project };
}

/** The capacity options as the checks read them (CONFORMANCE_* of CAPACITY_FLAGS), each checked: a bad one is a
 *  UsageError naming it. */
export function capacityEnvironment(o: RunOptions): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [flag, option] of Object.entries(CAPACITY_OPTION) as Array<[CapacityFlag, keyof RunOptions]>) {
    const v = o[option];
    if (v === undefined) continue;
    const text = [v].flat().map(String).join(',');
    try {
      CAPACITY_FLAGS[flag].parse(text);
    } catch (e) {
      throw new UsageError(`${option}: ${(e as Error).message}`);
    }
    env[CAPACITY_FLAGS[flag].env] = text;
  }
  return env;
}

/** Fail before Vitest starts when the profile cannot be loaded or found: a usage error, not a wall of errors. */
function checkProfile(project: string, env: Record<string, string>): void {
  try {
    if (project === 'env') {
      envProfile({ ...process.env, ...env });
      return;
    }
    const ids = loadServers(env.SERVERS_FILE).map((p) => p.id);
    const file = env.SERVERS_FILE === DEFAULT_SERVERS_FILE ? 'the bundled servers.json' : env.SERVERS_FILE;
    if (!ids.includes(project))
      throw new UsageError(`no server "${project}" in ${file}; its servers: ${ids.join(', ')}`);
  } catch (e) {
    if (e instanceof ProfileError) throw new UsageError(e.message);
    throw e;
  }
}

/** A --baseline file: JSON (a syntax error names line and column) holding a results file's checks. */
function readBaseline(path: string): unknown {
  let data: unknown;
  try {
    data = readJsonFile(path);
  } catch (e) {
    throw new UsageError(`--baseline: ${(e as Error).message}`);
  }
  if (!isJsonObject(data) || !Array.isArray(data.checks))
    throw new UsageError(
      `--baseline: ${path} is not a results file (a results.json has "header" and "checks"; conformance-reports/<project>/results.json)`,
    );
  return data;
}

function readResults(path: string): ResultsFile | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as ResultsFile;
  } catch {
    return undefined;
  }
}

/** Gate, exit code and counts from a results file (and the comparison with a baseline). */
export function judgeRun(
  results: ResultsFile | undefined,
  o: { regressions?: number; failOnRegression?: boolean },
): Pick<RunResult, 'exitCode' | 'gate' | 'reason' | 'counts' | 'score'> {
  const t = tally(results?.checks ?? []);
  const base = { counts: t.counts, score: { passed: t.passed, graded: t.graded } };
  if (!results) return { ...base, exitCode: EXIT.internal, gate: 'error', reason: 'the run wrote no results file' };
  // Stopped before its checks: its own exit code, and no count charged to the server (setup.server-ready says why).
  const stopped = setupFailureOf(results.header.server);
  if (stopped) {
    const none = tally([]);
    return {
      counts: none.counts,
      score: { passed: 0, graded: 0 },
      exitCode: { 'never-ready': EXIT.neverReady, config: EXIT.usage, error: EXIT.internal }[stopped.kind],
      gate: { 'never-ready': 'never-ready', config: 'config-error', error: 'error' }[stopped.kind] as Gate,
      reason: stopped.summary,
    };
  }
  const c = t.counts;
  const counted = `${c.fail} fail, ${c.error} error; ${c.warn} warn, ${c.inconclusive} inconclusive, ${c.known} known`;
  // Stopped by a signal: what ran is no verdict on the whole (reporters/interrupt.ts wrote the reports).
  const stop = results.header.interrupted;
  if (stop)
    return {
      ...base,
      exitCode: stop.signal === 'SIGTERM' ? EXIT.interruptedByTerm : EXIT.interrupted,
      gate: 'interrupted',
      reason: `interrupted by ${stop.signal}${stop.running ? ` during ${stop.running}` : ''} after ${t.total} checks; ${counted}`,
    };
  if (gateFailed(toColumns([results]))) return { ...base, exitCode: EXIT.failed, gate: 'failed', reason: counted };
  if (o.failOnRegression && (o.regressions ?? 0) > 0)
    return {
      ...base,
      exitCode: EXIT.failed,
      gate: 'failed',
      reason: `${o.regressions} regression(s) against the baseline; ${counted}`,
    };
  return { ...base, exitCode: EXIT.passed, gate: 'passed', reason: counted };
}

/**
 * Run the catalogue against one server and return the gate with the results. Throws UsageError for bad options;
 * every problem of the server itself is in the results.
 */
export async function runConformance(
  options: RunOptions,
  io: { cwd?: string; log?: (line: string) => void } = {},
): Promise<RunResult> {
  const cwd = io.cwd ?? process.cwd();
  const log = io.log ?? ((l: string) => console.log(l));
  const { env, project } = runEnvironment(options, cwd);
  // Every file the run reads is read now: a mistake in one is one usage error before anything starts.
  const baseline = options.baseline ? readBaseline(resolve(cwd, options.baseline)) : undefined;
  if (options.dataset)
    try {
      loadDataset(resolve(cwd, options.dataset));
    } catch (e) {
      throw new UsageError(`--dataset: ${(e as Error).message}`);
    }
  checkProfile(project, env);
  const reportsDir = env.CONFORMANCE_REPORTS_DIR!;
  const resultsPath = join(projectDir(reportsDir, project), 'results.json');

  // vitest.config.ts and the global setup read the environment of this process: set it for the run, then restore.
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  const progress = options.progress ?? (process.stdout.isTTY ? 'tty' : 'lines');
  try {
    const vitest = await startVitest('test', familyFilters(options), {
      root: ROOT,
      config: join(ROOT, 'vitest.config.ts'),
      project: [project],
      run: true,
      watch: false,
      reporters: [
        ...(progress === 'none' ? [] : [[join(ROOT, 'cli', 'progress-reporter.ts'), { mode: progress }]]),
        ...CONFORMANCE_REPORTERS.map((r) => join(ROOT, r)),
      ] as never,
    });
    await vitest?.close();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  const results = readResults(resultsPath);
  let regressions: number | undefined;
  if (options.baseline && results && !setupFailureOf(results.header.server)) {
    const comparison = compareResults(baseline, results);
    regressions = comparison.regressions;
    const text = formatComparison(comparison, { old: options.baseline, new: resultsPath });
    writeFileSync(join(projectDir(reportsDir, project), 'comparison.md'), `${text}\n`);
    log(text);
  }
  const judged = judgeRun(results, { regressions, failOnRegression: options.failOnRegression });
  return {
    ...judged,
    project,
    reportsDir,
    resultsPath,
    results,
    ...(regressions !== undefined ? { regressions } : {}),
  };
}
