// Context-window discovery is one adapter per server, reading that server's documented endpoint and field
// (docs/servers.md "Context discovery"), never field sniffing: omlx's capabilities.max_tokens is a window,
// while max_tokens elsewhere is a generation cap.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { effectiveProfile } from '../lib/config/effective.ts';
import type { DiscoveryAdapter, Profile } from '../lib/model/types.ts';
import {
  describeDiscovery,
  describeWindowDisagreement,
  discoverContext,
  discoverIdentity,
  discoverServer,
  windowDisagreement,
} from '../lib/server/discovery.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  server = undefined;
});

/** Serve fixed JSON per "METHOD path" (what each real server documents). */
async function serve(routes: Record<string, unknown>, headers: Record<string, string> = {}): Promise<string> {
  server = createServer((req, res) => {
    const body = routes[`${req.method} ${req.url}`];
    req.resume();
    if (body === undefined) res.writeHead(404, headers).end();
    else res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

const profile = (discovery: DiscoveryAdapter, extra: Partial<Profile['context']> = {}): Profile => ({
  id: 'p',
  baseUrl: 'http://x',
  model: 'm',
  apis: ['openai-chat'],
  readiness: { kind: 'completion' },
  startTimeoutMs: 1000,
  slots: 1,
  deterministic: false,
  context: { discovery, ...extra },
});

test.each([
  [
    'llama.cpp',
    {
      'GET /slots': [{ id: 0, n_ctx: 8192 }],
      'GET /v1/models': { data: [{ id: 'm', meta: { n_ctx_train: 131072 } }] },
    },
    8192,
    'GET /slots [0].n_ctx (per slot)',
    131072,
  ],
  [
    'llama.cpp',
    { 'GET /props': { default_generation_settings: { n_ctx: 4096 } } },
    4096,
    'GET /props default_generation_settings.n_ctx (per slot)',
    undefined,
  ],
  [
    'vllm',
    { 'GET /v1/models': { data: [{ id: 'm', max_model_len: 32768 }] } },
    32768,
    'GET /v1/models max_model_len',
    undefined,
  ],
  [
    'rapid-mlx',
    { 'GET /v1/models': { data: [{ id: 'm', context_window: 65536, max_model_len: 40960 }] } },
    65536,
    'GET /v1/models context_window',
    undefined,
  ],
  [
    'omlx',
    { 'GET /v1/models': { data: [{ id: 'm', capabilities: { max_tokens: 32768 } }] } },
    32768,
    'GET /v1/models capabilities.max_tokens (omlx: the context window)',
    undefined,
  ],
  [
    'omlx',
    { 'GET /v1/models/status': { models: [{ id: 'm', max_context_window: 32768 }] } },
    32768,
    'GET /v1/models/status max_context_window',
    undefined,
  ],
  [
    'ollama',
    {
      'GET /api/ps': { models: [{ name: 'm', context_length: 4096 }] },
      'POST /api/show': { model_info: { 'qwen3moe.context_length': 262144 } },
    },
    4096,
    'GET /api/ps context_length (after load)',
    262144,
  ],
  [
    'mlx-vlm',
    { 'GET /health': { status: 'healthy', effective_context_limit: 16384 } },
    16384,
    'GET /health effective_context_limit',
    undefined,
  ],
  [
    'mlx-omni',
    { 'GET /v1/models?include_details=true': { data: [{ id: 'm', details: { max_position_embeddings: 262144 } }] } },
    undefined,
    undefined,
    262144,
  ],
] as const)('%s adapter reads its own endpoint', async (adapter, routes, window, source, trained) => {
  const base = await serve(routes as Record<string, unknown>);
  const got = await discoverContext(profile(adapter), base, {});
  expect(got.contextWindow?.value).toBe(window);
  if (source) expect(got.contextWindow?.source).toBe(source);
  expect(got.trainedContext?.value).toBe(trained);
});

test('max_tokens is not read as a window by an adapter whose server means a generation cap by it', async () => {
  const base = await serve({
    'GET /v1/models': { data: [{ id: 'm', capabilities: { max_tokens: 32768 }, max_tokens: 32768 }] },
  });
  expect((await discoverContext(profile('vllm'), base, {})).contextWindow).toBeUndefined();
  expect((await discoverContext(profile('none'), base, {})).contextWindow).toBeUndefined();
});

test('a declared window wins over discovery, and the source says so; the trained context is kept apart', async () => {
  const base = await serve({ 'GET /v1/models': { data: [{ id: 'm', max_model_len: 32768 }] } });
  const got = await discoverContext(profile('vllm', { declared: 8192, modelTrained: 262144 }), base, {});
  expect(got.contextWindow).toEqual({ value: 8192, source: 'declared in profile (context.declared)' });
  expect(got.trainedContext).toEqual({ value: 262144, source: 'declared in profile (context.modelTrained)' });
});

test('identity: the server is named from what it tells (/version, /props build_info, /api/version, owned_by)', async () => {
  let base = await serve({ 'GET /props': { build_info: 'b6123-abc' } });
  expect(await discoverIdentity(base, {})).toMatchObject({
    name: 'llama.cpp',
    version: 'b6123-abc',
    source: 'GET /props build_info',
  });
  server!.closeAllConnections();
  await new Promise((r) => server!.close(r));
  base = await serve({ 'GET /v1/models': { data: [{ id: 'm', owned_by: 'vllm' }] } });
  expect(await discoverIdentity(base, {})).toMatchObject({ name: 'vllm', source: 'GET /v1/models owned_by' });
});

// ---- auto: identify the server, use its family's adapter, else the generic places; declared values win.

const undeclared = (model = ''): Profile => ({ ...profile('auto'), model, slots: undefined });

test.each([
  [
    '/v1/models max_model_len',
    { 'GET /v1/models': { data: [{ id: 'm', owned_by: 'system', max_model_len: 32768 }] } },
    32768,
    'GET /v1/models max_model_len',
  ],
  [
    '/v1/models context_length',
    { 'GET /v1/models': { data: [{ id: 'm', owned_by: 'system', context_length: 8192 }] } },
    8192,
    'GET /v1/models context_length',
  ],
  [
    '/v1/models context_window',
    { 'GET /v1/models': { data: [{ id: 'm', owned_by: 'x', context_window: 65536, max_model_len: 40960 }] } },
    65536,
    'GET /v1/models context_window',
  ],
  [
    '/props n_ctx per slot',
    { 'GET /props': { default_generation_settings: { n_ctx: 4096 }, total_slots: 2 } },
    4096,
    'GET /props default_generation_settings.n_ctx (per slot)',
  ],
] as const)(
  'auto on an unidentified server reads the served window from %s',
  async (_label, routes, window, source) => {
    const base = await serve(routes as Record<string, unknown>);
    const info = await discoverServer(undeclared('m'), base, {});
    expect(info.contextWindow).toEqual({ value: window, source });
    expect(info.discovery?.adapter).toBe('generic');
  },
);

test('auto on llama.cpp: identified by /props, window and slots per slot from /props, n_ctx_train recorded as trained only', async () => {
  const base = await serve({
    'GET /props': { build_info: 'b4747', default_generation_settings: { n_ctx: 16384 }, total_slots: 4 },
    'GET /v1/models': { data: [{ id: 'tiny', owned_by: 'llamacpp', meta: { n_ctx_train: 131072 } }] },
  });
  const info = await discoverServer(undeclared('default'), base, {});
  expect(info.identity.name).toBe('llama.cpp');
  expect(info.discovery?.adapter).toBe('llama.cpp, then generic');
  expect(info.model).toEqual({ value: 'tiny', source: expect.stringContaining('the only model listed') });
  expect(info.contextWindow).toEqual({
    value: 16384,
    source: 'GET /props default_generation_settings.n_ctx (per slot)',
  });
  expect(info.slots).toEqual({ value: 4, source: 'GET /props total_slots' });
  expect(info.trainedContext).toEqual({ value: 131072, source: 'GET /v1/models meta.n_ctx_train (trained)' });
  expect(effectiveProfile(undeclared('default'), info)).toMatchObject({ model: 'tiny', slots: 4 });
});

test('trained-context fields are never the served window: n_ctx_train alone leaves the window unknown, with a note', async () => {
  const base = await serve({ 'GET /v1/models': { data: [{ id: 'm', owned_by: 'x', n_ctx_train: 131072 }] } });
  const info = await discoverServer(undeclared('m'), base, {});
  expect(info.contextWindow).toBeUndefined();
  expect(info.trainedContext).toEqual({ value: 131072, source: 'GET /v1/models n_ctx_train (trained)' });
  expect(info.discovery?.notes.join(' ')).toContain('not the served window');
});

test("Ollama's /api/show context_length is the trained context, /api/ps the served one", async () => {
  const base = await serve({
    'GET /api/version': { version: '0.12.0' },
    'POST /api/show': { model_info: { 'llama.context_length': 131072 } },
  });
  const info = await discoverServer(undeclared('m'), base, {});
  expect(info.discovery?.adapter).toBe('ollama, then generic');
  expect(info.contextWindow).toBeUndefined();
  expect(info.trainedContext?.value).toBe(131072);
});

test('declared values win; a declared value the server contradicts is a disagreement naming both sources', async () => {
  const base = await serve({
    'GET /props': { build_info: 'b1', default_generation_settings: { n_ctx: 4096 }, total_slots: 1 },
    'GET /v1/models': { data: [{ id: 'a' }] },
  });
  const p: Profile = { ...profile('auto', { declared: 8192 }), model: 'a', slots: 4 };
  const info = await discoverServer(p, base, {});
  expect(info.contextWindow).toEqual({ value: 8192, source: 'declared in profile (context.declared)' });
  expect(info.slots).toEqual({ value: 4, source: 'declared in profile (slots)' });
  expect(info.discovery?.disagreements).toEqual([
    'context window: declared 8192 (context.declared) but the server reports 4096 (GET /props default_generation_settings.n_ctx (per slot)); using the declared value',
    'slots: declared 4 (slots) but the server reports 1 (GET /props total_slots); using the declared value',
  ]);
});

test('model: none or "default" resolves to the one listed model; several listed keep the name and say so; unknown slots stay unknown', async () => {
  let base = await serve({ 'GET /v1/models': { data: [{ id: 'only-one' }] } });
  expect((await discoverServer(undeclared(''), base, {})).model?.value).toBe('only-one');
  server!.closeAllConnections();
  await new Promise((r) => server!.close(r));
  base = await serve({ 'GET /v1/models': { data: [{ id: 'a' }, { id: 'b' }] } });
  const info = await discoverServer(undeclared('default'), base, {});
  expect(info.model).toEqual({ value: 'default', source: 'declared in profile (model)' });
  expect(info.discovery?.notes[0]).toContain('lists 2 models');
  expect(info.slots).toBeUndefined();
  expect(effectiveProfile(undeclared('default'), info).slots).toBeUndefined();
});

// ---- several answers combined: the story of a llama.cpp fork that answers /version without naming a family, states
// the total over its 4 slots as max_model_len and what one slot holds in /slots.

const slot = (id: number) => ({ id, n_ctx: 16384, is_processing: false });

test('a fork: /version answers, owned_by "llamacpp" identifies it; the window is the per-slot n_ctx, the total is recorded beside it', async () => {
  const base = await serve({
    'GET /version': { version: '2026.1-fork' },
    'GET /v1/models': { data: [{ id: 'm', owned_by: 'llamacpp', max_model_len: 65536 }] },
    'GET /slots': [slot(0), slot(1), slot(2), slot(3)],
  });
  const info = await discoverServer(undeclared('m'), base, {});
  expect(info.identity).toMatchObject({ name: 'llamacpp', version: '2026.1-fork', source: 'GET /v1/models owned_by' });
  expect(info.identity.signals?.map((s) => s.source)).toEqual(['GET /version', 'GET /v1/models owned_by']);
  expect(info.discovery?.adapter).toBe('llama.cpp, then generic');
  expect(info.discovery?.why).toContain('GET /v1/models owned_by "llamacpp"');
  expect(info.contextWindow).toEqual({ value: 16384, source: 'GET /slots [0].n_ctx (per slot)' });
  expect(info.slots).toEqual({ value: 4, source: 'GET /slots (one entry per slot)' });
  expect(info.discovery?.reported.windows).toEqual([
    { value: 16384, source: 'GET /slots [0].n_ctx (per slot)' },
    { value: 65536, source: 'GET /v1/models max_model_len' },
  ]);
  expect(info.discovery?.conflicts).toEqual([
    expect.stringMatching(/65536 \(GET \/v1\/models max_model_len\) and 16384 .*using 16384, the smallest/),
  ]);
  expect(info.discovery?.disagreements).toEqual([]);
  const d = windowDisagreement(info);
  expect(d && describeWindowDisagreement(d)).toBe(
    'advertised 65536 (GET /v1/models max_model_len), each slot holds 16384 (GET /slots [0].n_ctx (per slot))',
  );
  expect(describeDiscovery(info)).toContain('the server also states 65536 (GET /v1/models max_model_len)');
});

test('the Server header identifies llama.cpp when nothing else names it; a declared window still wins over every figure', async () => {
  const base = await serve(
    {
      'GET /props': { default_generation_settings: { n_ctx: 4096 }, total_slots: 2 },
      'GET /v1/models': { data: [{ id: 'm', max_model_len: 8192 }] },
    },
    { server: 'llama.cpp' },
  );
  const info = await discoverServer(undeclared('m'), base, {});
  expect(info.identity).toMatchObject({ name: 'llama.cpp', source: 'Server header' });
  expect(info.discovery?.adapter).toBe('llama.cpp, then generic');
  expect(info.contextWindow?.value).toBe(4096);
  const declared = await discoverServer(
    { ...undeclared('m'), context: { discovery: 'auto', declared: 6000 } },
    base,
    {},
  );
  expect(declared.contextWindow).toEqual({ value: 6000, source: 'declared in profile (context.declared)' });
  expect(windowDisagreement(declared)).toBeUndefined();
  expect(declared.discovery?.disagreements[0]).toContain(
    'declared 6000 (context.declared) but the server reports 4096',
  );
});

test('a server that states one window has no conflict, however many places state it', async () => {
  const base = await serve({
    'GET /props': { build_info: 'b1', default_generation_settings: { n_ctx: 2048 }, total_slots: 4 },
    'GET /slots': [{ id: 0, id_task: -1, n_ctx: 2048, params: {} }],
    'GET /v1/models': { data: [{ id: 'm', owned_by: 'llamacpp', meta: { n_ctx_train: 131072 } }] },
  });
  const info = await discoverServer(undeclared('m'), base, {});
  expect(info.identity.signals?.map((s) => s.name)).toEqual(['llama.cpp', 'llamacpp', 'llama.cpp']);
  expect(info.contextWindow?.value).toBe(2048);
  expect(info.discovery?.reported.windows?.map((w) => w.value)).toEqual([2048, 2048]);
  expect(info.discovery?.conflicts).toEqual([]);
  expect(windowDisagreement(info)).toBeUndefined();
});
