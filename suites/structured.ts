// Family `structured`: response_format — JSON mode (json_object: the output parses) and Structured Outputs
// (json_schema with strict: true: the output validates), streamed and not. A server that answers json_schema 200 and
// unconstrained (llama-server b4747) fails here, saying so.
// References: OpenAI API reference, Chat Completions, response_format (https://platform.openai.com/docs/api-reference/chat/create):
// {"type": "json_object"} "ensures the message the model generates is valid JSON"; {"type": "json_schema",
// "json_schema": {name, schema, strict}} "enables Structured Outputs which ensures the model will match your supplied
// JSON schema"; finish_reason "stop" / "length".
//
// Bounded schemas only (enums, small integers, booleans, short arrays): a random-weight model under a grammar
// finishes them within the budget. A response cut by max_tokens is inconclusive while what was written could still
// become valid JSON; text that can never be JSON fails, cut or not. Capability `structured-output`: declared, or
// discovered by the probe of structured.supported (a json_object request, also judged by structured.json-object).

import { jsonPrefix } from '../lib/decode/json-prefix.ts';
import { escapeBytes } from '../lib/decode/stream-decoder.ts';
import { chatAnswer, schemaProblems } from '../lib/decode/tool-calls.ts';
import { type Exchange, generationBody, send, uniquePrompt } from '../lib/exchange/exchange.ts';
import { sharedValue } from '../lib/exchange/recordings.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Verdict } from '../lib/model/types.ts';
import { fail, inconclusive, pass } from '../lib/model/verdict.ts';
import { featureGate, judgeInvalidCases, probeCheck, unanswered } from '../lib/server/feature-probe.ts';
import { faultProof, type Proof, passProof, skipProof } from './support/proof.ts';
import { blockedIfUnserved } from './support/root-causes.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'structured',
  order: 80,
  what: '`response_format` json_object and json_schema (strict), streamed and not: the output parses and validates; an ignored schema fails; a bounded answer cut by max_tokens is inconclusive',
};

const OPENAI =
  'OpenAI API reference, Chat Completions: response_format (https://platform.openai.com/docs/api-reference/chat/create)';

const SCHEMA = {
  type: 'object',
  properties: {
    answer: { type: 'string', enum: ['yes', 'no', 'maybe'] },
    confidence: { type: 'integer', minimum: 1, maximum: 5 },
    checked: { type: 'boolean' },
    colours: { type: 'array', items: { type: 'string', enum: ['red', 'green', 'blue'] }, minItems: 1, maxItems: 2 },
  },
  required: ['answer', 'confidence', 'checked', 'colours'],
  additionalProperties: false,
};
const JSON_SCHEMA_FORMAT = { type: 'json_schema', json_schema: { name: 'sky_report', strict: true, schema: SCHEMA } };
const JSON_OBJECT_FORMAT = { type: 'json_object' };

/** max_tokens: the schema's answers take 10–50 tokens under llama-server's grammar (whitespace included). */
const BUDGET = 256;
const PROMPT =
  'Is the sky blue? Reply in JSON with answer (yes, no or maybe), confidence (1 to 5), checked (a boolean) and colours (one or two of red, green, blue).';

function once(ctx: CheckContext, key: string, format: unknown, stream: boolean): Promise<Exchange> {
  return sharedValue(
    ctx,
    `structured/${key}`,
    () =>
      send(
        ctx,
        'openai-chat',
        generationBody(ctx, 'openai-chat', {
          prompt: uniquePrompt(ctx, PROMPT),
          maxTokens: BUDGET,
          stream,
          extra: { response_format: format, ...(stream ? { stream_options: { include_usage: true } } : {}) },
        }),
      ),
    (x) => [x.rec],
  );
}

/** The probe: response_format json_object, not streamed. */
const probe = (ctx: CheckContext) => once(ctx, 'json-object', JSON_OBJECT_FORMAT, false);

function gated(run: (ctx: CheckContext) => Promise<Verdict>): (ctx: CheckContext) => Promise<Verdict> {
  return async (ctx) =>
    (await featureGate(ctx, 'structured-output', 'structured.supported', () => probe(ctx))) ?? run(ctx);
}

interface JsonAnswer {
  content: string;
  finish: unknown;
  completionTokens?: number;
  streamed: boolean;
}

function answerOf(x: Exchange): JsonAnswer {
  if (x.events) {
    const u = x.events.usage?.completion_tokens;
    return {
      content: x.events.text,
      finish: x.events.finishReasons.at(-1)?.value,
      completionTokens: u,
      streamed: true,
    };
  }
  const a = chatAnswer(x.json);
  const u = (x.json as { usage?: { completion_tokens?: unknown } } | undefined)?.usage?.completion_tokens;
  return {
    content: typeof a.content === 'string' ? a.content : '',
    finish: a.finishReason,
    completionTokens: typeof u === 'number' ? u : undefined,
    streamed: false,
  };
}

/**
 * Judge JSON output: complete and valid passes; a cut that could still become valid JSON is inconclusive; text
 * that can never be JSON, JSON that breaks the schema, or incomplete JSON the server calls finished fails.
 */
function judgeJsonOutput(r: JsonAnswer, schema: unknown | undefined, mode: string): Verdict {
  const p = jsonPrefix(r.content);
  const where = `${r.streamed ? 'streamed ' : ''}content ${escapeBytes(r.content, 200)}`;
  const metrics = { finishReason: r.finish, completionTokens: r.completionTokens, chars: r.content.length };
  const requirement = schema
    ? `Under response_format ${mode} the content MUST be JSON that validates against the schema (strict: true).`
    : `Under response_format ${mode} the content MUST be a JSON object.`;
  const expected = schema
    ? `a JSON object valid against ${JSON.stringify(schema)}`
    : 'a JSON object, e.g. {"answer": "yes"}';
  if (p.state === 'invalid') {
    return fail(
      {
        requirement,
        expected,
        actual: `not JSON (${p.reason} at offset ${p.at})${r.finish === 'length' ? ', cut by max_tokens but not JSON even so' : ''}: the response_format was ignored — ${where}`,
      },
      metrics,
    );
  }
  if (p.state === 'prefix') {
    if (r.finish === 'length' || (r.completionTokens !== undefined && r.completionTokens >= BUDGET)) {
      const why = schema
        ? 'the bounded schema did not finish within it on this model'
        : 'JSON mode bounds no length, and this model did not close the object in time';
      return inconclusive(
        `max_tokens ${BUDGET} cut the output while it was still valid JSON so far (${r.content.length} chars): ${why}`,
        metrics,
      );
    }
    return fail(
      {
        requirement,
        expected,
        actual: `the JSON ends unfinished although finish_reason is ${JSON.stringify(r.finish)} — ${where}`,
      },
      metrics,
    );
  }
  const problems =
    typeof p.value !== 'object' || p.value === null || Array.isArray(p.value)
      ? [`the JSON is ${Array.isArray(p.value) ? 'an array' : JSON.stringify(p.value)}, not an object`]
      : schema
        ? schemaProblems(p.value, schema)
        : [];
  if (problems.length) {
    return fail(
      {
        requirement,
        expected,
        actual: `${schema ? 'JSON that does not validate: the schema was ignored or not enforced' : 'not an object'} — ${problems[0]} — ${where}`,
        violations: problems.slice(1),
      },
      metrics,
    );
  }
  if (r.finish === 'length' && r.completionTokens !== undefined && r.completionTokens < BUDGET) {
    return fail(
      {
        requirement: 'A complete answer MUST end with finish_reason "stop"; "length" means max_tokens cut it.',
        expected: `finish_reason "stop" (the output is complete after ${r.completionTokens} of ${BUDGET} tokens)`,
        actual: `finish_reason "length" — ${where}`,
      },
      metrics,
    );
  }
  return pass(
    `valid JSON${schema ? ' matching the schema' : ' object'}: ${escapeBytes(r.content, 100)} (finish_reason ${JSON.stringify(r.finish)})`,
    metrics,
  );
}

function jsonCheck(key: string, format: unknown, stream: boolean, schema: unknown | undefined, mode: string) {
  return gated(async (ctx) => {
    const x = key === 'json-object' ? await probe(ctx) : await once(ctx, key, format, stream);
    const what = `a ${stream ? 'streamed ' : ''}request with response_format ${mode}`;
    const bad = unanswered(
      x,
      what,
      `A request with response_format ${mode} MUST be answered, or refused with a 4xx; never a 5xx.`,
    );
    // A server that serves no streamed chat request at all fails once for it (lib/check/blocked.ts).
    if (bad) return stream && bad.outcome === 'fail' ? blockedIfUnserved(bad, [x.rec]) : bad;
    return judgeJsonOutput(answerOf(x), schema, mode);
  });
}

const base = { requires: ['openai-chat', 'structured-output'] as CheckDef['requires'], timeoutMs: 180_000 }; // two requests of up to 256 tokens at 3 tok/s

export const checks: CheckDef[] = [
  {
    ...base,
    id: 'structured.supported',
    title: 'a request with response_format json_object is answered (200), or refused with a 4xx — never a 5xx',
    level: 'MUST',
    rationale:
      'A client cannot tell "no JSON mode" from "server broken" when the request gets a 500; a 4xx says it honestly.',
    reference: `${OPENAI}; RFC 9110 §15.5 (4xx) / §15.6 (5xx)`,
    run: (ctx) =>
      probeCheck(
        ctx,
        'structured-output',
        () => probe(ctx),
        'the probe (response_format json_object, not streamed)',
        'A chat request with response_format',
      ),
  },
  {
    ...base,
    id: 'structured.json-object',
    title: 'response_format json_object: the content is a JSON object',
    level: 'MUST',
    rationale: 'JSON mode exists so clients can JSON.parse the answer; text that is not JSON crashes them.',
    reference: `${OPENAI}: {"type": "json_object"} ensures the message the model generates is valid JSON`,
    run: jsonCheck('json-object', JSON_OBJECT_FORMAT, false, undefined, 'json_object'),
  },
  {
    ...base,
    id: 'structured.json-object-stream',
    title: 'response_format json_object, streamed: the content deltas form a JSON object',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'Streaming clients parse the concatenated deltas; a server that constrains only non-streamed answers breaks them.',
    reference: `${OPENAI}: response_format json_object; stream (chat completion chunks, delta.content)`,
    run: jsonCheck('json-object-stream', JSON_OBJECT_FORMAT, true, undefined, 'json_object'),
  },
  {
    ...base,
    id: 'structured.json-schema',
    title: 'response_format json_schema (strict): the content validates against the schema',
    level: 'MUST',
    rationale:
      'Structured Outputs is a promise that the answer matches the schema; an ignored schema (200, free text) breaks every client that trusted it.',
    reference: `${OPENAI}: {"type": "json_schema", "json_schema": {"name", "schema", "strict": true}} ensures the model will match your supplied JSON schema`,
    run: jsonCheck('json-schema', JSON_SCHEMA_FORMAT, false, SCHEMA, 'json_schema'),
  },
  {
    ...base,
    id: 'structured.json-schema-stream',
    title: 'response_format json_schema (strict), streamed: the content deltas form JSON that validates',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'Streaming clients parse the concatenated deltas against the same schema; the constraint must hold in both modes.',
    reference: `${OPENAI}: response_format json_schema; stream (chat completion chunks, delta.content)`,
    run: jsonCheck('json-schema-stream', JSON_SCHEMA_FORMAT, true, SCHEMA, 'json_schema'),
  },
  {
    ...base,
    id: 'structured.invalid-4xx',
    title: 'an invalid response_format gets a 4xx, never a 5xx',
    level: 'MUST',
    rationale:
      'A 500 for a client mistake reads as an outage and hides the mistake; a 200 that ignores it hides it too (lenient).',
    reference: `${OPENAI}: response_format {"type": "text" | "json_object" | "json_schema"}, json_schema requires a name; RFC 9110 §15.5 / §15.6`,
    run: gated(async (ctx) => {
      const cases: Array<{ label: string; format: unknown }> = [
        { label: 'response_format.type "yaml" (unknown)', format: { type: 'yaml' } },
        { label: 'type "json_schema" without json_schema', format: { type: 'json_schema' } },
        { label: 'response_format is a string', format: 'json' },
      ];
      const results = [];
      for (const c of cases) {
        const body = generationBody(ctx, 'openai-chat', {
          prompt: uniquePrompt(ctx, PROMPT),
          maxTokens: 16,
          stream: false,
          extra: { response_format: c.format },
        });
        results.push({ label: c.label, x: await send(ctx, 'openai-chat', body) });
      }
      return judgeInvalidCases(results, 'An invalid response_format MUST get a 4xx with an error object, not a 5xx.');
    }),
  },
];

const skipped = skipProof;

export const proofs: Proof[] = [
  passProof('structured.supported', { messageIncludes: ['capability "structured-output" supported', 'got HTTP 200'] }),
  faultProof('structured.supported', 'structured-unsupported-500', [
    'never a 5xx',
    'HTTP 500: response_format is not supported',
  ]),
  skipped('structured.supported', 'structured-unsupported-400', 'capability "structured-output" not supported'),
  passProof('structured.supported', {
    profile: { capabilities: { 'structured-output': false } },
    expect: 'skip',
    messageIncludes: ['declares capability "structured-output" false'],
  }),
  passProof('structured.json-object', { messageIncludes: ['valid JSON object:', '(finish_reason "stop")'] }),
  faultProof('structured.json-object', 'structured-ignore-json-object', [
    'not JSON',
    'the response_format was ignored',
  ]),
  skipped('structured.json-object', 'structured-unsupported-500', 'graded once in structured.supported'),
  passProof('structured.json-object-stream', { messageIncludes: ['valid JSON object:', '(finish_reason "stop")'] }),
  faultProof('structured.json-object-stream', 'structured-ignore-json-object', [
    'streamed content',
    'the response_format was ignored',
  ]),
  passProof('structured.json-schema', { messageIncludes: ['valid JSON matching the schema:'] }),
  faultProof('structured.json-schema', 'structured-ignore-json-schema', [
    'not JSON',
    'the response_format was ignored',
  ]),
  faultProof('structured.json-schema', 'structured-schema-mismatch', [
    'the schema was ignored or not enforced',
    "must have required property 'answer'",
  ]),
  faultProof('structured.json-schema', 'structured-finish-length', [
    'finish_reason "length"',
    'MUST end with finish_reason "stop"',
  ]),
  // A response cut by max_tokens is inconclusive while it could still become valid JSON, never a schema failure.
  {
    check: 'structured.json-schema',
    faults: ['structured-whitespace-runaway'],
    expect: 'inconclusive',
    raw: 'inconclusive',
    messageIncludes: ['max_tokens 256 cut the output while it was still valid JSON'],
  },
  passProof('structured.json-schema-stream', { messageIncludes: ['valid JSON matching the schema:'] }),
  faultProof('structured.json-schema-stream', 'structured-ignore-json-schema', [
    'streamed content',
    'the response_format was ignored',
  ]),
  faultProof('structured.json-schema-stream', 'structured-schema-mismatch', ['the schema was ignored or not enforced']),
  passProof('structured.invalid-4xx', { messageIncludes: ['every invalid request refused', 'HTTP 400'] }),
  faultProof('structured.invalid-4xx', 'structured-invalid-500', ['3 of 3 broken', 'HTTP 500']),
];
