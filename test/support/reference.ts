// Spawn the reference server (a real child process, real HTTP over loopback) for self-tests.
import { freePort, spawnServer, waitReady, type RunningServer } from '../../lib/lifecycle.ts';
import { loadServers, ROOT } from '../../lib/profile.ts';
import { discoverContext, discoverIdentity } from '../../lib/discovery.ts';
import type { Profile, ServerInfo } from '../../lib/types.ts';

export interface ReferenceHandle {
  baseUrl: string;
  server: RunningServer;
  profile: Profile;
  info: ServerInfo;
  stop(): Promise<void>;
}

/** The `reference` profile from servers.json, with overrides. */
export function referenceProfile(overrides: Partial<Profile> = {}): Profile {
  const p = loadServers().find((s) => s.id === 'reference');
  if (!p) throw new Error('servers.json has no "reference" profile');
  return { ...p, ...overrides, context: { ...p.context, ...overrides.context } };
}

export async function startReference(args: string[] = [], overrides: Partial<Profile> = {}): Promise<ReferenceHandle> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const server = spawnServer([process.execPath, '--import', 'tsx', 'fixtures/reference-server/main.ts', '--port', String(port), ...args], { cwd: ROOT });
  const profile = referenceProfile({ ...overrides, baseUrl });
  try {
    await waitReady(profile, baseUrl, {}, server);
  } catch (e) {
    await server.stop();
    throw e;
  }
  const info: ServerInfo = { baseUrl, identity: await discoverIdentity(baseUrl, {}), ...(await discoverContext(profile, baseUrl, {})), startedPid: server.pid };
  return { baseUrl, server, profile, info, stop: () => server.stop() };
}
