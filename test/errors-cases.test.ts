// The errors family's case generators: reproducible, and each case breaks exactly one thing.

import fc from 'fast-check';
import { expect, test } from 'vitest';
import {
  absurdValueCases,
  type Mutation,
  malformedBodies,
  mutate,
  optionalTypeCases,
  requiredShapeCases,
} from '../suites/errors.ts';

const base = {
  model: 'm',
  messages: [{ role: 'user', content: 'hello' }],
  max_tokens: 4,
  stream: true,
  temperature: 0,
};

function diffPaths(a: unknown, b: unknown, path = ''): string[] {
  if (JSON.stringify(a) === JSON.stringify(b)) return [];
  const isObjectOrArray = (v: unknown) => typeof v === 'object' && v !== null;
  if (!isObjectOrArray(a) || !isObjectOrArray(b) || Array.isArray(a) !== Array.isArray(b)) return [path];
  const keys = new Set([...Object.keys(a as object), ...Object.keys(b as object)]);
  return [...keys].flatMap((k) =>
    diffPaths((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], path ? `${path}.${k}` : k),
  );
}

test('the same seed gives the same cases', () => {
  expect(JSON.stringify(requiredShapeCases(8))).toBe(JSON.stringify(requiredShapeCases(8)));
  expect(JSON.stringify(optionalTypeCases(6))).toBe(JSON.stringify(optionalTypeCases(6)));
  expect(JSON.stringify(absurdValueCases(6))).toBe(JSON.stringify(absurdValueCases(6)));
  expect(malformedBodies('{"a":1}', 8)).toEqual(malformedBodies('{"a":1}', 8));
});

test('every mutation changes exactly one field of the valid request, and leaves the original alone', () => {
  const before = JSON.stringify(base);
  for (const m of [...requiredShapeCases(40), ...optionalTypeCases(40), ...absurdValueCases(40)] as Mutation[]) {
    const out = mutate(base, m);
    const d = diffPaths(base, out);
    expect(d.length, `${m.path}: ${JSON.stringify(d)}`).toBe(1);
    expect(d[0]!.startsWith(m.path) || m.path.startsWith(d[0]!)).toBe(true);
  }
  expect(JSON.stringify(base)).toBe(before);
});

test('cases are distinct', () => {
  for (const cases of [requiredShapeCases(40), optionalTypeCases(40)]) {
    const keys = cases.map((m) => `${m.path}=${m.value === undefined ? '' : JSON.stringify(m.value)}`);
    expect(new Set(keys).size).toBe(keys.length);
  }
});

test('a malformed body is never a valid JSON object, for any valid request text (property)', () => {
  fc.assert(
    fc.property(
      fc.dictionary(fc.string({ minLength: 1, maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), {
        minKeys: 1,
        maxKeys: 5,
      }),
      (obj) => {
        const valid = JSON.stringify({ model: 'm', ...obj });
        for (const c of malformedBodies(valid, 10)) {
          let parsed: unknown;
          try {
            parsed = JSON.parse(c.body);
          } catch {
            continue;
          }
          expect(typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed), `${c.what}: ${c.body}`).toBe(
            false,
          );
        }
      },
    ),
    { seed: 11, numRuns: 100 },
  );
});

test("required-shape cases touch only messages; optional-type cases only optional parameters, with the issue's anchors", () => {
  for (const m of requiredShapeCases(40)) expect(m.path, JSON.stringify(m)).toMatch(/^messages(\.|$)/);
  for (const m of optionalTypeCases(40)) expect(['max_tokens', 'temperature', 'stream']).toContain(m.path);
  const anchors = optionalTypeCases(0).map((m) => `${m.path}=${JSON.stringify(m.value)}`);
  expect(anchors).toEqual(['max_tokens="ten"', 'temperature="hot"', 'stream="maybe"']);
  const shape = requiredShapeCases(0).map((m) => m.path);
  for (const p of ['messages', 'messages.0', 'messages.0.role', 'messages.0.content']) expect(shape).toContain(p);
});

test("a 2xx is an acceptance even when no token follows in time; no answer at all is a hang; 5xx and drops are the server's", async () => {
  const { classify } = await import('../lib/grading/errors.ts');
  const rec = (status: number | undefined, failure?: string) =>
    ({
      method: 'POST',
      url: 'http://x/v1/chat/completions',
      t0Abs: 0,
      status,
      headers: {},
      reads: [],
      tEnd: 3000,
      body: new Uint8Array(),
      truncated: false,
      ...(failure ? { failure: { kind: failure, message: failure } } : {}),
    }) as Parameters<typeof classify>[1];
  // A slow server's first token after our 3 s deadline: not a hang (its pace is unknown here).
  expect(classify('c', rec(200, 'token-idle'), undefined).kind).toBe('accepted');
  expect(classify('c', rec(200, 'aborted'), undefined).kind).toBe('accepted');
  expect(classify('c', rec(undefined, 'headers-timeout'), undefined).kind).toBe('hang');
  expect(classify('c', rec(undefined, 'reset'), undefined).kind).toBe('dropped');
  expect(classify('c', rec(500), { error: { message: 'boom' } }).kind).toBe('server-error');
  expect(classify('c', rec(400), { error: { message: 'bad', type: 'invalid_request_error' } }).kind).toBe('refused');
});
