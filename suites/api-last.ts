// api checks that must run last (vitest.config.ts FAMILY_ORDER ends with api-last): servers that load models on
// demand (Ollama, mlx-omni-server, oMLX's model pool) may evict the loaded model when asked for another one.

import { classifyErrorBody, OPENAI_ERROR_SHAPE } from '../lib/decode/error-body.ts';
import { escapeBytes } from '../lib/decode/stream-decoder.ts';
import { chat, describeExchange, generationBody, uniquePrompt } from '../lib/exchange/exchange.ts';
import { bodyText } from '../lib/http/recorder.ts';
import type { CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import { fail, pass, warn } from '../lib/model/verdict.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';

/** api checks in a file of their own, run after every other family (scripts/families.ts derives its test file and place in FAMILY_ORDER from this). */
export const family: FamilySpec = { name: 'api-last', order: 1000, checksOf: 'api' };

export const checks: CheckDef[] = [
  {
    id: 'api.unknown-model',
    destructive: true, // asking for another model may evict the loaded one
    title: 'a request for a model the server does not have gets a 4xx error object',
    level: 'MUST',
    rationale:
      'A client with a typo in the model name must learn it from a clear 4xx, not from a 500, a hang, or answers by another model.',
    reference:
      'OpenAI API reference, Error codes: 404 "model … does not exist" (code model_not_found); RFC 9110 §15.5 (4xx: the client erred), §15.6 (5xx: the server failed)',
    requires: ['openai-chat'],
    timeoutMs: 30_000,
    async run(ctx) {
      const fake = `conformance-no-such-model-${ctx.nonce()}`;
      const body = {
        ...generationBody(ctx, 'openai-chat', { prompt: uniquePrompt(ctx, 'Say hello.'), maxTokens: 4, stream: false }),
        model: fake,
      };
      // A server that loads models on demand may look for this one first: allow it time to give up.
      const x = await chat(ctx, body, { deadlines: { headersMs: 15_000, totalMs: 20_000 } });
      const status = x.rec.status;
      const err = classifyErrorBody(x.json);
      const metrics = { model: fake, status, shape: err.shape };
      const bytes = escapeBytes(bodyText(x.rec), 300);
      if (status !== undefined && status >= 400 && status < 500 && !x.rec.failure) {
        if (err.shape === 'openai')
          return pass(
            `HTTP ${status} for model ${JSON.stringify(fake)}: ${escapeBytes(err.message ?? '', 160)}`,
            metrics,
          );
        if (err.shape !== 'none')
          return warn(
            `HTTP ${status} for an unknown model, but the body is not an OpenAI error object (${err.note}): ${bytes}`,
            metrics,
          );
        return fail(
          {
            requirement: 'A request for an unknown model MUST get a 4xx with an error object that says what is wrong.',
            expected: `HTTP 4xx (404 model_not_found, or 400) with ${OPENAI_ERROR_SHAPE}`,
            actual: `HTTP ${status}; ${err.note}`,
            bytes,
          },
          metrics,
        );
      }
      if (status === 200 && !x.rec.failure) {
        const served = (x.json as { model?: unknown } | undefined)?.model;
        return warn(
          `the server answered 200 for the unknown model ${JSON.stringify(fake)} (served by ${JSON.stringify(served)}): a single-model server that ignores the name; ` +
            'clients with a typo in the model name get answers from another model instead of an error (OpenAI: 404 model_not_found)',
          { ...metrics, servedModel: served },
        );
      }
      return fail(
        {
          requirement:
            'A request for an unknown model MUST get a 4xx error (the client erred), not a server error, a hang or a dropped connection.',
          expected: `HTTP 4xx (404 model_not_found, or 400) with ${OPENAI_ERROR_SHAPE}`,
          actual: `${describeExchange(x)} for model ${JSON.stringify(fake)}${status !== undefined && status >= 500 ? ' (a 5xx says the server failed, RFC 9110 §15.6)' : ''}`,
          bytes,
        },
        metrics,
      );
    },
  },
];

export const proofs: Proof[] = [
  passProof('api.unknown-model', { messageIncludes: [/HTTP 4\d\d for model "conformance-no-such-model-/] }),
  faultProof('api.unknown-model', 'api-unknown-model-500', ['HTTP 500', 'not a server error']),
  faultProof('api.unknown-model', 'api-unknown-model-200', ['answered 200 for the unknown model', 'ignores the name'], {
    expect: 'warn',
    raw: 'warn',
  }),
];
