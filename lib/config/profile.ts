// Server profiles: servers.json (or SERVERS_FILE) validated by its JSON Schema, plus the `env` profile
// built from OPENAI_BASE_URL. A wrong profile fails with a message naming the server and the field.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ErrorObject } from 'ajv';
import { isJsonObject } from '../json.ts';
import type { Profile } from '../model/types.ts';
import { parseApis } from './apis.ts';
import { parseJsonText } from './json-file.ts';
import { compileSchema } from './schemas.ts';
import { stripUrlCredentials } from './secrets.ts';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DEFAULT_SERVERS_FILE = resolve(ROOT, 'servers.json');

export class ProfileError extends Error {}

const validateServers = compileSchema('servers.schema.json');

/** Defaults for fields a profile may leave out. */
function withDefaults(p: Partial<Profile> & Pick<Profile, 'id' | 'baseUrl' | 'model'>): Profile {
  return {
    apis: ['openai-chat'],
    readiness: { kind: 'http', path: '/v1/models' },
    // A model load takes minutes; vLLM's own benchmark waits 600 s for its endpoint.
    startTimeoutMs: 600_000,
    deterministic: false,
    ...p,
    baseUrl: p.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, ''),
    // Undeclared capabilities are discovered (lib/server/discovery.ts): slots stay unknown unless declared or reported.
    context: { discovery: 'auto', ...p.context },
  };
}

/**
 * A relative `start.cwd` is relative to the servers file's folder (the file lives in the server's repository, the
 * suite elsewhere: a PR gate's action runs from its own checkout); an absolute one is kept.
 */
function withStartCwd(p: Profile, file: string): Profile {
  if (!p.start?.cwd) return p;
  return { ...p, start: { ...p.start, cwd: resolve(dirname(resolve(file)), p.start.cwd) } };
}

/** The folder a profile's server starts in (every start and restart): its start.cwd, else the suite's root. */
export function startCwd(start: NonNullable<Profile['start']>): string {
  return start.cwd ? resolve(ROOT, start.cwd) : ROOT;
}

function describeError(e: ErrorObject, servers: unknown[], file: string): string {
  const m = /^\/servers\/(\d+)(\/.*)?$/.exec(e.instancePath);
  let where = `${file}`;
  let field = e.instancePath || '(top level)';
  if (m) {
    const idx = Number(m[1]);
    const s = servers[idx] as { id?: unknown } | undefined;
    const id = typeof s?.id === 'string' ? `"${s.id}"` : `#${idx}`;
    where = `${file}: server ${id} (servers[${idx}])`;
    field = (m[2] ?? '').replace(/^\//, '').replace(/\//g, '.') || '(the profile itself)';
  }
  let detail = e.message ?? e.keyword;
  if (e.keyword === 'additionalProperties') {
    const extra = (e.params as { additionalProperty: string }).additionalProperty;
    return `${where}: unknown field "${field === '(the profile itself)' ? extra : `${field}.${extra}`}"`;
  }
  if (e.keyword === 'required') {
    const missing = (e.params as { missingProperty: string }).missingProperty;
    return `${where}: missing required field "${field === '(the profile itself)' ? missing : `${field}.${missing}`}"`;
  }
  if (e.keyword === 'enum') detail += ` (${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)})`;
  return `${where}: field "${field}" ${detail}`;
}

/** The smallest servers file, for messages about a file of the wrong shape. */
const SERVERS_EXAMPLE =
  '{ "servers": [ { "id": "my-server", "baseUrl": "http://127.0.0.1:8000", "model": "my-model" } ] }';

/** A servers file that is JSON but not an object holding a "servers" array: what it is, and what it should be. */
function shapeProblem(data: unknown, file: string): string | undefined {
  const what = (v: unknown) =>
    Array.isArray(v) ? 'an array' : v === null ? 'null' : typeof v === 'object' ? 'an object' : `a ${typeof v}`;
  let found: string | undefined;
  if (!isJsonObject(data))
    found = `it is ${what(data)}${Array.isArray(data) ? ' (a list of profiles goes under "servers")' : ''}`;
  else if (!('servers' in data))
    found = `it has no "servers" (its fields: ${Object.keys(data).join(', ') || 'none'})${'id' in data ? '; one profile goes inside the "servers" array' : ''}`;
  else if (!Array.isArray(data.servers)) found = `its "servers" is ${what(data.servers)}, not an array of profiles`;
  else if (!data.servers.length) found = 'its "servers" array is empty';
  if (!found) return undefined;
  return `${file}: a servers file is a JSON object whose "servers" array holds the profiles, e.g.\n    ${SERVERS_EXAMPLE}\n  but ${found} (docs/profiles.md lists every field)`;
}

/** Parse and validate a servers file's text. Throws ProfileError naming the line and column, or the server and field. */
export function parseServers(text: string, file = 'servers.json'): Profile[] {
  let data: unknown;
  try {
    data = parseJsonText(text, file);
  } catch (e) {
    throw new ProfileError((e as Error).message);
  }
  const shape = shapeProblem(data, file);
  if (shape) throw new ProfileError(shape);
  const servers = (data as { servers?: unknown })?.servers;
  if (!validateServers(data)) {
    const list = Array.isArray(servers) ? servers : [];
    // Keep the most specific errors (oneOf reports every branch; the deepest path says the most).
    const errors = (validateServers.errors ?? []).filter((e) => e.keyword !== 'oneOf' && e.keyword !== 'if');
    const msgs = [...new Set(errors.map((e) => describeError(e, list, file)))];
    throw new ProfileError(`invalid server profile(s):\n  - ${msgs.slice(0, 12).join('\n  - ')}`);
  }
  const profiles = (servers as Profile[]).map((p) => withStartCwd(withDefaults(p), file));
  const seen = new Set<string>();
  for (const p of profiles) {
    if (seen.has(p.id)) throw new ProfileError(`${file}: server "${p.id}": field "id" is not unique`);
    seen.add(p.id);
    for (const k of p.knownIssues ?? []) {
      if (!k.reason.trim())
        throw new ProfileError(`${file}: server "${p.id}": field "knownIssues" entry for ${k.check} has no reason`);
    }
  }
  return profiles;
}

export function loadServers(
  file = process.env.SERVERS_FILE ? resolve(process.env.SERVERS_FILE) : DEFAULT_SERVERS_FILE,
): Profile[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ProfileError(`cannot read servers file ${file}: ${(e as Error).message}`);
  }
  return parseServers(text, file);
}

/** Hosts of paid APIs: this suite fuzzes and loads its target, so these need an explicit opt-in. */
const PAID_API_HOSTS = [
  'api.openai.com',
  'api.anthropic.com',
  'openrouter.ai',
  'api.groq.com',
  'api.together.xyz',
  'api.together.ai',
  'api.mistral.ai',
  'api.deepseek.com',
  'generativelanguage.googleapis.com',
  'api.fireworks.ai',
  'api.cohere.com',
  'api.perplexity.ai',
  'api.x.ai',
  'openai.azure.com',
  'api.deepinfra.com',
  'inference.cerebras.ai',
  'api.cerebras.ai',
];
const PAID_OPT_IN_VAR = 'CONFORMANCE_ALLOW_PAID_API';

export function isPaidHost(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return false;
  }
  return PAID_API_HOSTS.some((h) => host === h || host.endsWith(`.${h}`));
}

/**
 * The `env` profile: any OpenAI-compatible server from OPENAI_BASE_URL (+ OPENAI_MODEL, and the key from the variable
 * CONFORMANCE_API_KEY_ENV names, OPENAI_API_KEY by default); CONFORMANCE_START (a shell command) and
 * CONFORMANCE_START_CWD let the suite start the server itself; CONFORMANCE_APIS names the APIs it offers (a complete list;
 * when unset, openai-chat is declared and the others are probed at setup). The CLI's --base-url, --model, --api-key-env, --start, --cwd and --apis set these. Returns undefined when OPENAI_BASE_URL is unset; throws when it points at a paid API without
 * the opt-in.
 */
export function envProfile(env: NodeJS.ProcessEnv = process.env): Profile | undefined {
  const raw = env.OPENAI_BASE_URL;
  if (!raw) return undefined;
  const { url } = stripUrlCredentials(raw);
  if (isPaidHost(url) && env[PAID_OPT_IN_VAR] !== '1') {
    throw new ProfileError(
      `OPENAI_BASE_URL points at a paid API (${new URL(url).hostname}); this suite fuzzes and loads its target. ` +
        `Set ${PAID_OPT_IN_VAR}=1 to run it there anyway.`,
    );
  }
  const keyVar = env.CONFORMANCE_API_KEY_ENV?.trim() || 'OPENAI_API_KEY';
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(keyVar))
    throw new ProfileError(`CONFORMANCE_API_KEY_ENV must name an environment variable, not "${keyVar}"`);
  const startCommand = env.CONFORMANCE_START?.trim();
  let apis: Profile['apis'] | undefined;
  try {
    apis = env.CONFORMANCE_APIS?.trim() ? parseApis(env.CONFORMANCE_APIS, 'CONFORMANCE_APIS') : undefined;
  } catch (e) {
    throw new ProfileError((e as Error).message);
  }
  return withDefaults({
    id: 'env',
    description: 'Built from OPENAI_BASE_URL / OPENAI_MODEL and the key variable',
    baseUrl: raw,
    model: env.OPENAI_MODEL ?? '',
    apiKeyEnv: keyVar,
    // Named APIs are the list; without one, chat is declared and the others are probed (lib/server/api-discovery.ts).
    ...(apis ? { apis } : { discoverApis: true }),
    readiness: { kind: 'http', path: '/v1/models' },
    ...(startCommand
      ? {
          start: {
            command: ['/bin/sh', '-c', startCommand],
            ...(env.CONFORMANCE_START_CWD ? { cwd: resolve(env.CONFORMANCE_START_CWD) } : {}),
          },
        }
      : {}),
    slots: env.CONFORMANCE_SLOTS ? Number(env.CONFORMANCE_SLOTS) || undefined : undefined,
    context: {
      discovery: 'auto',
      declared: env.CONFORMANCE_CONTEXT_WINDOW ? Number(env.CONFORMANCE_CONTEXT_WINDOW) : undefined,
    },
    assumptions: [
      'model, slots and context window discovered where the server reports them (CONFORMANCE_SLOTS / CONFORMANCE_CONTEXT_WINDOW declare them); APIs other than those declared (CONFORMANCE_APIS, openai-chat by default) probed at setup; determinism unknown',
    ],
  });
}
