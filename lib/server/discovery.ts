// What answered, which model it serves, how large a request it serves and how many at once. Per-server adapters,
// never field sniffing: `max_tokens` is the window on one server (omlx capabilities) and a generation cap on others.
// `auto` identifies the server and uses its family's adapter; for a server no adapter knows it reads only fields
// whose name says served window (context_window, max_model_len, context_length; llama.cpp-style n_ctx per slot).
// Trained-context fields (n_ctx_train, /api/show context_length) are recorded as trained, never as the window.
import type { DiscoveryAdapter, Profile, ServerInfo } from '../check/types.ts';
import { bodyJson, record } from '../http/recorder.ts';

type Json = Record<string, unknown>;
type Found = { value: number; source: string } | undefined;

async function getJson(baseUrl: string, path: string, headers: Record<string, string>): Promise<unknown> {
  const rec = await record({
    url: `${baseUrl}${path}`,
    headers,
    deadlines: { connectMs: 2_000, headersMs: 5_000, tokenIdleMs: 5_000, totalMs: 8_000 },
  });
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
  return (data.find((m) => (m as Json)?.id === model || (m as Json)?.name === model || (m as Json)?.model === model) ??
    (data.length === 1 ? data[0] : undefined)) as Json | undefined;
}

interface Discovered {
  window?: Found;
  trained?: Found;
  slots?: Found;
}

/** llama.cpp-style endpoints: /props (n_ctx per slot, total_slots) and /slots (one entry per slot). */
async function llamaStyle(b: string, h: Record<string, string>): Promise<Discovered> {
  // n_ctx in /props and /slots is per slot (older builds split -c across -np).
  const slots = await getJson(b, '/slots', h);
  const slotList =
    Array.isArray(slots) && slots.length && slots.every((x) => x && typeof x === 'object')
      ? (slots as Json[])
      : undefined;
  const fromSlots = num(slotList?.[0]?.n_ctx);
  const props = await getJson(b, '/props', h);
  const fromProps = num(pick(props, ['default_generation_settings', 'n_ctx']));
  const total = num(pick(props, ['total_slots']));
  return {
    window: fromSlots
      ? { value: fromSlots, source: 'GET /slots [0].n_ctx (per slot)' }
      : fromProps
        ? { value: fromProps, source: 'GET /props default_generation_settings.n_ctx (per slot)' }
        : undefined,
    slots: total
      ? { value: total, source: 'GET /props total_slots' }
      : slotList
        ? { value: slotList.length, source: 'GET /slots (one entry per slot)' }
        : undefined,
  };
}

/** Trained-context fields: recorded as trained, never used as the served window. */
function trainedIn(e: Json | undefined): Found {
  const meta = num(pick(e, ['meta', 'n_ctx_train']));
  if (meta) return { value: meta, source: 'GET /v1/models meta.n_ctx_train (trained)' };
  const top = num(e?.n_ctx_train);
  return top ? { value: top, source: 'GET /v1/models n_ctx_train (trained)' } : undefined;
}

/**
 * The generic places that report the *served* window, for servers no adapter knows: /v1/models context_window,
 * max_model_len, context_length (vLLM, Rapid-MLX, SGLang-style cards), then llama.cpp-style /props and /slots.
 */
async function generic(b: string, m: string, h: Record<string, string>): Promise<Discovered> {
  const e = modelEntry(await getJson(b, '/v1/models', h), m);
  const field = (['context_window', 'max_model_len', 'context_length'] as const).find((f) => num(e?.[f]));
  const fromModels: Found = field ? { value: num(e![field])!, source: `GET /v1/models ${field}` } : undefined;
  const ls = await llamaStyle(b, h);
  return { window: fromModels ?? ls.window, trained: trainedIn(e), slots: ls.slots };
}

/** One adapter per server family: each knows exactly which endpoint and field is its per-request window. */
const adapters: Record<
  Exclude<DiscoveryAdapter, 'auto'> | 'generic',
  (b: string, m: string, h: Record<string, string>) => Promise<Discovered>
> = {
  none: async () => ({}),
  generic,
  async reference(b, m, h) {
    const e = modelEntry(await getJson(b, '/v1/models', h), m);
    const w = num(e?.max_model_len);
    const t = num(e?.trained_context);
    const slots = await getJson(b, '/slots', h);
    return {
      window: w ? { value: w, source: 'GET /v1/models max_model_len' } : undefined,
      trained: t ? { value: t, source: 'GET /v1/models trained_context' } : undefined,
      slots:
        Array.isArray(slots) && slots.length
          ? { value: slots.length, source: 'GET /slots (one entry per slot)' }
          : undefined,
    };
  },
  async 'llama.cpp'(b, m, h) {
    const ls = await llamaStyle(b, h);
    return { ...ls, trained: trainedIn(modelEntry(await getJson(b, '/v1/models', h), m)) };
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
    return {
      window: cw
        ? { value: cw, source: 'GET /v1/models context_window' }
        : ml
          ? { value: ml, source: 'GET /v1/models max_model_len' }
          : undefined,
    };
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
    // context_length in /api/ps is what is allocated once the model is loaded; /api/show's is the trained one.
    const ps = modelEntry(await getJson(b, '/api/ps', h), m);
    const w = num(ps?.context_length);
    const show = await record({
      url: `${b}/api/show`,
      headers: h,
      body: { model: m },
      deadlines: { connectMs: 2_000, headersMs: 10_000, tokenIdleMs: 10_000, totalMs: 10_000 },
    });
    const info = show.status === 200 ? (pick(bodyJson(show).json, ['model_info']) as Json | undefined) : undefined;
    const trainedKey = info ? Object.keys(info).find((k) => k.endsWith('.context_length')) : undefined;
    const t = trainedKey ? num(info![trainedKey]) : undefined;
    return {
      window: w ? { value: w, source: 'GET /api/ps context_length (after load)' } : undefined,
      trained: t ? { value: t, source: `POST /api/show model_info.${trainedKey} (trained)` } : undefined,
    };
  },
  async 'mlx-vlm'(b, _m, h) {
    const w = num(pick(await getJson(b, '/health', h), ['effective_context_limit']));
    return { window: w ? { value: w, source: 'GET /health effective_context_limit' } : undefined };
  },
  async 'mlx-omni'(b, m, h) {
    const e = modelEntry(await getJson(b, '/v1/models?include_details=true', h), m);
    const t = num(pick(e, ['details', 'max_position_embeddings']));
    return {
      trained: t
        ? { value: t, source: 'GET /v1/models?include_details=true details.max_position_embeddings (trained)' }
        : undefined,
    };
  },
  async 'mlx-serve'(b, _m, h) {
    const ls = await llamaStyle(b, h);
    return { window: ls.window, slots: ls.slots };
  },
};

/** The family adapter for an identified server (names from discoverIdentity: /version name, /props, owned_by). */
function familyAdapter(identity: ServerInfo['identity']): Exclude<DiscoveryAdapter, 'auto' | 'none'> | undefined {
  const n = (identity.name ?? '').toLowerCase();
  if (n === 'llama.cpp' || n === 'llamacpp') return 'llama.cpp';
  if (n === 'vllm') return 'vllm';
  if (n === 'ollama-api' || n === 'ollama') return 'ollama';
  if (n === 'reference-server' || n === 'reference') return 'reference';
  if (n === 'rapid-mlx') return 'rapid-mlx';
  if (n === 'omlx') return 'omlx';
  if (n === 'mlx-vlm') return 'mlx-vlm';
  return undefined;
}

async function readAdapter(
  adapter: Exclude<DiscoveryAdapter, 'auto'> | 'generic',
  b: string,
  m: string,
  h: Record<string, string>,
): Promise<Discovered> {
  try {
    return await adapters[adapter](b, m, h);
  } catch {
    return {};
  }
}

/**
 * What the server reports: with `auto`, the identified family's adapter, and for any figure it did not give the
 * generic places; otherwise the declared adapter alone.
 */
async function reported(
  profile: Profile,
  baseUrl: string,
  model: string,
  headers: Record<string, string>,
  identity?: ServerInfo['identity'],
): Promise<{ found: Discovered; adapter: string; why: string }> {
  if (profile.context.discovery !== 'auto') {
    return {
      found: await readAdapter(profile.context.discovery, baseUrl, model, headers),
      adapter: profile.context.discovery,
      why: 'declared in profile (context.discovery)',
    };
  }
  const id = identity ?? (await discoverIdentity(baseUrl, headers));
  const family = familyAdapter(id);
  const own = family ? await readAdapter(family, baseUrl, model, headers) : {};
  const missing = !own.window || !own.trained || !own.slots;
  const gen = missing ? await readAdapter('generic', baseUrl, model, headers) : {};
  return {
    found: { window: own.window ?? gen.window, trained: own.trained ?? gen.trained, slots: own.slots ?? gen.slots },
    adapter: family ? `${family}, then generic` : 'generic',
    why: family
      ? `auto: identified as ${id.name} (${id.source})`
      : `auto: server not identified (${id.source}); generic places only`,
  };
}

/** Declared value first, then the server's own per-request limit. The trained context is recorded separately. */
export async function discoverContext(
  profile: Profile,
  baseUrl: string,
  headers: Record<string, string>,
): Promise<Pick<ServerInfo, 'contextWindow' | 'trainedContext' | 'slots'>> {
  const { found } = await reported(profile, baseUrl, profile.model, headers);
  return merge(profile, found).figures;
}

function merge(
  profile: Profile,
  found: Discovered,
): { figures: Pick<ServerInfo, 'contextWindow' | 'trainedContext' | 'slots'>; disagreements: string[] } {
  const disagreements: string[] = [];
  const pickOne = (declared: number | undefined, field: string, what: string, d: Found): Found => {
    if (declared === undefined) return d;
    if (d && d.value !== declared)
      disagreements.push(
        `${what}: declared ${declared} (${field}) but the server reports ${d.value} (${d.source}); using the declared value`,
      );
    return { value: declared, source: `declared in profile (${field})` };
  };
  return {
    figures: {
      contextWindow: pickOne(profile.context.declared, 'context.declared', 'context window', found.window),
      trainedContext: pickOne(profile.context.modelTrained, 'context.modelTrained', 'trained context', found.trained),
      slots: pickOne(profile.slots, 'slots', 'slots', found.slots),
    },
    disagreements,
  };
}

/** Model ids GET /v1/models lists (OpenAI `data[].id`, Ollama-style `models[].name`). */
async function listedModels(baseUrl: string, headers: Record<string, string>): Promise<string[] | undefined> {
  const list = await getJson(baseUrl, '/v1/models', headers).catch(() => undefined);
  const data = pick(list, ['data']) ?? pick(list, ['models']);
  if (!Array.isArray(data)) return undefined;
  return data.map((m) => (m as Json)?.id ?? (m as Json)?.name).filter((x): x is string => typeof x === 'string');
}

/** A profile that names no model (or "default") means the server's one model. */
function wantsServerModel(model: string): boolean {
  return model.trim() === '' || model === 'default';
}

/**
 * Everything setup learns about the server: identity, the model id to request, served and trained window, slots —
 * each with where it came from. Declared values win; a declared value the server contradicts is a disagreement.
 */
export async function discoverServer(
  profile: Profile,
  baseUrl: string,
  headers: Record<string, string>,
  startedPid?: number,
): Promise<ServerInfo> {
  const identity = await discoverIdentity(baseUrl, headers);
  const models = await listedModels(baseUrl, headers);
  const notes: string[] = [];
  let model: ServerInfo['model'];
  if (wantsServerModel(profile.model) && models?.length === 1) {
    model = {
      value: models[0]!,
      source: `GET /v1/models (the only model listed; profile names ${profile.model ? `"${profile.model}"` : 'none'})`,
    };
  } else {
    model = { value: profile.model, source: 'declared in profile (model)' };
    if (wantsServerModel(profile.model))
      notes.push(
        `the profile names ${profile.model ? `"${profile.model}"` : 'no model'} and GET /v1/models lists ${models ? `${models.length} models` : 'nothing readable'}: requests name ${JSON.stringify(profile.model)} as it is`,
      );
    else if (models && !models.includes(profile.model))
      notes.push(
        `model "${profile.model}" (declared) is not among the ${models.length} model(s) GET /v1/models lists (${models.slice(0, 5).join(', ')})`,
      );
  }
  const { found, adapter, why } = await reported(profile, baseUrl, model.value, headers, identity);
  const { figures, disagreements } = merge(profile, found);
  if (found.trained && !figures.contextWindow)
    notes.push(
      `only a trained context was reported (${found.trained.value}, ${found.trained.source}); it is not the served window`,
    );
  return {
    baseUrl,
    identity,
    model,
    ...figures,
    discovery: {
      adapter,
      why,
      reported: { window: found.window, trained: found.trained, slots: found.slots, models },
      disagreements,
      notes,
    },
    startedPid,
  };
}

/** The profile as checks see it: the resolved model id, and slots declared or discovered (undefined = unknown). Declared wins. */
export function effectiveProfile(profile: Profile, server: ServerInfo): Profile {
  return {
    ...profile,
    model: wantsServerModel(profile.model) ? (server.model?.value ?? profile.model) : profile.model,
    slots: profile.slots ?? server.slots?.value,
  };
}

/** One line per figure and where it came from, for setup messages. */
export function describeDiscovery(info: ServerInfo): string {
  const f = (x: { value: number | string; source: string } | undefined, unknown: string) =>
    x ? `${x.value} (${x.source})` : unknown;
  return [
    `model ${f(info.model, 'unknown')}`,
    `context window ${f(info.contextWindow, 'unknown (not discovered)')}`,
    `trained context ${f(info.trainedContext, 'unknown')}`,
    `slots ${f(info.slots, 'unknown (not reported; parallel checks judge what holds for any server)')}`,
    info.discovery ? `discovery: ${info.discovery.adapter} (${info.discovery.why})` : '',
  ]
    .filter(Boolean)
    .join('; ');
}

/** Record what answered (several servers default to port 8000): identity and version wherever the server tells. */
export async function discoverIdentity(
  baseUrl: string,
  headers: Record<string, string>,
): Promise<ServerInfo['identity']> {
  const probes: Array<[string, (j: unknown) => { name?: string; version?: string } | undefined]> = [
    [
      '/version',
      (j) =>
        pick(j, ['version'])
          ? { name: pick(j, ['name']) as string | undefined, version: String(pick(j, ['version'])) }
          : undefined,
    ],
    [
      '/props',
      (j) => (pick(j, ['build_info']) ? { name: 'llama.cpp', version: String(pick(j, ['build_info'])) } : undefined),
    ],
    [
      '/api/version',
      (j) => (pick(j, ['version']) ? { name: 'ollama-api', version: String(pick(j, ['version'])) } : undefined),
    ],
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
