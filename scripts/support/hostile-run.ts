// Run the whole catalogue against one hostile-server mode, as a user would (`vitest run --project <id>` in its own
// process, with a canary API key), and judge what came out: finished within the deadline, the expected checks failed
// with messages saying what the server did, every report written and valid, the key nowhere. Shared by
// test/hostile.test.ts (the CI quick set) and scripts/hostile.ts (`npm run hostile`, every mode). No Vitest imports.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MODES, type Mode, type ModeInfo } from '../../fixtures/hostile-server/modes.ts';
import { HOSTILE_MAIN, hostileCommand, startHostile } from '../../fixtures/hostile-server/spawn.ts';
import { ROOT } from '../../lib/config/profile.ts';
import { compileSchema, schemaErrors } from '../../lib/config/schemas.ts';
import { processTreeRssKiB, type RunningServer } from '../../lib/server/lifecycle.ts';
import { setupFailureOf } from '../../lib/server/setup-failure.ts';
import type { ResultsFile } from '../../reporters/results-types.ts';

interface ModeRunOptions {
  /** Seconds: CONFORMANCE_DEADLINE_S of the run (the issue's bound: 10 minutes). */
  deadlineS?: number;
  /** Start the hostile server ourselves and give the suite a profile without a start command. */
  external?: boolean;
  /** Test files to run (default: the whole catalogue). */
  files?: string[];
  /** Where to keep the run's files (default: a new temp dir). */
  dir?: string;
}

interface ModeResult {
  mode: Mode;
  external: boolean;
  project: string;
  wallMs: number;
  /** What the run's projects waited for their servers to get ready (the deadline counts from there). */
  waitedMs: number;
  /** Peak resident memory of the suite's processes (Vitest main + workers; the hostile server excluded), KiB. */
  peakRssKiB: number;
  exitCode: number | null;
  dir: string;
  reportsDir: string;
  output: string;
  otherOriginLog: string;
  canary: string;
  results?: ResultsFile;
  deadlineS: number;
  /** Only some test files were run. */
  partial: boolean;
}

function profileFor(mode: Mode, id: string, otherLog: string, baseUrl?: string): Record<string, unknown> {
  return {
    id,
    description: `hostile server, mode ${mode}: ${MODES[mode].description}`,
    baseUrl: baseUrl ?? 'http://127.0.0.1:{port}',
    model: 'reference-model',
    apis: ['openai-chat', 'openai-completions', 'anthropic-messages', 'ollama-native'],
    apiKeyEnv: 'HOSTILE_CANARY_KEY',
    ...(baseUrl ? {} : { start: { command: hostileCommand(mode, '{port}', otherLog) } }),
    readiness: { kind: 'http', path: '/health' },
    startTimeoutMs: mode === 'reset-fresh' ? 8_000 : 20_000, // reset-fresh never gets ready: its setup error costs this
    slots: 4,
    deterministic: true,
    context: { discovery: 'reference' },
    hardware: { memoryBandwidthGBs: 1, activeBytesPerTokenGB: 0.004 },
    forceLength: { ignoreEos: true },
    deadlines: { connectMs: 2_000, headersMs: 15_000, tokenIdleMs: 5_000, totalMs: 30_000 },
  };
}

export interface ModeSpec {
  mode: Mode;
  /** Start the hostile server ourselves and give the suite a profile without a start command. */
  external?: boolean;
}

export function runMode(mode: Mode, o: ModeRunOptions = {}): Promise<ModeResult> {
  return runModes([{ mode, external: o.external }], o).then((r) => r[0]!);
}

/**
 * Several modes in one Vitest run (one project each: startup paid once; the CI quick set), or one. Time and peak RSS
 * are the whole run's; each result is judged on its own project's reports.
 */
export async function runModes(specs: ModeSpec[], o: ModeRunOptions = {}): Promise<ModeResult[]> {
  const deadlineS = o.deadlineS ?? 600;
  const dir =
    o.dir ??
    mkdtempSync(
      join(
        tmpdir(),
        `hostile-${specs
          .map((x) => x.mode)
          .join('-')
          .slice(0, 60)}-`,
      ),
    );
  mkdirSync(dir, { recursive: true });
  const reportsDir = join(dir, 'reports');
  const otherLog = join(dir, 'other-origin.log');
  writeFileSync(otherLog, '');
  const canary = `sk-canary-${randomBytes(16).toString('hex')}`;
  const projects = specs.map((x) => `hostile-${x.mode}${x.external ? '-external' : ''}`);
  const exts: Array<{ server: RunningServer; url: string } | undefined> = [];
  try {
    for (const x of specs) exts.push(x.external ? await startHostile(x.mode, otherLog) : undefined);
    const profiles = specs.map((x, i) => profileFor(x.mode, projects[i]!, otherLog, exts[i]?.url));
    writeFileSync(join(dir, 'servers.json'), JSON.stringify({ servers: profiles }, null, 2));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      SERVERS_FILE: join(dir, 'servers.json'),
      CONFORMANCE_REPORTS_DIR: reportsDir,
      CONFORMANCE_DEADLINE_S: String(deadlineS),
      HOSTILE_CANARY_KEY: canary,
      NO_COLOR: '1',
      FORCE_COLOR: '0',
    };
    delete env.GITHUB_STEP_SUMMARY; // the summary goes to reports/<project>/summary.md
    delete env.VITEST; // a nested run is a run of its own
    delete env.VITEST_POOL_ID;
    delete env.VITEST_WORKER_ID;
    const t0 = performance.now();
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'node_modules/vitest/vitest.mjs'),
        'run',
        ...projects.flatMap((p) => ['--project', p]),
        ...(o.files ?? []),
      ],
      {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    let output = '';
    const keep = (d: Buffer) => {
      output += d.toString('utf8');
      if (output.length > 4_000_000) output = output.slice(-3_000_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let peak = 0;
    const sampler = setInterval(() => {
      // The suite's processes: the hostile server (started by the suite's global setup) left out.
      if (child.pid)
        void processTreeRssKiB(child.pid, { skip: (args) => args.includes(HOSTILE_MAIN) }).then(
          (k) => (peak = Math.max(peak, k ?? 0)),
        );
    }, 500);
    // Hard stop well past the deadline: the run must end by itself; this only keeps a broken run from hanging CI.
    const kill = setTimeout(
      () => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* gone */
        }
      },
      (deadlineS + 90) * 1000,
    );
    const exitCode = await new Promise<number | null>((r) => child.once('close', (code) => r(code)));
    clearInterval(sampler);
    clearTimeout(kill);
    const wallMs = performance.now() - t0;
    writeFileSync(join(dir, 'output.txt'), output);
    const other = readFileSync(otherLog, 'utf8');
    const resultsOf = projects.map((project) => {
      try {
        return JSON.parse(readFileSync(join(reportsDir, project, 'results.json'), 'utf8')) as ResultsFile;
      } catch {
        return undefined;
      }
    });
    // The deadline counts from readiness: the run may add what its projects waited for their servers.
    const waitedMs = resultsOf.reduce(
      (sum, f) =>
        sum + ((f?.header.server as { readiness?: { waitedMs?: number } } | undefined)?.readiness?.waitedMs ?? 0),
      0,
    );
    return specs.map((x, i) => ({
      mode: x.mode,
      external: !!x.external,
      project: projects[i]!,
      wallMs,
      waitedMs,
      peakRssKiB: peak,
      exitCode,
      dir,
      reportsDir,
      output,
      otherOriginLog: other,
      canary,
      results: resultsOf[i],
      deadlineS,
      partial: !!o.files?.length,
    }));
  } finally {
    for (const e of exts) await e?.server.stop();
  }
}

/** What `crash-after-5` must show when the suite did not start the server: the rest is error, naming the request. */
export const EXTERNAL_CRASH: ModeInfo = {
  description: 'crash-after-5 on a server the suite did not start',
  caughtBy: [
    {
      check: '*',
      outcome: ['error'],
      message:
        /^stopped answering after [a-z-]+\.[a-z0-9-]+: nothing answers at .*the first request without an answer: POST \/v1\//s,
    },
  ],
};

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/** Vitest's own start before any server is waited for (worker pool, config, reporters). */
const STARTUP_ALLOWANCE_MS = 15_000;

/** The run ended by its deadline, which counts from the moment its servers were ready. */
export function endedInTime(r: Pick<ModeResult, 'wallMs' | 'waitedMs' | 'deadlineS'>): boolean {
  return r.wallMs <= r.deadlineS * 1000 + r.waitedMs + STARTUP_ALLOWANCE_MS;
}

/** Everything wrong with a mode's run (empty: as it should be). */
export function judge(r: ModeResult, info: ModeInfo = r.external ? EXTERNAL_CRASH : MODES[r.mode]): string[] {
  const problems: string[] = [];
  if (!endedInTime(r))
    problems.push(
      `took ${Math.round(r.wallMs / 1000)} s, past its ${r.deadlineS} s deadline (counted from readiness; ${Math.round(r.waitedMs / 1000)} s waited for the servers)`,
    );
  if (r.exitCode === null) problems.push('the run was killed (did not end by itself)');
  // Reports complete and valid.
  const res = r.results;
  const stopped = res ? setupFailureOf(res.header.server) : undefined;
  if (!res) problems.push('no results.json');
  else {
    const validate = compileSchema('results.schema.json');
    if (!validate(res)) problems.push(`results.json is not valid: ${schemaErrors(validate).slice(0, 5).join('; ')}`);
    if (!res.finished) problems.push('results.json has no "finished" (the run did not end cleanly)');
    // A run stopped by a setup error (never ready) holds setup.server-ready alone: it says why.
    if (!r.partial && !stopped && res.checks.length < 50)
      problems.push(`results.json holds ${res.checks.length} checks (the catalogue has more)`);
  }
  const pdir = join(r.reportsDir, r.project);
  const badges = stopped
    ? ['badges/conformance.json', 'badges/conformance.svg']
    : [
        'badges/conformance.json',
        'badges/conformance.svg',
        'badges/streaming.json',
        'badges/batching.json',
        'badges/long-context.json',
      ];
  for (const f of ['summary.md', ...badges]) {
    if (!existsSync(join(pdir, f))) problems.push(`missing ${r.project}/${f}`);
  }
  for (const f of ['junit.xml', 'index.html']) if (!existsSync(join(r.reportsDir, f))) problems.push(`missing ${f}`);
  for (const f of stopped ? ['badges/conformance.json'] : ['badges/conformance.json', 'badges/streaming.json']) {
    try {
      const b = JSON.parse(readFileSync(join(pdir, f), 'utf8')) as { schemaVersion?: number; message?: unknown };
      if (b.schemaVersion !== 1 || typeof b.message !== 'string') problems.push(`${f} is not a shields.io endpoint`);
    } catch {
      /* reported as missing above */
    }
  }
  if (
    existsSync(join(r.reportsDir, 'junit.xml')) &&
    !/<testsuites[\s>]/.test(readFileSync(join(r.reportsDir, 'junit.xml'), 'utf8'))
  )
    problems.push('junit.xml has no <testsuites>');
  if (
    existsSync(join(r.reportsDir, 'index.html')) &&
    !readFileSync(join(r.reportsDir, 'index.html'), 'utf8').includes(r.project)
  )
    problems.push('index.html does not show the project');
  // The key: nowhere in what was written or printed, and never sent to the other origin.
  for (const f of filesUnder(r.reportsDir))
    if (readFileSync(f).includes(r.canary)) problems.push(`the key appears in ${f.slice(r.reportsDir.length + 1)}`);
  if (r.output.includes(r.canary)) problems.push('the key appears in the console output');
  if (r.otherOriginLog.includes(r.canary)) problems.push('the key was sent to the other origin');
  if (r.otherOriginLog.trim())
    problems.push(
      `the other origin received requests (a redirect was followed): ${r.otherOriginLog.split('\n')[0]!.slice(0, 200)}`,
    );
  // Verdicts.
  if (res) {
    const by = new Map(res.checks.map((c) => [c.id, c]));
    for (const e of info.caughtBy) {
      const allowed = e.outcome ?? ['fail', 'error'];
      if (e.check === '*') {
        if (!res.checks.some((c) => allowed.includes(c.outcome as never) && e.message.test(c.message)))
          problems.push(`no check says ${e.message}`);
        continue;
      }
      const c = by.get(e.check);
      if (!c) problems.push(`${e.check}: not in results`);
      else if (!allowed.includes(c.outcome as never))
        problems.push(`${e.check}: ${c.outcome}, expected ${allowed.join(' or ')}: ${c.message.split('\n')[0]}`);
      else if (!e.message.test(c.message))
        problems.push(
          `${e.check}: message does not say what the server did (${e.message}): ${c.message.slice(0, 300)}`,
        );
    }
    if (info.valid) {
      for (const c of res.checks)
        if (c.outcome === 'fail' || c.outcome === 'error')
          problems.push(`${c.id} is ${c.outcome} on a valid server: ${c.message.split('\n')[0]}`);
    }
    for (const c of res.checks)
      if (c.outcome === 'error' && /harness error/.test(c.message))
        problems.push(`${c.id}: harness error: ${c.message.slice(0, 300)}`);
    const failing = res.checks.some((c) => c.outcome === 'fail' || c.outcome === 'error');
    if (failing && r.exitCode === 0)
      problems.push('exit status 0 although checks failed or errored (the gate would pass)');
    if (!failing && !info.valid && r.exitCode !== 0 && r.exitCode !== null)
      problems.push(`exit status ${r.exitCode} with no fail or error`);
  }
  return problems;
}

/** One line per mode for the table of docs/hostile.md and the final note. */
export function summaryLine(r: ModeResult, problems: string[]): string {
  const res = r.results;
  const counts: Record<string, number> = {};
  for (const c of res?.checks ?? []) counts[c.outcome] = (counts[c.outcome] ?? 0) + 1;
  return `${r.project.padEnd(34)} ${(r.wallMs / 1000).toFixed(1).padStart(6)} s  peak RSS ${Math.round(r.peakRssKiB / 1024)} MiB  exit ${r.exitCode}  ${JSON.stringify(counts)}  ${problems.length ? `PROBLEMS: ${problems.length}` : 'ok'}`;
}
