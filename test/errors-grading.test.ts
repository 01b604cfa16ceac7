// The errors family's campaign verdicts (lib/grading/errors.ts), fed hand-made answers: each shown passing and failing
// with the words its message must say. No HTTP: the proofs (test/proofs.test.ts) show them on the reference server.
import { describe, expect, test } from 'vitest';
import {
  type Campaign,
  classify,
  gradeNoServerError,
  gradeOptionalTypes,
  gradeRefusals,
  gradeSurvives,
} from '../lib/grading/errors.ts';
import type { Recording } from '../lib/model/types.ts';

const rec = (
  status: number | undefined,
  body = '',
  failure?: NonNullable<Recording['failure']>['kind'],
): Recording => ({
  method: 'POST',
  url: 'http://127.0.0.1/v1/chat/completions',
  requestBody: '{"max_tokens":"ten"}',
  t0Abs: 0,
  status,
  headers: {},
  reads: [],
  tEnd: 12,
  body: new TextEncoder().encode(body),
  truncated: false,
  ...(failure ? { failure: { kind: failure, message: failure } } : {}),
});
const openaiError = { error: { message: 'bad', type: 'invalid_request_error' } };
const refused = (label: string) => classify(label, rec(400, JSON.stringify(openaiError)), openaiError);
const accepted = (label: string) => classify(label, rec(200), undefined);
const serverError = (label: string) => classify(label, rec(500, 'boom'), undefined);
const hung = (label: string) => classify(label, rec(undefined, '', 'headers-timeout'), undefined);
const campaign = (...outcomes: Campaign['outcomes']): Campaign => ({ outcomes });
const deadlineMs = 3000;
const seed = 7;

describe('a must-refuse campaign (errors.malformed-json, errors.required-shape)', () => {
  const grade = (r: Campaign) => gradeRefusals(r, { requirement: 'MUST refuse.', expectedNote: '', deadlineMs, seed });

  test('every case refused with an OpenAI error object passes', () => {
    const v = grade(campaign(refused('a'), refused('b')));
    expect(v.outcome).toBe('pass');
    expect(v.message).toBe('2 cases (fast-check seed 7), each refused with a 4xx OpenAI error object: {"HTTP 400":2}');
  });
  test('a case accepted, answered with a 5xx or hung fails, saying which each was', () => {
    const v = grade(campaign(refused('a'), accepted('messages removed'), serverError('b')));
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain(
      '2 of 3 cases not refused (1 accepted with a 2xx, 1 a server error (5xx) for client input)',
    );
    expect(v.message).toContain('messages removed: HTTP 200 — the request was accepted (answered)');
    expect(grade(campaign(hung('c'))).message).toContain('no response within 3000 ms');
  });
  test('refusals without the OpenAI error object warn', () => {
    const bare = classify('a', rec(400, '{"detail":"bad"}'), { detail: 'bad' });
    const v = grade(campaign(bare));
    expect(v.outcome).toBe('warn');
    expect(v.message).toContain('every case was refused with a 4xx, but 1 error body is not the OpenAI error object');
  });
});

describe('errors.optional-types', () => {
  test('wrong types refused pass; accepted ones fail as lenient parsing; only 5xx answers leave no verdict', () => {
    expect(gradeOptionalTypes(campaign(refused('a')), { deadlineMs, seed }).message).toContain(
      '1 wrong-typed optional parameters (fast-check seed 7), each refused with a 4xx',
    );
    const v = gradeOptionalTypes(campaign(accepted('max_tokens = "ten"'), refused('b')), { deadlineMs, seed });
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('1 of 2 cases accepted with HTTP 200 (lenient parsing): max_tokens = "ten"');
    const none = gradeOptionalTypes(campaign(serverError('a')), { deadlineMs, seed });
    expect(none.outcome).toBe('inconclusive');
    expect(none.message).toContain('errors.no-server-error grades those');
  });
});

describe('errors.no-server-error', () => {
  test('4xx and clamped 2xx answers pass; a 5xx or a hang fails', () => {
    const ok = gradeNoServerError(campaign(refused('a'), accepted('n = 1000')), { deadlineMs, seed, seeds: [1, 2] });
    expect(ok.outcome).toBe('pass');
    expect(ok.message).toContain(
      '2 cases (fast-check seeds 1, 2): 1 refused with a 4xx, 1 answered (ignored or clamped',
    );
    const v = gradeNoServerError(campaign(serverError('max_tokens = "ten"'), hung('b')), {
      deadlineMs,
      seed,
      seeds: [1, 2],
    });
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('a server error (5xx) for client input');
    expect(v.message).toContain('HTTP 500');
  });
});

describe('errors.survives', () => {
  const chat = { rec: rec(200), json: { choices: [{ message: { content: 'hi' } }] }, described: 'HTTP 200' };
  const models = { rec: rec(200), json: { data: [] }, described: 'HTTP 200' };
  test('a normal chat completion and the model list after the campaign pass; a dead server fails', () => {
    const v = gradeSurvives(campaign(refused('a')), { chat, models, deadlineMs });
    expect(v.outcome).toBe('pass');
    expect(v.message).toContain('a normal chat completion and GET /v1/models both answer 200');
    const down = { rec: rec(undefined, '', 'connect'), json: undefined, described: 'connection refused' };
    const dead = gradeSurvives(campaign(refused('a')), { chat: down, models: down, deadlineMs });
    expect(dead.outcome).toBe('fail');
    expect(dead.message).toContain('no longer answers: a normal chat completion: connection refused');
  });
});
