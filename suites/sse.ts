// Family `sse`: byte-level framing of the OpenAI chat stream (/v1/chat/completions, stream: true), judged on the
// raw recording. References: WHATWG HTML §9.2 "Server-sent events" (§9.2.6 Interpreting an event stream), OpenAI API
// reference "Chat Completions: streaming" (chat.completion.chunk, stream_options.include_usage, data: [DONE]).
//
// Every check of the family reads the same few recorded exchanges (lib/http/recordings.ts, per run and server), so the family costs
// three short requests in total: a stream with include_usage, the same stream without it, and — when the profile
// declares determinism — the same request non-streamed. The prompt asks the model to echo a multibyte string.
//
// The judges are pure functions in lib/grading/sse-framing.ts and lib/grading/sse-chunks.ts; this file records the
// exchanges and declares the checks.

import { generationBody, send } from '../lib/exchange/exchange.ts';
import { incompleteVerdict, type SharedRecording, shared } from '../lib/exchange/recordings.ts';
import {
  judgeChunkSchema,
  judgeFinishOnce,
  judgeRoleFirst,
  judgeUsageChunk,
  judgeUsageForm,
  judgeUtf8,
  type SseRun,
} from '../lib/grading/sse-chunks.ts';
import {
  judgeComments,
  judgeContentType,
  judgeDataPrefix,
  judgeDoneTerminator,
  judgeEventTerminator,
  judgeNoLoneCr,
  judgeOneJsonPerEvent,
  judgeUnknownFields,
} from '../lib/grading/sse-framing.ts';
import { assertReached, makeSample, type Sample, unusable } from '../lib/grading/sse-samples.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Verdict } from '../lib/model/types.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'sse',
  order: 20,
  what: 'byte-level SSE framing: content type, event terminators, `data:` prefix, one JSON per event, `[DONE]` last, chunk schema, role first, one finish_reason, usage chunk, UTF-8 intact, comments',
};

type Obj = Record<string, unknown>;

const WHATWG =
  'WHATWG HTML §9.2.6 "Interpreting an event stream" (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)';
const OPENAI_STREAM =
  'OpenAI API reference, Chat Completions streaming: chat.completion.chunk objects as data-only server-sent events, ended by data: [DONE] (https://platform.openai.com/docs/api-reference/chat/streaming)';

// ---------------------------------------------------------------------------------------------------------
// Recorded samples

/** What the model is asked to repeat: multibyte characters (2, 3 and 4 bytes) between ASCII anchors. */
export const ECHO_TEXT = 'café-Zürich 東京 🙂 смысл-naïve 🚀 end';
const ECHO_PROMPT = 'Repeat the next line exactly as written (without its label), then add a few words of your own.';
const MAX_TOKENS = 40;

async function recordRun(ctx: CheckContext): Promise<SseRun> {
  // One prompt for all three requests: the comparison needs identical requests; the nonce keeps it unique to the run.
  const prompt = `[request ${ctx.nonce()}] ${ECHO_PROMPT}\nECHO: ${ECHO_TEXT}`;
  ctx.log(
    `recording the streams the sse checks share: ${ctx.profile.deterministic ? 3 : 2} requests of at most ${MAX_TOKENS} tokens`,
  );
  const body = (stream: boolean, extra?: Obj) =>
    generationBody(ctx, 'openai-chat', { prompt, maxTokens: MAX_TOKENS, stream, extra });
  // judgesEnd: how these end is what sse.done-terminator judges, whatever another check has seen.
  const a = await send(ctx, 'openai-chat', body(true, { stream_options: { include_usage: true } }), {
    judgesEnd: true,
  });
  const b = await send(ctx, 'openai-chat', body(true), { judgesEnd: true });
  const c = ctx.profile.deterministic ? await send(ctx, 'openai-chat', body(false), { judgesEnd: true }) : undefined;
  for (const x of [a, b, c]) assertReached(x?.rec);
  return {
    echo: ECHO_TEXT,
    withUsage: makeSample('stream with include_usage', a.rec),
    withoutUsage: makeSample('stream without include_usage', b.rec),
    ...(c ? { nonStream: { rec: c.rec, json: c.json } } : {}),
  };
}

/** The family's recorded exchanges, recorded once per run and server (lib/http/recordings.ts: one abort policy). */
export function sseRun(ctx: CheckContext): Promise<SharedRecording<SseRun>> {
  return shared(
    ctx,
    'sse',
    () => recordRun(ctx),
    (r) => [r.withUsage.rec, r.withoutUsage.rec, r.nonStream?.rec],
  );
}

// ---------------------------------------------------------------------------------------------------------
// Checks

const streams = (run: SseRun) => [run.withUsage, run.withoutUsage];
/**
 * Judge the streams that were answered (HTTP 200 with a body). A stream the server refused (say, a 400 for
 * stream_options) is the business of the check about that request, not of every framing check; it is named in the
 * verdict. With no answered stream at all, the check fails with the status.
 */
async function judged(
  ctx: CheckContext,
  what: string,
  judge: (run: SseRun, samples: Sample[]) => Verdict,
): Promise<Verdict> {
  const rec = await sseRun(ctx);
  if (rec.incomplete) return incompleteVerdict(rec, `the shared ${what} streams were recorded`);
  const run = rec.value;
  const all = streams(run);
  const ok = all.filter((s) => !unusable([s], what));
  if (ok.length === 0) return unusable(all, what)!;
  const v = judge(run, ok);
  const left = all.filter((s) => !ok.includes(s));
  if (left.length)
    v.message += `\n(not judged here: ${left.map((s) => `${s.label}: ${s.rec.failure?.kind ?? `HTTP ${s.rec.status}`}`).join('; ')})`;
  return v;
}

// The first check of the family pays for the shared recording (up to three requests): bound it generously.
const base = { requires: ['openai-chat'] as CheckDef['requires'], timeoutMs: 180_000 };

export const checks: CheckDef[] = [
  {
    ...base,
    id: 'sse.content-type',
    title: 'streams are sent as text/event-stream',
    level: 'MUST',
    // Reports a streamed chat request the server does not serve at all: every check that needs one served declares
    // dependsOn: ['sse.content-type'] and is blocked by it (lib/check/blocked.ts).
    rationale:
      'Clients choose the SSE parser by media type; a stream labelled application/json is read as one JSON body and fails.',
    reference: `${OPENAI_STREAM}; WHATWG HTML §9.2.5 (text/event-stream)`,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeContentType(s)),
  },
  {
    ...base,
    id: 'sse.event-terminator',
    title: 'every event ends with a blank line',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'An event is dispatched only by the blank line after it: without it a client sees nothing, or several chunks glued into one.',
    reference: WHATWG,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeEventTerminator(s)),
  },
  {
    ...base,
    id: 'sse.no-lone-cr',
    title: 'line ends are LF or CRLF, not a lone CR',
    level: 'SHOULD',
    dependsOn: ['sse.content-type'],
    rationale:
      'A lone CR is a valid SSE line end, but many clients split lines only on LF and then never see an event end.',
    reference: `${WHATWG}: end-of-line = CRLF / LF / CR`,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeNoLoneCr(s)),
  },
  {
    ...base,
    id: 'sse.data-prefix',
    title: 'every payload line starts with "data:"',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale: 'A JSON line without the data: field name is not data for any SSE client: the chunk is silently lost.',
    reference: `${WHATWG}: the field name is the text before the first colon`,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeDataPrefix(s)),
  },
  {
    ...base,
    id: 'sse.unknown-fields',
    title: 'no unknown SSE field names (e.g. an "error:" line)',
    level: 'SHOULD',
    dependsOn: ['sse.content-type'],
    rationale:
      'Clients ignore unknown fields, so an error or payload sent under another field name never reaches the user.',
    reference: `${WHATWG}: "Otherwise: the field is ignored"`,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeUnknownFields(s)),
  },
  {
    ...base,
    id: 'sse.one-json-per-event',
    title: 'each event carries exactly one JSON object',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'Clients JSON.parse each event: two objects in one event, or one object split over two, throw and lose the chunk.',
    reference: OPENAI_STREAM,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeOneJsonPerEvent(s)),
  },
  {
    ...base,
    id: 'sse.done-terminator',
    title: 'data: [DONE] is the last event and the body ends after it',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'OpenAI clients stop at [DONE]; without it they wait for a timeout or report a truncated stream, and events after it are lost.',
    reference: OPENAI_STREAM,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeDoneTerminator(s)),
  },
  {
    ...base,
    id: 'sse.chunk-schema',
    title: 'every chunk is a valid chat.completion.chunk; id and model stable',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'Typed clients (openai-python, openai-node) reject chunks with missing or mistyped fields and key the message on a stable id.',
    reference:
      'OpenAI API reference, the chat completion chunk object (id, object "chat.completion.chunk", created, model, choices[].delta, finish_reason)',
    thresholds: {
      createdSlackS: {
        value: 2,
        why: "some servers (llama.cpp) stamp each chunk with the current time; allow that drift over the stream's duration plus this many seconds",
      },
    },
    run: (ctx) =>
      judged(ctx, 'streamed chat', (_r, s) =>
        judgeChunkSchema(s, {
          schemaFile: 'chat-completion-chunk.schema.json',
          objectName: 'chat.completion.chunk',
          createdSlackS: ctx.threshold('createdSlackS'),
        }),
      ),
  },
  {
    ...base,
    id: 'sse.role-first',
    title: 'the first delta carries role "assistant"',
    level: 'SHOULD',
    dependsOn: ['sse.content-type'],
    rationale: 'Clients that assemble the message from deltas take its role from the first one.',
    reference: 'OpenAI API reference, chat completion chunk: choices[].delta.role (sent on the first chunk)',
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeRoleFirst(s)),
  },
  {
    ...base,
    id: 'sse.finish-once',
    title: 'exactly one valid finish_reason, on the last choice chunk',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'Clients end a choice at its finish_reason: none means "truncated", two or text after it means duplicated or lost output.',
    reference:
      'OpenAI API reference, chat completion chunk: choices[].finish_reason (stop, length, tool_calls, content_filter, function_call; null until the last chunk)',
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeFinishOnce(s)),
  },
  {
    ...base,
    id: 'sse.usage-chunk',
    title: 'with include_usage, usage arrives before [DONE]',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'Clients that ask for usage in a stream need it for accounting and tokens/s; it must come before the terminator.',
    reference:
      'OpenAI API reference, stream_options.include_usage: "an additional chunk will be streamed before the data: [DONE] message"',
    async run(ctx) {
      const rec = await sseRun(ctx);
      if (rec.incomplete) return incompleteVerdict(rec, 'the shared streamed chat (include_usage) was recorded');
      return unusable([rec.value.withUsage], 'streamed chat (include_usage)') ?? judgeUsageChunk(rec.value.withUsage);
    },
  },
  {
    ...base,
    id: 'sse.usage-form',
    title: "usage takes OpenAI's form: one extra chunk with choices: [], only when asked",
    level: 'SHOULD',
    dependsOn: ['sse.content-type'],
    rationale:
      'Clients read choices[0] of each chunk; usage in the finish chunk, repeated, or sent unasked breaks them or double-counts.',
    reference:
      'OpenAI API reference, stream_options.include_usage: "The usage field on this chunk shows the token usage statistics for the entire request, and the choices field will always be an empty array"; docs/servers.md "Usage placement"',
    run: (ctx) =>
      judged(
        ctx,
        'streamed chat',
        (r) => unusable([r.withUsage, r.withoutUsage], 'streamed chat') ?? judgeUsageForm(r.withUsage, r.withoutUsage),
      ),
  },
  {
    ...base,
    id: 'sse.utf8-intact',
    title: 'streamed text is valid UTF-8 with every character intact',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      "A server that splits a character between deltas or sends bad bytes shows users U+FFFD (the seeds' phantom-parser class of bug).",
    reference: 'RFC 3629 (UTF-8); WHATWG HTML §9.2.6 (streams are UTF-8); RFC 8259 §8.2 (unpaired surrogates)',
    run: (ctx) => judged(ctx, 'streamed chat', (r) => judgeUtf8(r)),
  },
  {
    ...base,
    id: 'sse.comments',
    title: 'which SSE comments the server sends, and how often',
    level: 'INFO',
    dependsOn: ['sse.content-type'],
    rationale:
      'Keep-alive comments (": ping", ": keep-alive", ":") are valid but make time-to-first-byte differ from TTFT; users should know.',
    reference: `${WHATWG}: a line starting with ":" is ignored; docs/servers.md "SSE comments" (llama.cpp ":", vllm-mlx ": heartbeat", oMLX ": keep-alive")`,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeComments(s)),
  },
];

// Pings every 20 ms of silence; 30 ms decode steps leave room for one between tokens.
const PINGS = ['--ping-ms', '20', '--decode-step-ms', '30'];

export const proofs: Proof[] = [
  passProof('sse.content-type', { messageIncludes: ['content-type "text/event-stream"'] }),
  faultProof('sse.content-type', 'sse-content-type', ['application/json', 'text/event-stream']),
  // Every stream a 500: the family's first check reports it; a SHOULD check is never "not met" for want of a stream
  // (in a run, every other check is blocked by the reporter: test/root-cause.test.ts).
  faultProof('sse.content-type', 'stream-500', ['HTTP 500', 'Bad control character', 'MUST be answered with HTTP 200']),
  faultProof('sse.no-lone-cr', 'stream-500', ['blocked by sse.content-type', 'answered HTTP 500'], {
    expect: 'inconclusive',
    raw: 'inconclusive',
  }),
  passProof('sse.event-terminator', { messageIncludes: ['each ended by a blank line'] }),
  passProof('sse.event-terminator', {
    serverArgs: PINGS,
    messageIncludes: ['each ended by a blank line'],
    note: 'comments between events are fine',
  }),
  faultProof('sse.event-terminator', 'sse-no-blank-line', ['blank line', 'run together']),
  passProof('sse.no-lone-cr', { messageIncludes: ['no lone CR line ends'] }),
  faultProof('sse.no-lone-cr', 'sse-cr-only', ['lone CR', '\\r\\r'], { expect: 'warn' }),
  passProof('sse.data-prefix', { messageIncludes: ['every payload line has "data:"'] }),
  faultProof('sse.data-prefix', 'sse-bare-json', ['without a field name', '{"id":']),
  passProof('sse.unknown-fields', { messageIncludes: ['only known SSE field names'] }),
  faultProof('sse.unknown-fields', 'sse-error-field', ['"error"', 'error: something'], { expect: 'warn' }),
  passProof('sse.one-json-per-event', { messageIncludes: ['each exactly one JSON object'] }),
  faultProof('sse.one-json-per-event', 'sse-two-json-one-event', ['2 JSON values concatenated']),
  faultProof('sse.one-json-per-event', 'sse-json-split-events', ['split over 2 events']),
  passProof('sse.done-terminator', { messageIncludes: ['[DONE] is the last event and the body ends after it'] }),
  faultProof('sse.done-terminator', 'sse-no-done', ['no "data: [DONE]" event']),
  faultProof('sse.done-terminator', 'sse-data-after-done', ['after [DONE]', 'late']),
  passProof('sse.chunk-schema', { messageIncludes: ['chunks valid chat.completion.chunk; id and model stable'] }),
  faultProof('sse.chunk-schema', 'sse-schema-violation', [
    "must have required property 'object'",
    '/choices must be array',
  ]),
  faultProof('sse.chunk-schema', 'sse-id-changes', ['id changes mid-stream']),
  passProof('sse.role-first', { messageIncludes: ['the first delta carries role "assistant"'] }),
  faultProof('sse.role-first', 'sse-no-role', ['role null', 'first delta'], { expect: 'warn' }),
  passProof('sse.finish-once', { messageIncludes: ['exactly one valid finish_reason per choice'] }),
  faultProof('sse.finish-once', 'sse-finish-twice', ['finish_reason sent 2 times']),
  faultProof('sse.finish-once', 'sse-finish-missing', ['no chunk carries a finish_reason']),
  faultProof('sse.finish-once', 'sse-finish-invalid', ['"done"', 'is not one of']),
  passProof('sse.usage-chunk', { messageIncludes: ['usage before [DONE] in chunk'] }),
  faultProof('sse.usage-chunk', 'sse-usage-missing', ['no chunk before [DONE] carries a usage object']),
  passProof('sse.usage-form', {
    messageIncludes: ['one usage chunk with "choices": [] after the finish chunk', 'none without include_usage'],
  }),
  faultProof('sse.usage-form', 'sse-usage-in-finish', ['usage in the finish chunk'], { expect: 'warn' }),
  faultProof('sse.usage-form', 'sse-usage-twice', ['usage sent 2 times'], { expect: 'warn' }),
  faultProof('sse.usage-form', 'sse-usage-unasked', ['include_usage was not requested'], { expect: 'warn' }),
  passProof('sse.utf8-intact', {
    messageIncludes: ['valid UTF-8 on the wire', 'streamed text equals the non-streamed text'],
  }),
  faultProof('sse.utf8-intact', 'utf8-invalid-bytes', ['0xFF', 'not valid UTF-8', '\\xFF\\xFE']),
  faultProof('sse.utf8-intact', 'utf8-lone-surrogate', ['lone surrogate', '\\ud83d']),
  faultProof('sse.utf8-intact', 'utf8-split-char', ['split between two deltas', 'U+FFFD']),
  faultProof('sse.utf8-intact', 'utf8-stream-differs', ['differs from the non-streamed text', 'swapped']),
  faultProof('sse.utf8-intact', 'utf8-echo-corrupt', ['echoed string was corrupted', '"é" → ?']),
  passProof('sse.comments', { messageIncludes: ['no SSE comments'] }),
  passProof('sse.comments', {
    serverArgs: PINGS,
    messageIncludes: ['": ping" ×', 'median gap'],
    note: 'the reference server pings during 30 ms decode gaps',
  }),
];
