// Nothing declared, against a server that tells nothing but /v1/models max_model_len (reference server
// `--persona plain`): setup discovers the model and the window, slots stay unknown, and the parallel family's own
// measurement decides whether the multi-slot checks run (batching at 2 concurrent) or skip (serialised).

import { randomBytes } from 'node:crypto';
import { afterAll, expect, test } from 'vitest';
import { type ReferenceHandle, startReference } from '../fixtures/reference-server/spawn.ts';
import { grade, runCheck, skipReason } from '../lib/check/check.ts';
import { freshMemory } from '../lib/model/memory.ts';
import type { Profile } from '../lib/model/types.ts';
import { discoverServer } from '../lib/server/discovery.ts';
import { families } from '../suites/catalogue.ts';

const started: ReferenceHandle[] = [];
afterAll(async () => {
  await Promise.all(started.map((s) => s.stop()));
});

async function plain(args: string[] = []): Promise<{ ref: ReferenceHandle; profile: Profile }> {
  const ref = await startReference(['--persona', 'plain', ...args]);
  started.push(ref);
  // What envProfile() gives for OPENAI_BASE_URL alone: no model, no slots, discovery auto.
  const profile: Profile = {
    ...ref.profile,
    model: '',
    slots: undefined,
    apis: ['openai-chat'],
    discoverApis: true,
    context: { discovery: 'auto' },
  };
  return { ref, profile };
}

const check = (id: string) => families.parallel!.checks.find((c) => c.id === id)!;

test('setup discovers the model and the served window from /v1/models alone; slots are unknown', async () => {
  const { ref, profile } = await plain();
  const info = await discoverServer(profile, ref.baseUrl, {});
  expect(info.identity.name).toBe('system');
  expect(info.discovery?.adapter).toBe('generic');
  expect(info.model).toEqual({ value: 'reference-model', source: expect.stringContaining('the only model listed') });
  expect(info.contextWindow).toEqual({ value: 4096, source: 'GET /v1/models max_model_len' });
  expect(info.slots).toBeUndefined();
  expect(skipReason(check('parallel.no-starvation'), profile, info, 'quick')).toBeUndefined();
  // The APIs the env profile does not declare are found by one 1-token request each: no check needing one skips.
  expect(info.discovery?.apis?.map((f) => `${f.api} ${f.found} ${f.status ?? ''}`.trim())).toEqual([
    'openai-chat declared',
    'openai-completions present 200',
    'anthropic-messages present 200',
    'ollama-native present 200',
  ]);
  const needsApi = Object.values(families).flatMap((f) =>
    f!.checks.filter((c) => c.requires.some((r) => r !== 'openai-chat' && /^(openai|anthropic|ollama)-/.test(r))),
  );
  expect(needsApi.length).toBeGreaterThan(10);
  for (const c of needsApi)
    expect(skipReason(c, profile, info, 'quick') ?? '', c.id).not.toMatch(/capability "(openai|anthropic|ollama)-/);
});

test('measured batching (slots unknown) enables parallel.no-starvation at 2 concurrent', async () => {
  const { ref, profile } = await plain();
  const server = await discoverServer(profile, ref.baseUrl, {});
  const o = {
    memory: freshMemory(),
    profile,
    server,
    tier: 'quick' as const,
    strict: false,
    runId: randomBytes(4).toString('hex'),
    log: () => undefined,
  };
  const sp = await runCheck(check('parallel.speedup-2'), o);
  expect(grade(check('parallel.speedup-2'), sp.verdict, profile, false).outcome, sp.verdict.message).toBe('pass');
  expect(sp.verdict.message).toContain('batching observed at 2 concurrent');
  const ns = await runCheck(check('parallel.no-starvation'), o);
  expect(ns.verdict.outcome, ns.verdict.message).toBe('pass');
  expect(ns.verdict.message).toContain('all 2 streams progressed together');
  expect((ns.verdict.metrics as { slots?: number }).slots).toBe(2);
}, 120_000);

test('a serialising server with slots unknown: speedup-2 is INFO "serialised", and no-starvation skips saying why', async () => {
  const { ref, profile } = await plain(['--fault', 'perf-serialise']);
  const server = await discoverServer(profile, ref.baseUrl, {});
  const o = {
    memory: freshMemory(),
    profile,
    server,
    tier: 'quick' as const,
    strict: false,
    runId: randomBytes(4).toString('hex'),
    log: () => undefined,
  };
  const sp = await runCheck(check('parallel.speedup-2'), o);
  expect([sp.verdict.outcome, sp.verdict.message]).toEqual([
    'pass',
    expect.stringContaining('informational: serialised'),
  ]);
  const ns = await runCheck(check('parallel.no-starvation'), o);
  expect(ns.verdict.outcome).toBe('skip');
  expect(ns.verdict.message).toContain('measured no batching at 2 concurrent');
}, 120_000);
