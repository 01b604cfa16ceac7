// Server lifecycle: start a profile's command, wait for readiness within a bound, stop it and its children.
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { pathToFileURL } from 'node:url';
import { redact } from '../config/secrets.ts';
import { childEnv } from '../config/settings.ts';
import { bodyJson, bodyText, record } from '../http/recorder.ts';
import type { Profile, Readiness } from '../model/types.ts';
import { listModelIds, modelNotServed } from './model-served.ts';
import { SetupError } from './setup-failure.ts';

export { SetupError };

/** A free TCP port on loopback (for baseUrls with {port}). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolvePort(port));
    });
  });
}

export interface RunningServer {
  pid: number;
  child: ChildProcess;
  /** Last lines the server printed (stdout and stderr), for error messages. */
  lastLines(n?: number): string[];
  exited(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal); // the whole process group: the server and its children
  } catch {
    try {
      child.kill(signal);
    } catch {
      /* already gone */
    }
  }
}
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Vitest exits on Ctrl-C without running teardowns; 'exit' still fires, so children never outlive us.
  process.once('exit', () => {
    for (const c of live) killGroup(c, 'SIGKILL');
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      for (const c of live) killGroup(c, 'SIGKILL');
      process.exit(130);
    });
  }
}

/**
 * tsx's loader as this package resolves it: `node --import tsx` would resolve it from the child's working folder,
 * which need not hold it (a server started in the user's folder, the package installed elsewhere by npx).
 */
export const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** `--import tsx` in a node command line, pointed at this package's tsx. */
function withOwnTsx(args: string[]): string[] {
  return args.map((a, i) => (a === 'tsx' && args[i - 1] === '--import' ? TSX_LOADER : a));
}

/** Spawn argv (with {port} filled in) in its own process group, capturing its output. */
export function spawnServer(
  argv: string[],
  opts: { cwd?: string; env?: Record<string, string>; logLines?: number } = {},
): RunningServer {
  const [cmd, ...rest] = argv;
  const isNode = cmd === 'node' || cmd === process.execPath;
  const exe = cmd === 'node' ? process.execPath : cmd!;
  const args = isNode ? withOwnTsx(rest) : rest;
  const child = spawn(exe, args, {
    cwd: opts.cwd,
    env: childEnv(opts.env),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  installExitHook();
  live.add(child);
  const lines: string[] = [];
  const keep = opts.logLines ?? 40;
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let spawnError: Error | undefined;
  const onData = (d: Buffer) => {
    for (const l of d.toString('utf8').split(/\r?\n/)) {
      if (!l) continue;
      lines.push(redact(l));
      if (lines.length > keep) lines.shift();
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  child.on('error', (e) => {
    spawnError = e;
    lines.push(`spawn error: ${e.message}`);
  });
  const exitPromise = new Promise<void>((r) =>
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      live.delete(child);
      r();
    }),
  );
  return {
    pid: child.pid ?? -1,
    child,
    lastLines: (n = 20) => lines.slice(-n),
    exited: () => exitInfo ?? (spawnError ? { code: -1, signal: null } : undefined),
    async stop() {
      if (exitInfo || spawnError) return;
      killGroup(child, 'SIGTERM');
      const t = setTimeout(() => killGroup(child, 'SIGKILL'), 3_000);
      await exitPromise;
      clearTimeout(t);
    },
  };
}

/**
 * The URL a server started with `--port 0` prints as its `LISTENING http://127.0.0.1:PORT` line (the reference and
 * hostile servers, the stamping server of the preflight): binding the port itself, it has no free-port race. Stops
 * the server and throws, with the last lines it printed (on one line: the preflight's error is quoted inline), when no
 * such line comes within `timeoutMs` or it exits first.
 */
export async function waitForListening(server: RunningServer, timeoutMs: number, name = 'server'): Promise<string> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const url = server
      .lastLines(40)
      .map((l) => /^LISTENING (http:\/\/127\.0\.0\.1:\d+)/.exec(l)?.[1])
      .find(Boolean);
    if (url) return url;
    if (server.exited() || performance.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const ex = server.exited();
  await server.stop();
  throw new Error(
    (ex
      ? `${name} exited (code ${ex.code}, signal ${ex.signal}) before printing LISTENING`
      : `${name} did not print LISTENING within ${seconds(timeoutMs)}`) +
      `; last lines it printed: ${server.lastLines(10).join(' | ') || '(nothing)'}`,
  );
}

/**
 * A probe's network failure as a line: nothing listening yet (the common case while a server loads) in two words,
 * anything else as the recorder described it (a reset on a fresh connection says more than its code).
 */
function probeFailure(f: { kind: string; message: string }): string {
  return /\bECONNREFUSED\b/.test(f.message) ? 'connection refused (ECONNREFUSED)' : `${f.kind}: ${f.message}`;
}

/** One readiness probe; returns undefined when ready, else what it saw. */
async function probeReady(
  baseUrl: string,
  readiness: Readiness,
  model: string,
  headers: Record<string, string>,
): Promise<string | undefined> {
  const deadlines = { connectMs: 1_000, headersMs: 5_000, tokenIdleMs: 5_000, totalMs: 10_000 };
  if (readiness.kind === 'completion') {
    const rec = await record({
      url: `${baseUrl}/v1/chat/completions`,
      headers,
      body: { model, messages: [{ role: 'user', content: 'Say OK.' }], max_tokens: 1, stream: false },
      deadlines: { ...deadlines, headersMs: 60_000, totalMs: 60_000 },
    });
    if (rec.failure) return probeFailure(rec.failure);
    return rec.status === 200 ? undefined : `1-token completion answered HTTP ${rec.status}`;
  }
  const rec = await record({ url: `${baseUrl}${readiness.path}`, headers, deadlines });
  if (rec.failure) return probeFailure(rec.failure);
  const want = readiness.status ?? 200;
  if (rec.status !== want) return `GET ${readiness.path} answered HTTP ${rec.status} (waiting for ${want})`;
  if (readiness.bodyIncludes && !bodyText(rec).includes(readiness.bodyIncludes))
    return `GET ${readiness.path} body lacks ${JSON.stringify(readiness.bodyIncludes)}`;
  if (readiness.jsonField) {
    const { json } = bodyJson(rec);
    const v = (json as Record<string, unknown> | undefined)?.[readiness.jsonField];
    if (readiness.jsonEquals !== undefined ? v !== readiness.jsonEquals : v === undefined)
      return `GET ${readiness.path} field ${readiness.jsonField} is ${JSON.stringify(v)} (waiting for ${JSON.stringify(readiness.jsonEquals)})`;
  }
  return undefined;
}

/** Raised when the server never passed its readiness probe within the wait bound (the CLI's own exit code). */
export class NeverReadyError extends SetupError {}

/** The readiness probe in a few words: "GET /v1/models → 200", "a 1-token completion". */
export function describeReadiness(readiness: Readiness): string {
  return readiness.kind === 'completion'
    ? 'a 1-token chat completion answered 200'
    : `GET ${readiness.path} → ${readiness.status ?? 200}`;
}

/**
 * How long to wait for readiness: the run's wait bound (--wait, RunSettings.waitS) wins, else the profile's
 * startTimeoutMs. A model load takes minutes (vLLM's own benchmark waits 600 s for its endpoint), so profiles default to that.
 */
export function waitBoundMs(profile: Pick<Profile, 'startTimeoutMs'>, waitS?: number): number {
  return waitS === undefined ? profile.startTimeoutMs : waitS * 1000;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

interface WaitReadyOptions {
  /** Bound on the wait (ms); the default is waitBoundMs(profile). */
  boundMs?: number;
  /** Called about every progressEveryMs while waiting, with what the probe got and how long so far. */
  onProgress?: (line: string) => void;
  progressEveryMs?: number;
}

/**
 * Poll readiness until it holds or the bound passes, for a server the suite started as for one it did not (a server
 * still loading its model refuses connections or answers 503 for minutes). Fails at once if our process died.
 */
export async function waitReady(
  profile: Profile,
  baseUrl: string,
  headers: Record<string, string>,
  server?: RunningServer,
  opts: WaitReadyOptions = {},
): Promise<{ waitedMs: number; probes: number }> {
  const boundMs = opts.boundMs ?? waitBoundMs(profile);
  const every = opts.progressEveryMs ?? 10_000;
  const t0 = performance.now();
  const deadline = t0 + boundMs;
  let nextProgress = t0 + every;
  let last = 'not probed yet';
  let delay = 100;
  let probes = 0;
  while (probes < 100_000) {
    const ex = server?.exited();
    if (ex) {
      throw new SetupError({
        kind: 'never-ready',
        summary: `server "${profile.id}" exited before it was ready (code ${ex.code}, signal ${ex.signal})`,
        requirement: 'the server we started keeps running and passes its readiness probe within the wait bound',
        expected: `${describeReadiness(profile.readiness)} at ${redact(baseUrl)} within ${seconds(boundMs)}`,
        actual: `exited after ${seconds(performance.now() - t0)} (code ${ex.code}, signal ${ex.signal}), ${probes} probe(s), the last: ${last}`,
        evidence: lastLinesOf(server!),
      });
    }
    probes++;
    last = (await probeReady(baseUrl, profile.readiness, profile.model, headers)) ?? '';
    const now = performance.now();
    if (!last) return { waitedMs: now - t0, probes };
    // A completion probe refused for its model (Ollama's "not found, try pulling it first") is a configuration error
    // now, not a wait of the whole bound: when the server lists other models and refuses this one.
    if (profile.readiness.kind === 'completion' && /answered HTTP (400|404|422)$/.test(last)) {
      const refused = await modelNotServed(profile, baseUrl, headers, await listModelIds(baseUrl, headers));
      if (refused) throw new SetupError(refused);
    }
    if (now >= deadline) break;
    if (opts.onProgress && now >= nextProgress) {
      opts.onProgress(
        `waiting for ${redact(baseUrl)} to be ready: ${last} (${seconds(now - t0)} of ${seconds(boundMs)})`,
      );
      nextProgress = now + every;
    }
    // The last probe goes out at the bound itself, not a whole interval before it.
    await new Promise((r) => setTimeout(r, Math.min(delay, deadline - now)));
    delay = Math.min(delay * 1.5, 2_000);
  }
  throw new NeverReadyError({
    kind: 'never-ready',
    summary: `server "${profile.id}" was not ready within ${seconds(boundMs)} at ${redact(baseUrl)}`,
    requirement:
      "the server passes its readiness probe within the wait bound (--wait or CONFORMANCE_WAIT_S, else the profile's startTimeoutMs)",
    expected: `${describeReadiness(profile.readiness)} within ${seconds(boundMs)}`,
    actual: `${probes} probe(s), the last: ${last}`,
    ...(server ? { evidence: lastLinesOf(server) } : {}),
  });
}

/** What a server we started printed last: the evidence of why it never became ready. */
function lastLinesOf(server: RunningServer): string[] {
  const lines = server.lastLines(12).map((l) => redact(l));
  return lines.length ? ['its last lines:', ...lines] : ['it printed nothing'];
}

/**
 * Resident memory (KiB) of a process and its descendants via ps (works on Linux and macOS); undefined when the process
 * is not running. `skip`: leave out the processes whose command line it matches, and their descendants.
 */
export async function processTreeRssKiB(
  rootPid: number,
  opts: { skip?: (commandLine: string) => boolean } = {},
): Promise<number | undefined> {
  const out = await new Promise<string>((res) => {
    const ps = spawn('ps', ['-A', '-o', opts.skip ? 'pid=,ppid=,rss=,args=' : 'pid=,ppid=,rss='], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let s = '';
    ps.stdout.on('data', (d: Buffer) => (s += d.toString()));
    ps.on('close', () => res(s));
    ps.on('error', () => res(''));
  });
  const rows = out
    .trim()
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(\d+)(?:\s+(.*))?$/.exec(l))
    .filter((m): m is RegExpExecArray => !!m)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), rss: Number(m[3]), args: m[4] ?? '' }));
  const root = rows.find((r) => r.pid === rootPid);
  if (!root) return undefined;
  const children = new Map<number, typeof rows>();
  for (const r of rows) children.set(r.ppid, [...(children.get(r.ppid) ?? []), r]);
  let total = 0;
  const stack = [root];
  for (let guard = 0; stack.length && guard < 10_000; guard++) {
    const r = stack.pop()!;
    if (opts.skip?.(r.args)) continue;
    total += r.rss;
    stack.push(...(children.get(r.pid) ?? []));
  }
  return total;
}
