// What answered, which model it serves, how large a request it serves and how many at once. Per-server adapters,
// never field sniffing: `max_tokens` is the window on one server (omlx capabilities) and a generation cap on others.
// `auto` identifies the server from everything it answers (/version, /props, /api/version, owned_by, /slots, the
// Server header), uses its family's adapter, and reads the generic places too: fields whose name says served window
// (context_window, max_model_len, context_length; llama.cpp-style n_ctx per slot). Where the server states several
// windows (a total over the slots beside what one slot holds), the per-request window is the smallest, and every
// figure and disagreement is recorded. Trained-context fields (n_ctx_train, /api/show context_length) are recorded as
// trained, never as the window.

import { wantsServerModel } from '../config/effective.ts';
import { bodyJson, record } from '../http/recorder.ts';
import type { DiscoveryAdapter, IdentitySignal, Profile, ServerInfo } from '../model/types.ts';
import { describeApis, discoverApis } from './api-discovery.ts';

type Json = Record<string, unknown>;
type Stated = { value: number; source: string };
type Found = Stated | undefined;

interface Answer {
  status?: number;
  json: unknown;
  /** The Server response header, when sent. */
  server?: string;
}

/** GETs of one discovery, each path asked once (identity, models and adapters read the same endpoints). */
interface Io {
  base: string;
  headers: Record<string, string>;
  get(path: string): Promise<Answer>;
}

function ioFor(base: string, headers: Record<string, string>): Io {
  const seen = new Map<string, Promise<Answer>>();
  const fetchOnce = async (path: string): Promise<Answer> => {
    try {
      const rec = await record({
        url: `${base}${path}`,
        headers,
        deadlines: { connectMs: 2_000, headersMs: 5_000, tokenIdleMs: 5_000, totalMs: 8_000 },
      });
      const server = rec.headers?.server;
      return { status: rec.status, json: rec.status === 200 ? bodyJson(rec).json : undefined, server };
    } catch {
      return { json: undefined };
    }
  };
  return {
    base,
    headers,
    get(path) {
      let p = seen.get(path);
      if (!p) {
        p = fetchOnce(path);
        seen.set(path, p);
      }
      return p;
    },
  };
}
const getJson = async (io: Io, path: string): Promise<unknown> => (await io.get(path)).json;

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
/** A stated figure, or none: adapters list what they found. */
const stated = (value: number | undefined, source: string): Stated[] => (value ? [{ value, source }] : []);

interface Discovered {
  /** Every served-window figure found (the per-request window is the smallest). */
  windows: Stated[];
  trained?: Found;
  slots?: Found;
}

/** llama.cpp-style endpoints: /props (n_ctx per slot, total_slots) and /slots (one entry per slot). */
async function llamaStyle(io: Io): Promise<Discovered> {
  // n_ctx in /props and /slots is per slot (llama.cpp splits -c across -np).
  const slots = await getJson(io, '/slots');
  const slotList =
    Array.isArray(slots) && slots.length && slots.every((x) => x && typeof x === 'object')
      ? (slots as Json[])
      : undefined;
  const props = await getJson(io, '/props');
  const total = num(pick(props, ['total_slots']));
  return {
    windows: [
      ...stated(num(slotList?.[0]?.n_ctx), 'GET /slots [0].n_ctx (per slot)'),
      ...stated(
        num(pick(props, ['default_generation_settings', 'n_ctx'])),
        'GET /props default_generation_settings.n_ctx (per slot)',
      ),
    ],
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
 * max_model_len, context_length (vLLM, Rapid-MLX, SGLang-style cards; the first the card has), and llama.cpp-style
 * /slots and /props n_ctx per slot.
 */
async function generic(io: Io, m: string): Promise<Discovered> {
  const e = modelEntry(await getJson(io, '/v1/models'), m);
  const field = (['context_window', 'max_model_len', 'context_length'] as const).find((f) => num(e?.[f]));
  const ls = await llamaStyle(io);
  return {
    windows: [...(field ? stated(num(e![field]), `GET /v1/models ${field}`) : []), ...ls.windows],
    trained: trainedIn(e),
    slots: ls.slots,
  };
}

/** One adapter per server family: each knows exactly which endpoint and field is its per-request window. */
const adapters: Record<Exclude<DiscoveryAdapter, 'auto'> | 'generic', (io: Io, m: string) => Promise<Discovered>> = {
  none: async () => ({ windows: [] }),
  generic,
  async reference(io, m) {
    const e = modelEntry(await getJson(io, '/v1/models'), m);
    const t = num(e?.trained_context);
    const slots = await getJson(io, '/slots');
    const list = Array.isArray(slots) && slots.length ? (slots as Json[]) : undefined;
    return {
      windows: [
        ...stated(num(e?.max_model_len), 'GET /v1/models max_model_len'),
        ...stated(num(list?.[0]?.n_ctx), 'GET /slots [0].n_ctx (per slot)'),
      ],
      trained: t ? { value: t, source: 'GET /v1/models trained_context' } : undefined,
      slots: list ? { value: list.length, source: 'GET /slots (one entry per slot)' } : undefined,
    };
  },
  async 'llama.cpp'(io, m) {
    const ls = await llamaStyle(io);
    return { ...ls, trained: trainedIn(modelEntry(await getJson(io, '/v1/models'), m)) };
  },
  async vllm(io, m) {
    const e = modelEntry(await getJson(io, '/v1/models'), m);
    return { windows: stated(num(e?.max_model_len), 'GET /v1/models max_model_len') };
  },
  async 'rapid-mlx'(io, m) {
    const e = modelEntry(await getJson(io, '/v1/models'), m);
    const cw = num(e?.context_window);
    // context_window is Rapid-MLX's served window; max_model_len only where it is absent.
    return {
      windows: cw
        ? stated(cw, 'GET /v1/models context_window')
        : stated(num(e?.max_model_len), 'GET /v1/models max_model_len'),
    };
  },
  async omlx(io, m) {
    const status = modelEntry(await getJson(io, '/v1/models/status'), m);
    const fromStatus = num(status?.max_context_window);
    const e = modelEntry(await getJson(io, '/v1/models'), m);
    const fromCaps = num(pick(e, ['capabilities', 'max_tokens'])); // omlx: effective max context window
    return {
      windows: fromStatus
        ? stated(fromStatus, 'GET /v1/models/status max_context_window')
        : stated(fromCaps, 'GET /v1/models capabilities.max_tokens (omlx: the context window)'),
    };
  },
  async ollama(io, m) {
    // context_length in /api/ps is what is allocated once the model is loaded; /api/show's is the trained one.
    const ps = modelEntry(await getJson(io, '/api/ps'), m);
    const show = await record({
      url: `${io.base}/api/show`,
      headers: io.headers,
      body: { model: m },
      deadlines: { connectMs: 2_000, headersMs: 10_000, tokenIdleMs: 10_000, totalMs: 10_000 },
    });
    const info = show.status === 200 ? (pick(bodyJson(show).json, ['model_info']) as Json | undefined) : undefined;
    const trainedKey = info ? Object.keys(info).find((k) => k.endsWith('.context_length')) : undefined;
    const t = trainedKey ? num(info![trainedKey]) : undefined;
    return {
      windows: stated(num(ps?.context_length), 'GET /api/ps context_length (after load)'),
      trained: t ? { value: t, source: `POST /api/show model_info.${trainedKey} (trained)` } : undefined,
    };
  },
  async 'mlx-vlm'(io) {
    const w = num(pick(await getJson(io, '/health'), ['effective_context_limit']));
    return { windows: stated(w, 'GET /health effective_context_limit') };
  },
  async 'mlx-omni'(io, m) {
    const e = modelEntry(await getJson(io, '/v1/models?include_details=true'), m);
    const t = num(pick(e, ['details', 'max_position_embeddings']));
    return {
      windows: [],
      trained: t
        ? { value: t, source: 'GET /v1/models?include_details=true details.max_position_embeddings (trained)' }
        : undefined,
    };
  },
  async 'mlx-serve'(io) {
    const ls = await llamaStyle(io);
    return { windows: ls.windows, slots: ls.slots };
  },
};

/** The family adapter a server name stands for (names from /version, /props, owned_by, the Server header). */
function familyOf(name: string | undefined): Exclude<DiscoveryAdapter, 'auto' | 'none'> | undefined {
  const n = (name ?? '').toLowerCase();
  if (n === 'llama.cpp' || n === 'llamacpp') return 'llama.cpp';
  if (n === 'vllm') return 'vllm';
  if (n === 'ollama-api' || n === 'ollama') return 'ollama';
  if (n === 'reference-server' || n === 'reference') return 'reference';
  if (n === 'rapid-mlx') return 'rapid-mlx';
  if (n === 'omlx') return 'omlx';
  if (n === 'mlx-vlm') return 'mlx-vlm';
  return undefined;
}

/** The first signal that names a known family: which adapter `auto` uses, and why. */
function familyAdapter(
  identity: ServerInfo['identity'],
): { adapter: Exclude<DiscoveryAdapter, 'auto' | 'none'>; signal: IdentitySignal } | undefined {
  const signals = identity.signals ?? [{ source: identity.source ?? '', name: identity.name }];
  for (const s of signals) {
    const adapter = familyOf(s.name);
    if (adapter) return { adapter, signal: s };
  }
  return undefined;
}

async function readAdapter(
  adapter: Exclude<DiscoveryAdapter, 'auto'> | 'generic',
  io: Io,
  m: string,
): Promise<Discovered> {
  try {
    return await adapters[adapter](io, m);
  } catch {
    return { windows: [] };
  }
}

/** Every window figure once (the same endpoint and field read by the adapter and the generic places). */
function distinct(windows: Stated[]): Stated[] {
  const out: Stated[] = [];
  for (const w of windows) if (!out.some((o) => o.source === w.source)) out.push(w);
  return out;
}

/** The smallest stated window: a request larger than any one of them is not served (a slot holds only its share). */
function smallest(windows: Stated[]): Found {
  return windows.reduce<Found>((min, w) => (min === undefined || w.value < min.value ? w : min), undefined);
}

/**
 * What the server reports: with `auto`, the identified family's adapter and the generic places, every window figure
 * kept; otherwise the declared adapter alone.
 */
async function reported(
  profile: Profile,
  io: Io,
  model: string,
  identity?: ServerInfo['identity'],
): Promise<{ found: Discovered; adapter: string; why: string }> {
  if (profile.context.discovery !== 'auto') {
    return {
      found: await readAdapter(profile.context.discovery, io, model),
      adapter: profile.context.discovery,
      why: 'declared in profile (context.discovery)',
    };
  }
  const id = identity ?? (await identify(io));
  const family = familyAdapter(id);
  const own = family ? await readAdapter(family.adapter, io, model) : { windows: [] };
  const gen = await readAdapter('generic', io, model);
  const others = (id.signals ?? []).filter((s) => s !== family?.signal && s.name).map((s) => s.source);
  return {
    found: {
      windows: distinct([...own.windows, ...gen.windows]),
      trained: own.trained ?? gen.trained,
      slots: own.slots ?? gen.slots,
    },
    adapter: family ? `${family.adapter}, then generic` : 'generic',
    why: family
      ? `auto: identified as ${family.adapter} (${family.signal.source}${family.signal.name ? ` "${family.signal.name}"` : ''}${others.length ? `; also answered: ${others.join(', ')}` : ''})`
      : `auto: server not identified (${id.source}); generic places only`,
  };
}

/** Declared value first, then the server's own per-request limit. The trained context is recorded separately. */
export async function discoverContext(
  profile: Profile,
  baseUrl: string,
  headers: Record<string, string>,
): Promise<Pick<ServerInfo, 'contextWindow' | 'trainedContext' | 'slots'>> {
  const { found } = await reported(profile, ioFor(baseUrl, headers), profile.model);
  return merge(profile, found).figures;
}

/** Window figures the server states that differ: each named, and which one is used. */
function windowConflicts(windows: Stated[]): string[] {
  const used = smallest(windows);
  const larger = windows.filter((w) => used && w.value > used.value);
  if (!used || !larger.length) return [];
  return [
    `served window: the server states ${larger.map((w) => `${w.value} (${w.source})`).join(', ')} and ${used.value} (${used.source}); using ${used.value}, the smallest: a request above it is not served whatever the larger figure says`,
  ];
}

function merge(
  profile: Profile,
  found: Discovered,
): {
  figures: Pick<ServerInfo, 'contextWindow' | 'trainedContext' | 'slots'>;
  disagreements: string[];
  conflicts: string[];
} {
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
      contextWindow: pickOne(profile.context.declared, 'context.declared', 'context window', smallest(found.windows)),
      trainedContext: pickOne(profile.context.modelTrained, 'context.modelTrained', 'trained context', found.trained),
      slots: pickOne(profile.slots, 'slots', 'slots', found.slots),
    },
    disagreements,
    conflicts: windowConflicts(found.windows),
  };
}

/** Model ids GET /v1/models lists (OpenAI `data[].id`, Ollama-style `models[].name`). */
async function listedModels(io: Io): Promise<string[] | undefined> {
  const list = await getJson(io, '/v1/models');
  const data = pick(list, ['data']) ?? pick(list, ['models']);
  if (!Array.isArray(data)) return undefined;
  return data.map((m) => (m as Json)?.id ?? (m as Json)?.name).filter((x): x is string => typeof x === 'string');
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
  const io = ioFor(baseUrl, headers);
  const identity = await identify(io);
  const models = await listedModels(io);
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
  // The API probes are generation requests, the window's answers GETs: asked at once.
  const [{ found, adapter, why }, apis] = await Promise.all([
    reported(profile, io, model.value, identity),
    discoverApis(profile, baseUrl, headers, model.value),
  ]);
  const { figures, disagreements, conflicts } = merge(profile, found);
  const window = smallest(found.windows);
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
      reported: { window, trained: found.trained, slots: found.slots, models, windows: found.windows },
      disagreements,
      conflicts,
      notes,
      apis,
    },
    startedPid,
  };
}

/**
 * The served window beside the larger ones the server also states (a total over its slots, say), when it states
 * several and the smallest is the one used; undefined when it states one or the window was declared.
 */
export function windowDisagreement(server: ServerInfo): { served: Stated; larger: Stated[] } | undefined {
  const served = server.contextWindow;
  const windows = server.discovery?.reported.windows ?? [];
  if (!served || !windows.some((w) => w.source === served.source && w.value === served.value)) return undefined;
  const larger = windows.filter((w) => w.value > served.value);
  return larger.length ? { served, larger } : undefined;
}

/** "advertised 65536 (GET /v1/models max_model_len), each slot holds 16384 (GET /slots [0].n_ctx (per slot))". */
export function describeWindowDisagreement(d: { served: Stated; larger: Stated[] }): string {
  const perSlot = /per slot/.test(d.served.source);
  return `advertised ${d.larger.map((w) => `${w.value} (${w.source})`).join(', ')}, ${perSlot ? 'each slot holds' : 'but also'} ${d.served.value} (${d.served.source})`;
}

/** One line per figure and where it came from, for setup messages. */
export function describeDiscovery(info: ServerInfo): string {
  const f = (x: { value: number | string; source: string } | undefined, unknown: string) =>
    x ? `${x.value} (${x.source})` : unknown;
  const d = windowDisagreement(info);
  return [
    `model ${f(info.model, 'unknown')}`,
    `context window ${f(info.contextWindow, 'unknown (not discovered)')}${d ? `; the server also states ${d.larger.map((w) => `${w.value} (${w.source})`).join(', ')}` : ''}`,
    `trained context ${f(info.trainedContext, 'unknown')}`,
    `slots ${f(info.slots, 'unknown (not reported; parallel checks judge what holds for any server)')}`,
    info.discovery ? `discovery: ${info.discovery.adapter} (${info.discovery.why})` : '',
    info.discovery?.apis ? `APIs: ${describeApis(info.discovery.apis)}` : '',
  ]
    .filter(Boolean)
    .join('; ');
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

/**
 * Every answer that says what the server is, in order of trust: /version (name, version), /props build_info
 * (llama.cpp), /api/version (Ollama), /v1/models owned_by, llama.cpp's /slots fields, the Server header. The name is
 * the first one given; the adapter `auto` uses is the first that names a family it knows (a fork's /version may name
 * itself while its owned_by still says llamacpp).
 */
async function identify(io: Io): Promise<ServerInfo['identity']> {
  const signals: IdentitySignal[] = [];
  let raw: Json | undefined;
  const asObject = (j: unknown) => (j && typeof j === 'object' && !Array.isArray(j) ? (j as Json) : undefined);
  const version = await io.get('/version');
  if (pick(version.json, ['version']) !== undefined) {
    signals.push({
      source: 'GET /version',
      name: str(pick(version.json, ['name'])),
      version: String(pick(version.json, ['version'])),
    });
    raw ??= asObject(version.json);
  }
  const props = await io.get('/props');
  if (pick(props.json, ['build_info']) !== undefined) {
    signals.push({
      source: 'GET /props build_info',
      name: 'llama.cpp',
      version: String(pick(props.json, ['build_info'])),
    });
    raw ??= asObject(props.json);
  }
  const ollama = await io.get('/api/version');
  if (pick(ollama.json, ['version']) !== undefined) {
    signals.push({ source: 'GET /api/version', name: 'ollama-api', version: String(pick(ollama.json, ['version'])) });
    raw ??= asObject(ollama.json);
  }
  const models = await io.get('/v1/models');
  const owner = str(pick(modelEntry(models.json, ''), ['owned_by']));
  if (owner) signals.push({ source: 'GET /v1/models owned_by', name: owner });
  const slots = await io.get('/slots');
  const first = Array.isArray(slots.json) ? asObject(slots.json[0]) : undefined;
  if (first && 'id_task' in first && 'params' in first)
    signals.push({ source: 'GET /slots (llama.cpp slot fields id_task, params)', name: 'llama.cpp' });
  const header = [version, props, models, slots, ollama].map((a) => a.server).find((s) => s);
  if (header) signals.push({ source: 'Server header', name: /llama\.?cpp/i.test(header) ? 'llama.cpp' : header });
  const named = signals.find((s) => s.name);
  const versioned = signals.find((s) => s.version);
  if (named || versioned) {
    return {
      name: named?.name,
      version: versioned?.version,
      source: (named ?? versioned)!.source,
      raw,
      signals,
    };
  }
  const health = asObject(await getJson(io, '/health'));
  if (health) return { source: 'GET /health', raw: health, signals };
  return { source: 'nothing told (no /version, /props, /api/version, owned_by, /slots, Server header)', signals };
}

/** Record what answered (several servers default to port 8000): identity and version wherever the server tells. */
export async function discoverIdentity(
  baseUrl: string,
  headers: Record<string, string>,
): Promise<ServerInfo['identity']> {
  return identify(ioFor(baseUrl, headers));
}
