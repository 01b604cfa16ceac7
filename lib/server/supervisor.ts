// The supervisor: a tiny loopback HTTP endpoint in the main Vitest process (where globalSetup started the server),
// through which a check's worker asks for a restart when the server it started stopped answering. Restarts are
// bounded; each records the check and the request after which the server stopped answering, and whether the
// process had exited or was alive but silent. No Vitest imports: global setup wires it up.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

interface RestartRecord {
  /** The check in flight. */
  after: string;
  /** The request after which it stopped answering (redacted, one line). */
  request: string;
  /** What the process did: "exited (code 1)", "alive (pid 123) but silent". */
  process: string;
  /** Whether it came back. */
  ok: boolean;
  detail: string;
}

interface RestartAnswer {
  restarted: boolean;
  /** Why not (no start command, too many restarts, did not come back). */
  reason?: string;
  process?: string;
  count: number;
}

interface SupervisorHooks {
  /** Whether the process the suite started is still running (undefined: we did not start it). */
  processState(): string | undefined;
  /** Stop and start the server again and wait for readiness; throws with the reason when it does not come back. */
  restart(): Promise<void>;
  onRestart(r: RestartRecord): void;
}

/** How long a process that stopped answering may take to finish exiting before it is called alive but silent. */
export const EXIT_GRACE_MS = 2_000;

/**
 * The process state once a dying process has had time to exit: a crash closes the listening socket (the probe sees
 * ECONNREFUSED) a moment before the exit event arrives, and on a loaded machine that moment can outlast the probe.
 */
async function settledState(hooks: SupervisorHooks): Promise<string | undefined> {
  const until = Date.now() + EXIT_GRACE_MS;
  let state = hooks.processState();
  while (state !== undefined && !/^exited/.test(state) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    state = hooks.processState();
  }
  return state;
}

/** Restarts per project run: a server that keeps dying is reported, not revived forever. */
export const MAX_RESTARTS = 3;

export async function startSupervisor(
  hooks: SupervisorHooks,
): Promise<{ url: string; restarts: RestartRecord[]; close(): Promise<void> }> {
  const restarts: RestartRecord[] = [];
  let busy: Promise<RestartAnswer> | undefined;
  const handle = async (after: string, request: string, unlessSilent?: string): Promise<RestartAnswer> => {
    const state = await settledState(hooks);
    if (state === undefined)
      return {
        restarted: false,
        reason: 'the suite did not start this server (no start command)',
        count: restarts.length,
      };
    // A process alive but silent again, after a restart that got no request answered: restarting once more would
    // only wait out the same floors again (a crash, the process gone, is still restarted).
    if (unlessSilent && !/^exited/.test(state))
      return { restarted: false, reason: unlessSilent, process: state, count: restarts.length };
    if (restarts.length >= MAX_RESTARTS)
      return {
        restarted: false,
        reason: `already restarted ${restarts.length} times in this run (at most ${MAX_RESTARTS})`,
        process: state,
        count: restarts.length,
      };
    const rec: RestartRecord = { after, request, process: state, ok: false, detail: '' };
    restarts.push(rec);
    try {
      await hooks.restart();
      rec.ok = true;
      rec.detail = 'restarted and ready';
    } catch (e) {
      rec.detail = `did not come back: ${(e as Error).message}`;
    }
    hooks.onRestart(rec);
    return rec.ok
      ? { restarted: true, process: state, count: restarts.length }
      : { restarted: false, reason: rec.detail, process: state, count: restarts.length };
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString('utf8')));
    req.on('end', async () => {
      let answer: RestartAnswer | { process?: string };
      try {
        if (req.url === '/restart') {
          const { after, request, unlessSilent } = JSON.parse(body || '{}') as {
            after?: string;
            request?: string;
            unlessSilent?: string;
          };
          // One restart at a time: a second worker asking meanwhile gets the same answer.
          busy ??= handle(
            String(after ?? 'unknown check'),
            String(request ?? 'unknown request'),
            unlessSilent ? String(unlessSilent) : undefined,
          ).finally(() => (busy = undefined));
          answer = await busy;
        } else answer = { process: hooks.processState() };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      } catch (e) {
        res.writeHead(500).end(
          JSON.stringify({
            restarted: false,
            reason: `supervisor error: ${(e as Error).message}`,
            count: restarts.length,
          }),
        );
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    restarts,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * Worker side: ask for a restart (bounded by `timeoutMs`, which must cover the server's start). `unlessSilent`: the
 * reason not to, should the process be alive (not exited).
 */
export async function requestRestart(
  url: string,
  after: string,
  request: string,
  timeoutMs: number,
  unlessSilent?: string,
): Promise<RestartAnswer> {
  try {
    const res = await fetch(`${url}/restart`, {
      method: 'POST',
      body: JSON.stringify({ after, request, unlessSilent }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return (await res.json()) as RestartAnswer;
  } catch (e) {
    return { restarted: false, reason: `the supervisor did not answer: ${(e as Error).message}`, count: 0 };
  }
}
