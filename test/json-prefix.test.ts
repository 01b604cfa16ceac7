// lib/json-prefix: complete JSON, a viable beginning of JSON (a cut answer: inconclusive), or never JSON (a failure).

import fc from 'fast-check';
import { expect, test } from 'vitest';
import { jsonPrefix } from '../lib/decode/json-prefix.ts';

test('complete JSON texts', () => {
  for (const t of ['{"a":1}', ' {"a":[1,2,{"b":null}]} \n', '"x"', '12', '[]', '{}', '{"ok":false } '])
    expect(jsonPrefix(t).state, t).toBe('complete');
});

test('beginnings of JSON (what max_tokens leaves) are prefixes', () => {
  for (const t of [
    '',
    '  ',
    '{',
    '{"a',
    '{"a":',
    '{"a":1',
    '{"a":1,',
    '{"a":[1,',
    '{"a":tr',
    '{"a":"x\\',
    '{"a":"\\u00',
    '[',
    '{"a":-',
    '{"a":1.5e',
    '{\n  "tags": [\n  "a",  ',
  ]) {
    expect(jsonPrefix(t).state, t).toBe('prefix');
  }
});

test('text that can never become JSON is invalid, with the offset and the reason', () => {
  const cases: Array<[string, RegExp]> = [
    [' comfortable comfortable', /expected a JSON value/],
    ['{"a" 1', /expected ':'/],
    ['{"a":1}}', /text after the JSON value/],
    ['{"a":1} x', /text after the JSON value/],
    ["{'city': 'Paris'}", /expected an object key/],
    ['{a:1}', /expected an object key/],
    ['{"a":1.}', /malformed number/],
    ['[1,]', /expected a JSON value/],
    ['{"a":trux}', /expected a JSON value/],
    ['```json\n{"a":1}\n```', /expected a JSON value/],
    ['{"a":"\\q"}', /bad escape/],
  ];
  for (const [t, why] of cases) {
    const r = jsonPrefix(t);
    expect(r.state, t).toBe('invalid');
    if (r.state === 'invalid') expect(r.reason, t).toMatch(why);
  }
});

test('every cut of a JSON text is complete or a prefix, never invalid (property)', () => {
  fc.assert(
    fc.property(fc.json(), fc.nat(), (text, at) => {
      const cut = text.slice(0, at % (text.length + 1));
      expect(jsonPrefix(cut).state).not.toBe('invalid');
    }),
    { numRuns: 300, seed: 13 },
  );
});
