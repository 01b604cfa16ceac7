// Family `api`: basic OpenAI API behaviour (mostly non-streaming). Reference: OpenAI API reference, Chat Completions.

import { compileSchema, schemaErrors } from '../lib/config/schemas.ts';
import { escapeBytes } from '../lib/decode/stream-decoder.ts';
import {
  chat,
  describeExchange,
  type Exchange,
  generationBody,
  getJson,
  uniquePrompt,
} from '../lib/exchange/exchange.ts';
import { filler } from '../lib/exchange/prompts.ts';
import { bodyText } from '../lib/http/recorder.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Verdict } from '../lib/model/types.ts';
import { fail, fmt, inconclusive, pass } from '../lib/model/verdict.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';
import { blockedIfUnserved } from './support/root-causes.ts';

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

// ---- api.max-tokens: k requests before "inconclusive" ----------------------------------------------------------

/**
 * The requests of api.max-tokens: every prompt asks for far more text than its limit allows, and no two limits are
 * equal. A server that ends each of them at exactly its limit with finish_reason "stop" is mislabelling the cut: a
 * model ending by itself would have to stop on exactly the limit k times over, at k different lengths (docs/grading.md
 * "Evidence that decides").
 */
const LIMIT_PROBES = [
  { maxTokens: 8, prompt: 'Write a long story about a lighthouse keeper, at least 300 words.' },
  { maxTokens: 11, prompt: 'Describe in at least 300 words how a river shapes its valley over a thousand years.' },
  { maxTokens: 14, prompt: 'Write a letter of at least 300 words from a sailor to his sister about a storm at sea.' },
];
/** The share of the check's bound the requests may use: the rest is room for one request slower than the others. */
const LIMIT_BUDGET_SHARE = 0.6;

interface LimitSample {
  maxTokens: number;
  completionTokens: number;
  finish?: string;
  text: string;
  ms: number;
}

const describeSample = (s: LimitSample) =>
  `max_tokens ${s.maxTokens}: ${s.completionTokens} token(s), finish_reason ${JSON.stringify(s.finish)}`;

async function maxTokensCheck(ctx: CheckContext): Promise<Verdict> {
  const forced = !!ctx.profile.forceLength;
  const boundMs = ctx.check.timeoutMs ?? 60_000;
  const t0 = performance.now();
  const samples: LimitSample[] = [];
  const metrics = () => ({
    maxTokens: samples[0]?.maxTokens ?? MAX_TOKENS,
    completionTokens: samples[0]?.completionTokens,
    finishReason: samples[0]?.finish,
    forcedLength: forced,
    requests: samples.map((s) => ({ maxTokens: s.maxTokens, completionTokens: s.completionTokens, finish: s.finish })),
  });
  let cutShort = '';
  for (const probe of LIMIT_PROBES) {
    // Bounded in time as in count, sized to this server's pace: the next request must fit in what is left at the
    // pace of the slowest so far (scaled to its limit), twice over.
    const spent = performance.now() - t0;
    const perToken = Math.max(0, ...samples.map((s) => s.ms / Math.max(1, s.completionTokens)));
    const next = 2 * perToken * probe.maxTokens;
    if (samples.length && spent + next > boundMs * LIMIT_BUDGET_SHARE) {
      cutShort = ` (request ${samples.length + 1} of ${LIMIT_PROBES.length} not sent: at ${fmt(perToken)} ms a token it would not fit in the check's bound of ${Math.round(boundMs / 1000)} s)`;
      break;
    }
    const x = await chat(
      ctx,
      generationBody(ctx, 'openai-chat', {
        prompt: uniquePrompt(ctx, probe.prompt),
        maxTokens: probe.maxTokens,
        stream: false,
        exactLength: true,
      }),
    );
    const r = chatResult(x);
    if (!r) return requestFailed(`A chat completion with max_tokens ${probe.maxTokens} MUST succeed.`, x);
    const ct = r.usage?.completion_tokens;
    if (!isCount(ct))
      return inconclusive(
        `no usage.completion_tokens to compare with max_tokens (usage ${JSON.stringify(r.usage) ?? 'missing'}; finish_reason ${JSON.stringify(r.finish)})`,
        metrics(),
      );
    const s: LimitSample = {
      maxTokens: probe.maxTokens,
      completionTokens: ct,
      finish: r.finish,
      text: r.text,
      ms: x.rec.tEnd,
    };
    samples.push(s);
    const L = probe.maxTokens;
    const violations: string[] = [];
    if (ct > L) violations.push(`usage.completion_tokens ${ct} > max_tokens ${L}`);
    if (forced && ct >= L && r.finish !== 'length')
      violations.push(`finish_reason ${JSON.stringify(r.finish)} although the limit was reached (expected "length")`);
    if (violations.length > 0) {
      return fail(
        {
          requirement: `A completion MUST NOT exceed max_tokens, and finish_reason MUST be "length" when max_tokens ends it.`,
          expected: `usage.completion_tokens ≤ ${L}; finish_reason "length" when it equals ${L}`,
          actual: `${violations[0]} (usage.completion_tokens ${ct}, finish_reason ${JSON.stringify(r.finish)}, text ${escapeBytes(r.text, 120)})`,
          violations: violations.slice(1),
        },
        metrics(),
      );
    }
    if (ct === L && r.finish === 'length') {
      const before = samples.slice(0, -1);
      return pass(
        `max_tokens ${L}: usage.completion_tokens ${ct}, finish_reason "length"` +
          (before.length ? ` (after ${before.map(describeSample).join('; ')})` : ''),
        metrics(),
      );
    }
    // Ended by the model before the limit, or at the limit with another finish_reason: this one cannot decide.
  }
  const atLimit = samples.filter((s) => s.completionTokens === s.maxTokens);
  if (atLimit.length === LIMIT_PROBES.length) {
    const finishes = [...new Set(atLimit.map((s) => JSON.stringify(s.finish)))].join(' / ');
    return fail(
      {
        requirement: 'finish_reason MUST be "length" when max_tokens ends the completion.',
        expected: `finish_reason "length" for a completion of exactly max_tokens tokens, at least once in ${LIMIT_PROBES.length} requests`,
        actual:
          `${atLimit.length} of ${LIMIT_PROBES.length} requests, with different prompts and max_tokens ${atLimit.map((s) => s.maxTokens).join(', ')}, ended at exactly their limit with finish_reason ${finishes}: ` +
          `a model ending by itself would have had to stop on exactly the limit every time, at ${atLimit.length} different lengths, so max_tokens cut them and the server mislabels the cut`,
        violations: atLimit.map((s) => `${describeSample(s)}, text ${escapeBytes(s.text, 80)}`),
      },
      metrics(),
    );
  }
  const short = samples.filter((s) => s.completionTokens < s.maxTokens);
  const notes = [
    atLimit.length
      ? `${atLimit.length} of ${samples.length} ended at exactly max_tokens with finish_reason ${[...new Set(atLimit.map((s) => JSON.stringify(s.finish)))].join(' / ')}: the model may have ended exactly at the limit`
      : '',
    short.length
      ? `${short.length} stopped by itself before its limit (${short.map((s) => `${s.completionTokens} of ${s.maxTokens}`).join(', ')}), which shows nothing about the limit`
      : '',
  ].filter(Boolean);
  return inconclusive(
    `${samples.map(describeSample).join('; ')}: ${notes.join('; ')}${cutShort}` +
      (forced
        ? ''
        : ' (declare forceLength in the profile if the server supports ignore_eos or min_tokens, for a clear verdict)'),
    metrics(),
  );
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
        // Setup already stopped the run when the server also refuses the model (lib/server/model-served.ts): here it
        // serves a name it does not list. The first line carries the evidence: it is what the console shows.
        const listed = JSON.stringify(ids).slice(0, 200);
        return fail({
          requirement: `The configured model MUST appear in GET /v1/models data[].id: ${JSON.stringify(ctx.profile.model)} is not among ${listed}.`,
          expected: `an entry with id ${JSON.stringify(ctx.profile.model)}`,
          actual: `model missing from the list; ids: ${JSON.stringify(ids).slice(0, 300)}${ctx.server.discovery?.notes.find((n) => n.includes('serves a name it does not list')) ? '; a request naming it was answered: the server serves a name it does not list' : ''}`,
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
    // Up to LIMIT_PROBES.length requests of at most 14 tokens: about 20 s at 3 tok/s; the loop stops early when the
    // next request would not fit (maxTokensProbes).
    timeoutMs: 90_000,
    run: maxTokensCheck,
  },
  {
    id: 'api.stop-sequence',
    title: 'stop sequences end the completion and never appear in its text',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'Clients use stop to cut structured output (one line, one field); text past a stop string, or the stop string itself, corrupts it.',
    reference:
      'OpenAI API reference, Chat Completions: stop "up to 4 sequences where the API will stop generating further tokens. The returned text will not contain the stop sequence"; finish_reason "stop"',
    requires: ['openai-chat'],
    timeoutMs: 90_000, // two requests of up to 32 tokens: about 25 s at 3 tok/s
    async run(ctx) {
      const prompt = 'Write three sentences about the sea, with ordinary words and punctuation.';
      const labels = ['non-stream', 'stream'];
      const violations: string[] = [];
      const unjudged: string[] = [];
      const results: Array<{ mode: string; text: string; finish?: string }> = [];
      // One request at a time: a failed request is the verdict, so the next one is not sent (against a server that
      // never ends an answer, it would only wait out another deadline).
      for (const [i, stream] of [false, true].entries()) {
        const x = await chat(
          ctx,
          generationBody(ctx, 'openai-chat', {
            prompt: uniquePrompt(ctx, prompt),
            maxTokens: 32,
            stream,
            extra: { stop: STOPS },
          }),
        );
        const r = chatResult(x);
        if (!r) {
          const failed = requestFailed(
            `A ${labels[i]} chat completion with stop ${JSON.stringify(STOPS)} MUST succeed.`,
            x,
          );
          // A streamed request the server does not serve at all is the sse family's finding, not this check's.
          return i === 1 ? blockedIfUnserved(failed, [x.rec], { mayReport: false }) : failed;
        }
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
      const answered = (r: { x: Exchange }) => r.x.rec.status === 200 && !r.x.rec.failure && r.x.json !== undefined;
      const a = await usageOf(ctx, uniquePrompt(ctx, 'Say hello.'));
      // A failed short request is the verdict: the long one is not sent (it would only wait out its own deadline).
      if (!answered(a)) return requestFailed('A chat completion (short prompt) MUST succeed.', a.x);
      const b = await usageOf(ctx, uniquePrompt(ctx, `Say hello. Notes: ${filler(ADDED_WORDS, 11)}`));
      if (!answered(b)) return requestFailed('A chat completion (long prompt) MUST succeed.', b.x);
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
  // Told nothing (no forceLength): k of k requests at k different limits, all cut and all "stop", decide it.
  faultProof('api.max-tokens', 'finish-stop-at-limit', ['3 of 3 requests', 'max_tokens 8, 11, 14', '"stop"'], {
    profile: { forceLength: undefined },
    note: 'told nothing: no forceLength declared',
  }),
  passProof('api.max-tokens', {
    profile: { forceLength: undefined },
    messageIncludes: ['max_tokens 8: usage.completion_tokens 8, finish_reason "length"'],
    note: 'told nothing: one cut labelled "length" decides',
  }),
  // A model that ends by itself at one natural length (8 tokens, "stop") matches the first limit only: no verdict, never
  // a fail. The fault makes the one coincidence (EOS on the 8th token, the limit) say "stop", as a correct server may.
  faultProof('api.max-tokens', 'finish-stop-at-limit', ['1 of 3 ended at exactly max_tokens', '(8 of 11, 8 of 14)'], {
    serverArgs: ['--natural-length', '8'],
    profile: { forceLength: undefined },
    expect: 'inconclusive',
    raw: 'inconclusive',
    note: 'a model with one natural length cannot match three different limits',
  }),
  passProof('api.stop-sequence', { messageIncludes: ['(finish_reason stop)', 'stream text'] }),
  faultProof('api.stop-sequence', 'api-ignore-stop', ['stop string', 'MUST NOT contain it']),
  passProof('api.usage-consistent', { messageIncludes: ['after adding 200 words', 'totals consistent'] }),
  faultProof('api.usage-consistent', 'api-usage-constant', [
    'usage.prompt_tokens 10 for the short prompt and 10',
    'grew by 0',
  ]),
];
