// Flavour adapters: decoded SSE / NDJSON events -> one common token stream that metrics and checks read.
//
// Lenient exactly where real servers differ (docs/servers.md "Cross-server observations"): usage may arrive in
// the finish chunk, in a `choices: []` chunk, twice, or as `usage: null` on every chunk; reasoning may be in
// `reasoning_content`, `reasoning` or `thinking`; extra fields are ignored. Strictness about those differences
// belongs to the checks, which read the raw facts kept here (chunks, usageEvents, eventsAfterDone, ...).

import { isJsonObject } from '../json.ts';
import type { NdjsonDecoded, NdjsonLine, SseDecoded, SseEvent } from './stream-decoder.ts';

/**
 * One token-bearing event: it carries non-empty generated text. Events are not tokens (a server may put several
 * tokens in one event), so there is exactly one entry per event, whatever it carries.
 */
interface TokenEvent {
  t: number;
  /** All generated text of the event (reasoning, content and tool-call arguments, in that order). */
  text: string;
  /** 'content' if the event has content; else 'reasoning'; else 'tool' (tool-call argument text only). */
  kind: 'content' | 'reasoning' | 'tool';
}

interface StreamUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  /** The usage object as sent (for anthropic: the last one; input/output are merged into the fields above). */
  raw: unknown;
  t: number;
}

/** Timing figures the server reports about itself; `value` is the server's object as sent (units vary). */
export interface ServerTimings {
  /** 'timings' (llama.cpp, mlx-vlm; ms), 'metrics' (vLLM per-request metrics; ms), 'usage' (oMLX timing keys in usage; s), 'ollama' (ns). */
  source: 'timings' | 'metrics' | 'usage' | 'ollama';
  value: Record<string, unknown>;
  t: number;
}

export interface StreamEvents {
  tokens: TokenEvent[];
  /**
   * The token events' times and the code points of each one's text, as columns: what metrics read (lib/measure/
   * request-metrics.ts). Kept live even where `tokens`, `text` and `reasoning` are built on first read (the live
   * decode's `lazy`): a number per event, where a token object and its text were what each minor GC copied.
   */
  tokenTimes: number[];
  tokenChars: number[];
  /** Concatenated content (what the user sees). */
  text: string;
  /** Concatenated reasoning, kept apart from content. */
  reasoning: string;
  finishReasons: { t: number; value: string }[];
  /** The last usage seen (a later one is the more complete one). */
  usage?: StreamUsage;
  /** Every usage seen, in order (vllm-mlx sends it twice). */
  usages: StreamUsage[];
  /** Events carrying a non-null usage object. */
  usageEvents: number;
  /** `[DONE]` seen (OpenAI), `message_stop` (Anthropic), `done: true` (Ollama). */
  done: boolean;
  doneT?: number;
  /** Events after the terminator (should be 0). */
  eventsAfterDone: number;
  chunks: { t: number; json: unknown }[];
  jsonErrors: { t: number; data: string; message: string }[];
  /** Mid-stream error objects (`{"error": ...}` chunks, `event: error`, Anthropic `type: "error"`). */
  errors: { t: number; json: unknown }[];
  serverTimings?: ServerTimings;
  model?: string;
  systemFingerprint?: string;
}

type Obj = Record<string, unknown>;

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}
function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function emptyResult(): StreamEvents {
  return {
    tokens: [],
    tokenTimes: [],
    tokenChars: [],
    text: '',
    reasoning: '',
    finishReasons: [],
    usages: [],
    usageEvents: 0,
    done: false,
    eventsAfterDone: 0,
    chunks: [],
    jsonErrors: [],
    errors: [],
  };
}

/**
 * A parsed event as `chunks` keeps it: its JSON is parsed again when a check reads it, so the adapter's objects die
 * with their event and a stream's memory stays proportional to its bytes (and the collector's work with it).
 */
class Chunk {
  private parsed = false;
  private value: unknown;
  constructor(
    readonly t: number,
    private readonly data: string,
  ) {}
  get json(): unknown {
    if (!this.parsed) {
      this.value = JSON.parse(this.data);
      this.parsed = true;
    }
    return this.value;
  }
}

/** Parse an event's JSON; `retain` false leaves it out of `chunks` (past the recorder's byte cap). */
function parseJson(
  out: StreamEvents,
  t: number,
  data: string,
  retain: boolean,
): { ok: true; json: unknown } | { ok: false } {
  try {
    const json: unknown = JSON.parse(data);
    if (retain) out.chunks.push(new Chunk(t, data));
    return { ok: true, json };
  } catch (e) {
    out.jsonErrors.push({ t, data, message: e instanceof Error ? e.message : String(e) });
    return { ok: false };
  }
}

/** Code points of a string (a surrogate pair is one). */
export function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/**
 * Record one event's generated text; empty strings and null never make a token (role-only chunks). `keepText`
 * false: only the columns (the text, the token objects and their kinds are rebuilt from the retained events).
 */
function addToken(
  out: StreamEvents,
  t: number,
  content: string,
  reasoning: string,
  tool: string,
  keepText = true,
): void {
  if (keepText) {
    out.text += content;
    out.reasoning += reasoning;
  }
  const all = reasoning + content + tool;
  if (all === '') return;
  out.tokenTimes.push(t);
  out.tokenChars.push(codePoints(all));
  if (keepText)
    out.tokens.push({ t, text: all, kind: content !== '' ? 'content' : reasoning !== '' ? 'reasoning' : 'tool' });
}

/** OpenAI-style usage, accepting mlx-vlm's pre-#1216 `input_tokens` / `output_tokens`. */
function openaiUsage(u: Obj, t: number): StreamUsage {
  const usage: StreamUsage = { raw: u, t };
  const p = num(u.prompt_tokens) ?? num(u.input_tokens);
  const c = num(u.completion_tokens) ?? num(u.output_tokens);
  const tot = num(u.total_tokens);
  if (p !== undefined) usage.prompt_tokens = p;
  if (c !== undefined) usage.completion_tokens = c;
  if (tot !== undefined) usage.total_tokens = tot;
  return usage;
}

/** oMLX puts its timing figures (seconds) inside usage; keep those keys as server timings. */
function usageTimings(u: Obj): Obj | undefined {
  const picked: Obj = {};
  for (const [k, v] of Object.entries(u))
    if (/time|duration|per_second/.test(k) && typeof v === 'number') picked[k] = v;
  return Object.keys(picked).length > 0 ? picked : undefined;
}

/** Shared per-chunk bookkeeping of both OpenAI flavours: usage, timings, identity, errors. */
function openaiCommon(out: StreamEvents, t: number, json: Obj): void {
  if (isJsonObject(json.usage)) {
    out.usageEvents++;
    const u = openaiUsage(json.usage, t);
    out.usages.push(u);
    out.usage = u;
    const ut = usageTimings(json.usage);
    if (ut) out.serverTimings = { source: 'usage', value: ut, t };
  }
  if (isJsonObject(json.timings)) out.serverTimings = { source: 'timings', value: json.timings, t };
  if (isJsonObject(json.metrics)) out.serverTimings = { source: 'metrics', value: json.metrics, t };
  if (out.model === undefined && typeof json.model === 'string') out.model = json.model;
  if (out.systemFingerprint === undefined && typeof json.system_fingerprint === 'string')
    out.systemFingerprint = json.system_fingerprint;
  if (json.error !== undefined && json.error !== null) out.errors.push({ t, json });
}

type PerChoice = (choice: Obj) => { content: string; reasoning: string; tool: string };

function openaiStep(out: StreamEvents, ev: SseEvent, retain: boolean, perChoice: PerChoice, keepText: boolean): void {
  if (out.done) {
    out.eventsAfterDone++;
    return;
  }
  if (ev.data.trim() === '[DONE]') {
    out.done = true;
    out.doneT = ev.t;
    return;
  }
  const parsed = parseJson(out, ev.t, ev.data, retain);
  if (!parsed.ok) return;
  if (!isJsonObject(parsed.json)) return;
  const json = parsed.json;
  if (ev.event === 'error' && json.error === undefined) out.errors.push({ t: ev.t, json });
  openaiCommon(out, ev.t, json);
  let content = '';
  let reasoning = '';
  let tool = '';
  const choices = Array.isArray(json.choices) ? json.choices : [];
  for (const ch of choices) {
    if (!isJsonObject(ch)) continue;
    const got = perChoice(ch);
    content += got.content;
    reasoning += got.reasoning;
    tool += got.tool;
    if (typeof ch.finish_reason === 'string' && ch.finish_reason !== '')
      out.finishReasons.push({ t: ev.t, value: ch.finish_reason });
  }
  addToken(out, ev.t, content, reasoning, tool, keepText);
}

/**
 * Builds StreamEvents one decoded event at a time: live, as reads arrive (lib/http/exchange.ts), or over a decoded body (the
 * *Events functions below). `retain` false (past the recorder's byte cap) keeps the event's facts — tokens, usage,
 * finish reasons, errors — but not its parsed JSON in `chunks`, so a long stream's memory stays bounded. `keepText`
 * false keeps of its text only the token columns (tokenTimes, tokenChars): the live decode's `lazy`, which rebuilds
 * tokens, text and reasoning from the retained events when first read.
 */
export interface SseAdapter {
  readonly out: StreamEvents;
  event(ev: SseEvent, retain?: boolean, keepText?: boolean): void;
}

interface NdjsonAdapter {
  readonly out: StreamEvents;
  line(line: NdjsonLine, retain?: boolean, keepText?: boolean): void;
}

function openaiAdapter(perChoice: PerChoice): SseAdapter {
  const out = emptyResult();
  return { out, event: (ev, retain = true, keepText = true) => openaiStep(out, ev, retain, perChoice, keepText) };
}

function replay(adapter: SseAdapter, sse: SseDecoded): StreamEvents {
  for (const ev of sse.events) adapter.event(ev);
  return adapter.out;
}

/** Reasoning wherever a server puts it: `reasoning_content` (llama.cpp, mlx-*), `reasoning` (vLLM, Ollama), `thinking`. */
function reasoningOf(o: Obj): string {
  return str(o.reasoning_content) || str(o.reasoning) || str(o.thinking);
}

/** Tool-call argument text is generated text too (a tool-call-only answer still has a first token). */
function toolText(o: Obj): string {
  if (!Array.isArray(o.tool_calls)) return '';
  let s = '';
  for (const tc of o.tool_calls)
    if (isJsonObject(tc) && isJsonObject(tc.function)) s += str(tc.function.name) + str(tc.function.arguments);
  return s;
}

const chatChoice: PerChoice = (ch) => {
  const d = isJsonObject(ch.delta) ? ch.delta : {};
  return { content: str(d.content), reasoning: reasoningOf(d), tool: toolText(d) };
};
const completionChoice: PerChoice = (ch) => ({ content: str(ch.text), reasoning: reasoningOf(ch), tool: '' });

/** /v1/chat/completions stream: text in `choices[].delta.content`. */
export const openaiChatAdapter = (): SseAdapter => openaiAdapter(chatChoice);
export function openaiChatEvents(sse: SseDecoded): StreamEvents {
  return replay(openaiChatAdapter(), sse);
}

/** /v1/completions stream: text in `choices[].text`. */
export const openaiCompletionAdapter = (): SseAdapter => openaiAdapter(completionChoice);
export function openaiCompletionEvents(sse: SseDecoded): StreamEvents {
  return replay(openaiCompletionAdapter(), sse);
}

/**
 * Anthropic Messages stream: message_start (input usage), content_block_start/delta/stop (text_delta, thinking_delta,
 * input_json_delta), message_delta (stop_reason, cumulative output usage), message_stop (terminator), ping, error.
 * The type is read from the JSON `type` and falls back to the SSE event name.
 */
export function anthropicAdapter(): SseAdapter {
  const out = emptyResult();
  let input: number | undefined;
  let output: number | undefined;
  const takeUsage = (u: Obj, t: number): void => {
    out.usageEvents++;
    input = num(u.input_tokens) ?? input;
    output = num(u.output_tokens) ?? output;
    const usage: StreamUsage = { raw: u, t };
    if (input !== undefined) usage.prompt_tokens = input;
    if (output !== undefined) usage.completion_tokens = output;
    if (input !== undefined && output !== undefined) usage.total_tokens = input + output;
    out.usages.push(usage);
    out.usage = usage;
  };
  const event = (ev: SseEvent, retain = true, keepText = true): void => {
    if (out.done) {
      out.eventsAfterDone++;
      return;
    }
    const parsed = parseJson(out, ev.t, ev.data, retain);
    if (!parsed.ok || !isJsonObject(parsed.json)) return;
    const json = parsed.json;
    const type = typeof json.type === 'string' ? json.type : ev.event;
    switch (type) {
      case 'message_start': {
        const msg = isJsonObject(json.message) ? json.message : {};
        if (typeof msg.model === 'string') out.model = msg.model;
        if (isJsonObject(msg.usage)) takeUsage(msg.usage, ev.t);
        break;
      }
      case 'content_block_start': {
        const b = isJsonObject(json.content_block) ? json.content_block : {};
        addToken(out, ev.t, str(b.text), str(b.thinking), '', keepText);
        break;
      }
      case 'content_block_delta': {
        const d = isJsonObject(json.delta) ? json.delta : {};
        addToken(out, ev.t, str(d.text), str(d.thinking), str(d.partial_json), keepText);
        break;
      }
      case 'message_delta': {
        const d = isJsonObject(json.delta) ? json.delta : {};
        if (typeof d.stop_reason === 'string') out.finishReasons.push({ t: ev.t, value: d.stop_reason });
        if (isJsonObject(json.usage)) takeUsage(json.usage, ev.t);
        break;
      }
      case 'message_stop':
        out.done = true;
        out.doneT = ev.t;
        break;
      case 'error':
        out.errors.push({ t: ev.t, json });
        break;
      default:
        break; // ping, content_block_stop, and future event types carry no text
    }
  };
  return { out, event };
}

export function anthropicEvents(sse: SseDecoded): StreamEvents {
  return replay(anthropicAdapter(), sse);
}

/**
 * Ollama native NDJSON (/api/chat: `message.content`, `message.thinking`; /api/generate: `response`, `thinking`).
 * The final `done: true` line has done_reason, prompt_eval_count / eval_count (usage) and durations in ns.
 */
export function ollamaAdapter(): NdjsonAdapter {
  const out = emptyResult();
  const line = (line: NdjsonLine, retain = true, keepText = true): void => {
    if (out.done) {
      out.eventsAfterDone++;
      return;
    }
    if (line.jsonError !== undefined) {
      out.jsonErrors.push({ t: line.t, data: line.text, message: line.jsonError });
      return;
    }
    if (retain) out.chunks.push({ t: line.t, json: line.json });
    if (!isJsonObject(line.json)) return;
    const json = line.json;
    if (out.model === undefined && typeof json.model === 'string') out.model = json.model;
    if (json.error !== undefined && json.error !== null) out.errors.push({ t: line.t, json });
    const msg = isJsonObject(json.message) ? json.message : {};
    addToken(
      out,
      line.t,
      str(msg.content) || str(json.response),
      str(msg.thinking) || str(json.thinking),
      toolText(msg),
      keepText,
    );
    if (json.done === true) {
      out.done = true;
      out.doneT = line.t;
      if (typeof json.done_reason === 'string') out.finishReasons.push({ t: line.t, value: json.done_reason });
      const p = num(json.prompt_eval_count);
      const c = num(json.eval_count);
      if (p !== undefined || c !== undefined) {
        const usage: StreamUsage = {
          raw: { prompt_eval_count: json.prompt_eval_count, eval_count: json.eval_count },
          t: line.t,
        };
        if (p !== undefined) usage.prompt_tokens = p;
        if (c !== undefined) usage.completion_tokens = c;
        if (p !== undefined && c !== undefined) usage.total_tokens = p + c;
        out.usageEvents++;
        out.usages.push(usage);
        out.usage = usage;
      }
      const timings: Obj = {};
      for (const k of [
        'total_duration',
        'load_duration',
        'prompt_eval_count',
        'prompt_eval_duration',
        'eval_count',
        'eval_duration',
      ]) {
        if (json[k] !== undefined) timings[k] = json[k];
      }
      if (Object.keys(timings).length > 0) out.serverTimings = { source: 'ollama', value: timings, t: line.t };
    }
  };
  return { out, line };
}

export function ollamaEvents(nd: NdjsonDecoded): StreamEvents {
  const a = ollamaAdapter();
  for (const l of nd.lines) a.line(l);
  return a.out;
}
