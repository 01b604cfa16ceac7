// Requests in each API flavour, recorded raw and decoded: what checks call.
// A generation request is built from the profile (model, extraBody, forced length) and starts with
// text unique to the request and the run, so no prefix cache can make a repeat faster.
import { createParser } from 'eventsource-parser';
import type { CheckContext } from './check.ts';
import type { ApiFlavour, Recording } from './types.ts';
import { record, bodyJson, type StreamControl } from './client.ts';
import { decodeSse, decodeNdjson, type SseDecoded } from './sse.ts';
import { openaiChatEvents, openaiCompletionEvents, anthropicEvents, ollamaEvents, type StreamEvents } from './stream-events.ts';
import { requestMetrics, type RequestMetrics } from './metrics.ts';
import { median } from './stats.ts';
import { observe, observations, paceKey, paceOf, type Pace } from './pace.ts';
import { requestDeadlines, stallLimitMs, STALL_FACTOR } from './deadlines.ts';

export interface Exchange {
  rec: Recording;
  /** Decoded SSE (undefined for NDJSON and non-stream bodies). */
  sse?: SseDecoded;
  events?: StreamEvents;
  metrics?: RequestMetrics;
  /** Parsed JSON body for non-stream answers. */
  json?: unknown;
  jsonError?: string;
}

export interface SendOptions {
  /** Abort (disconnect) after this many token-bearing events. */
  stopAfterTokens?: number;
  /** Override the profile deadlines for this request. */
  deadlines?: Partial<CheckContext['deadlines']>;
  signal?: AbortSignal;
  /** Called live for each token-bearing event (t in ms since t0). */
  onToken?: (t: number, count: number) => void;
}

const PATHS: Record<ApiFlavour, string> = {
  'openai-chat': '/v1/chat/completions',
  'openai-completions': '/v1/completions',
  'anthropic-messages': '/v1/messages',
  'ollama-native': '/api/chat',
};

/** Does one decoded event carry generated text? (Live progress; the full adapters decide afterwards.) */
function liveTokenText(flavour: ApiFlavour, data: string): boolean {
  if (flavour === 'openai-chat' || flavour === 'openai-completions') {
    if (data === '[DONE]') return false;
    try {
      const j = JSON.parse(data) as { choices?: Array<{ text?: unknown; delta?: Record<string, unknown> }> };
      return (j.choices ?? []).some((c) => {
        const d = c?.delta ?? {};
        return [c?.text, d.content, d.reasoning_content, d.reasoning, d.thinking].some((v) => typeof v === 'string' && v.length > 0);
      });
    } catch {
      return false;
    }
  }
  try {
    const j = JSON.parse(data) as { delta?: { text?: unknown; thinking?: unknown }; message?: { content?: unknown; thinking?: unknown } };
    if (flavour === 'anthropic-messages') return [j.delta?.text, j.delta?.thinking].some((v) => typeof v === 'string' && v.length > 0);
    return [j.message?.content, j.message?.thinking].some((v) => typeof v === 'string' && v.length > 0);
  } catch {
    return false;
  }
}

function liveDetector(flavour: ApiFlavour, opts: SendOptions, stallFloorMs: number | undefined) {
  let count = 0;
  let firstT: number | undefined;
  const dec = new TextDecoder();
  let onCount: (() => void) | undefined;
  let lineBuf = '';
  const stallWhy = `stall rule: silence over ${STALL_FACTOR}x the stream's own mean token gap, at least ${stallFloorMs} ms`;
  const sseParser = createParser({
    onEvent: (e) => {
      if (liveTokenText(flavour, e.data)) onCount?.();
    },
  });
  return (t: number, bytes: Uint8Array, control: StreamControl) => {
    onCount = () => {
      count++;
      firstT ??= t;
      // The stall rule (lib/deadlines.ts): once the stream shows its own gap, silence is judged against it.
      const gap = count > 1 ? (t - firstT) / (count - 1) : undefined;
      if (stallFloorMs === undefined) control.progress();
      else control.progress(stallLimitMs(stallFloorMs, gap), stallWhy);
      opts.onToken?.(t, count);
      if (opts.stopAfterTokens !== undefined && count >= opts.stopAfterTokens) control.abort(`stopped after ${count} token events (by the check)`);
    };
    const text = dec.decode(bytes, { stream: true });
    if (flavour === 'ollama-native') {
      lineBuf += text;
      const lines = lineBuf.split('\n');
      lineBuf = lines.pop() ?? '';
      for (const l of lines) if (l.trim() && liveTokenText(flavour, l)) onCount();
    } else sseParser.feed(text);
  };
}

/** The request body for a generation: model, profile extras, forced length when asked. */
export function generationBody(ctx: CheckContext, flavour: ApiFlavour, o: { prompt: string; maxTokens: number; stream: boolean; exactLength?: boolean; extra?: Record<string, unknown>; system?: string }): Record<string, unknown> {
  const force = o.exactLength ? ctx.profile.forceLength : undefined;
  const forceFields: Record<string, unknown> = {};
  if (force?.ignoreEos) forceFields.ignore_eos = true;
  if (force?.minTokens) forceFields.min_tokens = o.maxTokens;
  const messages = [...(o.system ? [{ role: 'system', content: o.system }] : []), { role: 'user', content: o.prompt }];
  switch (flavour) {
    case 'openai-chat':
      return { model: ctx.profile.model, messages, max_tokens: o.maxTokens, stream: o.stream, temperature: 0, ...(ctx.profile.extraBody ?? {}), ...forceFields, ...(o.extra ?? {}) };
    case 'openai-completions':
      return { model: ctx.profile.model, prompt: o.prompt, max_tokens: o.maxTokens, stream: o.stream, temperature: 0, ...forceFields, ...(o.extra ?? {}) };
    case 'anthropic-messages':
      return { model: ctx.profile.model, messages: [{ role: 'user', content: o.prompt }], ...(o.system ? { system: o.system } : {}), max_tokens: o.maxTokens, stream: o.stream, temperature: 0, ...(o.extra ?? {}) };
    case 'ollama-native':
      return { model: ctx.profile.model, messages, stream: o.stream, options: { num_predict: o.maxTokens, temperature: 0 }, ...(o.extra ?? {}) };
  }
}

/** A prompt that begins with text unique to this request and run. */
export function uniquePrompt(ctx: CheckContext, body: string): string {
  return `[request ${ctx.nonce()}] ${body}`;
}

/** Send a request in a flavour, record it raw, decode the stream, compute metrics. */
export async function send(ctx: CheckContext, flavour: ApiFlavour, body: unknown, opts: SendOptions = {}): Promise<Exchange> {
  const stream = typeof body === 'object' && body !== null && (body as { stream?: unknown }).stream !== false &&
    ((body as { stream?: unknown }).stream === true || flavour === 'ollama-native');
  const headers: Record<string, string> = { ...ctx.headers };
  if (flavour === 'anthropic-messages') headers['anthropic-version'] = '2023-06-01';
  if (stream && flavour !== 'ollama-native') headers.accept = 'text/event-stream';
  const signal = opts.signal ? AbortSignal.any([opts.signal, ctx.signal]) : ctx.signal;
  const key = paceKey(ctx.baseUrl, ctx.profile.model);
  const pace = paceOf(observations(key));
  // Deadlines sized from the pace (the profile's are floors); a caller's explicit deadlines are kept as given.
  const deadlines = requestDeadlines(ctx.deadlines, pace, shapeOf(flavour, body), opts.deadlines);
  const rec = await record({
    url: `${ctx.baseUrl}${PATHS[flavour]}`,
    method: 'POST',
    headers,
    body,
    deadlines,
    signal,
    tokenProgress: stream,
    onRead: stream ? liveDetector(flavour, opts, opts.deadlines?.tokenIdleMs === undefined ? ctx.deadlines.tokenIdleMs : undefined) : undefined,
    secrets: ctx.secrets,
  });
  const x = decodeExchange(flavour, rec, stream, pace?.charsPerToken);
  observeExchange(key, x);
  return x;
}

/** max_tokens and prompt size of a request body, for sizing its deadlines. */
function shapeOf(flavour: ApiFlavour, body: unknown): { maxTokens?: number; promptChars?: number } {
  if (typeof body !== 'object' || body === null) return {};
  const b = body as { max_tokens?: unknown; options?: { num_predict?: unknown }; messages?: unknown; prompt?: unknown };
  const mt = flavour === 'ollama-native' ? b.options?.num_predict : b.max_tokens;
  const prompt = JSON.stringify(b.messages ?? b.prompt ?? '');
  return { maxTokens: typeof mt === 'number' && mt > 0 ? mt : undefined, promptChars: prompt.length };
}

/** Feed the pace with a complete streamed answer (lib/pace.ts). */
function observeExchange(key: string, x: Exchange): void {
  const m = x.metrics;
  if (!m || !x.events || x.rec.status !== 200 || x.rec.failure || m.completionTokens === undefined || m.tokenSource === undefined) return;
  const usage = x.events.usage;
  const chars = [...x.events.tokens.map((t) => t.text).join('')].length;
  observe(key, {
    at: performance.now(),
    tokens: m.completionTokens,
    tokenSource: m.tokenSource,
    e2eMs: m.e2eMs,
    ttftMs: m.ttftMs,
    promptTokens: usage?.prompt_tokens,
    gapMs: median(m.itlMs),
    tokenEvents: x.events.tokens.length,
    tokenReads: new Set(x.events.tokens.map((t) => t.t)).size,
    charsPerToken: usage?.completion_tokens && chars > 0 ? chars / usage.completion_tokens : undefined,
  });
}

/** The pace this run has measured for the context's server (undefined before its first streamed answer). */
export function paceFor(ctx: CheckContext): Pace | undefined {
  return paceOf(observations(paceKey(ctx.baseUrl, ctx.profile.model)));
}

/** Tokens of the quick speed probe: a few seconds at 3 tok/s, enough for a per-token time. */
export const PROBE_TOKENS = 12;

/**
 * The pace of the context's server: what this run measured so far, or one short probe stream when nothing was
 * measured yet (a check run alone with -t). Undefined when the probe got no answer (the check's own requests will
 * show why).
 */
export async function measurePace(ctx: CheckContext): Promise<Pace | undefined> {
  const known = paceFor(ctx);
  if (known) return known;
  ctx.log(`measuring the server's speed first: one stream of ${PROBE_TOKENS} tokens`);
  await chat(ctx, generationBody(ctx, 'openai-chat', {
    prompt: uniquePrompt(ctx, 'Count from one to twenty in words.'), maxTokens: PROBE_TOKENS, stream: true, exactLength: true,
    extra: { stream_options: { include_usage: true } },
  }));
  return paceFor(ctx);
}

export function decodeExchange(flavour: ApiFlavour, rec: Recording, stream: boolean, charsPerToken?: number): Exchange {
  const ct = rec.headers['content-type'] ?? '';
  const looksSse = ct.includes('text/event-stream') || (stream && flavour !== 'ollama-native');
  if (stream && rec.status === 200 && looksSse && flavour !== 'ollama-native') {
    const sse = decodeSse(rec.reads);
    const events =
      flavour === 'openai-chat' ? openaiChatEvents(sse) : flavour === 'openai-completions' ? openaiCompletionEvents(sse) : anthropicEvents(sse);
    const metrics = requestMetrics({ tEnd: rec.tEnd, tokens: events.tokens, usageCompletionTokens: events.usage?.completion_tokens, charsPerToken });
    return { rec, sse, events, metrics };
  }
  if (stream && rec.status === 200 && flavour === 'ollama-native') {
    const events = ollamaEvents(decodeNdjson(rec.reads));
    const metrics = requestMetrics({ tEnd: rec.tEnd, tokens: events.tokens, usageCompletionTokens: events.usage?.completion_tokens, charsPerToken });
    return { rec, events, metrics };
  }
  const { json, error } = bodyJson(rec);
  return { rec, json, jsonError: error };
}

export function chat(ctx: CheckContext, body: unknown, opts?: SendOptions): Promise<Exchange> {
  return send(ctx, 'openai-chat', body, opts);
}

/** GET a path under the base URL (with auth headers), JSON-decoded. */
export async function getJson(ctx: CheckContext, path: string): Promise<Exchange> {
  const rec = await record({ url: `${ctx.baseUrl}${path}`, headers: ctx.headers, deadlines: ctx.deadlines, signal: ctx.signal, secrets: ctx.secrets });
  const { json, error } = bodyJson(rec);
  return { rec, json, jsonError: error };
}

/** A short human description of a failed exchange, for messages. */
export function describeExchange(x: Exchange): string {
  if (x.rec.failure) return `${x.rec.failure.kind}: ${x.rec.failure.message}${x.rec.status ? ` (after HTTP ${x.rec.status})` : ''}`;
  return `HTTP ${x.rec.status}`;
}
