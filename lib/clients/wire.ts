// What the wire carried, for comparison with what a client library reported. Pure functions of a recording.
//
// The reading is deliberately tolerant: every line that carries a JSON payload counts ("data: {…}", "data:{…}",
// a bare "{…}" line, an NDJSON line, several JSON values run together), whatever the SSE framing around it. So
// when a client drops text because the framing is broken, the comparison shows the text it dropped; whether the
// framing itself was valid is decided separately by the MUST rules of the sse/anthropic/ollama families.

import { analyzeSse, splitJsonValues } from '../decode/framing.ts';
import type { NdjsonDecoded, SseDecoded } from '../decode/stream-decoder.ts';
import { anthropicEvents, ollamaEvents, openaiChatEvents, type StreamEvents } from '../decode/stream-events.ts';
import { isJsonObject } from '../json.ts';
import type { ApiFlavour, BodyRead } from '../model/types.ts';

interface WireLine {
  /** ms since t0 of the read that completed the line. */
  t: number;
  /** Byte offset of the line in the body. */
  offset: number;
  /** Byte length of the line (without its terminator). */
  bytes: number;
  text: string;
}

/** Split a body into lines (LF, CRLF and lone CR all end a line), each with its byte offset and completion time. */
export function wireLines(reads: readonly BodyRead[]): WireLine[] {
  const out: WireLine[] = [];
  const dec = new TextDecoder('utf-8', { fatal: false });
  const enc = new TextEncoder();
  let buf = '';
  let bufOffset = 0;
  let t = reads[0]?.t ?? 0;
  const flushLines = (final: boolean) => {
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buf);
      // A CR at the very end may be the first half of a CRLF split across reads: wait for the next read.
      if (!m || (!final && m[0] === '\r' && m.index === buf.length - 1)) break;
      const text = buf.slice(0, m.index);
      const bytes = enc.encode(text).length;
      out.push({ t, offset: bufOffset, bytes, text });
      bufOffset += bytes + m[0].length;
      buf = buf.slice(m.index + m[0].length);
    }
    if (final && buf !== '') {
      const bytes = enc.encode(buf).length;
      out.push({ t, offset: bufOffset, bytes, text: buf });
      bufOffset += bytes;
      buf = '';
    }
  };
  for (const r of reads) {
    t = r.t;
    buf += dec.decode(r.bytes, { stream: true });
    flushLines(false);
  }
  buf += dec.decode();
  flushLines(true);
  return out;
}

/** The JSON payloads of one line, tolerant of framing: "data: x", "data:x", bare JSON, several values run together. */
export function payloadsOf(line: string): string[] {
  let s = line.replace(/^\uFEFF/, '');
  if (s.startsWith('data:')) s = s.slice(5).replace(/^ /, '');
  else if (!s.trimStart().startsWith('{')) return [];
  const trimmed = s.trim();
  if (trimmed === '[DONE]') return ['[DONE]'];
  if (!trimmed.startsWith('{')) return [];
  try {
    JSON.parse(trimmed);
    return [trimmed];
  } catch {
    return splitJsonValues(trimmed) ?? [];
  }
}

/** What a tolerant reader recovers from a streamed body, in the common shape of lib/decode/stream-events.ts. */
export function tolerantStream(
  flavour: ApiFlavour,
  reads: readonly BodyRead[],
): { events: StreamEvents; lines: WireLine[] } {
  const lines = wireLines(reads);
  if (flavour === 'ollama-native') {
    const nd: NdjsonDecoded = { lines: [], text: '', invalidUtf8: false, blankLines: 0 };
    for (const l of lines)
      for (const p of payloadsOf(l.text))
        if (p !== '[DONE]') nd.lines.push({ t: l.t, text: p, json: JSON.parse(p), terminated: true });
    return { events: ollamaEvents(nd), lines };
  }
  const sse: SseDecoded = { events: [], comments: [], parseErrors: [], text: '', invalidUtf8: false, bom: false };
  for (const l of lines) for (const p of payloadsOf(l.text)) sse.events.push({ t: l.t, data: p });
  return { events: flavour === 'anthropic-messages' ? anthropicEvents(sse) : openaiChatEvents(sse), lines };
}

/** The facts a client is compared on, from the wire or from the client. */
export interface Facts {
  text: string;
  reasoning: string;
  /** The finish reason as the wire says it (the last one, when a server sent several). */
  finish?: string;
  finishes: string[];
  usage?: { input?: number; output?: number };
  /** ms since t0 of each event carrying content text. */
  contentTimes: number[];
}

export function streamFacts(ev: StreamEvents): Facts {
  const u = ev.usage;
  return {
    text: ev.text,
    reasoning: ev.reasoning,
    finish: ev.finishReasons[ev.finishReasons.length - 1]?.value,
    finishes: ev.finishReasons.map((f) => f.value),
    usage:
      u && (u.prompt_tokens !== undefined || u.completion_tokens !== undefined)
        ? { input: u.prompt_tokens, output: u.completion_tokens }
        : undefined,
    contentTimes: ev.tokens.filter((k) => k.kind === 'content').map((k) => k.t),
  };
}

type Obj = Record<string, unknown>;
const str = (v: unknown) => (typeof v === 'string' ? v : '');
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Facts of a non-streamed JSON answer, per API; undefined when the body is not the API's object at all. */
export function jsonFacts(flavour: ApiFlavour, json: unknown): Facts | undefined {
  if (!isJsonObject(json)) return undefined;
  if (flavour === 'anthropic-messages') {
    const blocks = Array.isArray(json.content) ? json.content.filter(isJsonObject) : [];
    const u = isJsonObject(json.usage) ? json.usage : undefined;
    return {
      text: blocks
        .filter((b) => b.type === 'text')
        .map((b) => str(b.text))
        .join(''),
      reasoning: blocks
        .filter((b) => b.type === 'thinking')
        .map((b) => str(b.thinking))
        .join(''),
      finish: typeof json.stop_reason === 'string' ? json.stop_reason : undefined,
      finishes: typeof json.stop_reason === 'string' ? [json.stop_reason] : [],
      usage: u ? { input: num(u.input_tokens), output: num(u.output_tokens) } : undefined,
      contentTimes: [],
    };
  }
  if (flavour === 'ollama-native') {
    const m = isJsonObject(json.message) ? json.message : {};
    const p = num(json.prompt_eval_count);
    const c = num(json.eval_count);
    return {
      text: str(m.content),
      reasoning: str(m.thinking),
      finish: typeof json.done_reason === 'string' ? json.done_reason : undefined,
      finishes: typeof json.done_reason === 'string' ? [json.done_reason] : [],
      usage: p !== undefined || c !== undefined ? { input: p, output: c } : undefined,
      contentTimes: [],
    };
  }
  const choice = Array.isArray(json.choices) && isJsonObject(json.choices[0]) ? json.choices[0] : undefined;
  const m = choice && isJsonObject(choice.message) ? choice.message : {};
  const u = isJsonObject(json.usage) ? json.usage : undefined;
  const fr = choice && typeof choice.finish_reason === 'string' ? choice.finish_reason : undefined;
  return {
    // Tolerant, like the stream reading: text a server put in choices[].text (the completions shape) was still carried.
    text: str(m.content) || str(choice?.text),
    reasoning: str(m.reasoning_content) || str(m.reasoning),
    finish: fr,
    finishes: fr ? [fr] : [],
    usage: u ? { input: num(u.prompt_tokens), output: num(u.completion_tokens) } : undefined,
    contentTimes: [],
  };
}

/** Which reasoning fields the wire used (chat: reasoning_content or reasoning), so a client that reads only one can be excused. */
export function reasoningFieldsOf(flavour: ApiFlavour, lines: readonly string[]): string[] {
  if (flavour !== 'openai-chat') return ['thinking'];
  const found = new Set<string>();
  for (const l of lines) {
    for (const p of payloadsOf(l)) {
      if (p === '[DONE]') continue;
      const j = JSON.parse(p) as Obj;
      const choices = Array.isArray(j.choices) ? j.choices : [];
      for (const c of choices) {
        const d =
          isJsonObject(c) && isJsonObject(c.delta)
            ? c.delta
            : isJsonObject(c) && isJsonObject(c.message)
              ? c.message
              : {};
        for (const k of ['reasoning_content', 'reasoning']) if (typeof d[k] === 'string' && d[k] !== '') found.add(k);
      }
    }
  }
  return [...found];
}

/** A one-line description of how the stream was framed (what a client had to cope with). */
export function wireShape(
  flavour: ApiFlavour,
  rec: { reads: readonly BodyRead[] },
  lines: readonly WireLine[],
): string {
  const reads = rec.reads.filter((r) => r.bytes.length > 0).length;
  // Events per read: data lines (NDJSON: lines) that start within one read (a read may hold several).
  const dec = new TextDecoder();
  const starts = flavour === 'ollama-native' ? /(^|\n)\{/g : /(^|[\r\n])data:/g;
  const most = Math.max(0, ...rec.reads.map((r) => (dec.decode(r.bytes).match(starts) ?? []).length));
  const several = most > 1 ? ` (up to ${most} in one read)` : '';
  if (flavour === 'ollama-native')
    return `${lines.filter((l) => l.text.trim() !== '').length} NDJSON lines in ${reads} reads${several}`;
  const f = analyzeSse(rec.reads);
  const parts = [`${f.events.length} events in ${reads} reads${several}`];
  if (f.comments.length) parts.push(`${f.comments.length} SSE comments`);
  const ends = (Object.entries(f.lineEnds) as Array<[string, number]>)
    .filter(([k, n]) => n > 0 && k !== 'EOF')
    .map(([k]) => k);
  parts.push(`${ends.join('+') || 'no'} line ends`);
  if (f.dataWithoutSpace) parts.push(`"data:" without a space ×${f.dataWithoutSpace}`);
  return parts.join(', ');
}
