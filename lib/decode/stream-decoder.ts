// Decoding of recorded response bodies: SSE (WHATWG HTML §9.2 "Server-sent events") and NDJSON (Ollama).
//
// Input is the recorder's timestamped reads, so every decoded event carries the time of the read that
// completed it — the time a client could first have acted on it. Parsing is eventsource-parser 3.1.1;
// what it does not tell (invalid UTF-8, a BOM, line-terminator style, framing as sent) is computed here
// from the raw text, because framing checks need exactly that.

import { isAscii } from 'node:buffer';
import { createParser } from 'eventsource-parser';
import { lazyFields } from '../lazy.ts';
import type { BodyRead } from '../model/types.ts';

export interface SseEvent {
  t: number;
  event?: string;
  id?: string;
  data: string;
}
interface SseComment {
  t: number;
  text: string;
}
interface SseParseError {
  t: number;
  type: string;
  field?: string;
  line?: string;
  message: string;
}

export interface SseDecoded {
  events: SseEvent[];
  comments: SseComment[];
  parseErrors: SseParseError[];
  /** The decoded body (a leading BOM removed, invalid bytes as U+FFFD). */
  text: string;
  /** The body bytes are not valid UTF-8 (SSE streams MUST be UTF-8). */
  invalidUtf8: boolean;
  /** The body started with a UTF-8 BOM (allowed by the spec, stripped before parsing). */
  bom: boolean;
}

/** True when the bytes are not valid UTF-8. A separate fatal decoder: the streaming one must stay lenient. */
export function isInvalidUtf8(bytes: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return false;
  } catch {
    return true;
  }
}

/**
 * The checks' facts about a body's bytes, gathered read by read without keeping the bytes: a leading BOM, and
 * whether it is valid UTF-8. A lenient decoder turns every invalid sequence into at least one U+FFFD and each literal
 * U+FFFD (EF BF BD, whose lead byte is never a continuation byte, so no invalid prefix can swallow it) into exactly
 * one; the bytes are valid iff the decoded text holds no more U+FFFD than the bytes hold literal EF BF BD.
 */
class Utf8Facts {
  private head: number[] = [];
  private replacements = 0;
  private literals = 0;
  /** Bytes of EF BF BD matched at the end of what was seen so far (0–2): a literal split across reads. */
  private carry = 0;

  bytes(b: Uint8Array): void {
    for (let i = 0; this.head.length < 3 && i < b.length; i++) this.head.push(b[i]!);
    let i = 0;
    let m = this.carry;
    while (m > 0 && i < b.length) {
      if (b[i] !== (m === 1 ? 0xbf : 0xbd)) {
        m = 0;
        break;
      }
      i++;
      if (++m === 3) {
        this.literals++;
        m = 0;
      }
    }
    if (i === b.length) {
      this.carry = m;
      return;
    }
    for (let j = b.indexOf(0xef, i); j !== -1; j = b.indexOf(0xef, j + 1))
      if (b[j + 1] === 0xbf && b[j + 2] === 0xbd) this.literals++;
    const n = b.length;
    this.carry = b[n - 1] === 0xef ? 1 : n >= 2 && b[n - 2] === 0xef && b[n - 1] === 0xbf ? 2 : 0;
  }

  /** An ASCII read (after the first read): no literal U+FFFD in it, and one split across reads ends here. */
  ascii(): void {
    this.carry = 0;
  }

  text(s: string): void {
    for (let i = s.indexOf('\uFFFD'); i !== -1; i = s.indexOf('\uFFFD', i + 1)) this.replacements++;
  }

  get bom(): boolean {
    return this.head.length === 3 && this.head[0] === 0xef && this.head[1] === 0xbb && this.head[2] === 0xbf;
  }
  get invalid(): boolean {
    return this.replacements > this.literals;
  }
}

/** Bytes as Latin-1 text (for ASCII bytes: their UTF-8 decoding). */
function latin1(bytes: Uint8Array): string {
  return (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString(
    'latin1',
  );
}

interface StreamDecoderOptions {
  /**
   * Keep text, events, comments and errors only for reads that start within this many body bytes (the recorder's
   * byte cap: a long stream is still decoded to its end, its raw material kept only as far as its bytes are).
   */
  retainBytes?: number;
  /**
   * Keep only the raw reads the recording does not keep itself (`push`'s `recorded`) while the stream is live, and
   * build text, events, comments and errors when they are first read, from those and the recording's own reads
   * (`recorded`, replayed in order). Live callbacks (`onEvent`, `onLine`)
   * see every event as before. Why: what a live stream retains is what each minor GC copies, and per-event objects
   * kept for the whole stream were the largest part of our client's cost per event (BENCHMARKS.md, issue 23).
   */
  lazy?: boolean;
}

/**
 * A body decoded as it is read: UTF-8 in stream mode (a multibyte character split across reads decodes intact;
 * decoding each read on its own turns "é" into "��"), the UTF-8 facts, and the decoded text kept while the reads are
 * within retainBytes. Subclasses parse the text.
 */
abstract class TextStreamDecoder {
  /** Time of the read being decoded. */
  protected t = 0;
  protected retain = true;
  protected text = '';
  protected readonly facts = new Utf8Facts();
  /** Lazy mode: nothing decoded is kept live; the retained reads are replayed on first read of what they make. */
  protected readonly lazy: boolean;
  /**
   * Lazy mode: the retained reads (within retainBytes) that the recording keeps are counted, not kept (`recorded`
   * gives them back at replay); the ones it does not keep are kept here, times and bytes. Both are runs of reads from
   * the start (recording and retention each stop at a read and never resume), so the kept ones follow the counted.
   */
  private recordedReads = 0;
  protected readonly rawT: number[] = [];
  protected readonly rawBytes: Uint8Array[] = [];
  /** The recording's reads, for replaying the counted ones (set by whoever fed the decoder from a recording). */
  recorded?: () => readonly BodyRead[];
  private pushed = 0;
  /**
   * The streaming decoder may hold an incomplete sequence: true after a read whose last byte was not ASCII (an ASCII
   * byte ends any pending sequence and leaves none), until a read goes through the decoder and ends in ASCII.
   */
  private mayHold = false;
  /**
   * Created at the first read that is not ASCII (a stream of ASCII never needs one). Created at the body's first
   * bytes it strips a leading BOM, as a decoder of the whole body does; created later it must not (a U+FEFF there is
   * text), and nothing is pending then (every earlier read was ASCII).
   */
  private decoder?: InstanceType<typeof TextDecoder>;
  private readonly retainBytes: number;

  constructor(o: StreamDecoderOptions = {}) {
    this.retainBytes = o.retainBytes ?? Infinity;
    this.lazy = o.lazy === true;
  }

  /**
   * Lazy mode: an eager decoder fed exactly the retained reads holds what an eager decoder of the whole stream would
   * have kept (retention stops at a read and never resumes). The caller ends it only when every read was retained:
   * an eager decoder keeps what its end adds only while still retaining.
   */
  protected replay<D extends TextStreamDecoder>(d: D): D {
    if (this.recordedReads) {
      const reads = this.recorded?.();
      if (!reads || reads.length < this.recordedReads)
        throw new Error(
          `replay needs the ${this.recordedReads} recorded reads the decoder was told the recording keeps; it has ${reads?.length ?? 'none'}`,
        );
      for (let i = 0; i < this.recordedReads; i++) d.push(reads[i]!.t, reads[i]!.bytes);
    }
    for (let i = 0; i < this.rawT.length; i++) d.push(this.rawT[i]!, this.rawBytes[i]!);
    return d;
  }

  /** Kept: what an eager decoder would retain (the live one keeps only the raw reads). */
  protected get keeping(): boolean {
    return this.retain && !this.lazy;
  }

  /** True while reads are still within retainBytes (what has been decoded is all kept). */
  get retaining(): boolean {
    return this.retain;
  }

  /** One read; `recorded`: the recording it comes from keeps it whole (lib/http/recorder.ts onRead), so lazy mode need not. */
  push(t: number, bytes: Uint8Array, recorded = false): void {
    this.t = t;
    const first = this.pushed === 0;
    this.retain = this.pushed < this.retainBytes;
    this.pushed += bytes.length;
    if (this.lazy && this.retain) {
      if (recorded && this.rawT.length === 0) this.recordedReads++;
      else {
        this.rawT.push(t);
        this.rawBytes.push(bytes);
      }
    }
    // An ASCII read with nothing pending decodes to its bytes as they are: the TextDecoder call is skipped.
    if (!this.mayHold && isAscii(bytes)) {
      // The body's first bytes: the facts note its head (no BOM is ASCII).
      if (first) this.facts.bytes(bytes);
      else this.facts.ascii();
      this.take(latin1(bytes), true);
      return;
    }
    this.facts.bytes(bytes);
    this.decoder ??= new TextDecoder('utf-8', { fatal: false, ignoreBOM: !first });
    this.take(this.decoder.decode(bytes, { stream: true }));
    if (bytes.length > 0) this.mayHold = bytes[bytes.length - 1]! >= 0x80;
  }

  /** At EOF: an incomplete multibyte sequence becomes U+FFFD (and invalidUtf8 says so). */
  protected flush(): void {
    if (this.decoder) this.take(this.decoder.decode());
  }

  protected abstract parse(s: string): void;

  private take(s: string, ascii = false): void {
    if (s === '') return;
    if (!ascii) this.facts.text(s);
    if (this.keeping) this.text += s;
    this.parse(s);
  }
}

/**
 * Decode an SSE body read by read, as it arrives: `push` each read, `end` at EOF. `onEvent` (and `onComment`) see
 * every event when it is dispatched, retained or not. decodeSse() is this over recorded reads. Parsing is
 * eventsource-parser 3.1.1.
 *
 * Bare-CR handling: eventsource-parser holds back a chunk-final "\r" until it sees whether "\n" follows, so an
 * event terminated by CR at the end of a read would only be dispatched at the next read (wrong timestamp), or
 * never at EOF. We therefore complete a chunk-final "\r" to "\r\n" (one terminator either way; appending keeps a
 * preceding "\r" a separate line end, where replacing it by "\n" would pair the two into one CRLF) and drop a
 * "\n" that starts the next chunk (it was the second half of that CRLF). The line structure is unchanged.
 * An event not terminated by a blank line at EOF is dropped, as the spec requires.
 */
export class SseStreamDecoder extends TextStreamDecoder {
  readonly events: SseEvent[] = [];
  readonly comments: SseComment[] = [];
  readonly parseErrors: SseParseError[] = [];
  onEvent?: (ev: SseEvent) => void;
  private pendingCr = false;
  private readonly parser = createParser({
    onEvent: (e) => {
      const ev: SseEvent = { t: this.t, data: e.data };
      if (e.event !== undefined) ev.event = e.event;
      if (e.id !== undefined) ev.id = e.id;
      if (this.keeping) this.events.push(ev);
      this.onEvent?.(ev);
    },
    onComment: (c) => {
      if (this.keeping) this.comments.push({ t: this.t, text: c });
    },
    onError: (err) => {
      if (!this.keeping) return;
      const pe: SseParseError = { t: this.t, type: err.type, message: err.message };
      if (err.field !== undefined) pe.field = err.field;
      if (err.line !== undefined) pe.line = err.line;
      this.parseErrors.push(pe);
    },
  });

  end(): SseDecoded {
    this.flush();
    if (this.lazy) {
      const facts = { invalidUtf8: this.facts.invalid, bom: this.facts.bom };
      return lazyFields({ ...facts } as SseDecoded, ['events', 'comments', 'parseErrors', 'text'], () => {
        const d = this.replay(new SseStreamDecoder());
        if (this.retain) d.end();
        return { events: d.events, comments: d.comments, parseErrors: d.parseErrors, text: d.text };
      });
    }
    return {
      events: this.events,
      comments: this.comments,
      parseErrors: this.parseErrors,
      text: this.text,
      invalidUtf8: this.facts.invalid,
      bom: this.facts.bom,
    };
  }

  protected parse(s: string): void {
    let f = s;
    if (this.pendingCr && f.charCodeAt(0) === 10) f = f.slice(1);
    this.pendingCr = false;
    if (f.charCodeAt(f.length - 1) === 13) {
      f += '\n';
      this.pendingCr = true;
    }
    if (f !== '') this.parser.feed(f);
  }
}

/** Decode a recorded SSE body: every event carries the time of the read that completed it. */
export function decodeSse(reads: readonly BodyRead[]): SseDecoded {
  const d = new SseStreamDecoder();
  for (const r of reads) d.push(r.t, r.bytes);
  return d.end();
}

export interface NdjsonLine {
  t: number;
  text: string;
  json?: unknown;
  jsonError?: string;
  /** False only for a last line with no "\n" before EOF (tolerated, but a framing fact worth reporting). */
  terminated: boolean;
}

export interface NdjsonDecoded {
  lines: NdjsonLine[];
  text: string;
  invalidUtf8: boolean;
  /** Whitespace-only lines, skipped. */
  blankLines: number;
}

/** Newline-delimited JSON (Ollama's native stream), read by read; `onLine` sees every line. A trailing "\r" is tolerated. */
export class NdjsonStreamDecoder extends TextStreamDecoder {
  readonly lines: NdjsonLine[] = [];
  onLine?: (line: NdjsonLine) => void;
  private blankLines = 0;
  private buf = '';

  end(): NdjsonDecoded {
    this.flush();
    if (this.buf !== '') this.line(this.buf, false);
    this.buf = '';
    if (this.lazy) {
      const blankLines = this.blankLines;
      return lazyFields({ invalidUtf8: this.facts.invalid, blankLines } as NdjsonDecoded, ['lines', 'text'], () => {
        const d = this.replay(new NdjsonStreamDecoder());
        if (this.retain) d.end();
        return { lines: d.lines, text: d.text };
      });
    }
    return { lines: this.lines, text: this.text, invalidUtf8: this.facts.invalid, blankLines: this.blankLines };
  }

  protected parse(s: string): void {
    this.buf += s;
    let nl = this.buf.indexOf('\n');
    while (nl !== -1) {
      this.line(this.buf.slice(0, nl), true);
      this.buf = this.buf.slice(nl + 1);
      nl = this.buf.indexOf('\n');
    }
  }

  private line(raw: string, terminated: boolean): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') {
      this.blankLines++;
      return;
    }
    const entry: NdjsonLine = { t: this.t, text: line, terminated };
    try {
      entry.json = JSON.parse(line);
    } catch (e) {
      entry.jsonError = e instanceof Error ? e.message : String(e);
    }
    if (this.keeping) this.lines.push(entry);
    this.onLine?.(entry);
  }
}

/** Decode a recorded NDJSON body (Ollama's native stream). */
export function decodeNdjson(reads: readonly BodyRead[]): NdjsonDecoded {
  const d = new NdjsonStreamDecoder();
  for (const r of reads) d.push(r.t, r.bytes);
  return d.end();
}

// ---------------------------------------------------------------------------------------------------------
// Escaping for failure messages ("offending bytes (escaped)").

const NAMED: Record<number, string> = { 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t', 0x5c: '\\\\' };

function hex(n: number, width: number): string {
  return n.toString(16).toUpperCase().padStart(width, '0');
}

/**
 * One code point as printable text. Backslash is escaped too, so the excerpt is unambiguous: `\n` is a real
 * LF, `\\n` is the two characters a JSON string uses. Invisible or confusable characters (BOM, U+FFFD,
 * line/paragraph separators, zero-width, C1 controls, lone surrogates) are shown as \uXXXX.
 */
function escapeCodePoint(cp: number): string {
  const named = NAMED[cp];
  if (named !== undefined) return named;
  if (cp < 0x20 || cp === 0x7f) return `\\x${hex(cp, 2)}`;
  if (
    (cp >= 0x80 && cp <= 0x9f) ||
    (cp >= 0xd800 && cp <= 0xdfff) ||
    (cp >= 0x200b && cp <= 0x200f) ||
    cp === 0x2028 ||
    cp === 0x2029 ||
    cp === 0xfeff ||
    cp === 0xfffd
  )
    return `\\u${hex(cp, 4)}`;
  return String.fromCodePoint(cp);
}

/** Length of a valid UTF-8 sequence starting at i, or 0 when the byte at i does not start one. */
function utf8SequenceLength(b: Uint8Array, i: number): number {
  const b0 = b[i];
  if (b0 < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf): boolean => i + k < b.length && b[i + k] >= lo && b[i + k] <= hi;
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const lo = b0 === 0xe0 ? 0xa0 : 0x80; // no overlongs
    const hi = b0 === 0xed ? 0x9f : 0xbf; // no surrogates
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const lo = b0 === 0xf0 ? 0x90 : 0x80;
    const hi = b0 === 0xf4 ? 0x8f : 0xbf; // <= U+10FFFF
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

/**
 * A printable, single-line excerpt of a string or of raw bytes, at most `max` characters plus a
 * "…(+N more bytes|chars)" suffix. Bytes that are not valid UTF-8 appear as \xNN, so a failure message shows
 * exactly what the server sent.
 */
export function escapeBytes(s: string | Uint8Array, max = 400): string {
  const parts: string[] = [];
  let outLen = 0;
  let rest = 0;
  const add = (piece: string, remaining: () => number): boolean => {
    if (outLen + piece.length > max) {
      rest = remaining();
      return false;
    }
    parts.push(piece);
    outLen += piece.length;
    return true;
  };
  if (typeof s === 'string') {
    for (let i = 0; i < s.length; ) {
      const cp = s.codePointAt(i)!;
      if (!add(escapeCodePoint(cp), () => s.length - i)) break;
      i += cp > 0xffff ? 2 : 1;
    }
    return rest > 0 ? `${parts.join('')}…(+${rest} more chars)` : parts.join('');
  }
  const decoder = new TextDecoder('utf-8');
  for (let i = 0; i < s.length; ) {
    const n = utf8SequenceLength(s, i);
    const piece =
      n === 0 ? `\\x${hex(s[i], 2)}` : escapeCodePoint(decoder.decode(s.subarray(i, i + n)).codePointAt(0)!);
    if (!add(piece, () => s.length - i)) break;
    i += n === 0 ? 1 : n;
  }
  return rest > 0 ? `${parts.join('')}…(+${rest} more bytes)` : parts.join('');
}

// ---------------------------------------------------------------------------------------------------------
// Raw framing, as the server sent it (the parser normalises all of this away).

type LineTerminator = 'LF' | 'CRLF' | 'CR';

interface RawEventBlock {
  /** The block's text including its lines' terminators and the terminating blank line. */
  raw: string;
  /** Lines without terminators (the blank line is not included). */
  lines: string[];
  /** Terminator of each line, then of the blank line; a last unterminated line has none. */
  terminators: LineTerminator[];
  /** 'mixed' when the block uses more than one terminator; undefined when it has none at all. */
  style?: LineTerminator | 'mixed';
  /** Ended by a blank line. An incomplete block at EOF is dropped by SSE clients. */
  complete: boolean;
  /** Offset of the block in the text (UTF-16 units). */
  offset: number;
  /** Extra blank lines before this block (0 in the usual `data: x\n\n` framing). */
  blankLinesBefore: number;
}

/**
 * Split a decoded SSE body into event blocks exactly as framed: lines end in CRLF, LF or CR (a CR at EOF counts),
 * a blank line ends a block. Used for byte-level checks: terminator style, `data:` spacing, final blank line.
 */
export function splitRawEvents(text: string): RawEventBlock[] {
  const blocks: RawEventBlock[] = [];
  let lines: string[] = [];
  let terms: LineTerminator[] = [];
  let blockStart = 0;
  let blanks = 0;
  const styleOf = (ts: LineTerminator[]): LineTerminator | 'mixed' | undefined =>
    ts.length === 0 ? undefined : ts.every((x) => x === ts[0]) ? ts[0] : 'mixed';

  let i = 0;
  while (i < text.length) {
    const cr = text.indexOf('\r', i);
    const lf = text.indexOf('\n', i);
    let end: number;
    let term: LineTerminator;
    if (cr === -1 && lf === -1) break; // unterminated last line
    if (cr !== -1 && (lf === -1 || cr < lf)) {
      end = cr;
      term = text[cr + 1] === '\n' ? 'CRLF' : 'CR';
    } else {
      end = lf;
      term = 'LF';
    }
    const line = text.slice(i, end);
    const next = end + (term === 'CRLF' ? 2 : 1);
    if (line === '') {
      if (lines.length === 0) {
        blanks++;
      } else {
        terms.push(term);
        blocks.push({
          raw: text.slice(blockStart, next),
          lines,
          terminators: terms,
          style: styleOf(terms),
          complete: true,
          offset: blockStart,
          blankLinesBefore: blanks,
        });
        lines = [];
        terms = [];
        blanks = 0;
      }
      blockStart = next;
    } else {
      lines.push(line);
      terms.push(term);
    }
    i = next;
  }
  if (i < text.length) lines.push(text.slice(i));
  if (lines.length > 0) {
    blocks.push({
      raw: text.slice(blockStart),
      lines,
      terminators: terms,
      style: styleOf(terms),
      complete: false,
      offset: blockStart,
      blankLinesBefore: blanks,
    });
  }
  return blocks;
}
