// The expected verdicts of the tools and structured families on llama-server b4747 are data
// (suites/llama-b4747.tools-structured.json): this keeps them in step with the catalogue — every check of the two
// families listed once per configuration, outcomes from the vocabulary, a reason for each.

import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { families } from '../suites/catalogue.ts';

interface Verdict {
  outcomes: string[];
  why: string;
  link?: string;
}
const data = JSON.parse(
  readFileSync(new URL('../suites/llama-b4747.tools-structured.json', import.meta.url), 'utf8'),
) as {
  configurations: Record<string, { args: string[]; verdicts: Record<string, Verdict> }>;
};
const OUTCOMES = ['pass', 'fail', 'warn', 'inconclusive', 'skip', 'known', 'known-passing', 'error'];

test('every tools / structured check has an expected verdict with a reason in each configuration', () => {
  const ids = [...families.tools!.checks, ...families.structured!.checks].map((c) => c.id).sort();
  for (const [name, conf] of Object.entries(data.configurations)) {
    expect(Object.keys(conf.verdicts).sort(), `configuration ${name}`).toEqual(ids);
    for (const [id, v] of Object.entries(conf.verdicts)) {
      for (const o of v.outcomes) expect(OUTCOMES, `${name} ${id}`).toContain(o);
      expect(v.why.trim().length, `${name} ${id} says why`).toBeGreaterThan(10);
    }
  }
});
