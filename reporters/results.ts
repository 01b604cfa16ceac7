// Vitest reporter: reports/<project>/results.json, rewritten after EVERY test case, so an interrupted run keeps
// what it measured. Reads only task meta (`testCase.meta().conformance`) and what the project was given
// (profile, discovered server); writes only files. Secrets are redacted from everything written.
//
// Also exports the pure-ish collection helpers the other reporters (console, summary, badges) build on, so all of
// them show exactly what results.json holds.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { arch, cpus, hostname, platform, totalmem } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import type { SerializedError } from 'vitest';
import type {
  Reporter,
  TestCase,
  TestModule,
  TestProject,
  TestRunEndReason,
  TestSpecification,
  Vitest,
} from 'vitest/node';
import { capacityJson, type PeerRow, toCsv } from '../lib/capacity/peer-columns.ts';
import { apiKeyOf } from '../lib/config/request-auth.ts';
import { redact, redactDeep, stripUrlCredentials } from '../lib/config/secrets.ts';
import type { Profile } from '../lib/model/types.ts';
import type { RunSnapshot } from '../lib/run/run.ts';
import type { ConformanceMeta } from '../suites/support/provided.d.ts';
import { providerOf } from './figures.ts';
import type { CheckResult, ResultsFile, ResultsHeader, RunError } from './results-types.ts';
import { moduleRank } from './run-order.ts';

// ------------------------------------------------------------------------------------------------------------
// Where files go

/** Root of all reports: CONFORMANCE_REPORTS_DIR, else <suite root>/reports. */
export function reportsRoot(suiteRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  return env.CONFORMANCE_REPORTS_DIR ? resolve(env.CONFORMANCE_REPORTS_DIR) : resolve(suiteRoot, 'reports');
}

/** reports/<project>, or reports/<project>/shard-<i>-of-<n> when sharded (writers never overwrite each other). */
export function projectDir(root: string, project: string, shard?: string): string {
  const safe = project.replace(/[^A-Za-z0-9._-]/g, '_');
  if (!shard) return join(root, safe);
  const [i, n] = shard.split('/');
  return join(root, safe, `shard-${i}-of-${n}`);
}

/** Write JSON atomically (temp file + rename): a reader never sees half a file, a crash leaves the last good one. */
export function writeJsonAtomic(path: string, data: unknown): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(data, null, 2)}\n`);
  renameSync(tmp, path);
}

export function writeTextAtomic(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

// ------------------------------------------------------------------------------------------------------------
// Secrets

/** Every secret a project's profile implies: its API key (from the env var it names) and base-URL credentials. */
export function profileSecrets(profile: Profile | undefined, env: NodeJS.ProcessEnv = process.env): string[] {
  if (!profile) return [];
  const key = apiKeyOf(profile, env);
  return [...stripUrlCredentials(profile.baseUrl).secrets, ...(key ? [key] : [])].filter((s) => s.length >= 4);
}

const SECRET_ENV_NAME = /key|token|secret|pass|auth|cred|cookie|session/i;

/** The profile as run, without secrets: URL credentials stripped, secret-looking start env values removed. */
export function sanitizeProfile(profile: Profile, secrets: readonly string[]): Record<string, unknown> {
  const p: Record<string, unknown> = { ...profile, baseUrl: stripUrlCredentials(profile.baseUrl).url };
  if (profile.start) {
    const env = profile.start.env
      ? Object.fromEntries(
          Object.entries(profile.start.env).map(([k, v]) => [k, SECRET_ENV_NAME.test(k) ? '[REDACTED]' : v]),
        )
      : undefined;
    p.start = { ...profile.start, ...(env ? { env } : {}) };
  }
  return redactDeep(p, secrets);
}

// ------------------------------------------------------------------------------------------------------------
// Header

interface SuitePackage {
  name: string;
  version: string;
}
let suitePkg: SuitePackage | undefined;
function suitePackage(root: string): SuitePackage {
  if (!suitePkg) {
    try {
      const j = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Partial<SuitePackage>;
      suitePkg = { name: j.name ?? 'llm-server-conformance', version: j.version ?? '0.0.0' };
    } catch {
      suitePkg = { name: 'llm-server-conformance', version: '0.0.0' };
    }
  }
  return suitePkg;
}

export function machineInfo(env: NodeJS.ProcessEnv = process.env): ResultsHeader['machine'] {
  const host = hostname();
  return {
    hostname: host,
    label: env.CONFORMANCE_MACHINE?.trim() || host,
    platform: platform(),
    arch: arch(),
    cpus: cpus().length,
    ...(cpus()[0]?.model?.trim() ? { chip: cpus()[0]!.model.trim() } : {}),
    memGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
  };
}

/** The profile a project runs (undefined for the `self` project). */
export function projectProfile(project: TestProject): Profile | undefined {
  try {
    const provided = project.getProvidedContext() as { profile?: Profile; run?: RunSnapshot };
    return (
      provided.run?.profile ??
      provided.profile ??
      (project.config.provide as { profile?: Profile } | undefined)?.profile
    );
  } catch {
    return (project.config.provide as { profile?: Profile } | undefined)?.profile;
  }
}

export function shardOf(vitest: Vitest | undefined): string | undefined {
  const s = vitest?.config.shard;
  return s ? `${s.index}/${s.count}` : undefined;
}

export function buildHeader(
  project: TestProject,
  vitest: Vitest | undefined,
  startedAt: Date,
  env: NodeJS.ProcessEnv = process.env,
): ResultsHeader {
  const root = vitest?.config.root ?? process.cwd();
  const profile = projectProfile(project);
  const secrets = profileSecrets(profile, env);
  // The run as its global setup provided it (lib/run/run.ts); absent for a project without one (the self-tests).
  let run: Partial<RunSnapshot> = {};
  try {
    run = (project.getProvidedContext() as { run?: RunSnapshot }).run ?? {};
  } catch {
    run = {};
  }
  const server: Record<string, unknown> = { ...((run.server as Record<string, unknown> | undefined) ?? {}) };
  if (typeof server.baseUrl === 'string') server.baseUrl = stripUrlCredentials(server.baseUrl).url;
  if (run.setupError) server.setupError = run.setupError;
  const tier = run.settings?.tier ?? (env.CONFORMANCE_TIER === 'full' ? 'full' : 'quick');
  const header: ResultsHeader = {
    suite: suitePackage(root),
    date: startedAt.toISOString(),
    project: project.name,
    profile: profile ? sanitizeProfile(profile, secrets) : { id: project.name },
    server: redactDeep(server, secrets),
    machine: machineInfo(env),
    tier,
    strict: run.settings?.strict ?? env.CONFORMANCE_STRICT === '1',
  };
  const shard = shardOf(vitest);
  if (shard) header.shard = shard;
  if (run.fidelity) header.fidelity = run.fidelity;
  return header;
}

// ------------------------------------------------------------------------------------------------------------
// One test case -> one check result

const ID_RE = /^([a-z0-9-]+)\.([a-z0-9-]+)\b/;

function firstError(tc: TestCase): string | undefined {
  const r = tc.result();
  const e = r.errors?.[0];
  if (!e) return r.state === 'skipped' ? r.note : undefined;
  return e.message ?? String(e);
}

/** The check result of a test case, from its task meta; a test without meta still leaves a trace (never lost). */
export function checkFromTestCase(tc: TestCase, root: string): CheckResult | undefined {
  const meta = tc.meta().conformance as ConformanceMeta | undefined;
  const file = relative(root, tc.module.moduleId).split('\\').join('/');
  const state = tc.result().state;
  if (state === 'pending') return undefined;
  if (meta) {
    let message = meta.message;
    let outcome = meta.outcome;
    // The meta is created with outcome "error" and filled in at the end: a test killed by its timeout keeps that.
    if (outcome === 'error' && !message)
      message = `error: the check did not finish (${firstError(tc) ?? `test ${state}`})`;
    if (state === 'skipped' && outcome === 'error' && !meta.message) outcome = 'skip';
    const r: CheckResult = {
      id: meta.id,
      title: meta.title,
      family: meta.family,
      level: meta.level,
      outcome,
      message,
      rationale: meta.rationale,
      reference: meta.reference,
      file,
    };
    const duration = meta.durationMs ?? tc.diagnostic()?.duration;
    if (duration !== undefined && Number.isFinite(duration)) r.durationMs = Math.max(0, duration);
    if (meta.metrics) r.metrics = meta.metrics;
    if (meta.evidence) r.evidence = meta.evidence;
    if (meta.loopDelay) r.loopDelay = meta.loopDelay;
    if (meta.blockedBy) r.blockedBy = meta.blockedBy;
    if (meta.provides?.length) r.provides = meta.provides;
    return r;
  }
  // No conformance meta and skipped: never started (left out by -t, or a skipped file): not part of this run's results.
  if (state === 'skipped') return undefined;
  // No conformance meta: a test that crashed before registering, or a plain test in a server project.
  const m = ID_RE.exec(tc.name);
  const id = m
    ? `${m[1]}.${m[2]}`
    : `unregistered.${
        tc.name
          .toLowerCase()
          .replace(/[^a-z0-9]+/g, '-')
          .replace(/^-|-$/g, '')
          .slice(0, 60) || 'test'
      }`;
  return {
    id,
    title: tc.name,
    family: id.split('.')[0],
    level: 'MUST',
    outcome: state === 'passed' ? 'pass' : 'error',
    message:
      state === 'failed'
        ? `error: test without conformance metadata failed: ${firstError(tc) ?? 'no error message'}`
        : `test without conformance metadata ${state}`,
    rationale: '',
    reference: '',
    file,
  };
}

// ------------------------------------------------------------------------------------------------------------
// Collection per project

export interface ProjectResults {
  project: TestProject;
  file: ResultsFile;
  secrets: string[];
}

/** Replace-or-append by id (a retried test keeps its last result), keeping first-seen order. */
export function upsertCheck(checks: CheckResult[], r: CheckResult): void {
  const i = checks.findIndex((c) => c.id === r.id);
  if (i === -1) checks.push(r);
  else checks[i] = r;
}

/** Everything a finished run holds, per conformance project (projects without a profile, e.g. `self`, are left out). */
export function collectRun(
  testModules: ReadonlyArray<TestModule>,
  vitest: Vitest | undefined,
  startedAt: Date,
  env: NodeJS.ProcessEnv = process.env,
): Map<string, ProjectResults> {
  const root = vitest?.config.root ?? process.cwd();
  const out = new Map<string, ProjectResults>();
  // Vitest lists modules by file name; the results keep the run's order (setup first, health last).
  const ordered = [...testModules].sort((a, b) => moduleRank(a.moduleId) - moduleRank(b.moduleId));
  for (const mod of ordered) {
    const project = mod.project;
    if (!projectProfile(project)) continue;
    let pr = out.get(project.name);
    if (!pr) {
      pr = {
        project,
        file: { header: buildHeader(project, vitest, startedAt, env), checks: [] },
        secrets: profileSecrets(projectProfile(project), env),
      };
      out.set(project.name, pr);
    }
    for (const tc of mod.children.allTests()) {
      const r = checkFromTestCase(tc, root);
      if (r) upsertCheck(pr.file.checks, r);
    }
    for (const e of moduleErrors(mod, root)) pr.file.errors = [...(pr.file.errors ?? []), e];
  }
  return out;
}

export function moduleErrors(mod: TestModule, root: string): RunError[] {
  const errs = mod.errors?.() ?? [];
  const where = relative(root, mod.moduleId).split('\\').join('/');
  return errs.map((e) => ({ where, message: e.message ?? String(e) }));
}

/** Redact a whole results file with the project's secrets (and every registered one). */
export function redactResults(file: ResultsFile, secrets: readonly string[]): ResultsFile {
  return redactDeep(file, secrets);
}

/** Report a reporter's own failure loudly, never throw into Vitest (results must not be lost to a report bug). */
export function reporterError(name: string, e: unknown): string {
  const msg = `[conformance ${name} reporter] ERROR (the run's results are unaffected; this output may be incomplete): ${redact((e as Error)?.stack ?? String(e))}`;
  try {
    process.stderr.write(`${msg}\n`);
  } catch {
    // nothing left to report to
  }
  return msg;
}

// ------------------------------------------------------------------------------------------------------------
// The reporter

/** One start time per test run for every reporter: each reporter taking its own `new Date()` made results.json and a
 *  summary rendered beside it differ by a millisecond. Vitest hands every reporter the same specifications array. */
const runStarts = new WeakMap<object, Date>();
export function runStartedAt(specifications: object | undefined): Date {
  if (!specifications) return new Date();
  let d = runStarts.get(specifications);
  if (!d) runStarts.set(specifications, (d = new Date()));
  return d;
}

export default class ResultsReporter implements Reporter {
  private vitest: Vitest | undefined;
  private startedAt = new Date();
  private readonly runs = new Map<string, ProjectResults>();
  private readonly env: NodeJS.ProcessEnv;

  constructor(options: { env?: NodeJS.ProcessEnv } = {}) {
    this.env = options.env ?? process.env;
  }

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
    this.startedAt = new Date();
  }

  onTestRunStart(specifications?: ReadonlyArray<TestSpecification>): void {
    this.startedAt = runStartedAt(specifications);
    this.runs.clear();
  }

  private root(): string {
    return this.vitest?.config.root ?? process.cwd();
  }

  /** Path of a project's results file for this run. */
  resultsPath(project: string): string {
    return join(projectDir(reportsRoot(this.root(), this.env), project, shardOf(this.vitest)), 'results.json');
  }

  private state(project: TestProject): ProjectResults | undefined {
    const profile = projectProfile(project);
    if (!profile) return undefined;
    let pr = this.runs.get(project.name);
    if (!pr) {
      pr = {
        project,
        file: { header: buildHeader(project, this.vitest, this.startedAt, this.env), checks: [] },
        secrets: profileSecrets(profile, this.env),
      };
      this.runs.set(project.name, pr);
    }
    return pr;
  }

  private write(pr: ProjectResults): void {
    // The header is rebuilt at each write: the server identity is only known once globalSetup has run.
    try {
      pr.file.header = buildHeader(pr.project, this.vitest, this.startedAt, this.env);
    } catch (e) {
      this.addError(pr, 'results header', e);
    }
    const file = redactResults(withCapacity(pr.file), pr.secrets);
    const path = this.resultsPath(pr.project.name);
    writeJsonAtomic(path, file);
    if (file.capacity) writeCapacityFiles(dirname(path), file);
  }

  private addError(pr: ProjectResults, where: string, e: unknown): void {
    const msg = reporterError('results', e);
    pr.file.errors = [...(pr.file.errors ?? []), { where, message: redact(msg, pr.secrets) }];
  }

  onTestCaseResult(tc: TestCase): void {
    try {
      const pr = this.state(tc.project);
      if (!pr) return;
      const r = checkFromTestCase(tc, this.root());
      if (r) upsertCheck(pr.file.checks, r);
      this.write(pr);
    } catch (e) {
      reporterError('results', e);
    }
  }

  onTestModuleEnd(mod: TestModule): void {
    try {
      const pr = this.state(mod.project);
      if (!pr) return;
      const errs = moduleErrors(mod, this.root());
      if (errs.length === 0) return;
      pr.file.errors = [...(pr.file.errors ?? []), ...errs];
      this.write(pr);
    } catch (e) {
      reporterError('results', e);
    }
  }

  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
    reason: TestRunEndReason,
  ): void {
    for (const mod of testModules) {
      try {
        const pr = this.state(mod.project);
        if (!pr) continue;
        // Catch anything a per-case event missed (a test that never reported, e.g. its file failed mid-way).
        for (const tc of mod.children.allTests()) {
          if (!pr.file.checks.some((c) => tc.name.startsWith(c.id))) {
            const r = checkFromTestCase(tc, this.root());
            if (r) upsertCheck(pr.file.checks, r);
          }
        }
      } catch (e) {
        reporterError('results', e);
      }
    }
    for (const pr of this.runs.values()) {
      try {
        for (const e of unhandledErrors)
          pr.file.errors = [...(pr.file.errors ?? []), { where: 'unhandled error', message: e.message ?? String(e) }];
        pr.file.finished = { date: new Date().toISOString(), reason };
        this.write(pr);
      } catch (e) {
        reporterError('results', e);
      }
    }
  }
}

/**
 * The finished results files of a run (what results.json holds at the end), redacted: what the console, summary and
 * badge reporters render. Built from the test modules, so it does not depend on reporter order.
 */
export function runResults(
  testModules: ReadonlyArray<TestModule>,
  vitest: Vitest | undefined,
  startedAt: Date,
  reason: string,
  unhandledErrors: ReadonlyArray<SerializedError> = [],
  env: NodeJS.ProcessEnv = process.env,
): ResultsFile[] {
  const out: ResultsFile[] = [];
  for (const pr of collectRun(testModules, vitest, startedAt, env).values()) {
    for (const e of unhandledErrors)
      pr.file.errors = [...(pr.file.errors ?? []), { where: 'unhandled error', message: e.message ?? String(e) }];
    pr.file.finished = { date: new Date().toISOString(), reason };
    out.push(redactResults(withCapacity(pr.file), pr.secrets));
  }
  return out;
}

/**
 * The capacity table moved from the metrics of the check that provides it to the file's top-level `capacity` (once,
 * not in both places): the capacity mode's own section, what the console table, the HTML plots and the merge of
 * several machines read.
 */
export function withCapacity(file: ResultsFile): ResultsFile {
  const sweep = providerOf(
    file.checks.filter((c) => c.metrics?.capacity !== undefined),
    'capacity_table',
  );
  const i = sweep ? file.checks.indexOf(sweep) : -1;
  if (i < 0) return file;
  const { capacity, ...metrics } = file.checks[i]!.metrics!;
  const checks = [...file.checks];
  checks[i] = { ...checks[i]!, metrics };
  return { ...file, checks, capacity: capacity as ResultsFile['capacity'] };
}

/**
 * capacity.json and capacity.csv next to results.json: the capacity table in the columns of vLLM's benchmark result
 * JSON, with our certification beside every figure (lib/capacity/peer-columns.ts, docs/capacity.md "Columns").
 */
export function writeCapacityFiles(dir: string, file: ResultsFile): void {
  const t = file.capacity;
  if (!t) return;
  // The model as discovered ({ value, source }), else as the profile names it.
  const served = (file.header.server as { model?: { value?: unknown } }).model?.value;
  const model = served ?? (file.header.profile as { model?: unknown }).model;
  const doc = capacityJson(t, { date: file.header.date, ...(typeof model === 'string' ? { model } : {}) });
  writeJsonAtomic(join(dir, 'capacity.json'), doc);
  writeTextAtomic(join(dir, 'capacity.csv'), toCsv(doc.runs as PeerRow[]));
}

/** Output directory of a results file's project (and shard) under a reports root. */
export function dirOfResults(root: string, file: ResultsFile): string {
  return projectDir(root, file.header.project, file.header.shard);
}
