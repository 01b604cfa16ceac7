// Family `errors`: bad input gets a clear 4xx, never a 5xx, a hang or a crash. Property-based with fast-check:
// every case is a valid request with exactly ONE thing broken (minimal by construction, so nothing to shrink),
// drawn from a fixed seed (reproducible), bounded in count, per-request time and total time. A hung request is
// cut after a short deadline and reported; a 200 to a request that should have been refused is cut at its first
// token. Reference: OpenAI API reference "Error codes" (400 invalid_request_error), RFC 9110 §15.5 (4xx: the client
// erred) and §15.6 (5xx: the server failed). This file builds the cases and sends them; lib/grading/errors.ts classifies
// each answer and grades the campaign.
import fc from 'fast-check';
import {
  chat,
  describeExchange,
  type Exchange,
  generationBody,
  getJson,
  uniquePrompt,
} from '../lib/exchange/exchange.ts';
import {
  type Campaign,
  classify,
  gradeNoServerError,
  gradeOptionalTypes,
  gradeRefusals,
  gradeSurvives,
  type Outcome,
  serverFailure,
} from '../lib/grading/errors.ts';
import { bodyJson, record } from '../lib/http/recorder.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Deadlines } from '../lib/model/types.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';
import { blockedIfUnserved } from './support/root-causes.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'errors',
  order: 140,
  what: 'malformed and mutated requests (fast-check, seeded): non-JSON bodies and the request\'s required shape (messages missing, empty or not an array; a message without a valid role or content) get a 4xx (MUST); a wrong-typed optional parameter (`max_tokens: "ten"`) accepted with 200 is lenient, not broken (SHOULD); a 5xx, a dropped connection or a hang for client input is a failure (MUST); the server survives',
};

/** The fast-check seed of every campaign: the same cases on every run and every server. */
const SEED = 20_240_531;
/** Wall-clock bound of one campaign (a hanging server is stopped after its first hang anyway). */
const CAMPAIGN_MS = 8_000;

const DELETE = Symbol('delete');
type Value = unknown;

/** One case: a valid request with one field replaced (or removed). */
export interface Mutation {
  /** Dotted path into the request body: "messages", "messages.0.role", "max_tokens". */
  path: string;
  value: Value | typeof DELETE;
  /** 'anchor' (always run) or 'sampled #i' (fast-check, seed SEED). */
  origin: string;
}

/** Drop repeated cases (a sample may draw the same small value twice): each distinct case is sent once. */
function unique<T>(xs: T[], key: (x: T) => string): T[] {
  const seen = new Set<string>();
  return xs.filter((x) => {
    const k = key(x);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
const mutationKey = (m: Mutation) => `${m.path}=${m.value === DELETE ? '<delete>' : JSON.stringify(m.value)}`;

function describeMutation(m: Mutation): string {
  return m.value === DELETE ? `${m.path} removed` : `${m.path} = ${JSON.stringify(m.value)}`;
}

/** Apply one mutation to a deep copy of the body. */
export function mutate(body: Record<string, unknown>, m: Mutation): Record<string, unknown> {
  const out = structuredClone(body);
  const keys = m.path.split('.');
  let o: Record<string, unknown> | unknown[] = out;
  for (const k of keys.slice(0, -1)) o = (o as Record<string, unknown>)[k] as Record<string, unknown>;
  const last = keys[keys.length - 1]!;
  if (m.value === DELETE) delete (o as Record<string, unknown>)[last];
  else (o as Record<string, unknown>)[last] = m.value;
  return out;
}

// ------------------------------------------------------------------------------------------------------------
// Case generators

const ROLES = new Set(['system', 'user', 'assistant', 'tool', 'developer', 'function']);
/** Strings pydantic (lax mode) turns into a boolean: not a wrong type for servers built on it. */
const BOOLISH = new Set(['true', 'false', 'yes', 'no', 'on', 'off', '1', '0', 't', 'f', 'y', 'n']);
const notNumeric = (s: string) => s.trim() !== '' && Number.isNaN(Number(s));

/**
 * The request's required shape (MUST be refused with a 4xx): `messages` missing, empty or not an array, a message that
 * is not an object or lacks a valid role or content. Anchors from the OpenAI reference, plus sampled variants.
 */
export function requiredShapeCases(sampled: number): Mutation[] {
  const anchors: Array<[string, Value | typeof DELETE]> = [
    ['messages', DELETE],
    ['messages', []],
    ['messages', 'hello'],
    ['messages', { role: 'user', content: 'hello' }],
    ['messages.0', 'hello'],
    ['messages.0.role', 'wizard'],
    ['messages.0.role', DELETE],
    ['messages.0.content', 42],
    ['messages.0.content', DELETE],
  ];
  const arb = fc.oneof(
    fc.record({
      path: fc.constant('messages'),
      value: fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.constant(null), fc.boolean()),
    }),
    fc.record({
      path: fc.constant('messages.0'),
      value: fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.constant(null), fc.constant([])),
    }),
    fc.record({
      path: fc.constant('messages.0.role'),
      value: fc.oneof(
        fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !ROLES.has(s.trim().toLowerCase())),
        fc.integer(),
        fc.constant(null),
      ),
    }),
    fc.record({
      path: fc.constant('messages.0.content'),
      value: fc.oneof(fc.integer(), fc.boolean(), fc.constant({})),
    }),
  );
  return unique(
    [
      ...anchors.map(([path, value]) => ({ path, value, origin: 'anchor' })),
      ...fc.sample(arb, { seed: SEED, numRuns: sampled }).map((c, i) => ({ ...c, origin: `sampled #${i}` })),
    ],
    mutationKey,
  );
}

/**
 * A wrong-typed optional parameter (SHOULD be refused; accepting it with 200 is lenient parsing, not breakage; a 5xx or
 * a dropped connection is a server failure): the list as anchors, plus sampled variants.
 */
export function optionalTypeCases(sampled: number): Mutation[] {
  const anchors: Array<[string, Value]> = [
    ['max_tokens', 'ten'],
    ['temperature', 'hot'],
    ['stream', 'maybe'],
  ];
  const arb = fc.oneof(
    fc.record({
      path: fc.constant('max_tokens'),
      value: fc.oneof(
        fc.string({ minLength: 1, maxLength: 10 }).filter(notNumeric),
        fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 2 }),
        fc.constant({}),
      ),
    }),
    fc.record({
      path: fc.constant('temperature'),
      value: fc.oneof(fc.string({ minLength: 1, maxLength: 10 }).filter(notNumeric), fc.constant([]), fc.constant({})),
    }),
    fc.record({
      path: fc.constant('stream'),
      value: fc.oneof(
        fc.string({ minLength: 2, maxLength: 10 }).filter((s) => !BOOLISH.has(s.trim().toLowerCase())),
        fc.constant({}),
        fc.constant([]),
      ),
    }),
  );
  return unique(
    [
      ...anchors.map(([path, value]) => ({ path, value, origin: 'anchor' })),
      ...fc.sample(arb, { seed: SEED + 3, numRuns: sampled }).map((c, i) => ({ ...c, origin: `sampled #${i}` })),
    ],
    mutationKey,
  );
}

/** Absurd values of the right type (a 4xx or a bounded 200 — clamping — are both fine; a 5xx, a hang or a drop is not). */
export function absurdValueCases(sampled: number): Mutation[] {
  const anchors: Array<[string, Value]> = [
    ['max_tokens', -1],
    ['max_tokens', 2 ** 40],
    ['n', 1000],
    ['temperature', -1],
  ];
  const arb = fc.oneof(
    fc.record({
      path: fc.constant('max_tokens'),
      value: fc.oneof(
        fc.integer({ min: -(2 ** 31), max: -1 }),
        fc.integer({ min: 2 ** 31, max: Number.MAX_SAFE_INTEGER }),
      ),
    }),
    fc.record({
      path: fc.constant('temperature'),
      value: fc.oneof(
        fc.double({ min: -1e6, max: -0.001, noNaN: true }),
        fc.double({ min: 2.001, max: 1e6, noNaN: true }),
      ),
    }),
    fc.record({
      path: fc.constant('top_p'),
      value: fc.oneof(
        fc.double({ min: -1e3, max: -0.001, noNaN: true }),
        fc.double({ min: 1.001, max: 1e3, noNaN: true }),
      ),
    }),
  );
  return unique(
    [
      ...anchors.map(([path, value]) => ({ path, value, origin: 'anchor' })),
      ...fc.sample(arb, { seed: SEED + 1, numRuns: sampled }).map((c, i) => ({ ...c, origin: `sampled #${i}` })),
    ],
    mutationKey,
  );
}

/** Bodies that are not JSON at all (or not a JSON object), built from a valid request text. */
export function malformedBodies(valid: string, sampled: number): Array<{ body: string; what: string }> {
  const anchors = [
    { body: '', what: 'empty body' },
    { body: 'not json', what: 'plain text' },
    { body: valid.slice(0, Math.floor(valid.length / 2)), what: 'valid request cut in half' },
    { body: valid.replace(/"model":/, "'model':"), what: 'single-quoted key' },
    { body: valid.replace(/"model":/, 'model:'), what: 'unquoted key' },
    { body: `${valid.slice(0, -1)},}`, what: 'trailing comma' },
  ];
  const arb = fc.oneof(
    fc.integer({ min: 1, max: valid.length - 1 }).map((cut) => ({
      body: valid.slice(0, cut),
      what: `valid request truncated to ${cut} of ${valid.length} characters`,
    })),
    fc
      .constantFrom('}', ']', ',', 'x', '{}', '"')
      .map((junk) => ({ body: valid + junk, what: `valid request followed by ${JSON.stringify(junk)}` })),
    fc
      .constantFrom('x', ',', ']', ':')
      .map((junk) => ({ body: junk + valid, what: `valid request preceded by ${JSON.stringify(junk)}` })),
  );
  return unique([...anchors, ...fc.sample(arb, { seed: SEED + 2, numRuns: sampled })], (c) => c.body);
}

// ------------------------------------------------------------------------------------------------------------
// Sending the cases (lib/grading/errors.ts classifies each answer and grades the campaign)

function errorDeadlines(ctx: CheckContext): Deadlines {
  const d = ctx.threshold('deadlineMs');
  return { connectMs: Math.min(ctx.deadlines.connectMs, d), headersMs: d, tokenIdleMs: d, totalMs: d };
}

/** A valid streaming request, small and bounded: each case breaks one thing in it. */
function baseRequest(ctx: CheckContext): Record<string, unknown> {
  return generationBody(ctx, 'openai-chat', { prompt: uniquePrompt(ctx, 'Say hello.'), maxTokens: 4, stream: true });
}

async function sendMutation(ctx: CheckContext, base: Record<string, unknown>, m: Mutation): Promise<Outcome> {
  const body = mutate(base, m);
  const x: Exchange = await chat(ctx, body, { stopAfterTokens: 1, deadlines: errorDeadlines(ctx) });
  return classify(`${describeMutation(m)} [${m.origin}]`, x.rec, x.json);
}

async function sendRaw(ctx: CheckContext, body: string, what: string): Promise<Outcome> {
  const rec = await record({
    url: `${ctx.baseUrl}/v1/chat/completions`,
    method: 'POST',
    headers: { ...ctx.headers, 'content-type': 'application/json' },
    body,
    deadlines: errorDeadlines(ctx),
    signal: ctx.signal,
    secrets: ctx.secrets,
  });
  return classify(what, rec, bodyJson(rec).json);
}

/** Run cases one by one, bounded in time; stop after the first hang or a dropped connection (each costs a deadline). */
async function campaign<T>(ctx: CheckContext, cases: T[], run: (c: T) => Promise<Outcome>): Promise<Campaign> {
  const t0 = performance.now();
  const outcomes: Outcome[] = [];
  ctx.log(
    `${cases.length} cases (fast-check seed ${SEED}), one at a time, each cut after ${ctx.threshold('deadlineMs')} ms, at most ${CAMPAIGN_MS} ms in all`,
  );
  for (const c of cases) {
    if (ctx.signal.aborted) return { outcomes, stopped: 'check aborted' };
    if (performance.now() - t0 > CAMPAIGN_MS)
      return {
        outcomes,
        stopped: `time bound of ${CAMPAIGN_MS} ms reached after ${outcomes.length} of ${cases.length} cases`,
      };
    const o = await run(c);
    outcomes.push(o);
    if (o.kind === 'hang')
      return {
        outcomes,
        stopped: `stopped after the first hung request (${outcomes.length} of ${cases.length} cases run)`,
      };
    if (o.kind === 'dropped' && o.rec.failure?.kind === 'connect')
      return {
        outcomes,
        stopped: `stopped: the server no longer accepts connections (${outcomes.length} of ${cases.length} cases run)`,
      };
  }
  return { outcomes };
}

const deadlineThreshold = {
  deadlineMs: {
    value: 3_000,
    why: 'a refusal takes milliseconds; 3 s is generous on a loaded machine and bounds the cost of a server that hangs',
  },
};

// ------------------------------------------------------------------------------------------------------------

export const checks: CheckDef[] = [
  {
    id: 'errors.malformed-json',
    destructive: true, // fuzzed and absurd requests may crash or wedge the server
    title: 'a body that is not JSON gets a 4xx with an error object',
    level: 'MUST',
    rationale:
      'A client bug (a truncated or hand-built body) must come back as a clear client error, not a 500, an HTML page or a hang.',
    reference:
      'RFC 9110 §15.5.1 (400 Bad Request: malformed request syntax) and §15.6 (5xx only for server failures); OpenAI API reference, Error codes (400 invalid_request_error, "We could not parse the JSON body of your request")',
    requires: ['openai-chat'],
    thresholds: { ...deadlineThreshold },
    timeoutMs: 30_000,
    async run(ctx) {
      const valid = JSON.stringify(baseRequest(ctx));
      const cases = malformedBodies(valid, 8);
      const r = await campaign(ctx, cases, (c) => sendRaw(ctx, c.body, c.what));
      return gradeRefusals(r, {
        requirement:
          'A request body that is not valid JSON MUST get a 4xx response with an error object, promptly: not a 5xx, a hang or a dropped connection.',
        expectedNote: '',
        deadlineMs: ctx.threshold('deadlineMs'),
        seed: SEED,
      });
    },
  },
  {
    id: 'errors.required-shape',
    destructive: true, // fuzzed and absurd requests may crash or wedge the server
    title:
      'a request without its required shape (messages missing, empty or not an array; a message without a valid role or content) gets a 4xx',
    level: 'MUST',
    rationale:
      "Without valid messages there is nothing to answer: a server that answers anyway (200), crashes on it (5xx) or hangs hides the client's bug.",
    reference:
      'OpenAI API reference, Chat Completions (messages: required, a non-empty array of message objects with role system/user/assistant/tool/developer and content string or parts); RFC 9110 §15.5.1 / §15.5.21 (400, 422), §15.6 (5xx only for server failures)',
    requires: ['openai-chat'],
    thresholds: { ...deadlineThreshold },
    timeoutMs: 30_000,
    async run(ctx) {
      const base = baseRequest(ctx);
      const r = await campaign(ctx, requiredShapeCases(8), (m) => sendMutation(ctx, base, m));
      return gradeRefusals(r, {
        requirement:
          'A request without its required shape (messages missing, empty or not an array; a message that is not an object or lacks a valid role or content) MUST get a 4xx response with an error object, promptly: not a 200, a 5xx, a hang or a dropped connection.',
        expectedNote: ' (each case: a valid request with exactly one part of its required shape broken)',
        deadlineMs: ctx.threshold('deadlineMs'),
        seed: SEED,
      });
    },
  },
  {
    id: 'errors.optional-types',
    destructive: true, // fuzzed and absurd requests may crash or wedge the server
    title:
      'a wrong-typed optional parameter (max_tokens "ten", stream "maybe", temperature "hot") is refused with a 4xx, not silently accepted',
    level: 'SHOULD',
    rationale:
      'A client that sends max_tokens as a string learns of its bug only from a 4xx naming the field; a lenient server that ignores the value still works, so this warns.',
    reference:
      'OpenAI API reference, Chat Completions (max_tokens integer, temperature number, stream boolean; a wrong type is a 400 invalid_request_error); RFC 9110 §15.5.1',
    requires: ['openai-chat'],
    thresholds: { ...deadlineThreshold },
    timeoutMs: 30_000,
    async run(ctx) {
      const base = baseRequest(ctx);
      const r = await campaign(ctx, optionalTypeCases(6), (m) => sendMutation(ctx, base, m));
      return gradeOptionalTypes(r, { deadlineMs: ctx.threshold('deadlineMs'), seed: SEED + 3 });
    },
  },
  {
    id: 'errors.no-server-error',
    destructive: true, // fuzzed and absurd requests may crash or wedge the server
    title: 'wrong-typed optional parameters and absurd values never get a 5xx, a dropped connection or a hang',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      "Client input, however wrong, is the client's error: a 5xx tells monitoring the server failed, a drop or a hang leaves the client guessing; a 4xx or a bounded answer (clamping) are both fine.",
    reference:
      'RFC 9110 §15.5 (4xx: the client erred) and §15.6 (5xx: the server failed to fulfil a valid request); OpenAI API reference, Chat Completions (max_tokens ≥ 1 and within the context; n 1–128; temperature 0–2; top_p 0–1)',
    requires: ['openai-chat'],
    thresholds: { ...deadlineThreshold },
    timeoutMs: 30_000,
    async run(ctx) {
      const base = baseRequest(ctx);
      const r = await campaign(ctx, [...optionalTypeCases(6), ...absurdValueCases(6)], (m) =>
        sendMutation(ctx, base, m),
      );
      const v = gradeNoServerError(r, {
        deadlineMs: ctx.threshold('deadlineMs'),
        seed: SEED,
        seeds: [SEED + 3, SEED + 1],
      });
      // The cases are streamed requests: on a server the run found serving no stream at all (every one a 500), their
      // 5xx is that cause, reported once; else this check's own finding.
      if (v.outcome !== 'fail') return v;
      const bad = r.outcomes.filter(serverFailure).map((o) => o.rec);
      return blockedIfUnserved(v, bad, { ownFinding: true });
    },
  },
  {
    id: 'errors.survives',
    destructive: true, // fuzzed and absurd requests may crash or wedge the server
    title: 'after a campaign of bad requests the server still answers normal ones',
    level: 'MUST',
    rationale: 'One bad client must not take the service down for everyone (a crash, a wedged worker, a leaked slot).',
    reference:
      'RFC 9110 §15.5 (a client error is answered and the server carries on); documented failures: servers that crash or wedge on malformed input',
    requires: ['openai-chat'],
    thresholds: { ...deadlineThreshold },
    timeoutMs: 40_000,
    async run(ctx) {
      // Its own short campaign, so the check stands alone; in a full run it follows the others' campaigns too.
      const base = baseRequest(ctx);
      const valid = JSON.stringify(base);
      const bad = [
        ...malformedBodies(valid, 0)
          .slice(0, 3)
          .map((c) => () => sendRaw(ctx, c.body, c.what)),
        ...requiredShapeCases(0)
          .slice(0, 2)
          .map((m) => () => sendMutation(ctx, base, m)),
        ...optionalTypeCases(0)
          .slice(0, 2)
          .map((m) => () => sendMutation(ctx, base, m)),
        ...absurdValueCases(0)
          .slice(0, 2)
          .map((m) => () => sendMutation(ctx, base, m)),
      ];
      const r = await campaign(ctx, bad, (f) => f());
      const x = await chat(
        ctx,
        generationBody(ctx, 'openai-chat', {
          prompt: uniquePrompt(ctx, 'Say hello in five words.'),
          maxTokens: 8,
          stream: false,
        }),
        { deadlines: { headersMs: 15_000, totalMs: 20_000 } },
      );
      const models = await getJson(ctx, '/v1/models');
      return gradeSurvives(r, {
        chat: { rec: x.rec, json: x.json, described: describeExchange(x) },
        models: { rec: models.rec, json: models.json, described: describeExchange(models) },
        deadlineMs: ctx.threshold('deadlineMs'),
      });
    },
  },
];

export const proofs: Proof[] = [
  passProof('errors.malformed-json', { messageIncludes: ['each refused with a 4xx OpenAI error object'] }),
  faultProof('errors.malformed-json', 'errors-malformed-500', ['a server error (5xx) for client input', 'HTTP 500']),
  faultProof('errors.malformed-json', 'errors-hang-on-invalid', [
    'no answer in time (hang)',
    'no response within 3000 ms',
    'stopped after the first hung request',
  ]),
  passProof('errors.required-shape', { messageIncludes: ['each refused with a 4xx OpenAI error object'] }),
  // Lenient is not broken: a server that ignores a wrong-typed optional parameter still refuses the required shape.
  passProof('errors.required-shape', {
    faults: ['errors-lenient-types'],
    messageIncludes: ['each refused with a 4xx OpenAI error object'],
  }),
  faultProof('errors.required-shape', 'errors-accept-shape', [
    'accepted with a 2xx',
    'messages removed',
    'the request was accepted',
  ]),
  faultProof('errors.required-shape', 'errors-invalid-500', ['a server error (5xx) for client input', 'HTTP 500']),
  faultProof('errors.required-shape', 'errors-drop-on-invalid', ['the connection dropped without an answer']),
  faultProof('errors.required-shape', 'errors-hang-on-invalid', [
    'no answer in time (hang)',
    'no response within 3000 ms',
  ]),
  passProof('errors.optional-types', {
    messageIncludes: ['wrong-typed optional parameters', 'each refused with a 4xx'],
  }),
  faultProof(
    'errors.optional-types',
    'errors-lenient-types',
    ['accepted with HTTP 200 (lenient parsing)', 'max_tokens = "ten"', 'stream = "maybe"', 'temperature = "hot"'],
    { expect: 'warn' },
  ),
  // A 5xx is not this check's verdict (errors.no-server-error fails it): with nothing refused or accepted, no verdict.
  faultProof(
    'errors.optional-types',
    'errors-invalid-500',
    ['no case was answered with a 4xx or a 2xx', 'errors.no-server-error grades those'],
    { expect: 'inconclusive', raw: 'inconclusive' },
  ),
  passProof('errors.no-server-error', { messageIncludes: ['refused with a 4xx', 'answered (ignored or clamped'] }),
  passProof('errors.no-server-error', {
    faults: ['errors-lenient-types'],
    messageIncludes: ['answered (ignored or clamped', 'max_tokens = "ten"'],
  }),
  faultProof('errors.no-server-error', 'errors-invalid-500', [
    'a server error (5xx) for client input',
    'HTTP 500',
    'max_tokens = "ten"',
  ]),
  faultProof('errors.no-server-error', 'errors-drop-on-invalid', ['the connection dropped without an answer']),
  faultProof('errors.no-server-error', 'errors-hang-on-invalid', [
    'no answer in time (hang)',
    'no response within 3000 ms',
  ]),
  passProof('errors.survives', { messageIncludes: ['a normal chat completion and GET /v1/models both answer 200'] }),
  faultProof('errors.survives', 'errors-crash-on-invalid', ['no longer answers']),
];
