// Profiles are data validated at load: a wrong profile names the server and the field.

import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { DEFAULT_SERVERS_FILE, envProfile, isPaidHost, ProfileError, parseServers } from '../lib/config/profile.ts';

const minimal = (p: Record<string, unknown>) =>
  JSON.stringify({ servers: [{ id: 'srv', baseUrl: 'http://127.0.0.1:8000', model: 'm', ...p }] });

test('the shipped servers.json is valid and has a reference profile plus the seed servers', () => {
  const profiles = parseServers(readFileSync(DEFAULT_SERVERS_FILE, 'utf8'));
  const ids = profiles.map((p) => p.id);
  expect(ids).toContain('reference');
  for (const id of [
    'mlx-openai-server',
    'mlx-omni-server',
    'vllm-mlx',
    'rapid-mlx',
    'omlx',
    'mlx-vlm',
    'higgs',
    'mlx-serve',
    'ollama',
    'llama.cpp',
    'vllm',
  ])
    expect(ids).toContain(id);
  for (const p of profiles) expect(p.apiKeyEnv ?? 'ENV_NAME').toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/);
});

test('defaults are applied and /v1 is taken off the base URL', () => {
  const [p] = parseServers(minimal({ baseUrl: 'http://127.0.0.1:8000/v1/' }));
  expect(p!.baseUrl).toBe('http://127.0.0.1:8000');
  expect(p!.apis).toEqual(['openai-chat']);
  // Undeclared: discovered at setup (slots unknown unless the server reports them).
  expect(p!.slots).toBeUndefined();
  expect(p!.context.discovery).toBe('auto');
});

test.each([
  [minimal({ slots: 'four' }), /server "srv" \(servers\[0\]\): field "slots" must be integer/],
  [minimal({ slots: 0 }), /server "srv".*field "slots" must be >= 1/],
  [
    minimal({ apis: ['openai-chat', 'grpc'] }),
    /server "srv".*field "apis.1" must be equal to one of the allowed values/,
  ],
  [minimal({ context: { discovery: 'magic' } }), /server "srv".*field "context.discovery"/],
  [minimal({ apiKey: 'sk-123' }), /server "srv".*unknown field "apiKey"/],
  [
    minimal({ knownIssues: [{ check: 'sse.done-terminator' }] }),
    /server "srv".*missing required field "knownIssues.0.reason"/,
  ],
  [minimal({ readiness: { kind: 'http' } }), /server "srv".*readiness/],
  [JSON.stringify({ servers: [{ id: 'x', model: 'm' }] }), /server "x".*missing required field "baseUrl"/],
  ['{ not json', /not valid JSON/],
])('a bad profile fails with a message naming the server and field (%#)', (text, message) => {
  expect(() => parseServers(text)).toThrowError(ProfileError);
  expect(() => parseServers(text)).toThrowError(message);
});

test('duplicate ids are refused', () => {
  const text = JSON.stringify({
    servers: [
      { id: 'a', baseUrl: 'http://127.0.0.1:1', model: 'm' },
      { id: 'a', baseUrl: 'http://127.0.0.1:2', model: 'm' },
    ],
  });
  expect(() => parseServers(text)).toThrowError(/server "a": field "id" is not unique/);
});

test('the env profile comes from OPENAI_BASE_URL and refuses paid API hosts without the opt-in', () => {
  expect(envProfile({})).toBeUndefined();
  const p = envProfile({ OPENAI_BASE_URL: 'http://127.0.0.1:1234/v1', OPENAI_MODEL: 'qwen' })!;
  expect(p.id).toBe('env');
  expect(p.baseUrl).toBe('http://127.0.0.1:1234');
  expect(p.model).toBe('qwen');
  expect(p.apiKeyEnv).toBe('OPENAI_API_KEY');
  expect(() => envProfile({ OPENAI_BASE_URL: 'https://api.openai.com/v1' })).toThrowError(
    /paid API \(api\.openai\.com\).*CONFORMANCE_ALLOW_PAID_API=1/,
  );
  expect(envProfile({ OPENAI_BASE_URL: 'https://api.openai.com/v1', CONFORMANCE_ALLOW_PAID_API: '1' })!.id).toBe('env');
  expect(isPaidHost('https://my-resource.openai.azure.com')).toBe(true);
  expect(isPaidHost('http://localhost:8000')).toBe(false);
});
