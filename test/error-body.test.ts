import { expect, test } from 'vitest';
import { classifyErrorBody } from '../lib/decode/error-body.ts';

test('OpenAI error object', () => {
  expect(
    classifyErrorBody({ error: { message: 'bad', type: 'invalid_request_error', param: 'messages', code: null } }),
  ).toMatchObject({ shape: 'openai', message: 'bad', type: 'invalid_request_error' });
});

test('the shapes real servers send instead (docs/servers.md "Error bodies")', () => {
  expect(classifyErrorBody({ error: 'model not found' })).toMatchObject({
    shape: 'error-string',
    message: 'model not found',
  }); // Ollama native
  expect(classifyErrorBody({ object: 'error', message: 'too long', type: 'BadRequestError', code: 400 })).toMatchObject(
    { shape: 'flat', message: 'too long' },
  ); // vLLM < 0.10.1
  expect(classifyErrorBody({ detail: [{ loc: ['body', 'messages'], msg: 'field required' }] })).toMatchObject({
    shape: 'detail',
  }); // FastAPI
  expect(classifyErrorBody({ error: { code: 400 } })).toMatchObject({ shape: 'flat' });
});

test('no error information', () => {
  expect(classifyErrorBody(undefined)).toMatchObject({ shape: 'none', note: 'the body is not JSON' });
  expect(classifyErrorBody([1, 2])).toMatchObject({ shape: 'none' });
  expect(classifyErrorBody({ ok: false })).toMatchObject({ shape: 'none' });
});
