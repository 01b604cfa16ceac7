// Family `sse`: byte-level framing of the OpenAI chat stream (/v1/chat/completions, stream: true), judged on the
// raw recording. References: WHATWG HTML §9.2 "Server-sent events" (§9.2.6 Interpreting an event stream), OpenAI API
// reference "Chat Completions: streaming" (chat.completion.chunk, stream_options.include_usage, data: [DONE]).
//
// Every check of the family reads the same few recorded exchanges (lib/http/recordings.ts, per run and server), so the family costs
// three short requests in total: a stream with include_usage, the same stream without it, and — when the profile
// declares determinism — the same request non-streamed. The prompt asks the model to echo a multibyte string.
//
// Lenient exactly where real servers differ and clients cope (docs/servers.md "Cross-server observations"): SSE comments (`: ping`, bare `:`),
// `data:` without the space, CRLF, several data lines in one event, `usage: null` on every chunk, usage in the finish
// chunk or repeated (SHOULD only), reasoning fields, extra fields such as `request_id` or `timings`.
//
// Each judge is a pure function of the recorded samples, so test/framing.test.ts can feed it hand-written streams.
import type { CheckContext, CheckDef } from '../lib/check/check.ts';
import type { Recording, Verdict } from '../lib/check/types.ts';
import { send, generationBody } from '../lib/http/exchange.ts';
import { compileSchema, schemaErrors } from '../lib/config/schemas.ts';
import { fail, pass, inconclusive, fmt } from '../lib/check/messages.ts';
import { escapeBytes } from '../lib/decode/stream-decoder.ts';
import { quantile } from '../lib/grading/stats.ts';
import {
  bytesAt, bytesAround, classifyPayload, echoIntegrity, firstDifference, invalidUtf8Offsets, loneSurrogates, mediaType,
  runTogetherEvents, splitAcrossEvents, splitCharacterBoundaries,
} from '../lib/decode/framing.ts';
import { shared, incompleteVerdict, type SharedRecording } from '../lib/http/recordings.ts';
import { assertReached, evidenceOf, makeSample, unusable, type EventInfo, type Sample } from '../lib/decode/sse-samples.ts';
import { passProof, faultProof, type Proof } from './support/proof.ts';
import type { FamilySpec } from '../lib/check/family-spec.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'sse', order: 20,
  what: 'byte-level SSE framing: content type, event terminators, `data:` prefix, one JSON per event, `[DONE]` last, chunk schema, role first, one finish_reason, usage chunk, UTF-8 intact, comments',
};

type Obj = Record<string, unknown>;
import { isJsonObject as isObj } from '../lib/json.ts';

const WHATWG = 'WHATWG HTML §9.2.6 "Interpreting an event stream" (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)';
const OPENAI_STREAM = 'OpenAI API reference, Chat Completions streaming: chat.completion.chunk objects as data-only server-sent events, ended by data: [DONE] (https://platform.openai.com/docs/api-reference/chat/streaming)';

// ---------------------------------------------------------------------------------------------------------
// Recorded samples

/** What the model is asked to repeat: multibyte characters (2, 3 and 4 bytes) between ASCII anchors. */
export const ECHO_TEXT = 'café-Zürich 東京 🙂 смысл-naïve 🚀 end';
const ECHO_PROMPT = 'Repeat the next line exactly as written (without its label), then add a few words of your own.';
const MAX_TOKENS = 40;

export interface SseRun {
  echo: string;
  /** stream: true, stream_options.include_usage: true */
  withUsage: Sample;
  /** stream: true, no stream_options */
  withoutUsage: Sample;
  /** The same request with stream: false (only when the profile declares determinism). */
  nonStream?: { rec: Recording; json?: unknown };
}

async function recordRun(ctx: CheckContext): Promise<SseRun> {
  // One prompt for all three requests: the comparison needs identical requests; the nonce keeps it unique to the run.
  const prompt = `[request ${ctx.nonce()}] ${ECHO_PROMPT}\nECHO: ${ECHO_TEXT}`;
  ctx.log(`recording the streams the sse checks share: ${ctx.profile.deterministic ? 3 : 2} requests of at most ${MAX_TOKENS} tokens`);
  const body = (stream: boolean, extra?: Obj) => generationBody(ctx, 'openai-chat', { prompt, maxTokens: MAX_TOKENS, stream, extra });
  const a = await send(ctx, 'openai-chat', body(true, { stream_options: { include_usage: true } }));
  const b = await send(ctx, 'openai-chat', body(true));
  const c = ctx.profile.deterministic ? await send(ctx, 'openai-chat', body(false)) : undefined;
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
  return shared(ctx, 'sse', () => recordRun(ctx), (r) => [r.withUsage.rec, r.withoutUsage.rec, r.nonStream?.rec]);
}

// ---------------------------------------------------------------------------------------------------------
// Shared helpers for judges (also used by completions.ts)

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
/** The events a client acts on: those before the terminator (events after it are sse.done-terminator's business). */
export const beforeDone = (s: Sample): EventInfo[] => {
  const k = s.events.findIndex((e) => e.done);
  return k < 0 ? s.events : s.events.slice(0, k);
};
const excerptAt = (s: Sample, offset: number, length = 200) => escapeBytes(bytesAt(s.rec.body, offset, length), length);

export function judgeContentType(samples: readonly Sample[], expected = 'text/event-stream'): Verdict {
  const wrong = samples.filter((s) => mediaType(s.rec.headers['content-type']) !== expected);
  if (wrong.length) {
    return fail({
      requirement: `A streamed response MUST be sent with Content-Type ${expected} (clients pick the SSE parser by media type).`,
      expected: `${expected} (parameters such as "; charset=utf-8" allowed)`,
      actual: wrong.map((s) => `${s.label}: HTTP ${s.rec.status ?? '-'}, content-type ${JSON.stringify(s.rec.headers['content-type'] ?? '(none)')}`).join('; '),
    }, undefined, evidenceOf(samples));
  }
  return pass(`content-type ${samples.map((s) => JSON.stringify(s.rec.headers['content-type'])).join(', ')}`);
}

export function judgeEventTerminator(samples: readonly Sample[]): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let bytes: string | undefined;
  for (const s of samples) {
    const f = s.framing;
    for (const b of f.blocks) {
      const run = runTogetherEvents(b);
      if (run) {
        violations.push(`${s.label}: ${run.length} events run together in one block at byte ${b.offset} (each data line is a whole JSON chunk, no blank line between them), so a client sees one event whose data is ${plural(run.length, 'line')} joined by LF`);
        bytes ??= excerptAt(s, b.offset, 300);
      }
    }
    const u = f.unterminated;
    if (u && u.lines.some((l) => l.kind !== 'comment')) {
      if (s.rec.failure) notes.push(`${s.label}: the body was cut off (${s.rec.failure.kind}) inside an event at byte ${u.offset}`);
      else {
        violations.push(`${s.label}: the body ends inside an event: ${plural(u.lines.length, 'line')} from byte ${u.offset} are never followed by a blank line, so a client never dispatches them`);
        bytes ??= excerptAt(s, u.offset, 300);
      }
    }
  }
  const ends = (k: 'LF' | 'CRLF' | 'CR') => samples.reduce((n, s) => n + s.framing.lineEnds[k], 0);
  const events = samples.reduce((n, s) => n + s.framing.events.length, 0);
  const metrics = { events, lineEndsLF: ends('LF'), lineEndsCRLF: ends('CRLF'), lineEndsCR: ends('CR') };
  if (violations.length) {
    return fail({
      requirement: 'Every SSE event MUST end with a blank line: the blank line is what dispatches it (WHATWG §9.2.6). LF, CRLF and CR line ends are all valid; several data lines in one event are valid.',
      expected: 'each event followed by an empty line: "data: {…}\\n\\n" (or "\\r\\n\\r\\n", "\\r\\r")',
      actual: violations[0]!,
      violations: [...violations.slice(1), ...notes],
      bytes,
    }, metrics, evidenceOf(samples));
  }
  return pass(`${events} events in ${plural(samples.length, 'stream')}, each ended by a blank line (line ends: LF ${metrics.lineEndsLF}, CRLF ${metrics.lineEndsCRLF}, CR ${metrics.lineEndsCR})${notes.length ? `; ${notes.join('; ')}` : ''}`, metrics);
}

export function judgeNoLoneCr(samples: readonly Sample[]): Verdict {
  const bad = samples.filter((s) => s.framing.loneCrOffsets.length > 0);
  if (bad.length) {
    const first = bad[0]!;
    return fail({
      requirement: 'Line ends SHOULD be LF or CRLF: a lone CR is valid SSE but many clients split only on "\\n" and never see the event end.',
      expected: 'LF ("\\n") or CRLF ("\\r\\n") line ends',
      actual: bad.map((s) => `${s.label}: ${plural(s.framing.loneCrOffsets.length, 'lone CR line end')} (first at byte ${s.framing.loneCrOffsets[0]})`).join('; '),
      bytes: escapeBytes(bytesAround(first.rec.body, first.framing.loneCrOffsets[0]!, 60), 200),
    }, { loneCr: bad.reduce((n, s) => n + s.framing.loneCrOffsets.length, 0) }, evidenceOf(samples));
  }
  return pass('no lone CR line ends');
}

export function judgeDataPrefix(samples: readonly Sample[]): Verdict {
  const violations: string[] = [];
  let bytes: string | undefined;
  let bare = 0;
  for (const s of samples) {
    const lines = s.framing.bareJson;
    if (!lines.length) continue;
    bare += lines.length;
    violations.push(`${s.label}: ${plural(lines.length, 'payload line')} without a field name, first at byte ${lines[0]!.offset}: ${escapeBytes(lines[0]!.text, 120)}`);
    bytes ??= excerptAt(s, lines[0]!.offset, 200);
  }
  const noSpace = samples.reduce((n, s) => n + s.framing.dataWithoutSpace, 0);
  if (violations.length) {
    return fail({
      requirement: 'Each payload line MUST start with the field name "data:" — a line without a field name is not data and clients drop it (WHATWG §9.2.6: the text before the first colon is the field name).',
      expected: '"data: {…}" or "data:{…}" lines (":" starts a comment)',
      actual: `${plural(bare, 'line')} without "data:"`,
      violations,
      bytes,
    }, { bareLines: bare }, evidenceOf(samples));
  }
  return pass(`every payload line has "data:"${noSpace ? ` (${noSpace} written "data:" without the space — valid)` : ''}`, { dataWithoutSpace: noSpace });
}

export function judgeUnknownFields(samples: readonly Sample[]): Verdict {
  const counts = new Map<string, number>();
  let bytes: string | undefined;
  for (const s of samples) {
    for (const l of s.framing.unknownFields) {
      counts.set(l.field!, (counts.get(l.field!) ?? 0) + 1);
      bytes ??= excerptAt(s, l.offset, 200);
    }
  }
  if (counts.size) {
    const names = [...counts].map(([n, c]) => `"${escapeBytes(n, 40)}" (${plural(c, 'line')})`).join(', ');
    return fail({
      requirement: 'Servers SHOULD write only the SSE fields data, event, id and retry: clients ignore any other field name, so what such a line carries is lost (an error belongs in a data: payload or an "event: error" event).',
      expected: 'field names data, event, id, retry; comments starting with ":"',
      actual: `unknown field name(s) ${names}`,
      bytes,
    }, { unknownFields: Object.fromEntries(counts) }, evidenceOf(samples));
  }
  return pass('only known SSE field names (data, event, id, retry)');
}

export function judgeOneJsonPerEvent(samples: readonly Sample[]): Verdict {
  const violations: string[] = [];
  let bytes: string | undefined;
  let objects = 0;
  for (const s of samples) {
    const datas = s.events.map((e) => e.data);
    const splits = splitAcrossEvents(datas);
    const inSplit = new Set<number>();
    for (const [a, b] of splits) {
      for (let k = a; k <= b; k++) inSplit.add(k);
      violations.push(`${s.label}: events #${a}–#${b} carry one JSON object split over ${b - a + 1} events: ${escapeBytes(datas[a]!, 60)} | ${escapeBytes(datas[b]!, 60)}`);
      bytes ??= excerptAt(s, s.events[a]!.offset, 300);
    }
    for (const e of s.events) {
      const p = classifyPayload(e.data);
      if (p.kind === 'object') { objects++; continue; }
      if (p.kind === 'done' || inSplit.has(e.i)) continue;
      const what = p.kind === 'several' ? `${p.count} JSON values concatenated in one data payload` : p.kind === 'not-object' ? `a JSON ${p.type}, not an object` : `not JSON (${p.message})`;
      violations.push(`${s.label}: event #${e.i} at byte ${e.offset}: ${what}: ${escapeBytes(e.data, 160)}`);
      bytes ??= excerptAt(s, e.offset, 300);
    }
  }
  if (objects === 0) {
    const dispatched = samples.reduce((n, s) => n + s.events.length, 0);
    violations.unshift(dispatched === 0
      ? `no event was dispatched at all (${samples.map((s) => `${s.label}: ${s.rec.body.length} bytes`).join(', ')}; see the event-terminator rule)`
      : 'no event carried a JSON object');
  }
  if (violations.length) {
    return fail({
      requirement: 'Each event\'s data MUST be exactly one JSON object (or the literal [DONE]): clients JSON.parse each event on its own.',
      expected: 'one JSON object per event; [DONE] alone in the last event',
      actual: violations[0]!,
      violations: violations.slice(1),
      bytes,
    }, { jsonEvents: objects }, evidenceOf(samples));
  }
  return pass(`${objects} events, each exactly one JSON object`, { jsonEvents: objects });
}

export function judgeDoneTerminator(samples: readonly Sample[], terminator = '[DONE]'): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let bytes: string | undefined;
  for (const s of samples) {
    const doneAt = s.events.findIndex((e) => e.done);
    const last = s.events[s.events.length - 1];
    if (doneAt < 0) {
      violations.push(`${s.label}: no "data: ${terminator}" event; the last event was ${last ? escapeBytes(last.data, 120) : '(none)'}${s.rec.failure ? ` and the response did not end (${s.rec.failure.kind}: ${s.rec.failure.message})` : ''}`);
      bytes ??= escapeBytes(s.rec.body.subarray(Math.max(0, s.rec.body.length - 240)), 300);
      continue;
    }
    const after = s.events.slice(doneAt + 1);
    if (after.length) {
      violations.push(`${s.label}: ${plural(after.length, 'event')} after ${terminator}: ${after.slice(0, 3).map((e) => escapeBytes(e.data, 100)).join(' | ')}`);
      bytes ??= excerptAt(s, s.events[doneAt]!.offset, 300);
    }
    const tail = s.framing.unterminated;
    if (tail && tail.offset > s.events[doneAt]!.offset && tail.data !== undefined) {
      violations.push(`${s.label}: data after ${terminator} (unterminated): ${escapeBytes(tail.data, 100)}`);
    }
    if (s.rec.failure) violations.push(`${s.label}: the response body did not end after ${terminator}: ${s.rec.failure.kind} (${s.rec.failure.message})`);
    const doneOffset = s.events[doneAt]!.offset;
    const lateComments = s.framing.comments.filter((c) => c.offset > doneOffset).length;
    if (lateComments) notes.push(`${s.label}: ${plural(lateComments, 'comment')} after ${terminator} (ignored by clients)`);
  }
  if (violations.length) {
    return fail({
      requirement: `"data: ${terminator}" MUST be the last event of the stream, and the response body MUST end right after it (OpenAI streaming: the stream is terminated by a data: ${terminator} message).`,
      expected: `the last event is "data: ${terminator}", followed by the end of the body`,
      actual: violations[0]!,
      violations: [...violations.slice(1), ...notes],
      bytes,
    }, undefined, evidenceOf(samples));
  }
  return pass(`${terminator} is the last event and the body ends after it in ${plural(samples.length, 'stream')}${notes.length ? `; ${notes.join('; ')}` : ''}`);
}

/** Mid-stream error frames (`{"error": …}` without choices) are not chunks; schema checks skip them and say so. */
const isErrorFrame = (j: Obj) => j.error !== undefined && j.error !== null && !Array.isArray(j.choices);

export interface SchemaOptions {
  schemaFile: string;
  objectName: string;
  /** Seconds `created` may drift within a stream beyond its duration (a per-chunk wall-clock stamp). */
  createdSlackS: number;
}

export function judgeChunkSchema(samples: readonly Sample[], o: SchemaOptions): Verdict {
  const validate = compileSchema(o.schemaFile);
  const violations: string[] = [];
  const notes: string[] = [];
  let bytes: string | undefined;
  let chunks = 0;
  for (const s of samples) {
    const seen: Record<'id' | 'model', Array<{ v: string; i: number }>> = { id: [], model: [] };
    const created: Array<{ v: number; i: number }> = [];
    for (const e of s.events) {
      if (!e.json) continue;
      if (isErrorFrame(e.json)) { notes.push(`${s.label}: event #${e.i} is an error frame: ${escapeBytes(e.data, 160)}`); continue; }
      chunks++;
      if (!validate(e.json)) {
        for (const err of schemaErrors(validate)) violations.push(`${s.label}: chunk #${e.i}: ${err}`);
        bytes ??= escapeBytes(e.data, 300);
      }
      for (const k of ['id', 'model'] as const) if (typeof e.json[k] === 'string') seen[k].push({ v: e.json[k] as string, i: e.i });
      if (typeof e.json.created === 'number') created.push({ v: e.json.created, i: e.i });
    }
    for (const k of ['id', 'model'] as const) {
      const first = seen[k][0];
      const change = seen[k].find((x) => x.v !== first?.v);
      if (first && change) {
        const distinct = new Set(seen[k].map((x) => x.v)).size;
        violations.push(`${s.label}: ${k} changes mid-stream: ${JSON.stringify(first.v)} (chunk #${first.i}) → ${JSON.stringify(change.v)} (chunk #${change.i}); ${distinct} distinct values`);
      }
    }
    if (created.length > 1) {
      const back = created.find((x, j) => j > 0 && x.v < created[j - 1]!.v);
      const span = Math.max(...created.map((x) => x.v)) - Math.min(...created.map((x) => x.v));
      const allowed = Math.ceil(s.rec.tEnd / 1000) + o.createdSlackS;
      if (back) violations.push(`${s.label}: created goes backwards at chunk #${back.i} (${back.v})`);
      else if (span > allowed) violations.push(`${s.label}: created varies by ${span} s within a ${fmt(s.rec.tEnd / 1000)} s stream (allowed: the stream's duration + ${o.createdSlackS} s)`);
      else if (span > 0) notes.push(`${s.label}: created follows the clock (${span} s spread; tolerated)`);
    }
  }
  if (chunks === 0) violations.unshift('no JSON chunk to validate: no event carried a JSON object (see the framing checks)');
  if (violations.length) {
    return fail({
      requirement: `Every chunk MUST validate against the ${o.objectName} schema (fixtures/schemas/${o.schemaFile}), and id and model MUST stay the same across the stream.`,
      expected: `id (string), object "${o.objectName}", created (integer), model (string), choices (array) on every chunk; one id and one model per stream`,
      actual: `${plural(violations.length, 'violation')} in ${plural(chunks, 'chunk')}`,
      violations: [...violations, ...notes],
      bytes,
    }, { chunks }, evidenceOf(samples));
  }
  return pass(`${chunks} chunks valid ${o.objectName}; id and model stable${notes.length ? `; ${notes.join('; ')}` : ''}`, { chunks });
}

function choicesOf(j: Obj): Obj[] {
  return Array.isArray(j.choices) ? j.choices.filter(isObj) : [];
}
function deltaText(c: Obj): string {
  const d = isObj(c.delta) ? c.delta : {};
  let s = '';
  for (const k of ['content', 'reasoning_content', 'reasoning', 'thinking']) if (typeof d[k] === 'string') s += d[k];
  if (Array.isArray(d.tool_calls)) for (const tc of d.tool_calls) if (isObj(tc) && isObj(tc.function)) s += String(tc.function.arguments ?? '') + String(tc.function.name ?? '');
  if (typeof c.text === 'string') s += c.text;
  return s;
}

export function judgeRoleFirst(samples: readonly Sample[]): Verdict {
  const violations: string[] = [];
  let bytes: string | undefined;
  for (const s of samples) {
    const first = s.events.find((e) => e.json && choicesOf(e.json).length > 0);
    if (!first) { violations.push(`${s.label}: no chunk with choices`); continue; }
    const role = (choicesOf(first.json!)[0]!.delta as Obj | undefined)?.role;
    if (role !== 'assistant') {
      violations.push(`${s.label}: the first delta (chunk #${first.i}) has role ${JSON.stringify(role ?? null)}`);
      bytes ??= escapeBytes(first.data, 300);
    }
  }
  if (violations.length) {
    return fail({
      requirement: 'The first delta SHOULD carry role "assistant" (OpenAI streams do; clients build the message from it).',
      expected: '"delta": {"role": "assistant", …} in the first chunk with choices',
      actual: violations[0]!,
      violations: violations.slice(1),
      bytes,
    }, undefined, evidenceOf(samples));
  }
  return pass('the first delta carries role "assistant"');
}

export const CHAT_FINISH_REASONS = ['stop', 'length', 'tool_calls', 'content_filter', 'function_call'];

export function judgeFinishOnce(samples: readonly Sample[], valid: readonly string[] = CHAT_FINISH_REASONS): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let bytes: string | undefined;
  for (const s of samples) {
    const byChoice = new Map<number, { finishes: Array<{ i: number; v: string; data: string }>; textAfter: number[] }>();
    const entry = (k: number) => {
      let x = byChoice.get(k);
      if (!x) { x = { finishes: [], textAfter: [] }; byChoice.set(k, x); }
      return x;
    };
    for (const e of beforeDone(s)) {
      if (!e.json) continue;
      for (const c of choicesOf(e.json)) {
        const k = typeof c.index === 'number' ? c.index : 0;
        const x = entry(k);
        const fr = c.finish_reason;
        if (x.finishes.length && deltaText(c) !== '') x.textAfter.push(e.i);
        if (typeof fr === 'string' && fr !== '') {
          // mlx-omni-server repeats the finished choice in its usage chunk: tolerated, noted.
          const repeatInUsage = x.finishes.length > 0 && isObj(e.json.usage) && fr === x.finishes[0]!.v && deltaText(c) === '';
          if (repeatInUsage) notes.push(`${s.label}: the usage chunk #${e.i} repeats finish_reason ${JSON.stringify(fr)} (tolerated)`);
          else x.finishes.push({ i: e.i, v: fr, data: e.data });
        }
      }
    }
    if (byChoice.size === 0) violations.push(`${s.label}: no chunk with choices`);
    for (const [k, x] of byChoice) {
      const who = byChoice.size > 1 ? `${s.label}, choice ${k}` : s.label;
      if (x.finishes.length === 0) {
        violations.push(`${who}: no chunk carries a finish_reason`);
        const lastChoice = [...s.events].reverse().find((e) => e.json && choicesOf(e.json).length);
        bytes ??= lastChoice ? escapeBytes(lastChoice.data, 300) : undefined;
      }
      if (x.finishes.length > 1) {
        violations.push(`${who}: finish_reason sent ${x.finishes.length} times (chunks ${x.finishes.map((f) => `#${f.i} ${JSON.stringify(f.v)}`).join(', ')})`);
        bytes ??= escapeBytes(x.finishes[1]!.data, 300);
      }
      for (const f of x.finishes) {
        if (!valid.includes(f.v)) {
          violations.push(`${who}: finish_reason ${JSON.stringify(f.v)} (chunk #${f.i}) is not one of ${valid.join(', ')}`);
          bytes ??= escapeBytes(f.data, 300);
        }
      }
      if (x.textAfter.length) violations.push(`${who}: ${plural(x.textAfter.length, 'chunk')} with text after the finish chunk (first #${x.textAfter[0]})`);
    }
  }
  if (violations.length) {
    return fail({
      requirement: 'Each choice MUST get exactly one valid finish_reason, on its last chunk with that choice (clients stop reading the choice there).',
      expected: `exactly one chunk per choice with finish_reason ∈ {${valid.join(', ')}}, and no text after it`,
      actual: violations[0]!,
      violations: [...violations.slice(1), ...notes],
      bytes,
    }, undefined, evidenceOf(samples));
  }
  return pass(`exactly one valid finish_reason per choice in ${plural(samples.length, 'stream')}${notes.length ? `; ${notes.join('; ')}` : ''}`);
}

interface UsageChunk { i: number; data: string; choices: number; finish: boolean; repeatsFinish: boolean; beforeFinish: boolean; afterDone: boolean; usage: Obj }

function usageChunks(s: Sample): UsageChunk[] {
  const out: UsageChunk[] = [];
  let finished = false;
  let done = false;
  for (const e of s.events) {
    if (e.done) { done = true; continue; }
    if (!e.json) continue;
    const cs = choicesOf(e.json);
    const finish = cs.some((c) => typeof c.finish_reason === 'string' && c.finish_reason !== '');
    if (isObj(e.json.usage)) out.push({ i: e.i, data: e.data, choices: cs.length, finish, repeatsFinish: finish && finished, beforeFinish: !finished && !finish, afterDone: done, usage: e.json.usage });
    if (finish) finished = true;
  }
  // "Before the finish chunk" only means something when there is a finish chunk (its absence is sse.finish-once's).
  if (!finished) for (const u of out) u.beforeFinish = false;
  return out;
}

export function judgeUsageChunk(s: Sample): Verdict {
  const found = usageChunks(s).filter((u) => !u.afterDone);
  const good = found.find((u) => typeof u.usage.prompt_tokens === 'number' && typeof u.usage.completion_tokens === 'number');
  if (!good) {
    return fail({
      requirement: 'With stream_options.include_usage, a usage object MUST arrive before data: [DONE] (OpenAI streaming: "an additional chunk will be streamed before the data: [DONE] message").',
      expected: 'a chunk with "usage": {"prompt_tokens": n, "completion_tokens": m, "total_tokens": n+m} before [DONE]',
      actual: found.length ? `usage without numeric prompt_tokens/completion_tokens: ${escapeBytes(JSON.stringify(found[0]!.usage), 200)}` : `no chunk before [DONE] carries a usage object (${plural(s.events.length, 'event')} in the stream)`,
      bytes: escapeBytes(s.rec.body.subarray(Math.max(0, s.rec.body.length - 400)), 400),
    }, undefined, evidenceOf([s]));
  }
  return pass(`usage before [DONE] in chunk #${good.i}: prompt_tokens ${String(good.usage.prompt_tokens)}, completion_tokens ${String(good.usage.completion_tokens)}`);
}

export function judgeUsageForm(asked: Sample, unasked: Sample): Verdict {
  const violations: string[] = [];
  let bytes: string | undefined;
  const a = usageChunks(asked);
  if (a.length > 1) {
    violations.push(`${asked.label}: usage sent ${a.length} times (chunks ${a.map((u) => `#${u.i}`).join(', ')})`);
    bytes ??= escapeBytes(a[1]!.data, 300);
  }
  for (const u of a) {
    if (u.finish && !u.repeatsFinish) {
      violations.push(`${asked.label}: usage in the finish chunk #${u.i} instead of a separate chunk with "choices": []`);
      bytes ??= escapeBytes(u.data, 300);
    } else if (u.choices > 0) {
      violations.push(`${asked.label}: the usage chunk #${u.i} repeats ${plural(u.choices, 'choice')} instead of "choices": []`);
      bytes ??= escapeBytes(u.data, 300);
    } else if (u.beforeFinish) violations.push(`${asked.label}: the usage chunk #${u.i} comes before the finish chunk`);
  }
  const b = usageChunks(unasked);
  if (b.length) {
    violations.push(`${unasked.label}: usage sent although include_usage was not requested (chunk${b.length > 1 ? 's' : ''} ${b.map((u) => `#${u.i}`).join(', ')})`);
    bytes ??= escapeBytes(b[0]!.data, 300);
  }
  if (violations.length) {
    return fail({
      requirement: 'Usage SHOULD take OpenAI\'s form: with include_usage exactly one extra chunk with "choices": [] after the finish chunk; without it, no usage ("usage": null is fine). Clients that read choices[0] of every chunk break on the other forms.',
      expected: 'include_usage: one chunk {"choices": [], "usage": {…}} between the finish chunk and [DONE]; otherwise none',
      actual: violations[0]!,
      violations: violations.slice(1),
      bytes,
    }, { usageChunksAsked: a.length, usageChunksUnasked: b.length }, evidenceOf([asked, unasked]));
  }
  if (a.length === 0) return pass('no usage chunk at all (sse.usage-chunk judges its absence); none sent unasked');
  return pass(`one usage chunk with "choices": [] after the finish chunk (#${a[0]!.i}); none without include_usage`);
}

/** Pieces of generated text per event (choice 0), and every string of every delta for surrogate checks. */
/** Why the text a client would assemble from this stream cannot be trusted for a comparison (framing or schema defects), or undefined. */
function textUnreliable(s: Sample): string | undefined {
  const evs = beforeDone(s);
  if (evs.length === 0) return 'no event dispatched';
  if (s.framing.bareJson.length) return 'payload lines without data:';
  if (s.framing.blocks.some((b) => runTogetherEvents(b))) return 'events run together';
  const bad = evs.filter((e) => !e.json || (!Array.isArray(e.json.choices) && !isErrorFrame(e.json)));
  if (bad.length) return `${plural(bad.length, 'event')} not a chunk with a choices array`;
  return undefined;
}

function deltaPieces(s: Sample): { content: string[]; strings: Array<{ i: number; field: string; value: string }> } {
  const content: string[] = [];
  const strings: Array<{ i: number; field: string; value: string }> = [];
  for (const e of beforeDone(s)) {
    if (!e.json) continue;
    for (const c of choicesOf(e.json)) {
      const d = isObj(c.delta) ? c.delta : {};
      for (const k of ['content', 'reasoning_content', 'reasoning', 'thinking']) if (typeof d[k] === 'string') strings.push({ i: e.i, field: `delta.${k}`, value: d[k] as string });
      if (typeof c.text === 'string') strings.push({ i: e.i, field: 'text', value: c.text });
      if ((c.index ?? 0) === 0) {
        const piece = typeof d.content === 'string' ? d.content : typeof c.text === 'string' ? c.text : '';
        if (piece !== '') content.push(piece);
      }
    }
  }
  return { content, strings };
}

export function judgeUtf8(run: SseRun): Verdict {
  const samples = [run.withUsage, run.withoutUsage];
  const violations: string[] = [];
  const unexplained: string[] = [];
  let bytes: string | undefined;
  const texts: Array<string | undefined> = [];
  for (const s of samples) {
    for (const bad of s.framing.invalidUtf8.slice(0, 3)) {
      violations.push(`${s.label}: byte 0x${bad.byte.toString(16).toUpperCase().padStart(2, '0')} at offset ${bad.offset} is not valid UTF-8`);
      bytes ??= escapeBytes(bytesAround(s.rec.body, bad.offset, 40), 200);
    }
    const { content, strings } = deltaPieces(s);
    for (const x of strings) {
      const lone = loneSurrogates(x.value);
      if (lone.length) {
        violations.push(`${s.label}: chunk #${x.i} ${x.field} holds a lone surrogate (${lone.map((k) => `\\u${x.value.charCodeAt(k).toString(16)}`).join(', ')}): a client that parses each chunk on its own gets an invalid string`);
        bytes ??= escapeBytes(s.events[x.i]!.data, 300);
      }
    }
    for (const k of splitCharacterBoundaries(content)) {
      violations.push(`${s.label}: a character is split between two deltas, each side decoded to U+FFFD: ${escapeBytes(content[k]!.slice(-20), 60)} | ${escapeBytes(content[k + 1]!.slice(0, 20), 60)}`);
    }
    const text = content.join('');
    const broken = textUnreliable(s);
    if (broken) {
      unexplained.push(`${s.label}: text not compared (${broken}; judged by the other sse checks)`);
      texts.push(undefined);
      continue;
    }
    texts.push(text);
    const echo = echoIntegrity(run.echo, text);
    if (echo.status === 'corrupted') violations.push(`${s.label}: the echoed string was corrupted: ${echo.why}`);
    else if (echo.status === 'absent') unexplained.push(`${s.label}: echo string not at the start of the text (a model's choice unless a violation above explains it): ${echo.why}`);
    if (text.includes('\uFFFD') && !violations.some((v) => v.startsWith(s.label))) unexplained.push(`${s.label}: U+FFFD in the generated text (model output or byte-fallback tokens): ${escapeBytes(text.slice(Math.max(0, text.indexOf('\uFFFD') - 20), text.indexOf('\uFFFD') + 20), 80)}`);
  }
  let compared = 'not compared (profile does not declare determinism)';
  if (run.nonStream) {
    const ns = run.nonStream;
    const msg = isObj(ns.json) && Array.isArray(ns.json.choices) && isObj(ns.json.choices[0]) && isObj(ns.json.choices[0].message) ? ns.json.choices[0].message : undefined;
    const full = typeof msg?.content === 'string' ? msg.content : undefined;
    for (const bad of invalidUtf8Offsets(ns.rec.body, 3)) {
      violations.push(`non-stream response: byte 0x${bad.byte.toString(16).toUpperCase().padStart(2, '0')} at offset ${bad.offset} is not valid UTF-8`);
      bytes ??= escapeBytes(bytesAround(ns.rec.body, bad.offset, 40), 200);
    }
    if (ns.rec.status !== 200 || full === undefined) compared = `not compared: the non-stream request gave ${ns.rec.status === undefined ? ns.rec.failure?.kind : `HTTP ${ns.rec.status}`}${full === undefined && ns.rec.status === 200 ? ' without message.content' : ''}`;
    else {
      for (const [k, text] of texts.entries()) {
        if (text !== undefined && text !== full) {
          const at = firstDifference(text, full);
          violations.push(`${samples[k]!.label}: streamed text differs from the non-streamed text of the same deterministic request at character ${at}: stream ${JSON.stringify(text.slice(Math.max(0, at - 15), at + 25))} vs non-stream ${JSON.stringify(full.slice(Math.max(0, at - 15), at + 25))}`);
        }
      }
      compared = texts.some((t) => t !== undefined) ? 'streamed text equals the non-streamed text' : 'not compared (framing defects)';
    }
  }
  const judgedTexts = texts.filter((t): t is string => t !== undefined);
  const metrics = { streamedChars: texts.map((t) => t?.length), echo: texts.map((t) => (t === undefined ? 'not judged' : echoIntegrity(run.echo, t).status)) };
  if (violations.length) {
    return fail({
      requirement: 'Streamed text MUST arrive as valid UTF-8 with every character intact: no invalid bytes, no lone surrogate escapes in a delta, no character split into U+FFFD halves across deltas, and the same text as the non-streamed answer of the same deterministic request.',
      expected: `valid UTF-8; echoed ${JSON.stringify(run.echo)} intact; streamed text = non-streamed text (deterministic profiles)`,
      actual: violations[0]!,
      violations: [...violations.slice(1), ...unexplained],
      bytes,
    }, metrics, evidenceOf(samples));
  }
  const multibyte = judgedTexts.some((t) => /[^\x00-\x7f]/.test(t.replace(/\uFFFD/g, '')));
  if (unexplained.some((u) => u.includes('U+FFFD'))) return inconclusive(`no server-side UTF-8 defect seen, but ${unexplained.join('; ')}`, metrics, evidenceOf(samples));
  if (!multibyte) return inconclusive(`no multibyte text came back to judge (${unexplained.join('; ') || 'ASCII only'}); wire bytes are valid UTF-8`, metrics, evidenceOf(samples));
  const echoed = metrics.echo.every((x) => x === 'intact');
  return pass(`valid UTF-8 on the wire; ${echoed ? `echo ${JSON.stringify(run.echo)} intact` : 'multibyte text intact (the model did not echo)'}; ${compared}`, metrics);
}

export function judgeComments(samples: readonly Sample[]): Verdict {
  const byLine = new Map<string, number>();
  const gaps: number[] = [];
  let beforeFirstEvent = 0;
  let total = 0;
  for (const s of samples) {
    const cs = s.framing.comments;
    total += cs.length;
    for (const c of cs) byLine.set(c.line, (byLine.get(c.line) ?? 0) + 1);
    for (let k = 1; k < cs.length; k++) gaps.push(cs[k]!.t - cs[k - 1]!.t);
    const firstEvent = s.framing.events[0]?.offset ?? Infinity;
    beforeFirstEvent += cs.filter((c) => c.offset < firstEvent).length;
  }
  const kinds = [...byLine].map(([line, n]) => `${JSON.stringify(line)} ×${n}`).join(', ');
  const metrics = {
    comments: total,
    kinds: Object.fromEntries(byLine),
    beforeFirstEvent,
    gapP50Ms: gaps.length ? quantile(gaps, 0.5) : undefined,
    gapP90Ms: gaps.length ? quantile(gaps, 0.9) : undefined,
  };
  if (total === 0) return pass(`no SSE comments in ${plural(samples.length, 'stream')}`, metrics);
  return pass(
    `${plural(total, 'SSE comment')} in ${plural(samples.length, 'stream')}: ${kinds}; ${beforeFirstEvent} before the first event` +
      (gaps.length ? `; median gap ${fmt(metrics.gapP50Ms)} ms, p90 ${fmt(metrics.gapP90Ms)} ms` : ''),
    metrics,
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
async function judged(ctx: CheckContext, what: string, judge: (run: SseRun, samples: Sample[]) => Verdict): Promise<Verdict> {
  const rec = await sseRun(ctx);
  if (rec.incomplete) return incompleteVerdict(rec, `the shared ${what} streams were recorded`);
  const run = rec.value;
  const all = streams(run);
  const ok = all.filter((s) => !unusable([s], what));
  if (ok.length === 0) return unusable(all, what)!;
  const v = judge(run, ok);
  const left = all.filter((s) => !ok.includes(s));
  if (left.length) v.message += `\n(not judged here: ${left.map((s) => `${s.label}: ${s.rec.failure?.kind ?? `HTTP ${s.rec.status}`}`).join('; ')})`;
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
    rationale: 'Clients choose the SSE parser by media type; a stream labelled application/json is read as one JSON body and fails.',
    reference: `${OPENAI_STREAM}; WHATWG HTML §9.2.5 (text/event-stream)`,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeContentType(s)),
  },
  {
    ...base,
    id: 'sse.event-terminator',
    title: 'every event ends with a blank line',
    level: 'MUST',
    rationale: 'An event is dispatched only by the blank line after it: without it a client sees nothing, or several chunks glued into one.',
    reference: WHATWG,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeEventTerminator(s)),
  },
  {
    ...base,
    id: 'sse.no-lone-cr',
    title: 'line ends are LF or CRLF, not a lone CR',
    level: 'SHOULD',
    rationale: 'A lone CR is a valid SSE line end, but many clients split lines only on LF and then never see an event end.',
    reference: `${WHATWG}: end-of-line = CRLF / LF / CR`,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeNoLoneCr(s)),
  },
  {
    ...base,
    id: 'sse.data-prefix',
    title: 'every payload line starts with "data:"',
    level: 'MUST',
    rationale: 'A JSON line without the data: field name is not data for any SSE client: the chunk is silently lost.',
    reference: `${WHATWG}: the field name is the text before the first colon`,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeDataPrefix(s)),
  },
  {
    ...base,
    id: 'sse.unknown-fields',
    title: 'no unknown SSE field names (e.g. an "error:" line)',
    level: 'SHOULD',
    rationale: 'Clients ignore unknown fields, so an error or payload sent under another field name never reaches the user.',
    reference: `${WHATWG}: "Otherwise: the field is ignored"`,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeUnknownFields(s)),
  },
  {
    ...base,
    id: 'sse.one-json-per-event',
    title: 'each event carries exactly one JSON object',
    level: 'MUST',
    rationale: 'Clients JSON.parse each event: two objects in one event, or one object split over two, throw and lose the chunk.',
    reference: OPENAI_STREAM,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeOneJsonPerEvent(s)),
  },
  {
    ...base,
    id: 'sse.done-terminator',
    title: 'data: [DONE] is the last event and the body ends after it',
    level: 'MUST',
    rationale: 'OpenAI clients stop at [DONE]; without it they wait for a timeout or report a truncated stream, and events after it are lost.',
    reference: OPENAI_STREAM,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeDoneTerminator(s)),
  },
  {
    ...base,
    id: 'sse.chunk-schema',
    title: 'every chunk is a valid chat.completion.chunk; id and model stable',
    level: 'MUST',
    rationale: 'Typed clients (openai-python, openai-node) reject chunks with missing or mistyped fields and key the message on a stable id.',
    reference: 'OpenAI API reference, the chat completion chunk object (id, object "chat.completion.chunk", created, model, choices[].delta, finish_reason)',
    thresholds: {
      createdSlackS: { value: 2, why: 'some servers (llama.cpp) stamp each chunk with the current time; allow that drift over the stream\'s duration plus this many seconds' },
    },
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeChunkSchema(s, { schemaFile: 'chat-completion-chunk.schema.json', objectName: 'chat.completion.chunk', createdSlackS: ctx.threshold('createdSlackS') })),
  },
  {
    ...base,
    id: 'sse.role-first',
    title: 'the first delta carries role "assistant"',
    level: 'SHOULD',
    rationale: 'Clients that assemble the message from deltas take its role from the first one.',
    reference: 'OpenAI API reference, chat completion chunk: choices[].delta.role (sent on the first chunk)',
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeRoleFirst(s)),
  },
  {
    ...base,
    id: 'sse.finish-once',
    title: 'exactly one valid finish_reason, on the last choice chunk',
    level: 'MUST',
    rationale: 'Clients end a choice at its finish_reason: none means "truncated", two or text after it means duplicated or lost output.',
    reference: 'OpenAI API reference, chat completion chunk: choices[].finish_reason (stop, length, tool_calls, content_filter, function_call; null until the last chunk)',
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeFinishOnce(s)),
  },
  {
    ...base,
    id: 'sse.usage-chunk',
    title: 'with include_usage, usage arrives before [DONE]',
    level: 'MUST',
    rationale: 'Clients that ask for usage in a stream need it for accounting and tokens/s; it must come before the terminator.',
    reference: 'OpenAI API reference, stream_options.include_usage: "an additional chunk will be streamed before the data: [DONE] message"',
    async run(ctx) {
      const rec = await sseRun(ctx);
      if (rec.incomplete) return incompleteVerdict(rec, 'the shared streamed chat (include_usage) was recorded');
      return unusable([rec.value.withUsage], 'streamed chat (include_usage)') ?? judgeUsageChunk(rec.value.withUsage);
    },
  },
  {
    ...base,
    id: 'sse.usage-form',
    title: 'usage takes OpenAI\'s form: one extra chunk with choices: [], only when asked',
    level: 'SHOULD',
    rationale: 'Clients read choices[0] of each chunk; usage in the finish chunk, repeated, or sent unasked breaks them or double-counts.',
    reference: 'OpenAI API reference, stream_options.include_usage: "The usage field on this chunk shows the token usage statistics for the entire request, and the choices field will always be an empty array"; docs/servers.md "Usage placement"',
    run: (ctx) => judged(ctx, 'streamed chat', (r) => unusable([r.withUsage, r.withoutUsage], 'streamed chat') ?? judgeUsageForm(r.withUsage, r.withoutUsage)),
  },
  {
    ...base,
    id: 'sse.utf8-intact',
    title: 'streamed text is valid UTF-8 with every character intact',
    level: 'MUST',
    rationale: 'A server that splits a character between deltas or sends bad bytes shows users U+FFFD (the seeds\' phantom-parser class of bug).',
    reference: 'RFC 3629 (UTF-8); WHATWG HTML §9.2.6 (streams are UTF-8); RFC 8259 §8.2 (unpaired surrogates)',
    run: (ctx) => judged(ctx, 'streamed chat', (r) => judgeUtf8(r)),
  },
  {
    ...base,
    id: 'sse.comments',
    title: 'which SSE comments the server sends, and how often',
    level: 'INFO',
    rationale: 'Keep-alive comments (": ping", ": keep-alive", ":") are valid but make time-to-first-byte differ from TTFT; users should know.',
    reference: `${WHATWG}: a line starting with ":" is ignored; docs/servers.md "SSE comments" (llama.cpp ":", vllm-mlx ": heartbeat", oMLX ": keep-alive")`,
    run: (ctx) => judged(ctx, 'streamed chat', (_r, s) => judgeComments(s)),
  },
];

// Pings every 20 ms of silence; 30 ms decode steps leave room for one between tokens.
const PINGS = ['--ping-ms', '20', '--decode-step-ms', '30'];

export const proofs: Proof[] = [
  passProof('sse.content-type', { messageIncludes: ['content-type "text/event-stream"'] }),
  faultProof('sse.content-type', 'sse-content-type', ['application/json', 'text/event-stream']),
  passProof('sse.event-terminator', { messageIncludes: ['each ended by a blank line'] }),
  passProof('sse.event-terminator', { serverArgs: PINGS, messageIncludes: ['each ended by a blank line'], note: 'comments between events are fine' }),
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
  faultProof('sse.chunk-schema', 'sse-schema-violation', ["must have required property 'object'", '/choices must be array']),
  faultProof('sse.chunk-schema', 'sse-id-changes', ['id changes mid-stream']),
  passProof('sse.role-first', { messageIncludes: ['the first delta carries role "assistant"'] }),
  faultProof('sse.role-first', 'sse-no-role', ['role null', 'first delta'], { expect: 'warn' }),
  passProof('sse.finish-once', { messageIncludes: ['exactly one valid finish_reason per choice'] }),
  faultProof('sse.finish-once', 'sse-finish-twice', ['finish_reason sent 2 times']),
  faultProof('sse.finish-once', 'sse-finish-missing', ['no chunk carries a finish_reason']),
  faultProof('sse.finish-once', 'sse-finish-invalid', ['"done"', 'is not one of']),
  passProof('sse.usage-chunk', { messageIncludes: ['usage before [DONE] in chunk'] }),
  faultProof('sse.usage-chunk', 'sse-usage-missing', ['no chunk before [DONE] carries a usage object']),
  passProof('sse.usage-form', { messageIncludes: ['one usage chunk with "choices": [] after the finish chunk', 'none without include_usage'] }),
  faultProof('sse.usage-form', 'sse-usage-in-finish', ['usage in the finish chunk'], { expect: 'warn' }),
  faultProof('sse.usage-form', 'sse-usage-twice', ['usage sent 2 times'], { expect: 'warn' }),
  faultProof('sse.usage-form', 'sse-usage-unasked', ['include_usage was not requested'], { expect: 'warn' }),
  passProof('sse.utf8-intact', { messageIncludes: ['valid UTF-8 on the wire', 'streamed text equals the non-streamed text'] }),
  faultProof('sse.utf8-intact', 'utf8-invalid-bytes', ['0xFF', 'not valid UTF-8', '\\xFF\\xFE']),
  faultProof('sse.utf8-intact', 'utf8-lone-surrogate', ['lone surrogate', '\\ud83d']),
  faultProof('sse.utf8-intact', 'utf8-split-char', ['split between two deltas', 'U+FFFD']),
  faultProof('sse.utf8-intact', 'utf8-stream-differs', ['differs from the non-streamed text', 'swapped']),
  faultProof('sse.utf8-intact', 'utf8-echo-corrupt', ['echoed string was corrupted', '"é" → ?']),
  passProof('sse.comments', { messageIncludes: ['no SSE comments'] }),
  passProof('sse.comments', { serverArgs: PINGS, messageIncludes: ['": ping" ×', 'median gap'], note: 'the reference server pings during 30 ms decode gaps' }),
];
