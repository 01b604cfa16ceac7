// The real llama-server column of `npm run matrix`: when the llama.cpp bundle is found (CONFORMANCE_LLAMA_DIR, or
// llama.cpp/ beside the checkout) and its binary can run, a random-weight model is written and a servers file with one more
// profile, `llama-server-b4747`, is generated beside the matrix output. The suite starts and stops that server itself
// (the profile's start command), like any other; its configuration is the real-llama self-tests' tiny-4.

import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { B4747_KNOWN_ISSUES, LLAMA_CONFIGS } from '../fixtures/llama-configs.ts';
import { DEFAULT_SERVERS_FILE, loadServers } from '../lib/config/profile.ts';
import { settingsFromEnv } from '../lib/config/settings.ts';
import { findLlamaBundle, llamaRunnable, llamaServerProfile, makeLlamaModel } from '../lib/server/llama-server.ts';

export interface RealColumn {
  /** Project id the column runs as (absent when there is no real server to run). */
  project?: string;
  /** Environment for its `vitest run` (e.g. SERVERS_FILE naming its generated profile). */
  env?: NodeJS.ProcessEnv;
  /** One line for the console: what runs, or why nothing does. */
  note?: string;
  stop(): Promise<void>;
}

const REAL_LLAMA_PROJECT = 'llama-server-b4747';

export async function realLlamaColumn(out: string): Promise<RealColumn> {
  const none = (why: string): RealColumn => ({
    note: `real llama-server column: not run (${why})`,
    stop: async () => undefined,
  });
  const { bundle, searched } = findLlamaBundle(settingsFromEnv().llamaDir);
  if (!bundle) return none(`no llama.cpp bundle in ${searched.join(' or ')}`);
  const runnable = await llamaRunnable(bundle);
  if (!runnable.ok) return none(`${bundle.binary} cannot run here: ${runnable.reason}`);
  // The servers file as written (not as parsed, which fills defaults), plus the generated profile.
  const raw = JSON.parse(readFileSync(DEFAULT_SERVERS_FILE, 'utf8')) as { servers: Array<Record<string, unknown>> };
  const baseRaw = raw.servers.find((p) => p.id === 'llama.cpp');
  const base = loadServers().find((p) => p.id === 'llama.cpp');
  if (!baseRaw || !base) return none('servers.json has no "llama.cpp" profile');
  const cfg = LLAMA_CONFIGS['tiny-4'];
  const dir = resolve(out, 'real-llama');
  mkdirSync(dir, { recursive: true });
  const model = await makeLlamaModel(bundle, cfg.recipe, dir);
  const built = llamaServerProfile(base, { bundle, model, ...cfg.server });
  const profile: Record<string, unknown> = {
    ...baseRaw,
    id: REAL_LLAMA_PROJECT,
    description: `Real llama.cpp llama-server, the bundle's build b4747 (--version: ${runnable.version}; random-weight ${cfg.recipe} model, ${cfg.server.slots} slots: ${cfg.purpose})`,
    baseUrl: built.baseUrl,
    start: built.start,
    readiness: built.readiness,
    startTimeoutMs: built.startTimeoutMs,
    apis: cfg.profile?.apis ?? baseRaw.apis,
    knownIssues: [...((baseRaw.knownIssues as unknown[] | undefined) ?? []), ...B4747_KNOWN_ISSUES],
  };
  // The tiny model has no DRAM bound worth declaring (configs.ts): drop the profile's hardware.
  if (cfg.profile && 'hardware' in cfg.profile && cfg.profile.hardware === undefined) delete profile.hardware;
  const file = join(dir, 'servers.json');
  writeFileSync(
    file,
    `${JSON.stringify({ servers: [...raw.servers.filter((p) => p.id !== REAL_LLAMA_PROJECT), profile] }, null, 2)}\n`,
  );
  loadServers(file); // a profile the schema refuses fails here, naming the field, not in the middle of the matrix
  return {
    project: REAL_LLAMA_PROJECT,
    env: { SERVERS_FILE: file },
    note: `real llama-server column: ${REAL_LLAMA_PROJECT} (${cfg.recipe} model, ${cfg.server.slots} slots), profile in ${file}`,
    stop: async () => undefined,
  };
}
