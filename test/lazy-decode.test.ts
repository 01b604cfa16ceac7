// The live decode keeps only the raw reads (lib/http/exchange.ts StreamDecode, `lazy`) and builds text, events and
// chunks from them on first read: what a check sees must equal the eager decode's, byte for byte, whatever the
// framing, the read boundaries and the retention cap.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { type Exchange, StreamDecode } from '../lib/exchange/exchange.ts';
import { KeptReads } from '../lib/http/recorder.ts';
import type { ApiFlavour, BodyRead, Recording } from '../lib/model/types.ts';

const enc = new TextEncoder();
const j = (o: unknown) => JSON.stringify(o);
const chat = (content: string) => `data: ${j({ choices: [{ index: 0, delta: { content } }] })}\n\n`;

/** Bodies with every framing fact the checks read: BOM, CR/CRLF/LF, comments, unknown fields, bad JSON, [DONE]. */
const BODIES: Record<string, { flavour: ApiFlavour; body: Uint8Array }> = {
  chat: {
    flavour: 'openai-chat',
    body: enc.encode(
      `\uFEFF: hello\n\n${chat('é😀')}${chat('b')}data: {"choices":[{"delta":{"content":"c"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3}}\r\n\r\nbogus: x\n\ndata: {not json\n\nevent: error\ndata: {"error":{"message":"m"}}\r\rdata: [DONE]\n\ndata: after\n\ndata: unterminated`,
    ),
  },
  invalidUtf8: {
    flavour: 'openai-chat',
    body: new Uint8Array([...enc.encode(chat('x')), 0xff, ...enc.encode(`${chat('y')}data: [DONE]\n\n`), 0xe2, 0x82]),
  },
  anthropic: {
    flavour: 'anthropic-messages',
    body: enc.encode(
      [
        `event: message_start\ndata: ${j({ type: 'message_start', message: { model: 'm', usage: { input_tokens: 4 } } })}\n\n`,
        `event: content_block_delta\ndata: ${j({ type: 'content_block_delta', delta: { text: 'hi ü' } })}\n\n`,
        `event: ping\ndata: ${j({ type: 'ping' })}\n\n`,
        `event: message_delta\ndata: ${j({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2 } })}\n\n`,
        `event: message_stop\ndata: ${j({ type: 'message_stop' })}\n\n`,
      ].join(''),
    ),
  },
  ollama: {
    flavour: 'ollama-native',
    body: enc.encode(
      `${j({ model: 'm', message: { content: 'a€' } })}\n\n${j({ message: { content: 'b' } })}\r\nnot json\n${j({ done: true, done_reason: 'stop', eval_count: 2, prompt_eval_count: 1 })}`,
    ),
  },
};

function cut(bytes: Uint8Array, cuts: number[]): BodyRead[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: BodyRead[] = [];
  let prev = 0;
  for (const c of [...points, bytes.length]) {
    out.push({ t: out.length + 1, bytes: bytes.slice(prev, c) });
    prev = c;
  }
  return out;
}

function decode(flavour: ApiFlavour, reads: BodyRead[], retainBytes: number, lazy: boolean): Exchange {
  const d = new StreamDecode(flavour, retainBytes, lazy);
  for (const r of reads) d.push(r.t, r.bytes);
  const rec = { status: 200, tEnd: reads.length + 1, reads, headers: {} } as unknown as Recording;
  return d.finish(rec, true);
}

/**
 * Lazy, fed as send() feeds it: through the recorder's own bookkeeping (any caps), each read flagged when the
 * recording keeps it whole, those replayed from rec.reads instead of kept by the decoder.
 */
function decodeRecorded(
  flavour: ApiFlavour,
  reads: BodyRead[],
  retainBytes: number,
  caps: { bytes: number; reads: number },
): Exchange {
  const d = new StreamDecode(flavour, retainBytes, true);
  const kept = new KeptReads(caps);
  for (const r of reads) d.push(r.t, r.bytes, kept.keep(r.t, r.bytes));
  const rec = { status: 200, tEnd: reads.length + 1, headers: {} } as unknown as Recording;
  kept.finish(rec);
  return d.finish(rec, true);
}

/** Everything a check can read of a decoded exchange, as plain data. */
function seen(x: Exchange) {
  const { chunks, ...events } = x.events!;
  return {
    sse: x.sse && { ...x.sse },
    events: { ...events, chunks: chunks.map((c) => ({ t: c.t, json: c.json })) },
    metrics: x.metrics,
  };
}

describe("the recorder's kept reads (lib/http/recorder.ts KeptReads)", () => {
  test('give back every read within the caps whole, with its time; the body is the first bytes up to the cap', () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ maxLength: 3000 }), { maxLength: 30 }),
        fc.record({ bytes: fc.nat(40_000), reads: fc.nat(32) }),
        (chunks, caps) => {
          const kept = new KeptReads(caps);
          const flags = chunks.map((c, i) => kept.keep(i, c));
          const rec = {} as Recording;
          kept.finish(rec);
          const all = Buffer.concat(chunks);
          expect(Buffer.from(rec.body)).toEqual(all.subarray(0, Math.min(all.length, caps.bytes)));
          let before = 0;
          const expected = chunks.slice(0, caps.reads).map((c, i) => {
            const within = before < caps.bytes;
            before += c.length;
            expect(flags[i]).toBe(within);
            return { t: i, bytes: Buffer.from(within ? c : new Uint8Array(0)) };
          });
          expect(rec.reads.map((r) => ({ t: r.t, bytes: Buffer.from(r.bytes) }))).toEqual(expected);
          expect(flags.slice(caps.reads).every((f) => !f)).toBe(true);
          expect(kept.truncated).toBe(all.length > caps.bytes || chunks.length > caps.reads);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('lazy live decode equals the eager decode', () => {
  for (const [name, { flavour, body }] of Object.entries(BODIES))
    test(`${name}: any read boundaries, any retention cap`, () => {
      fc.assert(
        fc.property(
          fc.array(fc.nat(body.length), { maxLength: 12 }),
          fc.oneof(fc.constant(Infinity), fc.nat(body.length + 4)),
          (cuts, retain) => {
            const reads = cut(body, cuts);
            expect(seen(decode(flavour, reads, retain, true))).toEqual(seen(decode(flavour, reads, retain, false)));
          },
        ),
        { numRuns: 150 },
      );
    });
  for (const [name, { flavour, body }] of Object.entries(BODIES))
    test(`${name}: replayed from the recording's reads, any recorder caps`, () => {
      fc.assert(
        fc.property(
          fc.array(fc.nat(body.length), { maxLength: 12 }),
          fc.oneof(fc.constant(Infinity), fc.nat(body.length + 4)),
          fc.record({ bytes: fc.nat(body.length + 4), reads: fc.nat(14) }),
          (cuts, retain, caps) => {
            const reads = cut(body, cuts);
            expect(seen(decodeRecorded(flavour, reads, retain, caps))).toEqual(
              seen(decode(flavour, reads, retain, false)),
            );
          },
        ),
        { numRuns: 150 },
      );
    });

  test('the sse fields are own enumerable values (spread and JSON see them)', () => {
    const x = decode('openai-chat', cut(BODIES.chat!.body, [7, 40]), Infinity, true);
    expect(Object.keys(x.sse!).sort()).toEqual(['bom', 'comments', 'events', 'invalidUtf8', 'parseErrors', 'text']);
    expect(JSON.parse(JSON.stringify(x.sse)).events.length).toBeGreaterThan(3);
    expect(x.sse!.bom).toBe(true);
    expect(x.events!.chunks.length).toBeGreaterThan(2);
  });
});

describe('the ASCII fast path decodes as the streaming TextDecoder does', () => {
  // Bytes mixing ASCII runs, multibyte characters, a BOM, literal U+FFFD and invalid sequences, cut anywhere.
  const piece = fc.oneof(
    fc.constantFrom('data: a\n\n', 'x', '\r\n', 'é', '🙂', '\uFEFF', '\uFFFD', 'data: {"k":"v"}\n\n'),
    fc.constantFrom([0xff], [0xc3], [0xe2, 0x82], [0xef, 0xbf], [0xbd], [0xef, 0xbb, 0xbf]),
  );
  test('text, events and UTF-8 facts equal a whole-body TextDecoder decode', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 20 }), fc.array(fc.nat(200), { maxLength: 10 }), (pieces, cuts) => {
        const body = new Uint8Array(pieces.flatMap((p) => (typeof p === 'string' ? [...enc.encode(p)] : p)));
        const reads = cut(body, cuts);
        const x = decode('openai-chat', reads, Infinity, false);
        expect(x.sse!.text).toBe(new TextDecoder().decode(body));
        expect(x.sse!.bom).toBe(body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf);
        let invalid = false;
        try {
          new TextDecoder('utf-8', { fatal: true }).decode(body);
        } catch {
          invalid = true;
        }
        expect(x.sse!.invalidUtf8).toBe(invalid);
      }),
      { numRuns: 400 },
    );
  });
});
