// Per-project globalSetup (main Vitest process): start the server if the profile says how, wait for readiness
// within a bound (also for a server it did not start: one still loading its model refuses connections for minutes),
// discover identity and context window, stop everything afterwards.
// Anything that stops every check (never ready, a model the server does not serve, a crash here) is printed once,
// as it happens, and recorded as `setupError` and server.setupFailure: vitest.config.ts's sequencer then runs
// suites/setup.test.ts alone, whose one result says why (never a check failure charged to the server).

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { wantsServerModel } from '../../lib/config/effective.ts';
import { startCwd } from '../../lib/config/profile.ts';
import { requestAuth } from '../../lib/config/request-auth.ts';
import { redact, redactDeep, stripUrlCredentials } from '../../lib/config/secrets.ts';
import { settingsFromEnv } from '../../lib/config/settings.ts';
import { describePreflight } from '../../lib/measure/fidelity.ts';
import type { ServerInfo, SetupFailure } from '../../lib/model/types.ts';
import { runMemory } from '../../lib/run/memory.ts';
import { PREFLIGHT_DEFAULTS, runPreflight, startStampServer } from '../../lib/run/preflight.ts';
import type { RunSnapshot } from '../../lib/run/run.ts';
import { runDeadline } from '../../lib/run/run-deadline.ts';
import { describeDiscovery, discoverServer } from '../../lib/server/discovery.ts';
import {
  describeReadiness,
  freePort,
  NeverReadyError,
  type RunningServer,
  spawnServer,
  waitBoundMs,
  waitReady,
} from '../../lib/server/lifecycle.ts';
import { modelNotServed } from '../../lib/server/model-served.ts';
import { measureBaseline } from '../../lib/server/sentinel.ts';
import { printedSetupFailure, SetupError } from '../../lib/server/setup-failure.ts';
import { startSupervisor } from '../../lib/server/supervisor.ts';

export default async function setup(project: TestProject) {
  const profile = project.config.provide.profile!;
  const runId = randomBytes(4).toString('hex');
  const stateDir = mkdtempSync(join(tmpdir(), `conformance-${profile.id}-`));
  // The run's settings, read from the environment once (lib/config/settings.ts) and handed to every worker as data.
  const settings = settingsFromEnv();
  // The run deadline counts from the moment the server is ready (a model load is not the checks' time); until then
  // the wait bound holds. A CI job's timeout must cover both.
  let deadline = runDeadline(settings.deadlineS, Date.now());
  // The run as every worker sees it (lib/run/run.ts): provided whole each time setup learns something.
  const run: RunSnapshot = {
    runId,
    settings,
    profile,
    server: { baseUrl: redact(profile.baseUrl), identity: {} },
    setupError: '',
    stateFile: join(stateDir, 'run-state.json'),
    supervisor: '',
    deadlineAt: 0,
  };
  const provideRun = (patch: Partial<RunSnapshot> = {}) => {
    Object.assign(run, patch, { deadlineAt: deadline?.checksEndAt ?? 0 });
    project.provide('run', { ...run });
  };
  provideRun();
  const bounded = (ms: number) => (deadline ? Math.max(1_000, Math.min(ms, deadline.checksEndAt - Date.now())) : ms);

  const { url } = stripUrlCredentials(profile.baseUrl);
  const { headers } = requestAuth(profile);
  const log = (line: string) => console.log(`[${profile.id}] ${redact(line)}`);
  // The fidelity preflight's stamping server starts now, beside the server under test (its start overlaps theirs).
  const stamp = settings.preflight
    ? startStampServer({ slots: PREFLIGHT_DEFAULTS.streams, cadenceMs: PREFLIGHT_DEFAULTS.cadenceMs })
    : undefined;
  stamp?.catch(() => undefined); // its failure is reported by the preflight, never as an unhandled rejection

  let server: RunningServer | undefined;
  let readiness: NonNullable<ServerInfo['readiness']> = { ready: false, waitedMs: 0 };
  const waitStart = Date.now();
  let baseUrl = url.replace(/\/+$/, '');
  let info: ServerInfo = { baseUrl: redact(profile.baseUrl), identity: {} };
  try {
    if (baseUrl.includes('{port}') || profile.start?.command.some((a) => a.includes('{port}'))) {
      const port = await freePort();
      baseUrl = baseUrl.replaceAll('{port}', String(port));
      profile.start &&= {
        ...profile.start,
        command: profile.start.command.map((a) => a.replaceAll('{port}', String(port))),
      };
    }
    if (profile.start) {
      log(`starting: ${profile.start.command.join(' ')}`);
      server = spawnServer(profile.start.command, { cwd: startCwd(profile.start), env: profile.start.env });
    }
    const boundMs = waitBoundMs(profile, settings.waitS);
    log(
      `waiting up to ${Math.round(boundMs / 1000)} s for ${baseUrl} to pass its readiness probe (${describeReadiness(profile.readiness)})`,
    );
    const waited = await waitReady(profile, baseUrl, headers, server, { boundMs, onProgress: log });
    readiness = { ready: true, waitedMs: Math.round(waited.waitedMs), probes: waited.probes };
    deadline = runDeadline(settings.deadlineS, Date.now());
    info = await discoverServer(profile, baseUrl, headers, server?.pid);
    // A model the user named that the server refuses: their configuration, said once (lib/server/model-served.ts).
    if (!wantsServerModel(profile.model)) {
      const refused = await modelNotServed(profile, baseUrl, headers, info.discovery?.reported.models, (note) =>
        info.discovery?.notes.push(note),
      );
      if (refused) throw new SetupError(refused);
    }
    const { identity } = info;
    console.log(
      `[${profile.id}] ready at ${redact(baseUrl)}: ${identity.name ?? 'unknown server'} ${identity.version ?? ''} (${identity.source}); ${describeDiscovery(info)}`,
    );
    for (const d of info.discovery?.disagreements ?? []) console.warn(`[${profile.id}] WARNING: ${d}`);
    for (const c of info.discovery?.conflicts ?? []) console.warn(`[${profile.id}] NOTE: ${c}`);
  } catch (e) {
    const failure: SetupFailure =
      e instanceof SetupError
        ? e.failure
        : {
            kind: 'error',
            summary: `setup failed: ${(e as Error).message ?? e}`,
            requirement: 'setup (start, readiness, discovery) completes',
            expected: 'no exception',
            actual: `${(e as Error).stack ?? e}`,
          };
    const printed = redact(printedSetupFailure(failure));
    provideRun({ setupError: printed });
    console.error(printed.replace(/^/gm, `[${profile.id}] `));
    // Never ready (the bound passed, or the process we started exited first): the CLI's own exit code.
    if (!readiness.ready)
      readiness = {
        ready: false,
        waitedMs: Date.now() - waitStart,
        reason: redact(failure.summary),
        boundPassed: e instanceof NeverReadyError,
      };
    info = { ...info, baseUrl: redact(baseUrl), setupFailure: redactDeep(failure) };
  }
  info = { ...info, readiness };
  // Credentials never travel in the provided base URL: the workers rebuild headers from the env var.
  provideRun({ server: info, profile });
  if (stamp && run.setupError) {
    // Nothing to check against: the preflight's second of streams would be spent for nothing.
    await stamp.then(
      (s) => s.stop(),
      () => undefined,
    );
  } else if (stamp) {
    const fidelity = await runPreflight({ server: stamp });
    provideRun({ fidelity });
    console.log(`[${profile.id}] ${describePreflight(fidelity)}`);
  }
  // The health sentinel's baseline: the server's own speed at the start, before any check (lib/server/sentinel.ts).
  if (!run.setupError && settings.sentinel) {
    const t0 = Date.now();
    const s = await measureBaseline({
      profile,
      server: info,
      memory: runMemory(run.stateFile),
      runId,
      deadlineAt: deadline?.checksEndAt,
    });
    console.log(
      `[${profile.id}] health sentinel: ${s.baseline ? `baseline of ${s.baseline.samples} probes of ${s.tokens} tokens: TTFT ${Math.round(s.baseline.ttftMs)} ms, ${Math.round(s.baseline.e2eMs)} ms end to end` : `off (${s.off})`} (${Date.now() - t0} ms)`,
    );
  }

  // A server the suite started is restarted when it stops answering mid-run (bounded; lib/server/supervisor.ts).
  const supervisor = await startSupervisor({
    processState: () => {
      if (!server) return undefined;
      const ex = server.exited();
      return ex
        ? `exited (code ${ex.code}${ex.signal ? `, signal ${ex.signal}` : ''})`
        : `alive (pid ${server.pid}) but not answering`;
    },
    restart: async () => {
      const argv = profile.start!.command;
      await server?.stop();
      console.log(`[${profile.id}] restarting: ${redact(argv.join(' '))}`);
      server = spawnServer(argv, { cwd: startCwd(profile.start!), env: profile.start!.env });
      await waitReady(profile, baseUrl, headers, server, {
        boundMs: bounded(waitBoundMs(profile, settings.waitS)),
        onProgress: log,
      });
      info = { ...info, startedPid: server.pid };
    },
    onRestart: (r) => {
      console.log(
        `[${profile.id}] server stopped answering during ${r.after} (${r.process}); last request: ${redact(r.request)}; ${r.detail}`,
      );
      info = { ...info, restarts: [...(info.restarts ?? []), { ...r, request: redact(r.request) }] };
      provideRun({ server: info });
    },
  });
  provideRun({ supervisor: run.setupError ? '' : supervisor.url });

  return async () => {
    await supervisor.close();
    await server?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  };
}
