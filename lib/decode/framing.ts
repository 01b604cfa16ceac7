// Byte-level framing analysis of a recorded response body: what a framing check reads.
//
// lib/decode/stream-decoder.ts decodes a stream the way a client would (eventsource-parser), which normalises away exactly what
// framing checks must see: which line terminators the server used, which field names it wrote, whether a
// line was a bare JSON object without a field name, whether the last event ended with a blank line, where an
// invalid UTF-8 sequence sits. This module works on the raw bytes: SSE's structural characters (CR, LF, ":")
// are ASCII and never occur inside a UTF-8 multibyte sequence, so lines can be cut on bytes and each line
// decoded on its own. Everything is a pure function of the bytes (and of the read times, for timestamps), so
// the result does not depend on how the network cut the body into reads.
//
// Spec: WHATWG HTML §9.2.6 "Interpreting an event stream" (line ends CRLF, LF or CR; a blank line dispatches;
// a line starting with ":" is a comment; a line without ":" is a field name with an empty value; one leading
// space after the colon is stripped; unknown field names are ignored; a BOM at the start is stripped).

import { isJsonObject } from '../json.ts';
import type { BodyRead } from '../model/types.ts';

// ---------------------------------------------------------------------------------------------------------
// Bytes and times

/** Accept either the recorder's reads or plain bytes (plain bytes get t = 0). */
type BodyInput = readonly BodyRead[] | Uint8Array;

interface Body {
  bytes: Uint8Array;
  /** Time (ms since t0) of the read that holds byte `offset`. */
  timeAt(offset: number): number;
}

function toBody(input: BodyInput): Body {
  if (input instanceof Uint8Array) return { bytes: input, timeAt: () => 0 };
  let len = 0;
  for (const r of input) len += r.bytes.length;
  const bytes = new Uint8Array(len);
  const ends: number[] = [];
  const times: number[] = [];
  let off = 0;
  for (const r of input) {
    bytes.set(r.bytes, off);
    off += r.bytes.length;
    if (r.bytes.length === 0) continue;
    ends.push(off);
    times.push(r.t);
  }
  const last = input.length ? input[input.length - 1]!.t : 0;
  return {
    bytes,
    timeAt(offset) {
      // First read whose end is past the offset (binary search).
      let lo = 0;
      let hi = ends.length - 1;
      if (hi < 0 || offset >= ends[hi]!) return times[hi] ?? last;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (ends[mid]! > offset) hi = mid;
        else lo = mid + 1;
      }
      return times[lo]!;
    },
  };
}

const lenient = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
function decode(b: Uint8Array): string {
  return lenient.decode(b);
}

// ---------------------------------------------------------------------------------------------------------
// UTF-8 validity, with positions

/** Length of a valid UTF-8 sequence at i, or 0 when the bytes at i do not start one (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF). */
function utf8SequenceAt(b: Uint8Array, i: number): number {
  const b0 = b[i]!;
  if (b0 < 0x80) return 1;
  const cont = (k: number, lo = 0x80, hi = 0xbf): boolean => i + k < b.length && b[i + k]! >= lo && b[i + k]! <= hi;
  if (b0 >= 0xc2 && b0 <= 0xdf) return cont(1) ? 2 : 0;
  if (b0 >= 0xe0 && b0 <= 0xef) {
    const lo = b0 === 0xe0 ? 0xa0 : 0x80;
    const hi = b0 === 0xed ? 0x9f : 0xbf;
    return cont(1, lo, hi) && cont(2) ? 3 : 0;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    const lo = b0 === 0xf0 ? 0x90 : 0x80;
    const hi = b0 === 0xf4 ? 0x8f : 0xbf;
    return cont(1, lo, hi) && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

interface InvalidUtf8 {
  /** Byte offset of the offending byte. */
  offset: number;
  /** The offending byte. */
  byte: number;
}

/** Offsets of bytes that do not start or continue a valid UTF-8 sequence (at most `max`). */
export function invalidUtf8Offsets(bytes: Uint8Array, max = 50): InvalidUtf8[] {
  const out: InvalidUtf8[] = [];
  for (let i = 0; i < bytes.length && out.length < max; ) {
    const n = utf8SequenceAt(bytes, i);
    if (n === 0) {
      out.push({ offset: i, byte: bytes[i]! });
      i++;
    } else i += n;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// SSE lines and blocks, as sent

type LineEnd = 'LF' | 'CRLF' | 'CR' | 'EOF';

const KNOWN_SSE_FIELDS: ReadonlySet<string> = new Set(['data', 'event', 'id', 'retry']);

interface SseLine {
  /** Byte offset of the line in the body (the BOM, if any, counts: offsets index the recorded bytes). */
  offset: number;
  /** Byte length of the line without its terminator. */
  length: number;
  /** The line, decoded (invalid bytes as U+FFFD). */
  text: string;
  /** How the line ended; 'EOF' when the body ended inside it. */
  end: LineEnd;
  /**
   * comment: starts with ":"; field: a field name (known or not) and value; bare-json: starts with "{" or "[",
   * i.e. a payload written without a field name (per spec its "field name" is garbage and the line is lost).
   */
  kind: 'comment' | 'field' | 'bare-json';
  /** Field name (kind 'field'); for a line without ":" the whole line. */
  field?: string;
  /** Field value, one leading space stripped (kind 'field'); comment text for comments. */
  value?: string;
  /** `data:x` rather than `data: x` (valid; noted only). */
  noSpace?: boolean;
  /** Time of the read holding the line's last byte (terminator included). */
  t: number;
}

interface SseBlock {
  /** Non-blank lines of the block, in order. */
  lines: SseLine[];
  /** Ended by a blank line. An unterminated block at EOF is never dispatched by a client. */
  terminated: boolean;
  /** Byte range of the block, blank line included. */
  offset: number;
  end: number;
  /** Time the block was complete (the read holding its blank line), or of its last byte. */
  t: number;
  /** Joined `data` values (LF between lines), or undefined when the block has no data line (not an event). */
  data?: string;
  /** Number of data lines. */
  dataLines: number;
  event?: string;
  id?: string;
  /** Blank lines before this block beyond the one that ended the previous block. */
  extraBlankLinesBefore: number;
}

interface SseComment {
  /** Comment text after the colon, one leading space stripped ("ping", "keep-alive", "" for a bare ":"). */
  text: string;
  /** The raw line (": ping"). */
  line: string;
  offset: number;
  t: number;
}

export interface SseFraming {
  /** Body bytes (BOM included). */
  byteLength: number;
  bom: boolean;
  lines: SseLine[];
  /** Terminator counts over all lines, blank lines included; EOF counts an unterminated last line. */
  lineEnds: Record<LineEnd, number>;
  /** Offsets of CRs not followed by LF (each is a line end on its own). */
  loneCrOffsets: number[];
  /** All blocks; only a last one can be unterminated. */
  blocks: SseBlock[];
  /** Dispatched events: terminated blocks with at least one data line. */
  events: SseBlock[];
  /** The trailing block that was never ended by a blank line, if any. */
  unterminated?: SseBlock;
  comments: SseComment[];
  /** Lines with a field name the spec does not know (ignored by clients), e.g. `error: {...}`. */
  unknownFields: SseLine[];
  /** Payload lines without any field name (lost by clients). */
  bareJson: SseLine[];
  /** Data lines written as `data:x` (valid). */
  dataWithoutSpace: number;
  /** Bytes that are not valid UTF-8 (first 50). */
  invalidUtf8: InvalidUtf8[];
}

function classify(text: string): Pick<SseLine, 'kind' | 'field' | 'value' | 'noSpace'> {
  if (text.startsWith(':')) {
    const v = text.slice(1);
    return { kind: 'comment', value: v.startsWith(' ') ? v.slice(1) : v };
  }
  if (/^\s*[[{]/.test(text)) return { kind: 'bare-json' };
  const colon = text.indexOf(':');
  if (colon === -1) return { kind: 'field', field: text, value: '' };
  const field = text.slice(0, colon);
  const raw = text.slice(colon + 1);
  const out: Pick<SseLine, 'kind' | 'field' | 'value' | 'noSpace'> = {
    kind: 'field',
    field,
    value: raw.startsWith(' ') ? raw.slice(1) : raw,
  };
  if (!raw.startsWith(' ') && raw !== '') out.noSpace = true;
  return out;
}

/** Cut a body into SSE lines and blocks exactly as sent. Pure: the result is independent of read boundaries. */
export function analyzeSse(input: BodyInput): SseFraming {
  const body = toBody(input);
  const b = body.bytes;
  const bom = b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf;
  const lines: SseLine[] = [];
  const lineEnds: Record<LineEnd, number> = { LF: 0, CRLF: 0, CR: 0, EOF: 0 };
  const loneCrOffsets: number[] = [];
  const blocks: SseBlock[] = [];
  const comments: SseComment[] = [];
  const unknownFields: SseLine[] = [];
  const bareJson: SseLine[] = [];
  let dataWithoutSpace = 0;

  let cur: SseBlock | undefined;
  let blanks = 0;
  let blockStart = bom ? 3 : 0;
  const finish = (terminated: boolean, end: number, t: number): void => {
    if (!cur) return;
    cur.terminated = terminated;
    cur.end = end;
    cur.t = t;
    blocks.push(cur);
    cur = undefined;
  };

  let i = bom ? 3 : 0;
  while (i < b.length) {
    let j = i;
    while (j < b.length && b[j] !== 0x0a && b[j] !== 0x0d) j++;
    let end: LineEnd;
    let next: number;
    if (j >= b.length) {
      end = 'EOF';
      next = b.length;
    } else if (b[j] === 0x0d) {
      if (b[j + 1] === 0x0a) {
        end = 'CRLF';
        next = j + 2;
      } else {
        end = 'CR';
        next = j + 1;
        loneCrOffsets.push(j);
      }
    } else {
      end = 'LF';
      next = j + 1;
    }
    lineEnds[end]++;
    const t = body.timeAt(next - 1);
    if (j === i) {
      // A blank line: dispatches the current block (EOF with nothing is not a line at all).
      if (end !== 'EOF') {
        if (cur) finish(true, next, t);
        else blanks++;
        blockStart = next;
      }
    } else {
      const text = decode(b.subarray(i, j));
      const line: SseLine = { offset: i, length: j - i, text, end, t, ...classify(text) };
      lines.push(line);
      cur ??= {
        lines: [],
        terminated: false,
        offset: blockStart,
        end: next,
        t,
        dataLines: 0,
        extraBlankLinesBefore: blanks,
      };
      blanks = 0;
      cur.lines.push(line);
      if (line.kind === 'comment') comments.push({ text: line.value ?? '', line: text, offset: i, t });
      else if (line.kind === 'bare-json') bareJson.push(line);
      else if (line.field === 'data') {
        cur.data = cur.data === undefined ? line.value! : `${cur.data}\n${line.value}`;
        cur.dataLines++;
        if (line.noSpace) dataWithoutSpace++;
      } else if (line.field === 'event') cur.event = line.value;
      else if (line.field === 'id') cur.id = line.value;
      else if (!KNOWN_SSE_FIELDS.has(line.field!)) unknownFields.push(line);
    }
    i = next;
  }
  if (cur) finish(false, b.length, body.timeAt(b.length - 1));
  const events = blocks.filter((x) => x.terminated && x.data !== undefined);
  const last = blocks[blocks.length - 1];
  const out: SseFraming = {
    byteLength: b.length,
    bom,
    lines,
    lineEnds,
    loneCrOffsets,
    blocks,
    events,
    comments,
    unknownFields,
    bareJson,
    dataWithoutSpace,
    invalidUtf8: invalidUtf8Offsets(b),
  };
  if (last && !last.terminated) out.unterminated = last;
  return out;
}

/** The raw bytes of a range of the body, for an escaped excerpt. */
export function bytesAt(input: BodyInput, offset: number, length: number): Uint8Array {
  const b = input instanceof Uint8Array ? input : toBody(input).bytes;
  return b.subarray(Math.max(0, offset), Math.min(b.length, offset + length));
}

/** Bytes around an offset (context on both sides), for showing a lone CR or an invalid byte in place. */
export function bytesAround(input: BodyInput, offset: number, context = 40): Uint8Array {
  return bytesAt(input, offset - context, 2 * context + 1);
}

// ---------------------------------------------------------------------------------------------------------
// Blocks whose data lines are really several events run together (a missing blank line)

/**
 * A block with several data lines is valid SSE (the lines join with LF). When each data line is a complete JSON
 * value, the joined payload is not, and the server's other events have one data line each, the blank line
 * between events is what is missing. Returns the data lines that look like separate events, or undefined.
 */
export function runTogetherEvents(block: SseBlock): string[] | undefined {
  if (block.dataLines < 2 || block.data === undefined) return undefined;
  if (parsesAsJson(block.data)) return undefined; // one pretty-printed JSON value over several lines: fine
  const datas = block.lines.filter((l) => l.kind === 'field' && l.field === 'data').map((l) => l.value ?? '');
  const looksSeparate = datas.every((d) => d.trim() === '[DONE]' || parsesAsJson(d));
  return looksSeparate ? datas : undefined;
}

// ---------------------------------------------------------------------------------------------------------
// JSON payloads

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Cut a text into consecutive top-level JSON values (objects, arrays, strings, numbers, literals) separated by
 * optional whitespace. Returns undefined when the text is not such a concatenation (e.g. truncated).
 * `{"a":1}{"b":2}` → ['{"a":1}', '{"b":2}'].
 */
export function splitJsonValues(text: string): string[] | undefined {
  const out: string[] = [];
  let i = 0;
  const n = text.length;
  const ws = () => {
    while (i < n && /\s/.test(text[i]!)) i++;
  };
  ws();
  while (i < n) {
    const start = i;
    const c = text[i]!;
    if (c === '{' || c === '[') {
      let depth = 0;
      let inStr = false;
      for (; i < n; i++) {
        const ch = text[i]!;
        if (inStr) {
          if (ch === '\\') i++;
          else if (ch === '"') inStr = false;
        } else if (ch === '"') inStr = true;
        else if (ch === '{' || ch === '[') depth++;
        else if (ch === '}' || ch === ']') {
          depth--;
          if (depth === 0) {
            i++;
            break;
          }
        }
      }
      if (depth !== 0) return undefined;
    } else if (c === '"') {
      i++;
      while (i < n && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      if (i >= n) return undefined;
      i++;
    } else {
      while (i < n && !/[\s{["]/.test(text[i]!)) i++;
    }
    const piece = text.slice(start, i);
    if (!parsesAsJson(piece)) return undefined;
    out.push(piece);
    ws();
  }
  return out;
}

type PayloadVerdict =
  | { kind: 'object' }
  | { kind: 'done' }
  | { kind: 'not-object'; type: string }
  | { kind: 'several'; count: number }
  | { kind: 'invalid'; message: string };

/** Classify one event's data: exactly one JSON object (or `[DONE]`), several concatenated values, or not JSON. */
export function classifyPayload(data: string): PayloadVerdict {
  if (data.trim() === '[DONE]') return { kind: 'done' };
  try {
    const v: unknown = JSON.parse(data);
    if (isJsonObject(v)) return { kind: 'object' };
    return { kind: 'not-object', type: Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v };
  } catch (e) {
    const parts = splitJsonValues(data);
    if (parts && parts.length > 1) return { kind: 'several', count: parts.length };
    return { kind: 'invalid', message: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * Events whose payloads only parse when joined: one JSON object split over consecutive events.
 * Returns [first, last] index pairs into `datas` (joined with "" or "\n", whichever parses).
 */
export function splitAcrossEvents(datas: readonly string[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let i = 0; i < datas.length; i++) {
    if (datas[i]!.trim() === '[DONE]' || parsesAsJson(datas[i]!)) continue;
    let joined = datas[i]!;
    for (let j = i + 1; j < datas.length && j < i + 16; j++) {
      if (parsesAsJson(datas[j]!)) break;
      const a = joined + datas[j];
      const b = `${joined}\n${datas[j]}`;
      if (parsesAsJson(a) || parsesAsJson(b)) {
        out.push([i, j]);
        i = j;
        break;
      }
      joined = a;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Text integrity: surrogates, split characters, echo corruption

/** UTF-16 indexes of unpaired surrogates in a string (JSON.parse keeps `"\ud83d"` as a lone surrogate). */
export function loneSurrogates(s: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++;
        continue;
      }
      out.push(i);
    } else if (c >= 0xdc00 && c <= 0xdfff) out.push(i);
  }
  return out;
}

/**
 * Indexes i where piece i ends with U+FFFD and piece i+1 starts with U+FFFD: the signature of a character
 * whose UTF-8 bytes were split between two deltas and each half decoded on its own by the server.
 */
export function splitCharacterBoundaries(pieces: readonly string[]): number[] {
  const out: number[] = [];
  for (let i = 0; i + 1 < pieces.length; i++) {
    if (pieces[i]!.endsWith('\uFFFD') && pieces[i + 1]!.startsWith('\uFFFD')) out.push(i);
  }
  return out;
}

/** How a character's UTF-8 bytes look when mis-decoded as Windows-1252 / Latin-1 ("ü" → "Ã¼"). */
export function mojibakeForms(ch: string): string[] {
  const bytes = new TextEncoder().encode(ch);
  if (bytes.length < 2) return [];
  const forms = new Set<string>([new TextDecoder('windows-1252').decode(bytes), Buffer.from(bytes).toString('latin1')]);
  return [...forms].filter((f) => f !== ch);
}

type EchoIntegrity =
  | { status: 'intact' }
  | { status: 'corrupted'; why: string; at: number }
  | { status: 'absent'; why: string };

/**
 * Did a response reproduce an echoed string with its multibyte characters intact?
 * - intact: the text (leading whitespace ignored) starts with the string;
 * - corrupted: the text starts with the string's ASCII skeleton exactly, and one or more of its multibyte
 *   characters became U+FFFD, "?", a lone surrogate, mojibake, or vanished; or anywhere in the text a multibyte
 *   character of the string appears as mojibake. That is evidence of a server-side decoding defect, not of a
 *   model's choice, so the echo string should carry ASCII anchors between its multibyte characters;
 * - absent: the model did not echo (a model's freedom: inconclusive).
 */
export function echoIntegrity(expected: string, text: string): EchoIntegrity {
  const t = text.replace(/^\s+/, '');
  if (t.startsWith(expected)) return { status: 'intact' };
  const chars = Array.from(expected);
  let p = 0;
  let aligned = true;
  const damaged: string[] = [];
  for (const c of chars) {
    if (c.codePointAt(0)! < 0x80) {
      if (t[p] !== c) {
        aligned = false;
        break;
      }
      p++;
      continue;
    }
    if (t.startsWith(c, p)) {
      p += c.length;
      continue;
    }
    const moji = mojibakeForms(c).find((f) => t.startsWith(f, p));
    if (moji !== undefined) {
      damaged.push(`${JSON.stringify(c)} → ${JSON.stringify(moji)} (mojibake)`);
      p += moji.length;
      continue;
    }
    const run = /^(?:\uFFFD|\?|[\uD800-\uDFFF])+/.exec(t.slice(p))?.[0];
    if (run) {
      damaged.push(`${JSON.stringify(c)} → ${escapeForMessage(run)}`);
      p += run.length;
      continue;
    }
    damaged.push(`${JSON.stringify(c)} → (missing)`);
  }
  if (aligned && damaged.length > 0) {
    return {
      status: 'corrupted',
      why: `echoed text ${JSON.stringify(t.slice(0, p))} instead of ${JSON.stringify(expected)}: ${damaged.join(', ')}`,
      at: firstDifference(expected, t),
    };
  }
  for (const c of new Set(chars)) {
    for (const f of mojibakeForms(c)) {
      const at = t.indexOf(f);
      if (at >= 0)
        return {
          status: 'corrupted',
          why: `${JSON.stringify(c)} appears as mojibake ${JSON.stringify(f)} (its UTF-8 bytes decoded as Windows-1252)`,
          at,
        };
    }
  }
  return {
    status: 'absent',
    why: `the text does not start with the echo string: ${JSON.stringify(t.slice(0, expected.length + 8))}`,
  };
}

function escapeForMessage(s: string): string {
  return Array.from(s)
    .map((c) => {
      const cp = c.codePointAt(0)!;
      return cp === 0xfffd || (cp >= 0xd800 && cp <= 0xdfff)
        ? `\\u${cp.toString(16).toUpperCase().padStart(4, '0')}`
        : c;
    })
    .join('');
}

/** Index of the first UTF-16 unit where two strings differ (the shorter length when one is a prefix). */
export function firstDifference(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return n;
}

// ---------------------------------------------------------------------------------------------------------
// NDJSON (Ollama's native stream)

interface NdjsonFramedLine {
  offset: number;
  length: number;
  text: string;
  end: 'LF' | 'CRLF' | 'EOF';
  t: number;
  /** Parsed JSON, when the line is one JSON value. */
  json?: unknown;
  /** The line is exactly one JSON object. */
  isObject: boolean;
  /** Why not (parse error, several values, not an object). */
  problem?: string;
  /** The line looks like SSE framing (`data: …`, `event: …`, `: comment`). */
  sseLike: boolean;
}

export interface NdjsonFraming {
  byteLength: number;
  lines: NdjsonFramedLine[];
  /** Whitespace-only lines (tolerated, counted). */
  blankLines: number;
  /** Offsets of CRs not followed by LF (not a line end in NDJSON). */
  loneCrOffsets: number[];
  invalidUtf8: InvalidUtf8[];
}

/** Cut an NDJSON body into lines (LF; CRLF tolerated) and judge each. */
export function analyzeNdjson(input: BodyInput): NdjsonFraming {
  const body = toBody(input);
  const b = body.bytes;
  const lines: NdjsonFramedLine[] = [];
  const loneCrOffsets: number[] = [];
  let blankLines = 0;
  let i = 0;
  while (i < b.length) {
    let j = i;
    while (j < b.length && b[j] !== 0x0a) {
      if (b[j] === 0x0d && b[j + 1] !== 0x0a) loneCrOffsets.push(j);
      j++;
    }
    const eof = j >= b.length;
    const next = eof ? b.length : j + 1;
    const crlf = !eof && j > i && b[j - 1] === 0x0d;
    const contentEnd = crlf ? j - 1 : j;
    const text = decode(b.subarray(i, contentEnd));
    if (text.trim() === '') {
      blankLines++;
    } else {
      const line: NdjsonFramedLine = {
        offset: i,
        length: contentEnd - i,
        text,
        end: eof ? 'EOF' : crlf ? 'CRLF' : 'LF',
        t: body.timeAt(next - 1),
        isObject: false,
        sseLike: /^(data|event|id|retry):/.test(text) || text.startsWith(':'),
      };
      const p = classifyPayload(text);
      if (p.kind === 'object') {
        line.isObject = true;
        line.json = JSON.parse(text);
      } else if (p.kind === 'several') line.problem = `${p.count} JSON values on one line`;
      else if (p.kind === 'not-object') line.problem = `a JSON ${p.type}, not an object`;
      else if (p.kind === 'done') line.problem = 'an SSE [DONE] terminator';
      else line.problem = `not JSON (${p.message})`;
      lines.push(line);
    }
    i = next;
  }
  return { byteLength: b.length, lines, blankLines, loneCrOffsets, invalidUtf8: invalidUtf8Offsets(b) };
}

// ---------------------------------------------------------------------------------------------------------
// Media types

/** The media type of a Content-Type header, lower-cased, parameters dropped ("text/event-stream; charset=utf-8" → "text/event-stream"). */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}
