// lib/feature-probe: the lenient-vs-broken rule for optional features (200 supported, 4xx unsupported, 5xx broken).
import { expect, test } from 'vitest';
import type { Exchange } from '../lib/exchange/exchange.ts';
import type { Recording } from '../lib/model/types.ts';
import { classifyAnswer, judgeInvalidCases, unanswered } from '../lib/server/feature-probe.ts';

function exchange(status: number | undefined, json?: unknown, failure?: Recording['failure']): Exchange {
  const body = new TextEncoder().encode(json === undefined ? '' : JSON.stringify(json));
  const rec: Recording = {
    method: 'POST',
    url: 'http://127.0.0.1:1/v1/chat/completions',
    t0Abs: 0,
    status,
    headers: {},
    reads: [],
    tEnd: 5,
    body,
    truncated: false,
    failure,
  };
  return { rec, json };
}
const err = (message: string) => ({ error: { message, type: 'x', param: null, code: null } });

test('200 is supported, a 4xx refused (with the message), a 5xx / drop / hang broken, our budget is no evidence', () => {
  expect(classifyAnswer(exchange(200, {}))).toEqual({ kind: 'ok' });
  expect(classifyAnswer(exchange(400, err('tools are not supported')))).toEqual({
    kind: 'refused',
    status: 400,
    detail: 'HTTP 400: tools are not supported',
  });
  expect(classifyAnswer(exchange(500, err('Cannot use tools with stream')))).toMatchObject({
    kind: 'broken',
    detail: 'HTTP 500: Cannot use tools with stream',
  });
  expect(classifyAnswer(exchange(undefined, undefined, { kind: 'reset', message: 'socket hang up' }))).toMatchObject({
    kind: 'broken',
    detail: 'reset: socket hang up',
  });
  expect(
    classifyAnswer(exchange(undefined, undefined, { kind: 'headers-timeout', message: 'no headers in 60000 ms' })).kind,
  ).toBe('broken');
  expect(
    classifyAnswer(exchange(200, undefined, { kind: 'total-timeout', message: 'total deadline 120000 ms' })).kind,
  ).toBe('budget');
  expect(() => classifyAnswer(exchange(undefined, undefined, { kind: 'connect', message: 'ECONNREFUSED' }))).toThrow(
    /cannot reach/,
  );
});

test('a request the check cannot judge: skip on a 4xx, fail on a 5xx, inconclusive on our budget', () => {
  expect(unanswered(exchange(200, {}), 'x', 'R')).toBeUndefined();
  expect(unanswered(exchange(400, err('no')), 'a streamed request', 'R')).toMatchObject({
    outcome: 'skip',
    message: expect.stringMatching(/refused with HTTP 400: no: the server does not support it and says so/),
  });
  expect(unanswered(exchange(500, err('boom')), 'a streamed request', 'R MUST')).toMatchObject({
    outcome: 'fail',
    message: expect.stringMatching(/R MUST[\s\S]*a streamed request got HTTP 500: boom/),
  });
  expect(
    unanswered(exchange(200, undefined, { kind: 'total-timeout', message: 'total deadline' }), 'x', 'R')?.outcome,
  ).toBe('inconclusive');
});

test('invalid requests: all 4xx pass, a 200 is lenient (warn), any 5xx fails and lists the rest', () => {
  const ok = judgeInvalidCases(
    [
      { label: 'a', x: exchange(400, err('bad a')) },
      { label: 'b', x: exchange(422, err('bad b')) },
    ],
    'R',
  );
  expect(ok).toMatchObject({
    outcome: 'pass',
    message: 'every invalid request refused: a: HTTP 400: bad a; b: HTTP 422: bad b',
  });
  const lenient = judgeInvalidCases(
    [
      { label: 'a', x: exchange(400, err('bad a')) },
      { label: 'b', x: exchange(200, {}) },
    ],
    'R',
  );
  expect(lenient.outcome).toBe('warn');
  expect(lenient.message).toMatch(/lenient, not broken: b: accepted with HTTP 200/);
  const broken = judgeInvalidCases(
    [
      { label: 'a', x: exchange(500, err('x')) },
      { label: 'b', x: exchange(200, {}) },
      { label: 'c', x: exchange(400, err('y')) },
    ],
    'R',
  );
  expect(broken.outcome).toBe('fail');
  expect(broken.message).toMatch(/1 of 3 broken: a: HTTP 500: x/);
  expect(broken.message).toMatch(/b: accepted with HTTP 200/);
});
