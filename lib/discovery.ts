// What answered, and how large a request it serves. Per-server adapters, never field sniffing:
// `max_tokens` is the window on one server (omlx capabilities) and a generation cap on others.
import type { DiscoveryAdapter, Profile, ServerInfo } from './types.ts';
import { record, bodyJson } from './client.ts';

type Json = Record<string, unknown>;
type Found = { value: number; source: string } | undefined;

async function getJson(baseUrl: string, path: string, headers: Record<string, string>): Promise<unknown> {
  const rec = await record({ url: `${baseUrl}${path}`, headers, deadlines: { connectMs: 2_000, headersMs: 5_000, tokenIdleMs: 5_000, totalMs: 8_000 } });
  if (rec.status !== 200) return undefined;
  return bodyJson(rec).json;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}
function pick(o: unknown, path: string[]): unknown {
  let cur = o;
  for (const k of path) cur = cur && typeof cur === 'object' ? (cur as Json)[k] : undefined;
  return cur;
}
function modelEntry(list: unknown, model: string): Json | undefined {
  const data = pick(list, ['data']) ?? pick(list, ['models']);
  if (!Array.isArray(data)) return undefined;
  return (data.find((m) => (m as Json)?.id === model || (m as Json)?.name === model || (m as Json)?.model === model) ?? (data.length === 1 ? data[0] : undefined)) as
    | Json
    | undefined;
}

interface Discovered { window?: Found; trained?: Found }

/** One adapter per server family: each knows exactly which endpoint and field is its per-request window. */
const adapters: Record<DiscoveryAdapter, (b: string, m: string, h: Record<string, string>) => Promise<Discovered>> = {
  none: async () => ({}),
  async reference(b, m, h) {
    const e = modelEntry(await getJson(b, '/v1/models', h), m);
    const w = num(e?.max_model_len);
    const t = num(e?.trained_context);
    return { window: w ? { value: w, source: 'GET /v1/models max_model_len' } : undefined, trained: t ? { value: t, source: 'GET /v1/models trained_context' } : undefined };
  },
  async 'llama.cpp'(b, m, h) {
    // n_ctx in /props and /slots is per slot (older builds split -c across -np).
    const slots = await getJson(b, '/slots', h);
    const fromSlots = Array.isArray(slots) ? num((slots[0] as Json)?.n_ctx) : undefined;
    const props = await getJson(b, '/props', h);
    const fromProps = num(pick(props, ['default_generation_settings', 'n_ctx']));
    const models = modelEntry(await getJson(b, '/v1/models', h), m);
    const trained = num(pick(models, ['meta', 'n_ctx_train']));
    const window: Found = fromSlots ? { value: fromSlots, source: 'GET /slots [0].n_ctx (per slot)' } : fromProps ? { value: fromProps, source: 'GET /props default_generation_settings.n_ctx (per slot)' } : undefined;
    return { window, trained: trained ? { value: trained, source: 'GET /v1/models meta.n_ctx_train' } : undefined };
  },
  async vllm(b, m, h) {
    const e = modelEntry(await getJson(b, '/v1/models', h), m);
    const w = num(e?.max_model_len);
    return { window: w ? { value: w, source: 'GET /v1/models max_model_len' } : undefined };
  },
  async 'rapid-mlx'(b, m, h) {
    const e = modelEntry(await getJson(b, '/v1/models', h), m);
    const cw = num(e?.context_window);
    const ml = num(e?.max_model_len);
    return { window: cw ? { value: cw, source: 'GET /v1/models context_window' } : ml ? { value: ml, source: 'GET /v1/models max_model_len' } : undefined };
  },
  async omlx(b, m, h) {
    const status = modelEntry(await getJson(b, '/v1/models/status', h), m);
    const fromStatus = num(status?.max_context_window);
    const e = modelEntry(await getJson(b, '/v1/models', h), m);
    const fromCaps = num(pick(e, ['capabilities', 'max_tokens'])); // omlx: effective max context window
    return {
      window: fromStatus
        ? { value: fromStatus, source: 'GET /v1/models/status max_context_window' }
        : fromCaps
          ? { value: fromCaps, source: 'GET /v1/models capabilities.max_tokens (omlx: the context window)' }
          : undefined,
    };
  },
  async ollama(b, m, h) {
    // context_length in /api/ps is what is allocated once the model is loaded.
    const ps = modelEntry(await getJson(b, '/api/ps', h), m);
    const w = num(ps?.context_length);
    const show = await record({ url: `${b}/api/show`, headers: h, body: { model: m }, deadlines: { connectMs: 2_000, headersMs: 10_000, tokenIdleMs: 10_000, totalMs: 10_000 } });
    const info = show.status === 200 ? (pick(bodyJson(show).json, ['model_info']) as Json | undefined) : undefined;
    const trainedKey = info ? Object.keys(info).find((k) => k.endsWith('.context_length')) : undefined;
    const t = trainedKey ? num(info![trainedKey]) : undefined;
    return {
      window: w ? { value: w, source: 'GET /api/ps context_length (after load)' } : undefined,
      trained: t ? { value: t, source: `POST /api/show model_info.${trainedKey}` } : undefined,
    };
  },
  async 'mlx-vlm'(b, _m, h) {
    const w = num(pick(await getJson(b, '/health', h), ['effective_context_limit']));
    return { window: w ? { value: w, source: 'GET /health effective_context_limit' } : undefined };
  },
  async 'mlx-omni'(b, m, h) {
    const e = modelEntry(await getJson(b, '/v1/models?include_details=true', h), m);
    const t = num(pick(e, ['details', 'max_position_embeddings']));
    return { trained: t ? { value: t, source: 'GET /v1/models?include_details=true details.max_position_embeddings' } : undefined };
  },
  async 'mlx-serve'(b, _m, h) {
    const w = num(pick(await getJson(b, '/props', h), ['default_generation_settings', 'n_ctx']));
    return { window: w ? { value: w, source: 'GET /props default_generation_settings.n_ctx' } : undefined };
  },
};

/** Declared value first, then the server's own per-request limit. The trained context is recorded separately. */
export async function discoverContext(profile: Profile, baseUrl: string, headers: Record<string, string>): Promise<Pick<ServerInfo, 'contextWindow' | 'trainedContext'>> {
  let found: Discovered = {};
  try {
    found = await adapters[profile.context.discovery](baseUrl, profile.model, headers);
  } catch {
    found = {};
  }
  const contextWindow = profile.context.declared
    ? { value: profile.context.declared, source: 'declared in profile (context.declared)' }
    : found.window;
  const trainedContext = profile.context.modelTrained
    ? { value: profile.context.modelTrained, source: 'declared in profile (context.modelTrained)' }
    : found.trained;
  return { contextWindow, trainedContext };
}

/** Record what answered (several servers default to port 8000): identity and version wherever the server tells. */
export async function discoverIdentity(baseUrl: string, headers: Record<string, string>): Promise<ServerInfo['identity']> {
  const probes: Array<[string, (j: unknown) => { name?: string; version?: string } | undefined]> = [
    ['/version', (j) => (pick(j, ['version']) ? { name: pick(j, ['name']) as string | undefined, version: String(pick(j, ['version'])) } : undefined)],
    ['/props', (j) => (pick(j, ['build_info']) ? { name: 'llama.cpp', version: String(pick(j, ['build_info'])) } : undefined)],
    ['/api/version', (j) => (pick(j, ['version']) ? { name: 'ollama-api', version: String(pick(j, ['version'])) } : undefined)],
  ];
  for (const [path, read] of probes) {
    const j = await getJson(baseUrl, path, headers).catch(() => undefined);
    const id = j === undefined ? undefined : read(j);
    if (id) return { ...id, source: `GET ${path}`, raw: typeof j === 'object' ? (j as Json) : undefined };
  }
  const models = await getJson(baseUrl, '/v1/models', headers).catch(() => undefined);
  const owner = pick(modelEntry(models, ''), ['owned_by']);
  if (typeof owner === 'string') return { name: owner, source: 'GET /v1/models owned_by' };
  const health = await getJson(baseUrl, '/health', headers).catch(() => undefined);
  if (health && typeof health === 'object') return { source: 'GET /health', raw: health as Json };
  return { source: 'nothing told (no /version, /props, /api/version, owned_by)' };
}
