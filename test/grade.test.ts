// grade(): level, strict mode and known issues applied to a check's raw verdict. `inconclusive` is an outcome of its
// own: neither strict mode nor a known-issue entry turns it into anything else.
import { describe, expect, test } from 'vitest';
import { grade } from '../lib/check/check.ts';
import type { CheckDef } from '../lib/model/check.ts';
import type { Level, Profile, Verdict } from '../lib/model/types.ts';

const check = (level: Level): CheckDef => ({
  id: 'x.y',
  title: 't',
  level,
  rationale: 'r',
  reference: 'ref',
  requires: [],
  run: async () => ({ outcome: 'pass', message: '' }),
});
const profile = (known = false): Profile => ({
  id: 'p',
  baseUrl: 'http://127.0.0.1:1',
  model: 'm',
  apis: ['openai-chat'],
  readiness: { kind: 'completion' },
  startTimeoutMs: 1000,
  slots: 1,
  deterministic: false,
  context: { discovery: 'none' },
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
  test('strict mode fails a warn on clear evidence and leaves a borderline warn a warn, saying why', () => {
    const clear = v('warn', 'HTTP 200 for an unknown model');
    const edge: Verdict = { outcome: 'warn', message: 'borderline: ratio 0.31, CI 0.2–0.4', borderline: true };
    for (const level of ['MUST', 'SHOULD'] as Level[]) {
      expect(grade(check(level), clear, profile(), false)).toEqual({
        outcome: 'warn',
        message: clear.message,
        raw: 'warn',
      });
      expect(grade(check(level), clear, profile(), true)).toEqual({
        outcome: 'fail',
        message: clear.message,
        raw: 'warn',
      });
      expect(grade(check(level), edge, profile(), false)).toEqual({
        outcome: 'warn',
        message: edge.message,
        raw: 'warn',
      });
      const strict = grade(check(level), edge, profile(), true);
      expect(strict.outcome).toBe('warn');
      expect(strict.message).toMatch(
        /^borderline evidence, not failed under CONFORMANCE_STRICT=1 .*: borderline: ratio 0\.31/,
      );
    }
    // INFO measures: no warn of it fails, strict or not.
    expect(grade(check('INFO'), clear, profile(), true).outcome).toBe('warn');
    expect(grade(check('INFO'), edge, profile(), true).outcome).toBe('warn');
  });
  test('borderline() builds a borderline warn; warn() a clear one', async () => {
    const { borderline, warn } = await import('../lib/model/verdict.ts');
    expect(borderline('b')).toMatchObject({ outcome: 'warn', message: 'b', borderline: true });
    expect(warn('w').borderline).toBeUndefined();
  });
  test('a known issue is known when it fails or warns, known-passing when it passes', () => {
    expect(grade(check('MUST'), v('fail'), profile(true), false).outcome).toBe('known');
    expect(grade(check('SHOULD'), v('warn'), profile(true), true).outcome).toBe('known');
    expect(grade(check('MUST'), v('pass'), profile(true), false).outcome).toBe('known-passing');
  });
});
