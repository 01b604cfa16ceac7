// A requester for the fidelity preflight's stamping server (a reference server started with --stamp-send): the same
// headers, deadlines and request building a check gets, so the preflight measures the checks' own recording path.
import type { Requester } from '../model/check.ts';
import { freshMemory } from '../model/memory.ts';
import type { Profile } from '../model/types.ts';
import { makeRequester } from './requester.ts';

export function stampRequester(baseUrl: string, signal: AbortSignal, model = 'reference-model'): Requester {
  const profile: Profile = {
    id: 'fidelity',
    baseUrl,
    model,
    apis: ['openai-chat'],
    readiness: { kind: 'http', path: '/health' },
    startTimeoutMs: 30_000,
    slots: 1024,
    deterministic: false,
    context: { discovery: 'none' },
    forceLength: { ignoreEos: true },
  };
  return makeRequester({
    profile,
    server: { baseUrl, identity: {} },
    owner: 'preflight',
    memory: freshMemory(),
    signal,
    log: () => undefined,
  });
}
