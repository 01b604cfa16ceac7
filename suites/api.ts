// Family `api`: basic OpenAI API behaviour (mostly non-streaming). Reference: OpenAI API reference, Chat Completions.
import type { CheckContext, CheckDef } from '../lib/check/check.ts';
import type { FamilySpec } from '../lib/check/family-spec.ts';
import { fail, inconclusive, pass } from '../lib/check/messages.ts';
import { compileSchema, schemaErrors } from '../lib/config/schemas.ts';
import { escapeBytes } from '../lib/decode/stream-decoder.ts';
import { chat, describeExchange, type Exchange, generationBody, getJson, uniquePrompt } from '../lib/http/exchange.ts';
import { filler } from '../lib/http/prompts.ts';
import { bodyText } from '../lib/http/recorder.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'api',
  order: 10,
  what: '`/v1/models` lists the model; chat completion schema; max_tokens, stop, usage, unknown model',
};

const validateCompletion = compileSchema('chat-completion.schema.json');

// ---- helpers for max-tokens / stop-sequence / usage-consistent -------------------------------------------------

interface ChatResult {
  text: string;
  finish?: string;
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown; total_tokens?: unknown };
}

/** Text, finish_reason and usage of a non-stream or stream chat exchange (undefined when it is not a 200 answer). */
function chatResult(x: Exchange): ChatResult | undefined {
  if (x.rec.status !== 200 || x.rec.failure) return undefined;
  if (x.events) {
    const u = x.events.usage?.raw as ChatResult['usage'] | undefined;
    return { text: x.events.text, finish: x.events.finishReasons.at(-1)?.value, usage: u };
  }
  const j = x.json as
    | { choices?: Array<{ message?: { content?: unknown }; finish_reason?: unknown }>; usage?: ChatResult['usage'] }
    | undefined;
  const c = j?.choices?.[0];
  if (!c) return undefined;
  return {
    text: typeof c.message?.content === 'string' ? c.message.content : '',
    finish: typeof c.finish_reason === 'string' ? c.finish_reason : undefined,
    usage: j?.usage,
  };
}

function requestFailed(requirement: string, x: Exchange) {
  return fail({
    requirement,
    expected: 'HTTP 200 with a chat.completion (or a complete stream)',
    actual: `${describeExchange(x)}${x.jsonError ? `; ${x.jsonError}` : ''}`,
    bytes: escapeBytes(bodyText(x.rec), 300),
  });
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

const MAX_TOKENS = 8;
const STOPS = [' ', 'e', '.'];
const ADDED_WORDS = 200;

async function usageOf(ctx: CheckContext, prompt: string): Promise<{ x: Exchange; usage?: ChatResult['usage'] }> {
  const x = await chat(ctx, generationBody(ctx, 'openai-chat', { prompt, maxTokens: 1, stream: false }));
  return { x, usage: chatResult(x)?.usage };
}

export const checks: CheckDef[] = [
  {
    id: 'api.models-lists-model',
    title: 'GET /v1/models lists the configured model',
    level: 'MUST',
    rationale:
      'Clients pick a model from /v1/models; a server that cannot list the model it serves cannot be configured (higgs, mlx-serve could not load it at all).',
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
    rationale:
      'Every OpenAI client parses this object; a missing field or wrong type breaks them before any text is shown.',
    reference:
      'OpenAI API reference, Chat Completions: the chat completion object (id, object "chat.completion", created, model, choices[].message, finish_reason, usage)',
    requires: ['openai-chat'],
    async run(ctx) {
      const x = await chat(
        ctx,
        generationBody(ctx, 'openai-chat', {
          prompt: uniquePrompt(ctx, 'Say hello in five words.'),
          maxTokens: 16,
          stream: false,
        }),
      );
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
          expected:
            'id, object "chat.completion", created (int), model, choices[{index, message{role "assistant", content}, finish_reason}], usage',
          actual: `${schemaErrors(validateCompletion).length} schema violation(s)`,
          violations: schemaErrors(validateCompletion),
          bytes: escapeBytes(bodyText(x.rec), 300),
        });
      }
      const usage = (x.json as { usage?: { completion_tokens?: number } }).usage;
      return pass(`valid chat.completion; ${usage?.completion_tokens ?? 'no'} completion tokens`, { ms: x.rec.tEnd });
    },
  },
  {
    id: 'api.max-tokens',
    title: 'max_tokens bounds the completion and finish_reason says "length" when it is hit',
    level: 'MUST',
    rationale:
      'Clients budget cost, latency and context with max_tokens; a server that generates past it breaks all three.',
    reference:
      'OpenAI API reference, Chat Completions: max_tokens "the maximum number of tokens that can be generated"; finish_reason "length" if the maximum number of tokens was reached',
    requires: ['openai-chat'],
    timeoutMs: 60_000,
    async run(ctx) {
      const forced = !!ctx.profile.forceLength;
      const x = await chat(
        ctx,
        generationBody(ctx, 'openai-chat', {
          prompt: uniquePrompt(ctx, 'Write a long story about a lighthouse keeper, at least 300 words.'),
          maxTokens: MAX_TOKENS,
          stream: false,
          exactLength: true,
        }),
      );
      const r = chatResult(x);
      if (!r) return requestFailed(`A chat completion with max_tokens ${MAX_TOKENS} MUST succeed.`, x);
      const ct = r.usage?.completion_tokens;
      const metrics = { maxTokens: MAX_TOKENS, completionTokens: ct, finishReason: r.finish, forcedLength: forced };
      if (!isCount(ct))
        return inconclusive(
          `no usage.completion_tokens to compare with max_tokens (usage ${JSON.stringify(r.usage) ?? 'missing'}; finish_reason ${JSON.stringify(r.finish)})`,
          metrics,
        );
      const violations: string[] = [];
      if (ct > MAX_TOKENS) violations.push(`usage.completion_tokens ${ct} > max_tokens ${MAX_TOKENS}`);
      if (forced && ct >= MAX_TOKENS && r.finish !== 'length')
        violations.push(`finish_reason ${JSON.stringify(r.finish)} although the limit was reached (expected "length")`);
      if (violations.length > 0) {
        return fail(
          {
            requirement: `A completion MUST NOT exceed max_tokens, and finish_reason MUST be "length" when max_tokens ends it.`,
            expected: `usage.completion_tokens ≤ ${MAX_TOKENS}; finish_reason "length" when it equals ${MAX_TOKENS}`,
            actual: `${violations[0]} (usage.completion_tokens ${ct}, finish_reason ${JSON.stringify(r.finish)}, text ${escapeBytes(r.text, 120)})`,
            violations: violations.slice(1),
          },
          metrics,
        );
      }
      if (ct < MAX_TOKENS) {
        return inconclusive(
          `the model stopped by itself after ${ct} of ${MAX_TOKENS} tokens (finish_reason ${JSON.stringify(r.finish)}), which shows nothing about the limit` +
            (forced ? '' : ' (declare forceLength in the profile if the server supports ignore_eos or min_tokens)'),
          metrics,
        );
      }
      if (r.finish !== 'length') {
        return inconclusive(
          `completion_tokens ${ct} = max_tokens but finish_reason ${JSON.stringify(r.finish)}: the model may have ended exactly at the limit (declare forceLength for a clear verdict)`,
          metrics,
        );
      }
      return pass(`max_tokens ${MAX_TOKENS}: usage.completion_tokens ${ct}, finish_reason "length"`, metrics);
    },
  },
  {
    id: 'api.stop-sequence',
    title: 'stop sequences end the completion and never appear in its text',
    level: 'MUST',
    rationale:
      'Clients use stop to cut structured output (one line, one field); text past a stop string, or the stop string itself, corrupts it.',
    reference:
      'OpenAI API reference, Chat Completions: stop "up to 4 sequences where the API will stop generating further tokens. The returned text will not contain the stop sequence"; finish_reason "stop"',
    requires: ['openai-chat'],
    timeoutMs: 90_000, // two requests of up to 32 tokens: about 25 s at 3 tok/s
    async run(ctx) {
      const prompt = 'Write three sentences about the sea, with ordinary words and punctuation.';
      const xs = [
        await chat(
          ctx,
          generationBody(ctx, 'openai-chat', {
            prompt: uniquePrompt(ctx, prompt),
            maxTokens: 32,
            stream: false,
            extra: { stop: STOPS },
          }),
        ),
        await chat(
          ctx,
          generationBody(ctx, 'openai-chat', {
            prompt: uniquePrompt(ctx, prompt),
            maxTokens: 32,
            stream: true,
            extra: { stop: STOPS },
          }),
        ),
      ];
      const labels = ['non-stream', 'stream'];
      const violations: string[] = [];
      const unjudged: string[] = [];
      const results: Array<{ mode: string; text: string; finish?: string }> = [];
      for (const [i, x] of xs.entries()) {
        const r = chatResult(x);
        if (!r)
          return requestFailed(`A ${labels[i]} chat completion with stop ${JSON.stringify(STOPS)} MUST succeed.`, x);
        results.push({ mode: labels[i]!, text: r.text, finish: r.finish });
        const found = STOPS.map((s) => ({ s, at: r.text.indexOf(s) })).filter((f) => f.at >= 0);
        for (const f of found)
          violations.push(
            `${labels[i]}: stop string ${JSON.stringify(f.s)} at offset ${f.at} of the text: ${escapeBytes(r.text.slice(Math.max(0, f.at - 20), f.at + 20), 80)}`,
          );
        if (found.length === 0 && r.finish === 'length')
          unjudged.push(`${labels[i]}: ended by length before any stop string appeared (${escapeBytes(r.text, 80)})`);
        else if (found.length === 0 && r.finish !== 'stop')
          violations.push(`${labels[i]}: finish_reason ${JSON.stringify(r.finish)}, expected "stop"`);
      }
      const metrics = { stop: STOPS, results };
      if (violations.length > 0) {
        return fail(
          {
            requirement:
              'Generation MUST stop at the first stop sequence, the returned text MUST NOT contain it, and finish_reason MUST be "stop".',
            expected: `text without any of ${JSON.stringify(STOPS)} and finish_reason "stop" (or "length" if none could appear in time)`,
            actual: violations[0]!,
            violations: violations.slice(1),
            bytes: escapeBytes(results.map((r) => `${r.mode}: ${r.text}`).join(' | '), 300),
          },
          metrics,
        );
      }
      if (unjudged.length === results.length)
        return inconclusive(`no stop string could appear: ${unjudged.join('; ')}`, metrics);
      return pass(
        `stop ${JSON.stringify(STOPS)}: ${results.map((r) => `${r.mode} text "${escapeBytes(r.text, 40)}" (finish_reason ${r.finish})`).join(', ')}`,
        metrics,
      );
    },
  },
  {
    id: 'api.usage-consistent',
    title: 'usage.prompt_tokens grows with the prompt, and total = prompt + completion',
    level: 'MUST',
    rationale:
      'Clients bill, budget context and compute tokens/s from usage; a constant or unrelated count makes every derived figure wrong.',
    reference:
      'OpenAI API reference, Chat Completions: usage {prompt_tokens, completion_tokens, total_tokens} "usage statistics for the completion request"',
    requires: ['openai-chat'],
    thresholds: {
      minTokensPerWord: { value: 0.5, why: 'every tokenizer in use spends at least one token per two English words' },
    },
    timeoutMs: 30_000,
    async run(ctx) {
      const minPerWord = ctx.threshold('minTokensPerWord');
      const a = await usageOf(ctx, uniquePrompt(ctx, 'Say hello.'));
      const b = await usageOf(ctx, uniquePrompt(ctx, `Say hello. Notes: ${filler(ADDED_WORDS, 11)}`));
      for (const [i, r] of [a, b].entries()) {
        if (r.x.rec.status !== 200 || r.x.rec.failure || r.x.json === undefined)
          return requestFailed(`A chat completion (${i === 0 ? 'short' : 'long'} prompt) MUST succeed.`, r.x);
      }
      const violations: string[] = [];
      for (const [label, r] of [
        ['short prompt', a],
        ['long prompt', b],
      ] as const) {
        const u = r.usage;
        if (!u) {
          violations.push(`${label}: no usage object`);
          continue;
        }
        if (!isCount(u.prompt_tokens))
          violations.push(
            `${label}: usage.prompt_tokens ${JSON.stringify(u.prompt_tokens)} is not a non-negative integer`,
          );
        if (!isCount(u.completion_tokens))
          violations.push(
            `${label}: usage.completion_tokens ${JSON.stringify(u.completion_tokens)} is not a non-negative integer`,
          );
        if (
          u.total_tokens !== undefined &&
          isCount(u.prompt_tokens) &&
          isCount(u.completion_tokens) &&
          u.total_tokens !== u.prompt_tokens + u.completion_tokens
        )
          violations.push(
            `${label}: usage.total_tokens ${JSON.stringify(u.total_tokens)} ≠ prompt_tokens ${u.prompt_tokens} + completion_tokens ${u.completion_tokens}`,
          );
      }
      const pa = a.usage?.prompt_tokens;
      const pb = b.usage?.prompt_tokens;
      const need = Math.ceil(minPerWord * ADDED_WORDS);
      const metrics = {
        shortPromptTokens: pa,
        longPromptTokens: pb,
        addedWords: ADDED_WORDS,
        minGrowth: need,
        usage: [a.usage, b.usage],
      };
      if (isCount(pa) && isCount(pb) && pb - pa < need) {
        violations.unshift(
          `usage.prompt_tokens ${pa} for the short prompt and ${pb} after adding ${ADDED_WORDS} words: grew by ${pb - pa}, expected at least ${need}`,
        );
      }
      if (violations.length > 0) {
        return fail(
          {
            requirement:
              'usage.prompt_tokens MUST count the prompt (it grows when words are added), and total_tokens MUST equal prompt_tokens + completion_tokens.',
            expected: `prompt_tokens grows by ≥ ${need} for ${ADDED_WORDS} added words (≥ ${minPerWord} token per word); integer counts; total = prompt + completion`,
            actual: violations[0]!,
            violations: violations.slice(1),
          },
          metrics,
        );
      }
      return pass(
        `usage.prompt_tokens ${pa} → ${pb} after adding ${ADDED_WORDS} words (+${(pb as number) - (pa as number)}); totals consistent`,
        metrics,
      );
    },
  },
];

export const proofs: Proof[] = [
  passProof('api.models-lists-model', { messageIncludes: ['model(s) listed, including reference-model'] }),
  faultProof('api.models-lists-model', 'api-models-missing-model', ['reference-model', 'GET /v1/models']),
  passProof('api.chat-basic', { messageIncludes: ['valid chat.completion'] }),
  faultProof('api.chat-basic', 'api-chat-schema', ['chat.completion schema']),
  passProof('api.max-tokens', { messageIncludes: ['max_tokens 8: usage.completion_tokens 8, finish_reason "length"'] }),
  faultProof('api.max-tokens', 'api-ignore-max-tokens', ['usage.completion_tokens 18 > max_tokens 8']),
  passProof('api.stop-sequence', { messageIncludes: ['(finish_reason stop)', 'stream text'] }),
  faultProof('api.stop-sequence', 'api-ignore-stop', ['stop string', 'MUST NOT contain it']),
  passProof('api.usage-consistent', { messageIncludes: ['after adding 200 words', 'totals consistent'] }),
  faultProof('api.usage-consistent', 'api-usage-constant', [
    'usage.prompt_tokens 10 for the short prompt and 10',
    'grew by 0',
  ]),
];
