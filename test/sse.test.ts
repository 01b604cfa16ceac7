import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { decodeNdjson, decodeSse, escapeBytes, isInvalidUtf8, splitRawEvents } from '../lib/decode/stream-decoder.ts';
import {
  anthropicEvents,
  ollamaEvents,
  openaiChatEvents,
  openaiCompletionEvents,
} from '../lib/decode/stream-events.ts';
import { requestMetrics } from '../lib/measure/request-metrics.ts';
import type { BodyRead } from '../lib/model/types.ts';

const enc = new TextEncoder();
/** Reads at t = 1, 2, 3, ... from strings or byte arrays. */
const reads = (...parts: (string | Uint8Array)[]): BodyRead[] =>
  parts.map((p, i) => ({ t: i + 1, bytes: typeof p === 'string' ? enc.encode(p) : p }));
/** Cut bytes at the given offsets into reads at t = 1, 2, ... */
const cutAt = (bytes: Uint8Array, cuts: number[]): BodyRead[] => {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const c of [...points, bytes.length]) {
    out.push(bytes.slice(prev, c));
    prev = c;
  }
  return reads(...out);
};
const datas = (reads: BodyRead[]) => decodeSse(reads).events.map((e) => e.data);

describe('decodeSse: SSE spec edge cases', () => {
  test('LF, CRLF and CR line endings', () => {
    expect(datas(reads('data: a\n\ndata: b\n\n'))).toEqual(['a', 'b']);
    expect(datas(reads('data: a\r\n\r\ndata: b\r\n\r\n'))).toEqual(['a', 'b']);
    expect(datas(reads('data: a\r\rdata: b\r\r'))).toEqual(['a', 'b']); // the last one too, at EOF
  });

  test('a CR at the end of a read completes the event in that read, and a following LF is not a second line end', () => {
    const r = decodeSse(reads('data: a\r\r', '\ndata: b\n\n'));
    expect(r.events).toEqual([
      { t: 1, data: 'a' },
      { t: 2, data: 'b' },
    ]);
    const s = decodeSse(reads('data: a\r', '\n\r\n', 'data: b\r', '\r'));
    expect(s.events).toEqual([
      { t: 2, data: 'a' },
      { t: 4, data: 'b' },
    ]);
    expect(s.parseErrors).toEqual([]);
  });

  test('multi-line data joins with LF', () => {
    expect(datas(reads('data: a\ndata: b\ndata:\n\n'))).toEqual(['a\nb\n']);
  });

  test('comments (": ping", bare ":") are reported, never events', () => {
    const r = decodeSse(reads(': ping\n\n', ':\n\n', 'data: x\n\n'));
    expect(r.comments).toEqual([
      { t: 1, text: 'ping' },
      { t: 2, text: '' },
    ]);
    expect(r.events).toEqual([{ t: 3, data: 'x' }]);
  });

  test('"data:{" without a space; exactly one leading space is stripped', () => {
    expect(datas(reads('data:{"a":1}\n\n'))).toEqual(['{"a":1}']);
    expect(datas(reads('data:  x\n\n'))).toEqual([' x']);
  });

  test('event and id fields', () => {
    const r = decodeSse(reads('event: message_start\nid: 7\ndata: {}\n\n'));
    expect(r.events).toEqual([{ t: 1, event: 'message_start', id: '7', data: '{}' }]);
  });

  test('a UTF-8 BOM is stripped (and noted), even split across reads', () => {
    const bom = new Uint8Array([0xef, 0xbb, 0xbf]);
    const r = decodeSse(reads(new Uint8Array([...bom, ...enc.encode('data: x\n\n')])));
    expect(r.events.map((e) => e.data)).toEqual(['x']);
    expect(r.bom).toBe(true);
    expect(r.parseErrors).toEqual([]);
    expect(r.invalidUtf8).toBe(false);
    const split = decodeSse(reads(bom.slice(0, 1), bom.slice(1), 'data: y\n\n'));
    expect(split.events.map((e) => e.data)).toEqual(['y']);
    expect(split.bom).toBe(true);
  });

  test('EOF without the final blank line drops the event', () => {
    expect(datas(reads('data: a\n\ndata: last'))).toEqual(['a']);
    expect(datas(reads('data: a\n\ndata: last\n'))).toEqual(['a']);
    expect(datas(reads('data: a\r\n\r\ndata: last\r\n'))).toEqual(['a']);
  });

  test('several events in one read share its timestamp', () => {
    const r = decodeSse([{ t: 42, bytes: enc.encode('data: a\n\ndata: b\n\n: c\n\n') }]);
    expect(r.events).toEqual([
      { t: 42, data: 'a' },
      { t: 42, data: 'b' },
    ]);
    expect(r.comments).toEqual([{ t: 42, text: 'c' }]);
  });

  test('an event split across reads gets the time of the read that completed it', () => {
    const r = decodeSse(reads('data: hel', 'lo\n', '\n'));
    expect(r.events).toEqual([{ t: 3, data: 'hello' }]);
    expect(r.text).toBe('data: hello\n\n');
  });

  test('a multibyte character split across two reads decodes intact', () => {
    const bytes = enc.encode('data: é🙂\n\n');
    // "data: " is 6 bytes; é is bytes 6-7, 🙂 is bytes 8-11
    for (const cut of [7, 9, 10, 11]) {
      const r = decodeSse(reads(bytes.slice(0, cut), bytes.slice(cut)));
      expect(r.events.map((e) => e.data)).toEqual(['é🙂']);
      expect(r.text).toBe('data: é🙂\n\n');
      expect(r.invalidUtf8).toBe(false);
    }
  });

  test('invalid UTF-8 is flagged, decoded leniently as U+FFFD', () => {
    const r = decodeSse(reads(new Uint8Array([...enc.encode('data: a'), 0xff, ...enc.encode('\n\n')])));
    expect(r.invalidUtf8).toBe(true);
    expect(r.events.map((e) => e.data)).toEqual(['a\uFFFD']);
    // a sequence cut off by EOF is invalid too
    expect(decodeSse(reads(new Uint8Array([...enc.encode('data: a\n\n'), 0xc3]))).invalidUtf8).toBe(true);
  });

  test('a line without a colon is a parse error with its time; the stream goes on', () => {
    const r = decodeSse(reads('data: a\n\n', 'garbage\n\ndata: b\n\n'));
    expect(r.events.map((e) => e.data)).toEqual(['a', 'b']);
    expect(r.parseErrors).toHaveLength(1);
    expect(r.parseErrors[0]).toMatchObject({ t: 2, type: 'unknown-field', field: 'garbage', line: 'garbage' });
  });

  test('empty input', () => {
    expect(decodeSse([])).toEqual({
      events: [],
      comments: [],
      parseErrors: [],
      text: '',
      invalidUtf8: false,
      bom: false,
    });
  });

  test('property: cutting the bytes anywhere yields the same events and comments', () => {
    const noBreak = fc.string({ unit: 'binary', maxLength: 12 }).map((s) => s.replace(/[\r\n]/g, '_'));
    const item = fc.oneof(
      {
        arbitrary: fc.record({
          kind: fc.constant('event' as const),
          lines: fc.array(noBreak, { minLength: 1, maxLength: 3 }),
        }),
        weight: 3,
      },
      { arbitrary: fc.record({ kind: fc.constant('comment' as const), lines: fc.tuple(noBreak) }), weight: 1 },
    );
    const term = fc.constantFrom('\n', '\r\n', '\r');
    fc.assert(
      fc.property(
        fc.array(item, { minLength: 1, maxLength: 6 }),
        term,
        fc.array(fc.nat(), { maxLength: 12 }),
        (items, nl, cuts) => {
          const raw = items
            .map((it) =>
              it.kind === 'event' ? it.lines.map((l) => `data: ${l}${nl}`).join('') + nl : `:${it.lines[0]}${nl}${nl}`,
            )
            .join('');
          const bytes = enc.encode(raw);
          const whole = decodeSse(reads(bytes));
          const split = decodeSse(cutAt(bytes, cuts));
          const expectedEvents = items.filter((it) => it.kind === 'event').map((it) => it.lines.join('\n'));
          const expectedComments = items
            .filter((it) => it.kind === 'comment')
            .map((it) => it.lines[0].replace(/^ /, ''));
          expect(whole.events.map((e) => e.data)).toEqual(expectedEvents);
          expect(split.events.map((e) => e.data)).toEqual(expectedEvents);
          expect(split.comments.map((c) => c.text)).toEqual(expectedComments);
          expect(split.text).toBe(raw);
          expect(split.parseErrors).toEqual([]);
          expect(split.invalidUtf8).toBe(false);
          // timestamps never go backwards
          const ts = split.events.map((e) => e.t);
          expect([...ts].sort((a, b) => a - b)).toEqual(ts);
        },
      ),
      { numRuns: 200, seed: 42 },
    );
  });
});

describe('decodeSse: UTF-8 facts gathered read by read', () => {
  test('property: invalidUtf8 and bom agree with a fatal decode of the whole body, however it is cut', () => {
    // Pieces biased to what matters: a literal U+FFFD (EF BF BD) and its parts, the BOM, valid multibyte characters,
    // truncated ones, ASCII and any byte.
    const piece = fc.oneof(
      fc.constantFrom(
        [0xef, 0xbf, 0xbd],
        [0xef],
        [0xef, 0xbf],
        [0xbf, 0xbd],
        [0xbd],
        [0xef, 0xbb, 0xbf],
        [0xc3, 0xa9],
        [0xe2, 0x82, 0xac],
        [0xf0, 0x9f, 0x99, 0x82],
        [0xc3],
        [0xe2, 0x82],
        [0xf0, 0x9f],
      ),
      fc.integer({ min: 0x20, max: 0x7e }).map((b) => [b]),
      fc.integer({ min: 0, max: 255 }).map((b) => [b]),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 8 }), (pieces, cuts) => {
        const bytes = new Uint8Array(pieces.flat());
        const r = decodeSse(cutAt(bytes, cuts));
        expect(r.invalidUtf8).toBe(isInvalidUtf8(bytes));
        expect(r.bom).toBe(bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf);
      }),
      { numRuns: 2000, seed: 7 },
    );
  });

  test('a literal U+FFFD is valid UTF-8, split anywhere; a lone continuation byte next to it is not', () => {
    const lit = enc.encode('data: \uFFFD\n\n');
    for (let cut = 0; cut <= lit.length; cut++) expect(decodeSse(cutAt(lit, [cut])).invalidUtf8).toBe(false);
    expect(decodeSse(reads(new Uint8Array([0xef, 0xbf]), new Uint8Array([0xbd, 0xbd])))).toMatchObject({
      invalidUtf8: true,
    });
  });
});

describe('splitRawEvents', () => {
  test('blocks with their terminator style, incomplete last block', () => {
    const b = splitRawEvents('data: a\n\ndata: b\r\n\r\ndata: c\r\rdata: d');
    expect(b.map((x) => [x.lines, x.style, x.complete])).toEqual([
      [['data: a'], 'LF', true],
      [['data: b'], 'CRLF', true],
      [['data: c'], 'CR', true],
      [['data: d'], undefined, false],
    ]);
    expect(b[1].raw).toBe('data: b\r\n\r\n');
    expect(b[1].offset).toBe(9);
  });

  test('mixed terminators, extra blank lines, a CR at EOF', () => {
    const b = splitRawEvents('\n\ndata: a\r\n\ndata: b\r\r');
    expect(b).toHaveLength(2);
    expect(b[0]).toMatchObject({
      lines: ['data: a'],
      terminators: ['CRLF', 'LF'],
      style: 'mixed',
      blankLinesBefore: 2,
    });
    expect(b[1]).toMatchObject({ lines: ['data: b'], style: 'CR', complete: true, blankLinesBefore: 0 });
    expect(splitRawEvents('data: x\n')).toEqual([
      {
        raw: 'data: x\n',
        lines: ['data: x'],
        terminators: ['LF'],
        style: 'LF',
        complete: false,
        offset: 0,
        blankLinesBefore: 0,
      },
    ]);
    expect(splitRawEvents('')).toEqual([]);
  });
});

describe('escapeBytes', () => {
  test('control characters, backslash and invisible characters are escaped', () => {
    expect(escapeBytes('a\r\nb\t\\')).toBe('a\\r\\nb\\t\\\\');
    expect(escapeBytes('\uFEFFdata:\u0000\u001b\u007f')).toBe('\\uFEFFdata:\\x00\\x1B\\x7F');
    expect(escapeBytes('é🙂')).toBe('é🙂');
  });

  test('invalid bytes appear as \\xNN, valid multibyte characters intact', () => {
    expect(escapeBytes(new Uint8Array([0x61, 0xff, 0xc3, 0xa9, 0x00, 0x0a, 0xc3]))).toBe('a\\xFFé\\x00\\n\\xC3');
    expect(escapeBytes(new Uint8Array([0xed, 0xa0, 0x80]))).toBe('\\xED\\xA0\\x80'); // an encoded surrogate is invalid
    expect(escapeBytes(enc.encode('🙂'))).toBe('🙂');
  });

  test('capped at max characters, with the remainder counted', () => {
    expect(escapeBytes('x'.repeat(1000), 10)).toBe('xxxxxxxxxx…(+990 more chars)');
    expect(escapeBytes(enc.encode('\n'.repeat(10)), 5)).toBe('\\n\\n…(+8 more bytes)');
    expect(escapeBytes('short')).toBe('short');
  });
});

describe('decodeNdjson', () => {
  test('a line split across reads, a bad line, CRLF, an unterminated last line', () => {
    const r = decodeNdjson(reads('{"a":1}\n{"b"', ':2}\r\n\n', '{oops}\n{"c":3}'));
    expect(r.lines.map((l) => [l.t, l.json, l.terminated])).toEqual([
      [1, { a: 1 }, true],
      [2, { b: 2 }, true],
      [3, undefined, true],
      [3, { c: 3 }, false],
    ]);
    expect(r.lines[2].jsonError).toBeTypeOf('string');
    expect(r.blankLines).toBe(1);
    expect(r.invalidUtf8).toBe(false);
  });

  test('multibyte character split across reads', () => {
    const bytes = enc.encode('{"s":"é"}\n');
    const r = decodeNdjson(reads(bytes.slice(0, 7), bytes.slice(7)));
    expect(r.lines[0].json).toEqual({ s: 'é' });
  });
});

// ---------------------------------------------------------------------------------------------------------
// Adapters, on streams shaped like the real servers' (docs/servers.md "Cross-server observations").

const sse = (...events: (string | [string, string])[]) =>
  decodeSse(
    events.map((e, i) => ({
      t: (i + 1) * 10,
      bytes: enc.encode(
        typeof e === 'string'
          ? e.startsWith(':')
            ? `${e}\n\n`
            : `data: ${e}\n\n`
          : `event: ${e[0]}\ndata: ${e[1]}\n\n`,
      ),
    })),
  );
const chunk = (delta: object, finish: string | null = null, extra: object = {}) =>
  JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }],
    ...extra,
  });

describe('openaiChatEvents', () => {
  test('a typical stream: role chunk, content, finish, usage in a choices:[] chunk, [DONE]', () => {
    const ev = openaiChatEvents(
      sse(
        ': keep-alive',
        chunk({ role: 'assistant', content: '' }, null, { system_fingerprint: 'fp_1' }),
        chunk({ content: 'Hel' }),
        chunk({ content: 'lo' }),
        chunk({}, 'stop'),
        JSON.stringify({
          id: 'c1',
          object: 'chat.completion.chunk',
          model: 'm',
          choices: [],
          usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
        }),
        '[DONE]',
      ),
    );
    expect(ev.tokens).toEqual([
      { t: 30, text: 'Hel', kind: 'content' },
      { t: 40, text: 'lo', kind: 'content' },
    ]);
    expect(ev.text).toBe('Hello');
    expect(ev.reasoning).toBe('');
    expect(ev.finishReasons).toEqual([{ t: 50, value: 'stop' }]);
    expect(ev.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7, t: 60 });
    expect(ev.usageEvents).toBe(1);
    expect(ev.done).toBe(true);
    expect(ev.doneT).toBe(70);
    expect(ev.eventsAfterDone).toBe(0);
    expect(ev.chunks).toHaveLength(5);
    expect(ev.jsonErrors).toEqual([]);
    expect(ev.model).toBe('m');
    expect(ev.systemFingerprint).toBe('fp_1');
  });

  test('mlx-openai-server style: usage in the finish chunk', () => {
    const ev = openaiChatEvents(
      sse(
        chunk({ role: 'assistant' }),
        chunk({ content: 'A' }),
        chunk({ content: 'B' }, 'length', { usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } }),
        '[DONE]',
      ),
    );
    expect(ev.text).toBe('AB');
    expect(ev.tokens).toHaveLength(2);
    expect(ev.finishReasons.map((f) => f.value)).toEqual(['length']);
    expect(ev.usage?.completion_tokens).toBe(2);
    expect(ev.usageEvents).toBe(1);
  });

  test('vllm-mlx style: usage null on every chunk, usage twice, heartbeats', () => {
    const u = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };
    const ev = openaiChatEvents(
      sse(
        ': heartbeat',
        chunk({ role: 'assistant', content: '' }, null, { usage: null }),
        chunk({ content: 'A' }, null, { usage: null }),
        ': heartbeat',
        chunk({ content: 'B' }, 'stop', { usage: u }),
        JSON.stringify({ choices: [], usage: u }),
        '[DONE]',
      ),
    );
    expect(ev.tokens.map((t) => t.text)).toEqual(['A', 'B']);
    expect(ev.usageEvents).toBe(2);
    expect(ev.usages).toHaveLength(2);
    expect(ev.usage).toMatchObject({ completion_tokens: 2, t: 60 });
  });

  test('reasoning-only tokens count for ttft, kept apart from content', () => {
    const ev = openaiChatEvents(
      sse(
        chunk({ role: 'assistant', content: null }),
        chunk({ reasoning_content: 'Let' }),
        chunk({ reasoning: ' me' }), // vLLM / Ollama field name
        chunk({ thinking: ' think' }),
        chunk({ content: 'Yes' }, 'stop'),
        '[DONE]',
      ),
    );
    expect(ev.tokens.map((t) => [t.t, t.kind])).toEqual([
      [20, 'reasoning'],
      [30, 'reasoning'],
      [40, 'reasoning'],
      [50, 'content'],
    ]);
    expect(ev.reasoning).toBe('Let me think');
    expect(ev.text).toBe('Yes');
    expect(requestMetrics({ tEnd: 60, tokens: ev.tokens }).ttftMs).toBe(20);
  });

  test('server timings: llama.cpp timings, oMLX timing keys in usage, vLLM metrics', () => {
    const llama = openaiChatEvents(
      sse(
        chunk({ content: 'x' }),
        JSON.stringify({ choices: [], usage: { completion_tokens: 1 }, timings: { predicted_n: 1, predicted_ms: 10 } }),
        '[DONE]',
      ),
    );
    expect(llama.serverTimings).toEqual({ source: 'timings', value: { predicted_n: 1, predicted_ms: 10 }, t: 20 });
    const omlx = openaiChatEvents(
      sse(
        JSON.stringify({
          choices: [],
          usage: { completion_tokens: 1, time_to_first_token: 0.1, generation_tokens_per_second: 50 },
        }),
      ),
    );
    expect(omlx.serverTimings?.value).toEqual({ time_to_first_token: 0.1, generation_tokens_per_second: 50 });
    expect(omlx.done).toBe(false);
    const vllm = openaiChatEvents(sse(chunk({}, 'stop', { metrics: { time_to_first_token_ms: 12 } })));
    expect(vllm.serverTimings?.source).toBe('metrics');
  });

  test('bad JSON, mid-stream errors, events after [DONE], tool-call deltas', () => {
    const ev = openaiChatEvents(
      sse(
        '{"broken',
        chunk({ tool_calls: [{ index: 0, function: { name: 'f', arguments: '{"a"' } }] }),
        JSON.stringify({ error: { message: 'boom' } }),
        '[DONE]',
        chunk({ content: 'late' }),
      ),
    );
    expect(ev.jsonErrors).toHaveLength(1);
    expect(ev.jsonErrors[0]).toMatchObject({ t: 10, data: '{"broken' });
    expect(ev.tokens).toEqual([{ t: 20, text: 'f{"a"', kind: 'tool' }]);
    expect(ev.errors).toHaveLength(1);
    expect(ev.eventsAfterDone).toBe(1);
    expect(ev.text).toBe('');
  });

  test('mlx-vlm legacy usage keys input_tokens / output_tokens', () => {
    const ev = openaiChatEvents(sse(JSON.stringify({ choices: [], usage: { input_tokens: 4, output_tokens: 9 } })));
    expect(ev.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 9 });
  });
});

describe('openaiCompletionEvents', () => {
  test('text in choices[].text', () => {
    const c = (text: string, finish: string | null = null) =>
      JSON.stringify({ object: 'text_completion', choices: [{ index: 0, text, finish_reason: finish }] });
    const ev = openaiCompletionEvents(
      sse(
        c(''),
        c('Once'),
        c(' upon', 'length'),
        JSON.stringify({ choices: [], usage: { completion_tokens: 2 } }),
        '[DONE]',
      ),
    );
    expect(ev.tokens.map((t) => [t.t, t.text])).toEqual([
      [20, 'Once'],
      [30, ' upon'],
    ]);
    expect(ev.text).toBe('Once upon');
    expect(ev.finishReasons.map((f) => f.value)).toEqual(['length']);
    expect(ev.usage?.completion_tokens).toBe(2);
    expect(ev.done).toBe(true);
  });
});

describe('anthropicEvents', () => {
  test('the Messages event sequence', () => {
    const ev = anthropicEvents(
      sse(
        [
          'message_start',
          JSON.stringify({
            type: 'message_start',
            message: { id: 'msg_1', model: 'claude-x', usage: { input_tokens: 12, output_tokens: 1 } },
          }),
        ],
        [
          'content_block_start',
          JSON.stringify({ type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } }),
        ],
        [
          'content_block_delta',
          JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'Hmm' } }),
        ],
        ['content_block_stop', JSON.stringify({ type: 'content_block_stop', index: 0 })],
        ['ping', JSON.stringify({ type: 'ping' })],
        [
          'content_block_start',
          JSON.stringify({ type: 'content_block_start', index: 1, content_block: { type: 'text', text: '' } }),
        ],
        [
          'content_block_delta',
          JSON.stringify({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: 'Hi' } }),
        ],
        [
          'content_block_delta',
          JSON.stringify({ type: 'content_block_delta', index: 1, delta: { type: 'text_delta', text: ' there' } }),
        ],
        ['content_block_stop', JSON.stringify({ type: 'content_block_stop', index: 1 })],
        [
          'message_delta',
          JSON.stringify({
            type: 'message_delta',
            delta: { stop_reason: 'end_turn', stop_sequence: null },
            usage: { output_tokens: 4 },
          }),
        ],
        ['message_stop', JSON.stringify({ type: 'message_stop' })],
      ),
    );
    expect(ev.tokens.map((t) => [t.t, t.kind])).toEqual([
      [30, 'reasoning'],
      [70, 'content'],
      [80, 'content'],
    ]);
    expect(ev.reasoning).toBe('Hmm');
    expect(ev.text).toBe('Hi there');
    expect(ev.finishReasons).toEqual([{ t: 100, value: 'end_turn' }]);
    expect(ev.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 4, total_tokens: 16, t: 100 });
    expect(ev.usageEvents).toBe(2);
    expect(ev.done).toBe(true);
    expect(ev.doneT).toBe(110);
    expect(ev.model).toBe('claude-x');
  });

  test('error event', () => {
    const ev = anthropicEvents(
      sse(['error', JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })]),
    );
    expect(ev.errors).toHaveLength(1);
    expect(ev.done).toBe(false);
  });
});

describe('ollamaEvents', () => {
  test('native /api/chat lines with the final done line', () => {
    const lines = [
      { model: 'qwen', message: { role: 'assistant', content: '', thinking: 'ok' }, done: false },
      { model: 'qwen', message: { role: 'assistant', content: 'Hel' }, done: false },
      { model: 'qwen', message: { role: 'assistant', content: 'lo' }, done: false },
      {
        model: 'qwen',
        message: { role: 'assistant', content: '' },
        done: true,
        done_reason: 'stop',
        total_duration: 5e8,
        load_duration: 1e6,
        prompt_eval_count: 7,
        prompt_eval_duration: 1e7,
        eval_count: 3,
        eval_duration: 4e8,
      },
    ];
    const nd = decodeNdjson(lines.map((l, i) => ({ t: (i + 1) * 10, bytes: enc.encode(JSON.stringify(l) + '\n') })));
    const ev = ollamaEvents(nd);
    expect(ev.tokens.map((t) => [t.t, t.kind])).toEqual([
      [10, 'reasoning'],
      [20, 'content'],
      [30, 'content'],
    ]);
    expect(ev.text).toBe('Hello');
    expect(ev.reasoning).toBe('ok');
    expect(ev.done).toBe(true);
    expect(ev.doneT).toBe(40);
    expect(ev.finishReasons).toEqual([{ t: 40, value: 'stop' }]);
    expect(ev.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
    expect(ev.serverTimings).toMatchObject({ source: 'ollama', value: { eval_count: 3, eval_duration: 4e8 } });
    expect(ev.model).toBe('qwen');
  });

  test('/api/generate lines, a mid-stream error line, bad JSON', () => {
    const nd = decodeNdjson(reads('{"response":"a","done":false}\n', 'nope\n', '{"error":"out of memory"}\n'));
    const ev = ollamaEvents(nd);
    expect(ev.text).toBe('a');
    expect(ev.jsonErrors).toHaveLength(1);
    expect(ev.errors).toEqual([{ t: 3, json: { error: 'out of memory' } }]);
    expect(ev.done).toBe(false);
  });
});
