// grade(): level, strict mode and known issues applied to a check's raw verdict. `inconclusive` is an outcome of its
// own: neither strict mode nor a known-issue entry turns it into anything else.
import { describe, test, expect } from 'vitest';
import { grade, type CheckDef } from '../lib/check.ts';
import type { Level, Profile, Verdict } from '../lib/types.ts';

const check = (level: Level): CheckDef => ({ id: 'x.y', title: 't', level, rationale: 'r', reference: 'ref', requires: [], run: async () => ({ outcome: 'pass', message: '' }) });
const profile = (known = false): Profile => ({
  id: 'p', baseUrl: 'http://127.0.0.1:1', model: 'm', apis: ['openai-chat'], readiness: { kind: 'completion' }, startTimeoutMs: 1000,
  slots: 1, deterministic: false, context: { discovery: 'none' },
  ...(known ? { knownIssues: [{ check: 'x.y', reason: 'documented bug' }] } : {}),
});
const v = (outcome: Verdict['outcome'], message = 'm'): Verdict => ({ outcome, message });

describe('grade', () => {
  test('inconclusive stays inconclusive at every level, in strict mode and when listed as a known issue', () => {
    for (const level of ['MUST', 'SHOULD', 'INFO'] as Level[]) {
      for (const strict of [false, true]) {
        for (const known of [false, true]) {
          const g = grade(check(level), v('inconclusive', 'too short to judge'), profile(known), strict);
          expect(g).toEqual({ outcome: 'inconclusive', message: 'too short to judge', raw: 'inconclusive' });
        }
      }
    }
  });
  test('a SHOULD failure warns, and fails under strict; an INFO failure only warns', () => {
    expect(grade(check('SHOULD'), v('fail'), profile(), false).outcome).toBe('warn');
    expect(grade(check('SHOULD'), v('fail'), profile(), true).outcome).toBe('fail');
    expect(grade(check('INFO'), v('fail'), profile(), true).outcome).toBe('warn');
    expect(grade(check('MUST'), v('fail'), profile(), false).outcome).toBe('fail');
  });
  test('a known issue is known when it fails or warns, known-passing when it passes', () => {
    expect(grade(check('MUST'), v('fail'), profile(true), false).outcome).toBe('known');
    expect(grade(check('SHOULD'), v('warn'), profile(true), true).outcome).toBe('known');
    expect(grade(check('MUST'), v('pass'), profile(true), false).outcome).toBe('known-passing');
  });
});
