// A Requester (lib/model/check.ts) from a profile and what setup found: the URL without credentials, the
// Authorization header, the deadlines, a nonce per request. What the check core builds a context on, and what the
// run's own requests (the health sentinel's probes, the fidelity preflight's streams) are sent with.
import { randomBytes } from 'node:crypto';
import { effectiveProfile } from '../config/effective.ts';
import { requestAuth } from '../config/request-auth.ts';
import { redact, stripUrlCredentials } from '../config/secrets.ts';
import { DEFAULT_DEADLINES } from '../http/recorder.ts';
import type { LocalSlice, Requester, RunMemory } from '../model/check.ts';
import type { Profile, ServerInfo } from '../model/types.ts';

interface RequesterOptions {
  profile: Profile;
  server: ServerInfo;
  /** Who sends: a check id, `sentinel`, `preflight`. */
  owner: string;
  /** The run's memory (lib/run/memory.ts): requests of one run share the server's pace, recordings, evidence. */
  memory: RunMemory;
  signal: AbortSignal;
  runId?: string;
  log?: (line: string) => void;
  /** Where the key variable is read (default: this process's environment, lib/config/request-auth.ts). */
  env?: NodeJS.ProcessEnv;
}

/** Requests numbered within the process: with the run id and random bytes, every prompt unique. */
const NONCES: LocalSlice<{ n: number }> = { name: 'nonces', create: () => ({ n: 0 }) };

export function makeRequester(o: RequesterOptions): Requester {
  // Credentials come from the profile's base URL; the URL we talk to is the one setup resolved (credentials stripped).
  const url = stripUrlCredentials(o.server.baseUrl).url;
  const { headers, secrets } = requestAuth(o.profile, o.env);
  const runId = o.runId ?? randomBytes(4).toString('hex');
  const nonces = o.memory.local(NONCES);
  return {
    owner: o.owner,
    memory: o.memory,
    // The resolved model id and the declared or discovered slots and APIs: what the requests name and checks judge.
    profile: effectiveProfile(o.profile, o.server),
    server: o.server,
    baseUrl: url.replace(/\/+$/, ''),
    headers,
    secrets,
    deadlines: { ...DEFAULT_DEADLINES, ...o.profile.deadlines },
    runId,
    nonce: () => `${runId}-${(++nonces.n).toString(36)}-${randomBytes(3).toString('hex')}`,
    log: (m) => (o.log ?? console.log)(redact(`[${o.owner}] ${m}`, secrets)),
    signal: o.signal,
  };
}
