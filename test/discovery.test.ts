// Context-window discovery is one adapter per server, reading that server's documented endpoint and field
// (servers-notes.md "Context discovery"), never field sniffing: omlx's capabilities.max_tokens is a window,
// while max_tokens elsewhere is a generation cap.
import { test, expect, afterEach } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { discoverContext, discoverIdentity } from '../lib/discovery.ts';
import type { DiscoveryAdapter, Profile } from '../lib/types.ts';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  server = undefined;
});

/** Serve fixed JSON per "METHOD path" (what each real server documents). */
async function serve(routes: Record<string, unknown>): Promise<string> {
  server = createServer((req, res) => {
    const body = routes[`${req.method} ${req.url}`];
    req.resume();
    if (body === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

const profile = (discovery: DiscoveryAdapter, extra: Partial<Profile['context']> = {}): Profile => ({
  id: 'p', baseUrl: 'http://x', model: 'm', apis: ['openai-chat'], readiness: { kind: 'completion' }, startTimeoutMs: 1000, slots: 1, deterministic: false,
  context: { discovery, ...extra },
});

test.each([
  ['llama.cpp', { 'GET /slots': [{ id: 0, n_ctx: 8192 }], 'GET /v1/models': { data: [{ id: 'm', meta: { n_ctx_train: 131072 } }] } }, 8192, 'GET /slots [0].n_ctx (per slot)', 131072],
  ['llama.cpp', { 'GET /props': { default_generation_settings: { n_ctx: 4096 } } }, 4096, 'GET /props default_generation_settings.n_ctx (per slot)', undefined],
  ['vllm', { 'GET /v1/models': { data: [{ id: 'm', max_model_len: 32768 }] } }, 32768, 'GET /v1/models max_model_len', undefined],
  ['rapid-mlx', { 'GET /v1/models': { data: [{ id: 'm', context_window: 65536, max_model_len: 40960 }] } }, 65536, 'GET /v1/models context_window', undefined],
  ['omlx', { 'GET /v1/models': { data: [{ id: 'm', capabilities: { max_tokens: 32768 } }] } }, 32768, 'GET /v1/models capabilities.max_tokens (omlx: the context window)', undefined],
  ['omlx', { 'GET /v1/models/status': { models: [{ id: 'm', max_context_window: 32768 }] } }, 32768, 'GET /v1/models/status max_context_window', undefined],
  ['ollama', { 'GET /api/ps': { models: [{ name: 'm', context_length: 4096 }] }, 'POST /api/show': { model_info: { 'qwen3moe.context_length': 262144 } } }, 4096, 'GET /api/ps context_length (after load)', 262144],
  ['mlx-vlm', { 'GET /health': { status: 'healthy', effective_context_limit: 16384 } }, 16384, 'GET /health effective_context_limit', undefined],
  ['mlx-omni', { 'GET /v1/models?include_details=true': { data: [{ id: 'm', details: { max_position_embeddings: 262144 } }] } }, undefined, undefined, 262144],
] as const)('%s adapter reads its own endpoint', async (adapter, routes, window, source, trained) => {
  const base = await serve(routes as Record<string, unknown>);
  const got = await discoverContext(profile(adapter), base, {});
  expect(got.contextWindow?.value).toBe(window);
  if (source) expect(got.contextWindow?.source).toBe(source);
  expect(got.trainedContext?.value).toBe(trained);
});

test('max_tokens is not read as a window by an adapter whose server means a generation cap by it', async () => {
  const base = await serve({ 'GET /v1/models': { data: [{ id: 'm', capabilities: { max_tokens: 32768 }, max_tokens: 32768 }] } });
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
  expect(await discoverIdentity(base, {})).toMatchObject({ name: 'llama.cpp', version: 'b6123-abc', source: 'GET /props' });
  server!.closeAllConnections();
  await new Promise((r) => server!.close(r));
  base = await serve({ 'GET /v1/models': { data: [{ id: 'm', owned_by: 'vllm' }] } });
  expect(await discoverIdentity(base, {})).toMatchObject({ name: 'vllm', source: 'GET /v1/models owned_by' });
});
