// Which APIs a server offers (lib/server/api-discovery.ts): only a clear "no such route" leaves an API out; declared
// APIs are never probed; the probes are bounded. The reference server's own answers: test/undeclared.test.ts.

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { skipReason } from '../lib/check/check.ts';
import { parseApis } from '../lib/config/apis.ts';
import { effectiveProfile } from '../lib/config/effective.ts';
import { envProfile, ROOT } from '../lib/config/profile.ts';
import { compileSchema } from '../lib/config/schemas.ts';
import type { CheckDef } from '../lib/model/check.ts';
import type { Profile, ServerInfo } from '../lib/model/types.ts';
import { decideApi, describeApis, discoverApis } from '../lib/server/api-discovery.ts';

test.each([
  [{ status: 200, body: '{"choices":[{"text":"O"}]}' }, 'present'],
  // A broken API is not an absent one: its checks fail it.
  [{ status: 200, body: '<html>hello</html>' }, 'present'],
  [{ status: 400, body: '{"error":{"message":"prompt is required"}}' }, 'present'],
  [{ status: 422, body: '{"detail":[{"loc":["body","max_tokens"]}]}' }, 'present'],
  [{ status: 500, body: 'Internal Server Error' }, 'present'],
  [{ status: 503, body: '{"error":"busy"}' }, 'present'],
  // A 404 about the model (OpenAI model_not_found, Ollama's "not found, try pulling it") is not about the route.
  [{ status: 404, body: '{"error":{"code":"model_not_found","message":"The model `x` does not exist"}}' }, 'present'],
  [{ status: 404, body: '{"error":"model \\"x\\" not found, try pulling it first"}' }, 'present'],
  // No such route: FastAPI, Go's mux, llama-server, Express; a route for another method; "not implemented".
  [{ status: 404, body: '{"detail":"Not Found"}' }, 'absent'],
  [{ status: 404, body: '404 page not found' }, 'absent'],
  [{ status: 404, body: '{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}' }, 'absent'],
  [{ status: 404, body: 'Cannot POST /v1/messages' }, 'absent'],
  [{ status: 405, body: '' }, 'absent'],
  // LM Studio: 200 for a route it does not have, saying so.
  [{ status: 200, body: '{"error":"Unexpected endpoint or method. (POST /api/chat)"}' }, 'absent'],
  [{ status: 501, body: '{"error":{"code":501,"type":"not_supported_error"}}' }, 'absent'],
  // Nothing that decides: tested.
  [{ status: 401, body: '{"error":"unauthorized"}' }, 'unknown'],
  [{ status: 302, body: '' }, 'unknown'],
  [{ failure: { kind: 'headers-timeout', message: 'no response headers within 5000 ms' } }, 'unknown'],
  [{ failure: { kind: 'reset', message: 'other side closed' } }, 'unknown'],
] as const)('decideApi(%j) is %s', (answer, found) => {
  const d = decideApi(answer);
  expect(d.found).toBe(found);
  const status = 'status' in answer ? answer.status : undefined;
  expect(d.why).toMatch(status ? new RegExp(`^HTTP ${status}`) : /no answer to decide by/);
});

test('--apis names: canonical, the family names, an unknown one listing the valid ones', () => {
  expect(parseApis('openai-chat, completions,anthropic,ollama,ollama-native')).toEqual([
    'openai-chat',
    'openai-completions',
    'anthropic-messages',
    'ollama-native',
  ]);
  expect(() => parseApis('openai-chat,grpc')).toThrow(
    /unknown API "grpc"; the APIs are openai-chat, openai-completions, anthropic-messages, ollama-native \(or chat, completions, anthropic, ollama\)/,
  );
  expect(() => parseApis(' , ')).toThrow(/needs a comma-separated list/);
  // The env profile: openai-chat declared unless CONFORMANCE_APIS names others.
  expect(envProfile({ OPENAI_BASE_URL: 'http://127.0.0.1:1' })!.apis).toEqual(['openai-chat']);
  expect(envProfile({ OPENAI_BASE_URL: 'http://127.0.0.1:1', CONFORMANCE_APIS: 'ollama' })!.apis).toEqual([
    'ollama-native',
  ]);
  expect(() => envProfile({ OPENAI_BASE_URL: 'http://127.0.0.1:1', CONFORMANCE_APIS: 'soap' })).toThrow(
    /CONFORMANCE_APIS: unknown API "soap"/,
  );
});

let server: Server | undefined;
afterEach(async () => {
  if (!server) return;
  server.closeAllConnections();
  await new Promise((r) => server!.close(r));
  server = undefined;
});

const profile: Profile = {
  id: 'p',
  baseUrl: 'http://x',
  model: 'm',
  apis: ['openai-chat'],
  discoverApis: true,
  readiness: { kind: 'completion' },
  startTimeoutMs: 1000,
  deterministic: false,
  context: { discovery: 'none' },
};

test("a 200 in OpenAI's chat shape on /api/chat or /v1/messages is an alias, not that API (llama-server routes /api/chat to its chat handler)", () => {
  const openAi = '{"id":"c","object":"chat.completion","choices":[{"message":{"role":"assistant","content":"O"}}]}';
  expect(decideApi({ status: 200, body: openAi }, 'ollama-native')).toMatchObject({ found: 'absent' });
  expect(decideApi({ status: 200, body: openAi }, 'anthropic-messages').why).toMatch(/alias of the OpenAI route/);
  // The API's own shape, or the OpenAI routes themselves, are present.
  expect(decideApi({ status: 200, body: '{"message":{"content":"O"},"done":true}' }, 'ollama-native').found).toBe(
    'present',
  );
  expect(decideApi({ status: 200, body: '{"type":"message","content":[]}' }, 'anthropic-messages').found).toBe(
    'present',
  );
  expect(decideApi({ status: 200, body: openAi }, 'openai-completions').found).toBe('present');
});

test('a list the user wrote is complete: without "discoverApis" nothing is probed, the others are left out', async () => {
  const apis = await discoverApis({ ...profile, discoverApis: undefined }, 'http://127.0.0.1:9', {}, 'm', 400);
  expect(apis.map((f) => [f.api, f.source, f.found, f.tested])).toEqual([
    ['openai-chat', 'declared', 'declared', true],
    ['openai-completions', 'declared', 'absent', false],
    ['anthropic-messages', 'declared', 'absent', false],
    ['ollama-native', 'declared', 'absent', false],
  ]);
  // What the run prints: an API the list leaves out is "not declared", never read as declared.
  expect(describeApis(apis)).toBe(
    'openai-chat declared, openai-completions not declared, anthropic-messages not declared, ollama-native not declared',
  );
});

test('over HTTP: declared APIs are not asked; the others decided from their answers, a hang bounded', async () => {
  const asked: string[] = [];
  server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    req.resume();
    if (req.url === '/v1/completions') res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found');
    else if (req.url === '/api/chat') res.writeHead(200, { 'content-type': 'application/json' }).end('{"oops"');
    // /v1/messages never answers.
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
  const t0 = performance.now();
  const apis = await discoverApis(profile, base, {}, 'm', 400);
  expect(performance.now() - t0).toBeLessThan(2_000);
  expect(asked.sort()).toEqual(['POST /api/chat', 'POST /v1/completions', 'POST /v1/messages']);
  expect(apis.map((f) => [f.api, f.found, f.tested])).toEqual([
    ['openai-chat', 'declared', true],
    ['openai-completions', 'absent', false],
    ['anthropic-messages', 'unknown', true],
    ['ollama-native', 'present', true],
  ]);
  expect(apis[1]).toMatchObject({ endpoint: 'POST /v1/completions', status: 404, evidence: '404 page not found' });

  // What the checks see: the APIs not ruled out, and a skip that names the probe's answer.
  const info: ServerInfo = {
    baseUrl: base,
    identity: {},
    discovery: { adapter: 'none', why: '', reported: {}, disagreements: [], notes: [], apis },
  };
  expect(effectiveProfile(profile, info).apis).toEqual(['openai-chat', 'anthropic-messages', 'ollama-native']);
  const needs = (api: CheckDef['requires'][number]) => ({ id: 'x.y', requires: [api] }) as unknown as CheckDef;
  expect(skipReason(needs('ollama-native'), profile, info, 'quick')).toBeUndefined();
  expect(skipReason(needs('openai-completions'), profile, info, 'quick')).toBe(
    'the server does not offer capability "openai-completions": POST /v1/completions answered HTTP 404: no such route (404 page not found); name it in --apis (or the profile\'s "apis") to test it anyway',
  );
  // What results.json records (its schema is strict about each finding).
  const file = JSON.parse(readFileSync(`${ROOT}/fixtures/results/reference.json`, 'utf8'));
  file.header.server.discovery = info.discovery;
  const validate = compileSchema('results.schema.json');
  expect(validate(file), JSON.stringify(validate.errors)).toBe(true);
  file.header.server.discovery.apis[1].guess = 'x';
  expect(validate(file)).toBe(false);
  // Nothing probed (setup could not discover): what is declared is all there is.
  expect(skipReason(needs('openai-completions'), profile, { baseUrl: base, identity: {} }, 'quick')).toMatch(
    /does not declare capability "openai-completions"/,
  );
});
