// Spawn the reference server (a real child process, real HTTP over loopback) for self-tests.
import { spawnServer, waitReady, type RunningServer } from '../../lib/server/lifecycle.ts';
import { loadServers, ROOT } from '../../lib/config/profile.ts';
import { discoverServer } from '../../lib/server/discovery.ts';
import type { Profile, ServerInfo } from '../../lib/check/types.ts';

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
  // --port 0: the server binds an ephemeral port itself and prints it (no free-port race between processes).
  const server = spawnServer([process.execPath, '--import', 'tsx', 'fixtures/reference-server/main.ts', '--port', '0', ...args], { cwd: ROOT });
  let baseUrl: string | undefined;
  for (let i = 0; i < 400 && !baseUrl && !server.exited(); i++) {
    await new Promise((r) => setTimeout(r, 50));
    baseUrl = server.lastLines(40).map((l) => /^LISTENING (http:\/\/127\.0\.0\.1:\d+)/.exec(l)?.[1]).find(Boolean);
  }
  if (!baseUrl) {
    await server.stop();
    throw new Error(`reference server ${args.join(' ')} did not print LISTENING within 20 s: ${server.lastLines().join('\n')}`);
  }
  const profile = referenceProfile({ ...overrides, baseUrl });
  try {
    await waitReady(profile, baseUrl, {}, server);
  } catch (e) {
    await server.stop();
    throw e;
  }
  const info: ServerInfo = await discoverServer(profile, baseUrl, {}, server.pid);
  return { baseUrl, server, profile, info, stop: () => server.stop() };
}
