// Judges of the chunks an OpenAI-style stream carries: the chunk schema, role, finish_reason, usage, and the UTF-8
// integrity of the streamed text. Shared by the sse and completions families and the client wire rules.
//
// Lenient exactly where real servers differ and clients cope (docs/servers.md "Cross-server observations"): `usage: null`
// on every chunk, usage in the finish chunk or repeated (SHOULD only), reasoning fields, extra fields such as
// `request_id` or `timings`.
//
// Each judge is a pure function of the recorded samples, so test/framing.test.ts can feed it hand-written streams.

import { compileSchema, schemaErrors } from '../config/schemas.ts';
import {
  bytesAround,
  echoIntegrity,
  firstDifference,
  invalidUtf8Offsets,
  loneSurrogates,
  runTogetherEvents,
  splitCharacterBoundaries,
} from '../decode/framing.ts';
import { escapeBytes } from '../decode/stream-decoder.ts';
import { isJsonObject as isObj } from '../json.ts';
import type { Recording, Verdict } from '../model/types.ts';
import { fail, fmt, inconclusive, pass } from '../model/verdict.ts';
import { plural } from './sse-framing.ts';
import { type EventInfo, evidenceOf, type Sample } from './sse-samples.ts';

type Obj = Record<string, unknown>;

/** The sse family's recorded exchanges (suites/sse.ts records them). */
export interface SseRun {
  echo: string;
  /** stream: true, stream_options.include_usage: true */
  withUsage: Sample;
  /** stream: true, no stream_options */
  withoutUsage: Sample;
  /** The same request with stream: false (only when the profile declares determinism). */
  nonStream?: { rec: Recording; json?: unknown };
}

/** The events a client acts on: those before the terminator (events after it are sse.done-terminator's business). */
const beforeDone = (s: Sample): EventInfo[] => {
  const k = s.events.findIndex((e) => e.done);
  return k < 0 ? s.events : s.events.slice(0, k);
};

/** Mid-stream error frames (`{"error": …}` without choices) are not chunks; schema checks skip them and say so. */
const isErrorFrame = (j: Obj) => j.error !== undefined && j.error !== null && !Array.isArray(j.choices);

interface SchemaOptions {
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
      if (isErrorFrame(e.json)) {
        notes.push(`${s.label}: event #${e.i} is an error frame: ${escapeBytes(e.data, 160)}`);
        continue;
      }
      chunks++;
      if (!validate(e.json)) {
        for (const err of schemaErrors(validate)) violations.push(`${s.label}: chunk #${e.i}: ${err}`);
        bytes ??= escapeBytes(e.data, 300);
      }
      for (const k of ['id', 'model'] as const)
        if (typeof e.json[k] === 'string') seen[k].push({ v: e.json[k] as string, i: e.i });
      if (typeof e.json.created === 'number') created.push({ v: e.json.created, i: e.i });
    }
    for (const k of ['id', 'model'] as const) {
      const first = seen[k][0];
      const change = seen[k].find((x) => x.v !== first?.v);
      if (first && change) {
        const distinct = new Set(seen[k].map((x) => x.v)).size;
        violations.push(
          `${s.label}: ${k} changes mid-stream: ${JSON.stringify(first.v)} (chunk #${first.i}) → ${JSON.stringify(change.v)} (chunk #${change.i}); ${distinct} distinct values`,
        );
      }
    }
    if (created.length > 1) {
      const back = created.find((x, j) => j > 0 && x.v < created[j - 1]!.v);
      const span = Math.max(...created.map((x) => x.v)) - Math.min(...created.map((x) => x.v));
      const allowed = Math.ceil(s.rec.tEnd / 1000) + o.createdSlackS;
      if (back) violations.push(`${s.label}: created goes backwards at chunk #${back.i} (${back.v})`);
      else if (span > allowed)
        violations.push(
          `${s.label}: created varies by ${span} s within a ${fmt(s.rec.tEnd / 1000)} s stream (allowed: the stream's duration + ${o.createdSlackS} s)`,
        );
      else if (span > 0) notes.push(`${s.label}: created follows the clock (${span} s spread; tolerated)`);
    }
  }
  if (chunks === 0)
    violations.unshift('no JSON chunk to validate: no event carried a JSON object (see the framing checks)');
  if (violations.length) {
    return fail(
      {
        requirement: `Every chunk MUST validate against the ${o.objectName} schema (fixtures/schemas/${o.schemaFile}), and id and model MUST stay the same across the stream.`,
        expected: `id (string), object "${o.objectName}", created (integer), model (string), choices (array) on every chunk; one id and one model per stream`,
        actual: `${plural(violations.length, 'violation')} in ${plural(chunks, 'chunk')}`,
        violations: [...violations, ...notes],
        bytes,
      },
      { chunks },
      evidenceOf(samples),
    );
  }
  return pass(
    `${chunks} chunks valid ${o.objectName}; id and model stable${notes.length ? `; ${notes.join('; ')}` : ''}`,
    { chunks },
  );
}

function choicesOf(j: Obj): Obj[] {
  return Array.isArray(j.choices) ? j.choices.filter(isObj) : [];
}
function deltaText(c: Obj): string {
  const d = isObj(c.delta) ? c.delta : {};
  let s = '';
  for (const k of ['content', 'reasoning_content', 'reasoning', 'thinking']) if (typeof d[k] === 'string') s += d[k];
  if (Array.isArray(d.tool_calls))
    for (const tc of d.tool_calls)
      if (isObj(tc) && isObj(tc.function)) s += String(tc.function.arguments ?? '') + String(tc.function.name ?? '');
  if (typeof c.text === 'string') s += c.text;
  return s;
}

export function judgeRoleFirst(samples: readonly Sample[]): Verdict {
  const violations: string[] = [];
  let bytes: string | undefined;
  for (const s of samples) {
    const first = s.events.find((e) => e.json && choicesOf(e.json).length > 0);
    if (!first) {
      violations.push(`${s.label}: no chunk with choices`);
      continue;
    }
    const role = (choicesOf(first.json!)[0]!.delta as Obj | undefined)?.role;
    if (role !== 'assistant') {
      violations.push(`${s.label}: the first delta (chunk #${first.i}) has role ${JSON.stringify(role ?? null)}`);
      bytes ??= escapeBytes(first.data, 300);
    }
  }
  if (violations.length) {
    return fail(
      {
        requirement:
          'The first delta SHOULD carry role "assistant" (OpenAI streams do; clients build the message from it).',
        expected: '"delta": {"role": "assistant", …} in the first chunk with choices',
        actual: violations[0]!,
        violations: violations.slice(1),
        bytes,
      },
      undefined,
      evidenceOf(samples),
    );
  }
  return pass('the first delta carries role "assistant"');
}

const CHAT_FINISH_REASONS = ['stop', 'length', 'tool_calls', 'content_filter', 'function_call'];

export function judgeFinishOnce(samples: readonly Sample[], valid: readonly string[] = CHAT_FINISH_REASONS): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let bytes: string | undefined;
  for (const s of samples) {
    const byChoice = new Map<
      number,
      { finishes: Array<{ i: number; v: string; data: string }>; textAfter: number[] }
    >();
    const entry = (k: number) => {
      let x = byChoice.get(k);
      if (!x) {
        x = { finishes: [], textAfter: [] };
        byChoice.set(k, x);
      }
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
          const repeatInUsage =
            x.finishes.length > 0 && isObj(e.json.usage) && fr === x.finishes[0]!.v && deltaText(c) === '';
          if (repeatInUsage)
            notes.push(`${s.label}: the usage chunk #${e.i} repeats finish_reason ${JSON.stringify(fr)} (tolerated)`);
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
        violations.push(
          `${who}: finish_reason sent ${x.finishes.length} times (chunks ${x.finishes.map((f) => `#${f.i} ${JSON.stringify(f.v)}`).join(', ')})`,
        );
        bytes ??= escapeBytes(x.finishes[1]!.data, 300);
      }
      for (const f of x.finishes) {
        if (!valid.includes(f.v)) {
          violations.push(
            `${who}: finish_reason ${JSON.stringify(f.v)} (chunk #${f.i}) is not one of ${valid.join(', ')}`,
          );
          bytes ??= escapeBytes(f.data, 300);
        }
      }
      if (x.textAfter.length)
        violations.push(
          `${who}: ${plural(x.textAfter.length, 'chunk')} with text after the finish chunk (first #${x.textAfter[0]})`,
        );
    }
  }
  if (violations.length) {
    return fail(
      {
        requirement:
          'Each choice MUST get exactly one valid finish_reason, on its last chunk with that choice (clients stop reading the choice there).',
        expected: `exactly one chunk per choice with finish_reason ∈ {${valid.join(', ')}}, and no text after it`,
        actual: violations[0]!,
        violations: [...violations.slice(1), ...notes],
        bytes,
      },
      undefined,
      evidenceOf(samples),
    );
  }
  return pass(
    `exactly one valid finish_reason per choice in ${plural(samples.length, 'stream')}${notes.length ? `; ${notes.join('; ')}` : ''}`,
  );
}

interface UsageChunk {
  i: number;
  data: string;
  choices: number;
  finish: boolean;
  repeatsFinish: boolean;
  beforeFinish: boolean;
  afterDone: boolean;
  usage: Obj;
}

function usageChunks(s: Sample): UsageChunk[] {
  const out: UsageChunk[] = [];
  let finished = false;
  let done = false;
  for (const e of s.events) {
    if (e.done) {
      done = true;
      continue;
    }
    if (!e.json) continue;
    const cs = choicesOf(e.json);
    const finish = cs.some((c) => typeof c.finish_reason === 'string' && c.finish_reason !== '');
    if (isObj(e.json.usage))
      out.push({
        i: e.i,
        data: e.data,
        choices: cs.length,
        finish,
        repeatsFinish: finish && finished,
        beforeFinish: !finished && !finish,
        afterDone: done,
        usage: e.json.usage,
      });
    if (finish) finished = true;
  }
  // "Before the finish chunk" only means something when there is a finish chunk (its absence is sse.finish-once's).
  if (!finished) for (const u of out) u.beforeFinish = false;
  return out;
}

export function judgeUsageChunk(s: Sample): Verdict {
  const found = usageChunks(s).filter((u) => !u.afterDone);
  const good = found.find(
    (u) => typeof u.usage.prompt_tokens === 'number' && typeof u.usage.completion_tokens === 'number',
  );
  if (!good) {
    return fail(
      {
        requirement:
          'With stream_options.include_usage, a usage object MUST arrive before data: [DONE] (OpenAI streaming: "an additional chunk will be streamed before the data: [DONE] message").',
        expected:
          'a chunk with "usage": {"prompt_tokens": n, "completion_tokens": m, "total_tokens": n+m} before [DONE]',
        actual: found.length
          ? `usage without numeric prompt_tokens/completion_tokens: ${escapeBytes(JSON.stringify(found[0]!.usage), 200)}`
          : `no chunk before [DONE] carries a usage object (${plural(s.events.length, 'event')} in the stream)`,
        bytes: escapeBytes(s.rec.body.subarray(Math.max(0, s.rec.body.length - 400)), 400),
      },
      undefined,
      evidenceOf([s]),
    );
  }
  return pass(
    `usage before [DONE] in chunk #${good.i}: prompt_tokens ${String(good.usage.prompt_tokens)}, completion_tokens ${String(good.usage.completion_tokens)}`,
  );
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
      violations.push(
        `${asked.label}: usage in the finish chunk #${u.i} instead of a separate chunk with "choices": []`,
      );
      bytes ??= escapeBytes(u.data, 300);
    } else if (u.choices > 0) {
      violations.push(
        `${asked.label}: the usage chunk #${u.i} repeats ${plural(u.choices, 'choice')} instead of "choices": []`,
      );
      bytes ??= escapeBytes(u.data, 300);
    } else if (u.beforeFinish) violations.push(`${asked.label}: the usage chunk #${u.i} comes before the finish chunk`);
  }
  const b = usageChunks(unasked);
  if (b.length) {
    violations.push(
      `${unasked.label}: usage sent although include_usage was not requested (chunk${b.length > 1 ? 's' : ''} ${b.map((u) => `#${u.i}`).join(', ')})`,
    );
    bytes ??= escapeBytes(b[0]!.data, 300);
  }
  if (violations.length) {
    return fail(
      {
        requirement:
          'Usage SHOULD take OpenAI\'s form: with include_usage exactly one extra chunk with "choices": [] after the finish chunk; without it, no usage ("usage": null is fine). Clients that read choices[0] of every chunk break on the other forms.',
        expected:
          'include_usage: one chunk {"choices": [], "usage": {…}} between the finish chunk and [DONE]; otherwise none',
        actual: violations[0]!,
        violations: violations.slice(1),
        bytes,
      },
      { usageChunksAsked: a.length, usageChunksUnasked: b.length },
      evidenceOf([asked, unasked]),
    );
  }
  if (a.length === 0) return pass('no usage chunk at all (sse.usage-chunk judges its absence); none sent unasked');
  return pass(`one usage chunk with "choices": [] after the finish chunk (#${a[0]!.i}); none without include_usage`);
}

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

/** Pieces of generated text per event (choice 0), and every string of every delta for surrogate checks. */
function deltaPieces(s: Sample): { content: string[]; strings: Array<{ i: number; field: string; value: string }> } {
  const content: string[] = [];
  const strings: Array<{ i: number; field: string; value: string }> = [];
  for (const e of beforeDone(s)) {
    if (!e.json) continue;
    for (const c of choicesOf(e.json)) {
      const d = isObj(c.delta) ? c.delta : {};
      for (const k of ['content', 'reasoning_content', 'reasoning', 'thinking'])
        if (typeof d[k] === 'string') strings.push({ i: e.i, field: `delta.${k}`, value: d[k] as string });
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
      violations.push(
        `${s.label}: byte 0x${bad.byte.toString(16).toUpperCase().padStart(2, '0')} at offset ${bad.offset} is not valid UTF-8`,
      );
      bytes ??= escapeBytes(bytesAround(s.rec.body, bad.offset, 40), 200);
    }
    const { content, strings } = deltaPieces(s);
    for (const x of strings) {
      const lone = loneSurrogates(x.value);
      if (lone.length) {
        violations.push(
          `${s.label}: chunk #${x.i} ${x.field} holds a lone surrogate (${lone.map((k) => `\\u${x.value.charCodeAt(k).toString(16)}`).join(', ')}): a client that parses each chunk on its own gets an invalid string`,
        );
        bytes ??= escapeBytes(s.events[x.i]!.data, 300);
      }
    }
    for (const k of splitCharacterBoundaries(content)) {
      violations.push(
        `${s.label}: a character is split between two deltas, each side decoded to U+FFFD: ${escapeBytes(content[k]!.slice(-20), 60)} | ${escapeBytes(content[k + 1]!.slice(0, 20), 60)}`,
      );
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
    else if (echo.status === 'absent')
      unexplained.push(
        `${s.label}: echo string not at the start of the text (a model's choice unless a violation above explains it): ${echo.why}`,
      );
    if (text.includes('\uFFFD') && !violations.some((v) => v.startsWith(s.label)))
      unexplained.push(
        `${s.label}: U+FFFD in the generated text (model output or byte-fallback tokens): ${escapeBytes(text.slice(Math.max(0, text.indexOf('\uFFFD') - 20), text.indexOf('\uFFFD') + 20), 80)}`,
      );
  }
  let compared = 'not compared (profile does not declare determinism)';
  if (run.nonStream) {
    const ns = run.nonStream;
    const msg =
      isObj(ns.json) && Array.isArray(ns.json.choices) && isObj(ns.json.choices[0]) && isObj(ns.json.choices[0].message)
        ? ns.json.choices[0].message
        : undefined;
    const full = typeof msg?.content === 'string' ? msg.content : undefined;
    for (const bad of invalidUtf8Offsets(ns.rec.body, 3)) {
      violations.push(
        `non-stream response: byte 0x${bad.byte.toString(16).toUpperCase().padStart(2, '0')} at offset ${bad.offset} is not valid UTF-8`,
      );
      bytes ??= escapeBytes(bytesAround(ns.rec.body, bad.offset, 40), 200);
    }
    if (ns.rec.status !== 200 || full === undefined)
      compared = `not compared: the non-stream request gave ${ns.rec.status === undefined ? ns.rec.failure?.kind : `HTTP ${ns.rec.status}`}${full === undefined && ns.rec.status === 200 ? ' without message.content' : ''}`;
    else {
      for (const [k, text] of texts.entries()) {
        if (text !== undefined && text !== full) {
          const at = firstDifference(text, full);
          violations.push(
            `${samples[k]!.label}: streamed text differs from the non-streamed text of the same deterministic request at character ${at}: stream ${JSON.stringify(text.slice(Math.max(0, at - 15), at + 25))} vs non-stream ${JSON.stringify(full.slice(Math.max(0, at - 15), at + 25))}`,
          );
        }
      }
      compared = texts.some((t) => t !== undefined)
        ? 'streamed text equals the non-streamed text'
        : 'not compared (framing defects)';
    }
  }
  const judgedTexts = texts.filter((t): t is string => t !== undefined);
  const metrics = {
    streamedChars: texts.map((t) => t?.length),
    echo: texts.map((t) => (t === undefined ? 'not judged' : echoIntegrity(run.echo, t).status)),
  };
  if (violations.length) {
    return fail(
      {
        requirement:
          'Streamed text MUST arrive as valid UTF-8 with every character intact: no invalid bytes, no lone surrogate escapes in a delta, no character split into U+FFFD halves across deltas, and the same text as the non-streamed answer of the same deterministic request.',
        expected: `valid UTF-8; echoed ${JSON.stringify(run.echo)} intact; streamed text = non-streamed text (deterministic profiles)`,
        actual: violations[0]!,
        violations: [...violations.slice(1), ...unexplained],
        bytes,
      },
      metrics,
      evidenceOf(samples),
    );
  }
  const multibyte = judgedTexts.some((t) => /[^\x00-\x7f]/.test(t.replace(/\uFFFD/g, '')));
  if (unexplained.some((u) => u.includes('U+FFFD')))
    return inconclusive(
      `no server-side UTF-8 defect seen, but ${unexplained.join('; ')}`,
      metrics,
      evidenceOf(samples),
    );
  if (!multibyte)
    return inconclusive(
      `no multibyte text came back to judge (${unexplained.join('; ') || 'ASCII only'}); wire bytes are valid UTF-8`,
      metrics,
      evidenceOf(samples),
    );
  const echoed = metrics.echo.every((x) => x === 'intact');
  return pass(
    `valid UTF-8 on the wire; ${echoed ? `echo ${JSON.stringify(run.echo)} intact` : 'multibyte text intact (the model did not echo)'}; ${compared}`,
    metrics,
  );
}
