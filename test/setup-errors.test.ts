// Setup mistakes are one error with evidence, never checks charged to the server: a model the server refuses is a
// configuration error naming what it serves (one that serves a name it does not list goes on); a run stopped before
// its checks has its own exit code and every report says what stopped it; a JSON file we read names line and column.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { judgeRun } from '../cli/run.ts';
import { type ReferenceHandle, referenceProfile, startReference } from '../fixtures/reference-server/spawn.ts';
import { jsonSyntaxError, parseJsonText } from '../lib/config/json-file.ts';
import { parseServers } from '../lib/config/profile.ts';
import { compileSchema, schemaErrors } from '../lib/config/schemas.ts';
import type { SetupFailure } from '../lib/model/types.ts';
import { SetupError, waitReady } from '../lib/server/lifecycle.ts';
import { listModelIds, modelNotServed, refusesModel } from '../lib/server/model-served.ts';
import { describeSetupFailure, setupFailureOf } from '../lib/server/setup-failure.ts';
import { renderJunit } from '../reporters/junit.ts';
import { badgeSpecs, gateLine, renderConsole, renderMarkdown, toColumns } from '../reporters/render.ts';
import type { ResultsFile } from '../reporters/results-types.ts';

describe('a model the server does not serve', () => {
  let refusing: ReferenceHandle;
  let anyName: ReferenceHandle;
  beforeAll(async () => {
    [refusing, anyName] = await Promise.all([startReference(), startReference(['--fault', 'api-unknown-model-200'])]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([refusing?.stop(), anyName?.stop()]);
  });

  test('listed elsewhere and refused (404 model_not_found): a configuration error naming the served ids, the status and the body', async () => {
    const profile = referenceProfile({ id: 'env', model: 'gpt-4o', baseUrl: refusing.baseUrl });
    const listed = await listModelIds(refusing.baseUrl, {});
    expect(listed).toEqual(['reference-model']);
    const f = await modelNotServed(profile, refusing.baseUrl, {}, listed);
    expect(f).toMatchObject({
      kind: 'config',
      summary: `the model "gpt-4o" is not served at ${refusing.baseUrl}; it serves ["reference-model"]`,
      fix: '--model reference-model (or leave --model out: the one model listed is used)',
    });
    expect(f!.actual).toMatch(/GET \/v1\/models lists \["reference-model"\]; .* → HTTP 404: .*model_not_found/);
    // The listed model itself, or a server that lists nothing readable: nothing to say.
    expect(
      await modelNotServed({ ...profile, model: 'reference-model' }, refusing.baseUrl, {}, listed),
    ).toBeUndefined();
    expect(await modelNotServed(profile, refusing.baseUrl, {}, undefined)).toBeUndefined();
  });

  test('not listed but served anyway (as llama-server serves any name): setup goes on, with the evidence as a note', async () => {
    const notes: string[] = [];
    const profile = referenceProfile({ id: 'env', model: 'gpt-4o', baseUrl: anyName.baseUrl });
    const f = await modelNotServed(profile, anyName.baseUrl, {}, ['reference-model'], (n) => notes.push(n));
    expect(f).toBeUndefined();
    expect(notes).toEqual([
      'a request naming "gpt-4o" was answered HTTP 200 although GET /v1/models does not list it: the server serves a name it does not list',
    ]);
  });

  test('a completion readiness probe refused for its model ends the wait at once, as a configuration error', async () => {
    const profile = referenceProfile({ model: 'gpt-4o', readiness: { kind: 'completion' }, baseUrl: refusing.baseUrl });
    const t0 = performance.now();
    const err = await waitReady(profile, refusing.baseUrl, {}, undefined, { boundMs: 60_000 }).catch((e) => e);
    expect(err).toBeInstanceOf(SetupError);
    expect((err as SetupError).failure.kind).toBe('config');
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  test('what refuses a model: 404, or 400/422 about the model; not a 400 about something else', () => {
    expect(refusesModel(404, '')).toBe(true);
    expect(refusesModel(400, '{"error":"model \'x\' not found, try pulling it first"}')).toBe(true);
    expect(refusesModel(422, '{"detail":"unknown model"}')).toBe(true);
    expect(refusesModel(400, '{"error":"max_tokens must be at least 1"}')).toBe(false);
    expect(refusesModel(500, 'model crashed')).toBe(false);
    expect(refusesModel(200, '')).toBe(false);
  });
});

/** A results file of a run stopped before its checks: setup.server-ready alone, the failure in the header. */
function stoppedRun(failure: SetupFailure): ResultsFile {
  return {
    header: {
      suite: { name: 'llm-server-conformance', version: '0.1.0' },
      date: '2026-12-04T00:00:00.000Z',
      project: 'env',
      profile: { id: 'env' },
      server: {
        baseUrl: 'http://127.0.0.1:1',
        identity: {},
        setupFailure: failure,
        readiness: { ready: failure.kind !== 'never-ready', waitedMs: 5000 },
      },
      machine: { label: 'm', platform: 'linux', arch: 'x64', cpus: 2, memGiB: 8, node: 'v20' },
      tier: 'quick',
      strict: false,
    },
    checks: [
      {
        id: 'setup.server-ready',
        title: 'server reachable and ready',
        family: 'setup',
        level: 'MUST',
        outcome: 'error',
        message: describeSetupFailure(failure, { oneLine: true }),
        rationale: '',
        reference: '',
      },
    ],
    finished: { date: '2026-12-04T00:00:09.000Z', reason: 'failed' },
  };
}

const NEVER: SetupFailure = {
  kind: 'never-ready',
  summary: 'server "env" was not ready within 5.0 s at http://127.0.0.1:1',
  requirement: 'the server passes its readiness probe within the wait bound',
  expected: 'GET /v1/models → 200 within 5.0 s',
  actual: '9 probe(s), the last: connection refused (ECONNREFUSED)',
};
const MODEL: SetupFailure = {
  kind: 'config',
  summary: 'the model "gpt-4o" is not served at http://127.0.0.1:9; it serves ["reference-model"]',
  requirement: 'requests name a model the server serves (--model)',
  expected: '"gpt-4o" among the ids GET /v1/models lists, or a request naming it answered',
  actual: 'GET /v1/models lists ["reference-model"]; POST /v1/chat/completions naming "gpt-4o" → HTTP 404: {…}',
  fix: '--model reference-model',
};

describe('a run stopped before its checks', () => {
  test('results.json records it in the header, as its schema says', () => {
    const validate = compileSchema('results.schema.json');
    for (const f of [NEVER, MODEL, { ...MODEL, evidence: ['its last lines:', 'loading'] }])
      expect(validate(stoppedRun(f)), schemaErrors(validate).join('; ')).toBe(true);
    expect(validate(stoppedRun({ ...NEVER, kind: 'late' } as unknown as SetupFailure))).toBe(false);
  });

  test('its own exit code and gate, and no count charged to the server', () => {
    expect(judgeRun(stoppedRun(NEVER), {})).toMatchObject({
      exitCode: 3,
      gate: 'never-ready',
      reason: NEVER.summary,
      score: { passed: 0, graded: 0 },
      counts: expect.objectContaining({ error: 0, fail: 0 }),
    });
    expect(judgeRun(stoppedRun(MODEL), {})).toMatchObject({ exitCode: 2, gate: 'config-error' });
    expect(judgeRun(stoppedRun({ ...NEVER, kind: 'error' }), {})).toMatchObject({ exitCode: 4, gate: 'error' });
  });

  test('every report says what stopped it: console, summary.md, badge, JUnit; no gate of errors', () => {
    const cols = toColumns([stoppedRun(MODEL)]);
    expect(gateLine(cols)).toBe(`GATE: CONFIGURATION ERROR (no check was run: ${MODEL.summary})`);
    const text = renderConsole(cols);
    expect(text).toContain('CONFIGURATION ERROR: the model "gpt-4o" is not served');
    expect(text).toMatch(/ {2}Requirement: .*\n {2}Expected: .*\n {2}Actual: .*HTTP 404/);
    expect(text).not.toMatch(/ERROR\s+MUST|passed ·/);
    const md = renderMarkdown(toColumns([stoppedRun(NEVER)]));
    expect(md).toContain('### SERVER NEVER READY: no check was run');
    expect(md).toContain('Actual:      9 probe(s), the last: connection refused (ECONNREFUSED)');
    expect(md).not.toMatch(/\| outcome \||passed\*\*/);
    expect(badgeSpecs(toColumns([stoppedRun(NEVER)])[0]!)).toEqual([
      { name: 'conformance', label: 'conformance', message: 'never ready', color: 'lightgrey' },
    ]);
    const xml = renderJunit([stoppedRun(NEVER)]);
    expect(xml).toMatch(/<error type="never-ready" message="SERVER NEVER READY: server &quot;env&quot; was not ready/);
    expect(xml).toContain('name="conformance.setup" value="SERVER NEVER READY: server &quot;env&quot;');
  });

  test('older results files: a readiness that never held is never-ready', () => {
    expect(
      setupFailureOf({ readiness: { ready: false, waitedMs: 1, reason: 'not ready within 5.0 s' } }),
    ).toMatchObject({
      kind: 'never-ready',
      summary: 'not ready within 5.0 s',
    });
    expect(setupFailureOf({ readiness: { ready: true, waitedMs: 1 } })).toBeUndefined();
  });
});

describe('JSON files we read', () => {
  test('a syntax error names line and column and shows the line', () => {
    const text = '{\n  "servers": [\n    { "id": "a", }\n  ]\n}';
    expect(() => parseJsonText(text, 'servers.json')).toThrow(
      'servers.json:3:18: not valid JSON: expected a double-quoted property name, found "}" (a comma before "}"?)\n' +
        '        { "id": "a", }\n' +
        '                     ^',
    );
    expect(jsonSyntaxError('{"a": 1\n "b": 2}')).toEqual({
      offset: 9,
      what: "expected ',' or '}' after a property value, found \"\\\"\" (a missing comma?)",
    });
    expect(jsonSyntaxError('[1, 2,]')?.what).toBe('expected a value, found "]" (a comma before "]"?)');
    expect(jsonSyntaxError('')?.what).toBe('the file is empty');
    expect(jsonSyntaxError('{"a": "x\ny"}')?.what).toMatch(/raw control character/);
    expect(jsonSyntaxError('{"a": 1} x')?.what).toBe('"x" after the end of the JSON value');
    expect(parseJsonText('\ufeff{"ok": true}', 'f.json')).toEqual({ ok: true }); // a BOM, as some editors save
    // Valid JSON: no error found (the scanner agrees with JSON.parse).
    for (const ok of ['{}', '[]', '"\\u00e9\\n"', '-0.5e+3', '{"a":[true,false,null,{"b":[]}]}'])
      expect(jsonSyntaxError(ok), ok).toBeUndefined();
  });

  test('a servers file of the wrong shape says what the file should look like, with an example', () => {
    const array = '[{ "id": "a", "baseUrl": "http://127.0.0.1:8000", "model": "m" }]';
    expect(() => parseServers(array, 'servers.json')).toThrow(
      'servers.json: a servers file is a JSON object whose "servers" array holds the profiles, e.g.\n' +
        '    { "servers": [ { "id": "my-server", "baseUrl": "http://127.0.0.1:8000", "model": "my-model" } ] }\n' +
        '  but it is an array (a list of profiles goes under "servers") (docs/profiles.md lists every field)',
    );
    expect(() => parseServers('{ "id": "a", "baseUrl": "http://x", "model": "m" }', 's.json')).toThrow(
      /it has no "servers" \(its fields: id, baseUrl, model\); one profile goes inside the "servers" array/,
    );
    expect(() => parseServers('{ "servers": [] }', 's.json')).toThrow(/its "servers" array is empty/);
  });
});
