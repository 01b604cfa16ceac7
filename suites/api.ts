// Family `api`: basic OpenAI API behaviour (non-streaming). Reference: OpenAI API reference, Chat Completions.
import type { CheckDef } from '../lib/check.ts';
import { chat, generationBody, getJson, uniquePrompt, describeExchange } from '../lib/api.ts';
import { compileSchema, schemaErrors } from '../lib/schemas.ts';
import { fail, pass } from '../lib/messages.ts';
import { escapeBytes } from '../lib/sse.ts';
import { bodyText } from '../lib/client.ts';
import { passProof, faultProof, type Proof } from './support/proof.ts';

const validateCompletion = compileSchema('chat-completion.schema.json');

export const checks: CheckDef[] = [
  {
    id: 'api.models-lists-model',
    title: 'GET /v1/models lists the configured model',
    level: 'MUST',
    rationale: 'Clients pick a model from /v1/models; a server that cannot list the model it serves cannot be configured (higgs, mlx-serve could not load it at all).',
    reference: 'OpenAI API reference, Models: GET /v1/models returns {object:"list", data:[{id, object:"model", ...}]}',
    requires: ['openai-chat'],
    async run(ctx) {
      const x = await getJson(ctx, '/v1/models');
      const data = (x.json as { data?: unknown } | undefined)?.data;
      const ids = Array.isArray(data) ? data.map((m) => (m as { id?: unknown })?.id) : undefined;
      if (x.rec.status !== 200 || !ids) {
        return fail({
          requirement: 'GET /v1/models MUST answer 200 with a list object whose `data` is an array of models.',
          expected: 'HTTP 200, {"object":"list","data":[…]}',
          actual: `${describeExchange(x)}, body ${escapeBytes(bodyText(x.rec), 200)}`,
        });
      }
      if (!ids.includes(ctx.profile.model)) {
        return fail({
          requirement: 'The configured model MUST appear in GET /v1/models data[].id.',
          expected: `an entry with id ${JSON.stringify(ctx.profile.model)}`,
          actual: `model missing from the list; ids: ${JSON.stringify(ids).slice(0, 300)}`,
        });
      }
      return pass(`${ids.length} model(s) listed, including ${ctx.profile.model}`, { models: ids.length });
    },
  },
  {
    id: 'api.chat-basic',
    title: 'a non-streaming chat completion is a valid chat.completion object',
    level: 'MUST',
    rationale: 'Every OpenAI client parses this object; a missing field or wrong type breaks them before any text is shown.',
    reference: 'OpenAI API reference, Chat Completions: the chat completion object (id, object "chat.completion", created, model, choices[].message, finish_reason, usage)',
    requires: ['openai-chat'],
    async run(ctx) {
      const x = await chat(ctx, generationBody(ctx, 'openai-chat', { prompt: uniquePrompt(ctx, 'Say hello in five words.'), maxTokens: 16, stream: false }));
      if (x.rec.status !== 200 || x.json === undefined) {
        return fail({
          requirement: 'POST /v1/chat/completions (stream false) MUST answer 200 with a JSON chat.completion object.',
          expected: 'HTTP 200 and a JSON body',
          actual: `${describeExchange(x)}${x.jsonError ? `; ${x.jsonError}` : ''}`,
          bytes: escapeBytes(bodyText(x.rec), 300),
        });
      }
      if (!validateCompletion(x.json)) {
        return fail({
          requirement: 'The response MUST validate against the chat.completion schema (required fields and types).',
          expected: 'id, object "chat.completion", created (int), model, choices[{index, message{role "assistant", content}, finish_reason}], usage',
          actual: `${schemaErrors(validateCompletion).length} schema violation(s)`,
          violations: schemaErrors(validateCompletion),
          bytes: escapeBytes(bodyText(x.rec), 300),
        });
      }
      const usage = (x.json as { usage?: { completion_tokens?: number } }).usage;
      return pass(`valid chat.completion; ${usage?.completion_tokens ?? 'no'} completion tokens`, { ms: x.rec.tEnd });
    },
  },
];

export const proofs: Proof[] = [
  passProof('api.models-lists-model'),
  faultProof('api.models-lists-model', 'api-models-missing-model', ['reference-model', 'GET /v1/models']),
  passProof('api.chat-basic'),
  faultProof('api.chat-basic', 'api-chat-schema', ['chat.completion schema']),
];
