// Self-tests of lib/framing.ts: hand-written byte strings for every framing fact the sse/completions/anthropic/ollama
// checks read (WHATWG SSE edge cases: LF, CRLF, CR, multi-line data, comments, BOM, EOF without a blank line).
import { test, expect, describe } from 'vitest';
import fc from 'fast-check';
import {
  analyzeSse, analyzeNdjson, runTogetherEvents, splitJsonValues, classifyPayload, splitAcrossEvents, loneSurrogates,
  splitCharacterBoundaries, mojibakeForms, echoIntegrity, invalidUtf8Offsets, mediaType, bytesAround, firstDifference,
  type SseFraming,
} from '../lib/framing.ts';
import type { BodyRead } from '../lib/types.ts';

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
    const f = analyzeSse(enc.encode('event: message_start\nid: 7\nretry: 10\ndata: {}\n\nerror: {"message":"boom"}\n\ndata\n\n'));
    expect(f.events.map((e) => [e.event, e.id, e.data])).toEqual([['message_start', '7', '{}'], [undefined, undefined, '']]);
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
    expect(f.invalidUtf8).toEqual([{ offset: 8, byte: 0xff }, { offset: 9, byte: 0xc3 }]);
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
  const body = enc.encode('\uFEFF: ping\r\n\r\ndata: {"c":"é🙂"}\r\n\r\ndata: a\rdata: b\r\r:\n\nerror: x\n\n{"bare":1}\n\ndata: [DONE]\n\ndata: tail');

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
    fc.assert(fc.property(fc.array(fc.nat(body.length), { maxLength: 12 }), (cuts) => {
      const points = [...new Set(cuts)].sort((a, b) => a - b);
      const parts: Uint8Array[] = [];
      let prev = 0;
      for (const c of [...points, body.length]) { parts.push(body.slice(prev, c)); prev = c; }
      expect(shape(analyzeSse(reads(...parts)))).toEqual(whole);
    }), { seed: 42, numRuns: 200 });
  });

  test('a block gets the time of the read holding its blank line', () => {
    const f = analyzeSse(reads('data: a\n', '\ndata: b\n\n'));
    expect(f.events.map((e) => [e.data, e.t])).toEqual([['a', 2], ['b', 2]]);
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
      ['{"a":1}', 'LF', true, 1], ['{"b":2}', 'CRLF', true, 2], ['{"done":true}', 'EOF', true, 2],
    ]);
    expect(f.blankLines).toBe(1);
  });

  test('SSE framing instead of NDJSON is recognised line by line', () => {
    const f = analyzeNdjson(enc.encode('data: {"a":1}\n\n: ping\n\ndata: [DONE]\n\n'));
    expect(f.lines.map((l) => [l.sseLike, l.isObject])).toEqual([[true, false], [true, false], [true, false]]);
    expect(f.blankLines).toBe(3);
  });

  test('two objects on one line, a non-object, a lone CR', () => {
    const f = analyzeNdjson(enc.encode('{"a":1}{"b":2}\n[1]\n{"c":"x\ry"}\n'));
    expect(f.lines.map((l) => l.problem)).toEqual(['2 JSON values on one line', 'a JSON array, not an object', expect.stringContaining('not JSON')]);
    expect(f.loneCrOffsets).toEqual([26]);
  });

  test('split at every byte: the same lines', () => {
    const body = enc.encode('{"message":{"content":"東京🙂"}}\n{"done":true,"done_reason":"stop"}\n');
    const strip = (x: ReturnType<typeof analyzeNdjson>) => x.lines.map(({ t: _t, ...l }) => l);
    const whole = strip(analyzeNdjson(body));
    for (let cut = 0; cut <= body.length; cut++) expect(strip(analyzeNdjson(reads(body.slice(0, cut), body.slice(cut))))).toEqual(whole);
  });
});

test('mediaType drops parameters and case', () => {
  expect(mediaType('Text/Event-Stream; charset=utf-8')).toBe('text/event-stream');
  expect(mediaType(undefined)).toBe('');
});
