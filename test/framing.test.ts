// Self-tests of lib/decode/framing.ts: hand-written byte strings for every framing fact the sse/completions/anthropic/ollama
// checks read (WHATWG SSE edge cases: LF, CRLF, CR, multi-line data, comments, BOM, EOF without a blank line), and of
// those families' judges on streams shaped like real servers' (lenient where clients cope, strict on real defects).

import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  analyzeNdjson,
  analyzeSse,
  bytesAround,
  classifyPayload,
  echoIntegrity,
  firstDifference,
  invalidUtf8Offsets,
  loneSurrogates,
  mediaType,
  mojibakeForms,
  runTogetherEvents,
  type SseFraming,
  splitAcrossEvents,
  splitCharacterBoundaries,
  splitJsonValues,
} from '../lib/decode/framing.ts';
import type { BodyRead } from '../lib/model/types.ts';

const enc = new TextEncoder();
const reads = (...parts: (string | Uint8Array)[]): BodyRead[] =>
  parts.map((p, i) => ({ t: i + 1, bytes: typeof p === 'string' ? enc.encode(p) : p }));
const datas = (f: SseFraming) => f.events.map((e) => e.data);
/** Everything but times: what must not depend on read boundaries. */
const shape = (f: SseFraming) => ({
  ...f,
  lines: f.lines.map(({ t: _t, ...l }) => l),
  blocks: f.blocks.map(({ t: _t, lines, ...b }) => ({ ...b, lines: lines.map(({ t: _u, ...l }) => l) })),
  events: f.events.map((e) => e.offset),
  unterminated: f.unterminated?.offset,
  comments: f.comments.map(({ t: _t, ...c }) => c),
  unknownFields: f.unknownFields.map((l) => l.offset),
  bareJson: f.bareJson.map((l) => l.offset),
});

describe('analyzeSse: line terminators', () => {
  test('LF', () => {
    const f = analyzeSse(enc.encode('data: a\n\ndata: b\n\n'));
    expect(datas(f)).toEqual(['a', 'b']);
    expect(f.lineEnds).toEqual({ LF: 4, CRLF: 0, CR: 0, EOF: 0 });
    expect(f.loneCrOffsets).toEqual([]);
    expect(f.unterminated).toBeUndefined();
    expect(f.blocks.every((b) => b.terminated)).toBe(true);
  });

  test('CRLF', () => {
    const f = analyzeSse(enc.encode('data: a\r\n\r\ndata: b\r\n\r\n'));
    expect(datas(f)).toEqual(['a', 'b']);
    expect(f.lineEnds).toEqual({ LF: 0, CRLF: 4, CR: 0, EOF: 0 });
    expect(f.loneCrOffsets).toEqual([]);
  });

  test('lone CR: valid line ends, each one located', () => {
    const f = analyzeSse(enc.encode('data: a\r\rdata: b\r\r'));
    expect(datas(f)).toEqual(['a', 'b']);
    expect(f.lineEnds.CR).toBe(4);
    expect(f.loneCrOffsets).toEqual([7, 8, 16, 17]);
    expect(f.unterminated).toBeUndefined(); // a CR at EOF is a complete line end
  });

  test('mixed: CRLF line, LF blank line; a CR followed by CRLF is two line ends', () => {
    const f = analyzeSse(enc.encode('data: a\r\n\ndata: b\r\r\n'));
    expect(datas(f)).toEqual(['a', 'b']);
    expect(f.lineEnds).toEqual({ LF: 1, CRLF: 2, CR: 1, EOF: 0 });
    expect(f.loneCrOffsets).toEqual([17]);
  });
});

describe('analyzeSse: fields, data lines, comments', () => {
  test('multi-line data joins with LF; a JSON value pretty-printed over lines is one event, not run together', () => {
    const f = analyzeSse(enc.encode('data: {\ndata: "a": 1\ndata: }\n\n'));
    expect(datas(f)).toEqual(['{\n"a": 1\n}']);
    expect(f.events[0]!.dataLines).toBe(3);
    expect(runTogetherEvents(f.events[0]!)).toBeUndefined();
  });

  test('events run together (no blank line between them) are recognised', () => {
    const f = analyzeSse(enc.encode('data: {"a":1}\ndata: {"b":2}\ndata: [DONE]\n\n'));
    expect(f.events).toHaveLength(1);
    expect(runTogetherEvents(f.events[0]!)).toEqual(['{"a":1}', '{"b":2}', '[DONE]']);
  });

  test('comments: ": ping", ": keep-alive", bare ":" — never events', () => {
    const f = analyzeSse(enc.encode(': ping\n\n:\n\ndata: x\n\n: keep-alive\n\n'));
    expect(f.comments.map((c) => c.text)).toEqual(['ping', '', 'keep-alive']);
    expect(f.comments.map((c) => c.line)).toEqual([': ping', ':', ': keep-alive']);
    expect(datas(f)).toEqual(['x']);
    expect(f.blocks).toHaveLength(4);
  });

  test('a comment inside an event block does not split it', () => {
    const f = analyzeSse(enc.encode('data: a\n: note\ndata: b\n\n'));
    expect(datas(f)).toEqual(['a\nb']);
    expect(f.comments).toHaveLength(1);
  });

  test('"data:{" without the space is valid and counted; exactly one space is stripped', () => {
    const f = analyzeSse(enc.encode('data:{"a":1}\n\ndata:  x\n\n'));
    expect(datas(f)).toEqual(['{"a":1}', ' x']);
    expect(f.dataWithoutSpace).toBe(1);
  });

  test('event, id, retry are known; an unknown field is reported by name; "data" without a colon is an empty data line', () => {
    const f = analyzeSse(
      enc.encode('event: message_start\nid: 7\nretry: 10\ndata: {}\n\nerror: {"message":"boom"}\n\ndata\n\n'),
    );
    expect(f.events.map((e) => [e.event, e.id, e.data])).toEqual([
      ['message_start', '7', '{}'],
      [undefined, undefined, ''],
    ]);
    expect(f.unknownFields.map((l) => [l.field, l.value])).toEqual([['error', '{"message":"boom"}']]);
    expect(f.blocks[1]!.data).toBeUndefined(); // the error line's block is not an event at all
  });

  test('bare JSON lines (no field name) are reported, not taken for fields', () => {
    const f = analyzeSse(enc.encode('{"id":"x","choices":[]}\n\ndata: {"ok":true}\n\n[DONE]\n\n'));
    expect(f.bareJson.map((l) => l.text)).toEqual(['{"id":"x","choices":[]}', '[DONE]']);
    expect(f.unknownFields).toEqual([]);
    expect(datas(f)).toEqual(['{"ok":true}']);
  });

  test('extra blank lines between events are counted, harmless', () => {
    const f = analyzeSse(enc.encode('\n\ndata: a\n\n\ndata: b\n\n'));
    expect(datas(f)).toEqual(['a', 'b']);
    expect(f.events.map((e) => e.extraBlankLinesBefore)).toEqual([2, 1]);
  });
});

describe('analyzeSse: BOM, EOF, UTF-8', () => {
  test('a leading BOM is noted and skipped; offsets still index the recorded bytes', () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode('data: x\n\n')]);
    const f = analyzeSse(bytes);
    expect(f.bom).toBe(true);
    expect(datas(f)).toEqual(['x']);
    expect(f.lines[0]!.offset).toBe(3);
    expect(f.invalidUtf8).toEqual([]);
  });

  test('EOF without the final blank line: the last block is unterminated (never dispatched)', () => {
    for (const body of ['data: a\n\ndata: last', 'data: a\n\ndata: last\n', 'data: a\r\n\r\ndata: last\r\n']) {
      const f = analyzeSse(enc.encode(body));
      expect(datas(f), body).toEqual(['a']);
      expect(f.unterminated?.data, body).toBe('last');
      expect(f.unterminated?.terminated).toBe(false);
    }
    expect(analyzeSse(enc.encode('data: last')).lineEnds.EOF).toBe(1);
  });

  test('empty body', () => {
    const f = analyzeSse(new Uint8Array(0));
    expect(f.blocks).toEqual([]);
    expect(f.events).toEqual([]);
    expect(f.unterminated).toBeUndefined();
  });

  test('invalid UTF-8 is located byte by byte', () => {
    const bytes = new Uint8Array([...enc.encode('data: "a'), 0xff, 0xc3, ...enc.encode('"\n\n')]);
    const f = analyzeSse(bytes);
    expect(f.invalidUtf8).toEqual([
      { offset: 8, byte: 0xff },
      { offset: 9, byte: 0xc3 },
    ]);
    expect(f.events[0]!.data).toBe('"a\uFFFD\uFFFD"');
    expect(invalidUtf8Offsets(enc.encode('é 東京 🙂'))).toEqual([]);
    expect(invalidUtf8Offsets(new Uint8Array([0xed, 0xa0, 0x80]))).toHaveLength(3); // CESU-8 surrogate: invalid
    expect(invalidUtf8Offsets(new Uint8Array([0xc0, 0xaf]))).toHaveLength(2); // overlong "/"
  });

  test('multibyte text inside data lines decodes per line intact', () => {
    const f = analyzeSse(enc.encode('data: {"c":"Zürich 東京 🙂"}\n\n'));
    expect(JSON.parse(f.events[0]!.data!)).toEqual({ c: 'Zürich 東京 🙂' });
  });
});

describe('analyzeSse: read boundaries', () => {
  const body = enc.encode(
    '\uFEFF: ping\r\n\r\ndata: {"c":"é🙂"}\r\n\r\ndata: a\rdata: b\r\r:\n\nerror: x\n\n{"bare":1}\n\ndata: [DONE]\n\ndata: tail',
  );

  test('split at every byte: the same lines, blocks, comments and events', () => {
    const whole = analyzeSse(body);
    expect(whole.events).toHaveLength(3);
    for (let cut = 0; cut <= body.length; cut++) {
      const f = analyzeSse(reads(body.slice(0, cut), body.slice(cut)));
      expect(shape(f), `cut at ${cut}`).toEqual(shape(whole));
    }
  });

  test('one read per byte gives the same result, and each block the time of the read that completed it', () => {
    const perByte = analyzeSse(reads(...Array.from(body, (b) => new Uint8Array([b]))));
    expect(shape(perByte)).toEqual(shape(analyzeSse(body)));
    for (const b of perByte.blocks.filter((x) => x.terminated)) expect(b.t).toBe(b.end); // read k holds byte k-1
  });

  test('property: any cutting yields the same framing', () => {
    const whole = shape(analyzeSse(body));
    fc.assert(
      fc.property(fc.array(fc.nat(body.length), { maxLength: 12 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const parts: Uint8Array[] = [];
        let prev = 0;
        for (const c of [...points, body.length]) {
          parts.push(body.slice(prev, c));
          prev = c;
        }
        expect(shape(analyzeSse(reads(...parts)))).toEqual(whole);
      }),
      { seed: 42, numRuns: 200 },
    );
  });

  test('a block gets the time of the read holding its blank line', () => {
    const f = analyzeSse(reads('data: a\n', '\ndata: b\n\n'));
    expect(f.events.map((e) => [e.data, e.t])).toEqual([
      ['a', 2],
      ['b', 2],
    ]);
  });

  test('bytesAround shows a lone CR in place', () => {
    const b = enc.encode('data: a\r\rdata: b');
    expect(new TextDecoder().decode(bytesAround(b, 7, 3))).toBe(': a\r\rda');
  });
});

describe('JSON payloads', () => {
  test('classifyPayload', () => {
    expect(classifyPayload('{"a":1}')).toEqual({ kind: 'object' });
    expect(classifyPayload(' [DONE] ')).toEqual({ kind: 'done' });
    expect(classifyPayload('{"a":1}{"b":2}')).toEqual({ kind: 'several', count: 2 });
    expect(classifyPayload('{"a":1}\n{"b":"}{"}')).toEqual({ kind: 'several', count: 2 });
    expect(classifyPayload('[1,2]')).toEqual({ kind: 'not-object', type: 'array' });
    expect(classifyPayload('"x"')).toEqual({ kind: 'not-object', type: 'string' });
    expect(classifyPayload('{"a":')).toMatchObject({ kind: 'invalid' });
  });

  test('splitJsonValues handles strings with braces and escapes', () => {
    expect(splitJsonValues('{"a":"}\\"{"} {"b":[1,{"c":2}]}')).toEqual(['{"a":"}\\"{"}', '{"b":[1,{"c":2}]}']);
    expect(splitJsonValues('{"a":1} 3 true "s"')).toEqual(['{"a":1}', '3', 'true', '"s"']);
    expect(splitJsonValues('{"a":1}{"b"')).toBeUndefined();
  });

  test('splitAcrossEvents finds one object split over consecutive events', () => {
    expect(splitAcrossEvents(['{"a":1}', '{"b":', '2}', '[DONE]'])).toEqual([[1, 2]]);
    expect(splitAcrossEvents(['{"choices":[{"delta"', ':{"content":', '"x"}}]}'])).toEqual([[0, 2]]);
    expect(splitAcrossEvents(['{"a":1}', 'garbage', '{"b":2}'])).toEqual([]);
  });
});

describe('text integrity', () => {
  test('lone surrogates, as JSON.parse leaves them', () => {
    expect(loneSurrogates(JSON.parse('"a\\ud83d"') as string)).toEqual([1]);
    expect(loneSurrogates(JSON.parse('"\\ude00b"') as string)).toEqual([0]);
    expect(loneSurrogates(JSON.parse('"\\ud83d\\ude00"') as string)).toEqual([]);
    expect(loneSurrogates('🙂 東京')).toEqual([]);
    // The defect is per delta: joined, two halves make a valid pair.
    const pieces = [JSON.parse('"x\\ud83d"') as string, JSON.parse('"\\ude00y"') as string];
    expect(pieces.map(loneSurrogates)).toEqual([[1], [0]]);
    expect(loneSurrogates(pieces.join(''))).toEqual([]);
  });

  test('a character split between two deltas, decoded per delta', () => {
    expect(splitCharacterBoundaries(['ab\uFFFD', '\uFFFD\uFFFDc', 'd'])).toEqual([0]);
    expect(splitCharacterBoundaries(['a\uFFFD', 'b', '\uFFFD'])).toEqual([]);
  });

  test('mojibake forms', () => {
    expect(mojibakeForms('ü')).toContain('Ã¼');
    expect(mojibakeForms('a')).toEqual([]);
    expect(mojibakeForms('€').length).toBeGreaterThan(0);
  });

  test('echoIntegrity', () => {
    const echo = 'café-Zürich 東京 🙂 end';
    expect(echoIntegrity(echo, ` ${echo} and more`)).toEqual({ status: 'intact' });
    expect(echoIntegrity(echo, 'caf\uFFFD\uFFFD-Zürich 東京 🙂 end')).toMatchObject({ status: 'corrupted', at: 3 });
    expect(echoIntegrity(echo, 'café-ZÃ¼rich 東京 🙂 end')).toMatchObject({ status: 'corrupted' });
    expect(echoIntegrity(echo, 'café-Zürich ?? 🙂 end')).toMatchObject({ status: 'corrupted' });
    expect(echoIntegrity(echo, 'café-Zürich  🙂 end')).toMatchObject({ status: 'corrupted' });
    expect(echoIntegrity(echo, 'café-Zürich 東京 \uD83D end')).toMatchObject({ status: 'corrupted' });
    expect(echoIntegrity(echo, 'Sure! Here is the text: café')).toMatchObject({ status: 'absent' });
    expect(echoIntegrity(echo, 'I cannot do that, but ZÃ¼rich is nice')).toMatchObject({ status: 'corrupted' });
    expect(firstDifference('abc', 'abd')).toBe(2);
  });
});

describe('analyzeNdjson', () => {
  test('LF and CRLF lines, blank lines, an unterminated last line', () => {
    const f = analyzeNdjson(reads('{"a":1}\n{"b":', '2}\r\n\n{"done":true}'));
    expect(f.lines.map((l) => [l.text, l.end, l.isObject, l.t])).toEqual([
      ['{"a":1}', 'LF', true, 1],
      ['{"b":2}', 'CRLF', true, 2],
      ['{"done":true}', 'EOF', true, 2],
    ]);
    expect(f.blankLines).toBe(1);
  });

  test('SSE framing instead of NDJSON is recognised line by line', () => {
    const f = analyzeNdjson(enc.encode('data: {"a":1}\n\n: ping\n\ndata: [DONE]\n\n'));
    expect(f.lines.map((l) => [l.sseLike, l.isObject])).toEqual([
      [true, false],
      [true, false],
      [true, false],
    ]);
    expect(f.blankLines).toBe(3);
  });

  test('two objects on one line, a non-object, a lone CR', () => {
    const f = analyzeNdjson(enc.encode('{"a":1}{"b":2}\n[1]\n{"c":"x\ry"}\n'));
    expect(f.lines.map((l) => l.problem)).toEqual([
      '2 JSON values on one line',
      'a JSON array, not an object',
      expect.stringContaining('not JSON'),
    ]);
    expect(f.loneCrOffsets).toEqual([26]);
  });

  test('split at every byte: the same lines', () => {
    const body = enc.encode('{"message":{"content":"東京🙂"}}\n{"done":true,"done_reason":"stop"}\n');
    const strip = (x: ReturnType<typeof analyzeNdjson>) => x.lines.map(({ t: _t, ...l }) => l);
    const whole = strip(analyzeNdjson(body));
    for (let cut = 0; cut <= body.length; cut++)
      expect(strip(analyzeNdjson(reads(body.slice(0, cut), body.slice(cut))))).toEqual(whole);
  });
});

test('mediaType drops parameters and case', () => {
  expect(mediaType('Text/Event-Stream; charset=utf-8')).toBe('text/event-stream');
  expect(mediaType(undefined)).toBe('');
});

// ---------------------------------------------------------------------------------------------------------
// The sse judges on hand-written streams shaped like real servers' (docs/servers.md "Cross-server observations"):
// none of what a client has to tolerate may fail a MUST check. And the fault shapes they must catch, without a server.

import { judgeEventLines, judgeEventSequence } from '../lib/grading/anthropic.ts';
import { judgeDoneLine, judgeNdjsonFraming, makeNdjsonSample } from '../lib/grading/ollama.ts';
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
import { makeSample, type Sample } from '../lib/grading/sse-samples.ts';
import type { Recording, Verdict } from '../lib/model/types.ts';
import { ECHO_TEXT } from '../suites/sse.ts';

const recOf = (
  body: string | Uint8Array,
  headers: Record<string, string> = { 'content-type': 'text/event-stream; charset=utf-8' },
): Recording => {
  const bytes = typeof body === 'string' ? enc.encode(body) : body;
  return {
    method: 'POST',
    url: 'http://127.0.0.1:1/v1/chat/completions',
    t0Abs: 0,
    status: 200,
    headers,
    reads: [{ t: 1, bytes }],
    tEnd: 50,
    body: bytes,
    truncated: false,
  };
};
const sample = (label: string, body: string | Uint8Array) => makeSample(label, recOf(body));
/** Python json.dumps style: non-ASCII as \uXXXX escapes (surrogate pairs for astral characters). */
const py = (x: unknown) =>
  JSON.stringify(x).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
const chunk = (o: Record<string, unknown>, id = 'chatcmpl-1') => ({
  id,
  object: 'chat.completion.chunk',
  created: 1700000000,
  model: 'qwen',
  ...o,
});
const delta = (d: Record<string, unknown>, finish: string | null = null, more: Record<string, unknown> = {}) =>
  chunk({ choices: [{ index: 0, delta: d, logprobs: null, finish_reason: finish }], ...more });
const usage = { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 };
const echoPieces = ['café', '-Zü', 'rich', ' 東京', ' 🙂', ' смысл', '-naïve', ' 🚀', ' end'];
const sseOf = (
  objs: unknown[],
  o: { eol?: string; data?: string; ser?: (x: unknown) => string; between?: string[] } = {},
) => {
  const eol = o.eol ?? '\n';
  const ser = o.ser ?? JSON.stringify;
  return objs
    .map((x, i) => `${o.between?.[i] ?? ''}${o.data ?? 'data: '}${typeof x === 'string' ? x : ser(x)}${eol}${eol}`)
    .join('');
};
const MUST = (s: Sample[]): Record<string, Verdict> => ({
  terminator: judgeEventTerminator(s),
  prefix: judgeDataPrefix(s),
  json: judgeOneJsonPerEvent(s),
  done: judgeDoneTerminator(s),
  schema: judgeChunkSchema(s, {
    schemaFile: 'chat-completion-chunk.schema.json',
    objectName: 'chat.completion.chunk',
    createdSlackS: 2,
  }),
  finish: judgeFinishOnce(s),
  type: judgeContentType(s),
});
const outcomes = (v: Record<string, Verdict>) => Object.fromEntries(Object.entries(v).map(([k, x]) => [k, x.outcome]));
const allPass = (v: Record<string, Verdict>) => Object.fromEntries(Object.keys(v).map((k) => [k, 'pass']));

describe('sse judges: what real servers do and clients tolerate never fails a MUST', () => {
  test('vllm-mlx: ": heartbeat" comments, usage null on every chunk, usage in the finish chunk and again in a choices:[] chunk', () => {
    const body = sseOf(
      [
        delta({ role: 'assistant', content: '' }, null, { usage: null }),
        ...echoPieces.map((p) => delta({ content: p }, null, { usage: null })),
        delta({}, 'stop', { usage }),
        chunk({ choices: [], usage }),
        '[DONE]',
      ],
      { ser: py, between: [': heartbeat\n\n'] },
    );
    const asked = sample('vllm-mlx asked', body);
    expect(outcomes(MUST([asked]))).toEqual(allPass(MUST([asked])));
    expect(judgeUsageChunk(asked).outcome).toBe('pass');
    expect(judgeComments([asked]).message).toContain('": heartbeat" ×1');
    const form = judgeUsageForm(asked, sample('vllm-mlx unasked', body));
    expect(form.outcome).toBe('fail'); // SHOULD: graded warn
    expect(form.message).toContain('usage in the finish chunk');
    expect(form.message).toContain('usage sent 2 times');
    expect(form.message).toContain('include_usage was not requested');
    const run: SseRun = { echo: ECHO_TEXT, withUsage: asked, withoutUsage: asked };
    expect(judgeUtf8(run).outcome).toBe('pass'); // \ud83d\ude42 escapes in one delta are one character
  });

  test('mlx-openai-server: request_id on every chunk, usage always in the finish chunk', () => {
    const body = sseOf([
      delta({ role: 'assistant' }, null, { request_id: 'r1' }),
      ...echoPieces.map((p) => delta({ content: p }, null, { request_id: 'r1' })),
      delta({}, 'length', { request_id: 'r1', usage: { ...usage, prompt_tokens_details: { cached_tokens: 0 } } }),
      '[DONE]',
    ]);
    const s = sample('mlx-openai-server', body);
    expect(outcomes(MUST([s]))).toEqual(allPass(MUST([s])));
    expect(judgeUsageChunk(s).outcome).toBe('pass');
    expect(judgeRoleFirst([s]).outcome).toBe('pass');
  });

  test('llama.cpp: bare ":" pings, role chunk with content null, reasoning_content, timings, created stamped per chunk', () => {
    const objs = [
      { ...delta({ role: 'assistant', content: null }), created: 1700000000 },
      { ...delta({ reasoning_content: 'thinking' }), created: 1700000000 },
      ...echoPieces.map((p, i) => ({ ...delta({ content: p }), created: 1700000000 + (i > 4 ? 1 : 0) })),
      { ...delta({}, 'stop'), created: 1700000001 },
      {
        ...chunk({ choices: [], usage, timings: { prompt_n: 12, predicted_n: 5, predicted_ms: 50 } }),
        created: 1700000001,
      },
      '[DONE]',
    ];
    const s = sample('llama.cpp', sseOf(objs, { between: [':\n\n', '', ':\n\n'] }));
    expect(outcomes(MUST([s]))).toEqual(allPass(MUST([s])));
    expect(judgeComments([s]).message).toContain('":" ×2');
  });

  test('CRLF line ends, "data:" without the space, a JSON chunk pretty-printed over several data lines', () => {
    const pretty = JSON.stringify(delta({ content: 'x' }), null, 1)
      .split('\n')
      .map((l) => `data:${l}`)
      .join('\r\n');
    const body =
      sseOf([delta({ role: 'assistant', content: '' })], { eol: '\r\n', data: 'data:' }) +
      `${pretty}\r\n\r\n` +
      sseOf([delta({}, 'stop'), '[DONE]'], { eol: '\r\n', data: 'data:' });
    const s = sample('crlf', body);
    expect(outcomes(MUST([s]))).toEqual(allPass(MUST([s])));
    expect(judgeNoLoneCr([s]).outcome).toBe('pass');
    expect(judgeDataPrefix([s]).message).toContain('without the space');
  });

  test('mlx-omni-server: role on every delta, usage chunk repeating the finished choice', () => {
    const body = sseOf([
      ...['a', 'b'].map((p) => delta({ role: 'assistant', content: p })),
      delta({ role: 'assistant', content: '' }, 'stop'),
      delta({ role: 'assistant' }, 'stop', { usage }),
      '[DONE]',
    ]);
    const s = sample('mlx-omni', body);
    expect(outcomes(MUST([s]))).toEqual(allPass(MUST([s])));
    expect(judgeFinishOnce([s]).message).toContain('tolerated');
    expect(judgeUsageForm(s, sample('x', sseOf([delta({ content: 'a' }, 'stop'), '[DONE]']))).message).toContain(
      'repeats 1 choice',
    );
  });

  test('Ollama OpenAI compat: reasoning field, finish chunk with an empty delta', () => {
    const s = sample(
      'ollama',
      sseOf([
        delta({ role: 'assistant', content: '', reasoning: 'hm' }),
        delta({ content: 'hi' }),
        delta({}, 'stop'),
        chunk({ choices: [], usage }),
        '[DONE]',
      ]),
    );
    expect(outcomes(MUST([s]))).toEqual(allPass(MUST([s])));
  });

  test('utf8: a U+FFFD the model produced is inconclusive, never fail; ASCII-only answers are inconclusive', () => {
    const fffd = sample(
      'model fffd',
      sseOf([
        delta({ role: 'assistant', content: '' }),
        delta({ content: 'Sure: caf\uFFFD' }),
        delta({}, 'stop'),
        '[DONE]',
      ]),
    );
    const v = judgeUtf8({ echo: ECHO_TEXT, withUsage: fffd, withoutUsage: fffd });
    expect(v.outcome).toBe('inconclusive');
    const ascii = sample('ascii', sseOf([delta({ content: 'Sure.' }), delta({}, 'stop'), '[DONE]']));
    expect(judgeUtf8({ echo: ECHO_TEXT, withUsage: ascii, withoutUsage: ascii })).toMatchObject({
      outcome: 'inconclusive',
      message: expect.stringMatching(/no multibyte text/),
    });
  });
});

describe('sse judges: the defects, without a server', () => {
  test('an event without its blank line at EOF; a lone CR; a bare JSON line; an "error:" field', () => {
    const s = sample(
      'x',
      `data: ${JSON.stringify(delta({ content: 'a' }))}\r\r{"bare":1}\n\nerror: boom\ndata: [DONE]\n`,
    );
    expect(judgeEventTerminator([s]).message).toContain('the body ends inside an event');
    expect(judgeNoLoneCr([s]).message).toContain('lone CR');
    expect(judgeDataPrefix([s]).message).toContain('{"bare":1}');
    expect(judgeUnknownFields([s]).message).toContain('"error" (1 line)');
  });

  test('a model echo corrupted by the server into mojibake fails utf8-intact', () => {
    const s = sample('mojibake', sseOf([delta({ content: 'cafÃ©-ZÃ¼rich' }), delta({}, 'stop'), '[DONE]']));
    const v = judgeUtf8({ echo: ECHO_TEXT, withUsage: s, withoutUsage: s });
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('mojibake');
  });
});

describe('ollama and anthropic judges on hand-written streams', () => {
  const nd = (body: string, ct = 'application/x-ndjson') => makeNdjsonSample(recOf(body, { 'content-type': ct }));
  const line = (o: unknown) => `${JSON.stringify(o)}\n`;
  test('NDJSON with CRLF, a blank line and no trailing newline is tolerated; the done line is read', () => {
    const body =
      `${line({ message: { role: 'assistant', content: 'hi' }, done: false }).replace('\n', '\r\n')}\n` +
      JSON.stringify({
        message: { role: 'assistant', content: '' },
        done: true,
        done_reason: 'stop',
        eval_count: 1,
        eval_duration: 5e6,
      });
    expect(judgeNdjsonFraming(nd(body)).outcome).toBe('pass');
    expect(judgeDoneLine(nd(body)).outcome).toBe('pass');
  });
  test('a mid-stream {"error"} line and a done line without statistics fail done-line', () => {
    const v = judgeDoneLine(nd(line({ error: 'boom' }) + line({ done: true })));
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('error line');
    expect(v.message).toContain('eval_count, eval_duration');
  });
  test('anthropic: pings anywhere and an unknown event type are fine; a block left open is not', () => {
    const ev = (o: { type: string } & Record<string, unknown>) => `event: ${o.type}\ndata: ${JSON.stringify(o)}\n\n`;
    const ok = [
      ev({ type: 'ping' }),
      ev({ type: 'message_start', message: { id: 'm', role: 'assistant' } }),
      ev({ type: 'content_block_start', index: 0 }),
      ev({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'hi' } }),
      ev({ type: 'ping' }),
      ev({ type: 'future_thing' }),
      ev({ type: 'content_block_stop', index: 0 }),
      ev({ type: 'message_delta', delta: { stop_reason: 'end_turn' } }),
      ev({ type: 'message_stop' }),
    ];
    expect(judgeEventSequence(sample('a', ok.join(''))).outcome).toBe('pass');
    expect(judgeEventLines(sample('a', ok.join(''))).outcome).toBe('pass');
    const open = ok.filter((e) => !e.includes('content_block_stop')).join('');
    expect(judgeEventSequence(sample('a', open)).message).toContain('still open');
  });
});
