// Requests in each API flavour, recorded raw and decoded: what checks call.
// A generation request is built from the profile (model, extraBody, forced length) and starts with
// text unique to the request and the run, so no prefix cache can make a repeat faster.

import { redact } from '../config/secrets.ts';
import {
  type NdjsonDecoded,
  NdjsonStreamDecoder,
  type SseDecoded,
  SseStreamDecoder,
} from '../decode/stream-decoder.ts';
import {
  anthropicAdapter,
  ollamaAdapter,
  openaiChatAdapter,
  openaiCompletionAdapter,
  type SseAdapter,
  type StreamEvents,
} from '../decode/stream-events.ts';
import { bodyJson, MAX_RECORDED_BYTES, record } from '../http/recorder.ts';
import { streamGuards } from '../http/stream-guards.ts';
import { lazyFields } from '../lazy.ts';
import {
  describeEvidence,
  endingListener,
  evidenceFor,
  noteEnding,
  requestKind,
  seenInCheck,
} from '../measure/deadline-evidence.ts';
import { requestDeadlines, STALL_FACTOR, stallLimitMs } from '../measure/deadlines.ts';
import { observations, observe, type Pace, paceKey, paceOf } from '../measure/pace.ts';
import { type RequestMetrics, requestMetrics } from '../measure/request-metrics.ts';
import { median } from '../measure/stats.ts';
import type { Requester, RunMemory } from '../model/check.ts';
import type { ApiFlavour, Recording } from '../model/types.ts';

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

interface SendOptions {
  /** Abort (disconnect) after this many token-bearing events. */
  stopAfterTokens?: number;
  /** Override the profile deadlines for this request. */
  deadlines?: Partial<Requester['deadlines']>;
  signal?: AbortSignal;
  /** Called live for each token-bearing event (t in ms since t0). */
  onToken?: (t: number, count: number) => void;
  /**
   * This request is the evidence of how answers of its kind end (the sse family's streams: sse.done-terminator): sent
   * even when another check has seen one of its kind never end.
   */
  judgesEnd?: boolean;
}

/** Each API flavour's generation endpoint (also what the health probe asks, lib/server/health.ts). */
export const GENERATION_PATH: Record<ApiFlavour, string> = {
  'openai-chat': '/v1/chat/completions',
  'openai-completions': '/v1/completions',
  'anthropic-messages': '/v1/messages',
  'ollama-native': '/api/chat',
};

type StreamMode = 'sse' | 'ndjson';

/** How a finished response is decoded: an SSE or NDJSON stream (a 200 answer to a streaming request), else a JSON body. */
function streamMode(flavour: ApiFlavour, rec: Recording, stream: boolean): StreamMode | undefined {
  if (!stream || rec.status !== 200) return undefined;
  if (flavour === 'ollama-native') return 'ndjson';
  return 'sse'; // the request asked for a stream: decoded as SSE whatever the content type says (sse checks judge that)
}

function sseAdapterFor(flavour: ApiFlavour): SseAdapter {
  return flavour === 'openai-chat'
    ? openaiChatAdapter()
    : flavour === 'openai-completions'
      ? openaiCompletionAdapter()
      : anthropicAdapter();
}

/**
 * Decodes a stream once, as it is read: UTF-8, SSE (or NDJSON), one JSON.parse per event, the flavour's token stream.
 * Token-bearing events drive the live controls (token-inactivity deadline, onToken, stopAfterTokens). At the end the
 * same Exchange as decodeExchange() over the recording — except that a stream longer than the recorder's byte cap is
 * still decoded to its end (its events, text and chunks are kept only as far as its bytes are).
 */
export class StreamDecode {
  private readonly sse?: SseStreamDecoder;
  private readonly nd?: NdjsonStreamDecoder;
  private readonly adapter: { readonly out: StreamEvents };
  private count = 0;

  /**
   * `lazy`: while the stream is live keep only its raw reads and what the live controls and metrics need (tokens,
   * usage, finish reasons, errors); the decoded text, events and parsed chunks are built from the reads when a check
   * first reads them, identical to what an eager decode keeps (lib/decode/stream-decoder.ts, `lazy`).
   */
  constructor(
    private readonly flavour: ApiFlavour,
    retainBytes: number,
    private readonly lazy = false,
  ) {
    if (flavour === 'ollama-native') {
      const nd = new NdjsonStreamDecoder({ retainBytes, lazy });
      const a = ollamaAdapter();
      // Lazy: a retained line keeps only its token columns (the rest is rebuilt from it); past the cap, its text.
      nd.onLine = (l) => a.line(l, nd.retaining && !lazy, !(lazy && nd.retaining));
      this.nd = nd;
      this.adapter = a;
    } else {
      const sse = new SseStreamDecoder({ retainBytes, lazy });
      const a = sseAdapterFor(flavour);
      sse.onEvent = (ev) => a.event(ev, sse.retaining && !lazy, !(lazy && sse.retaining));
      this.sse = sse;
      this.adapter = a;
    }
  }

  /** One body read (`recorded`: the recording keeps it whole); returns the number of token-bearing events it completed. */
  push(t: number, bytes: Uint8Array, recorded = false): number {
    const before = this.adapter.out.tokenTimes.length;
    if (this.sse) this.sse.push(t, bytes, recorded);
    else this.nd!.push(t, bytes, recorded);
    return this.adapter.out.tokenTimes.length - before;
  }

  /**
   * For SendOptions: progress, onToken and stopAfterTokens on every token-bearing event. With `stallFloorMs`, the
   * token-inactivity bound follows the stall rule (lib/measure/deadlines.ts): once the stream shows its own mean gap, silence
   * is judged against it, never below the floor.
   */
  reader(opts: SendOptions, stallFloorMs?: number) {
    let firstT: number | undefined;
    const why = `stall rule: silence over ${STALL_FACTOR}x the stream's own mean token gap, at least ${stallFloorMs} ms`;
    return (
      t: number,
      bytes: Uint8Array,
      control: { progress(nextIdleMs?: number, why?: string): void; abort(r?: string): void },
      recorded = false,
    ) => {
      const n = this.push(t, bytes, recorded);
      for (let i = 0; i < n; i++) {
        const count = ++this.count;
        firstT ??= t;
        if (stallFloorMs === undefined) control.progress();
        else control.progress(stallLimitMs(stallFloorMs, count > 1 ? (t - firstT) / (count - 1) : undefined), why);
        opts.onToken?.(t, count);
        if (opts.stopAfterTokens !== undefined && count >= opts.stopAfterTokens)
          control.abort(`stopped after ${count} token events (by the check)`);
      }
    };
  }

  finish(rec: Recording, stream: boolean, charsPerToken?: number): Exchange {
    const mode = streamMode(this.flavour, rec, stream);
    if (mode === undefined) {
      // A body whose transfer failed is no answer, even when the bytes that came parse (a Content-Length longer than the body).
      if (rec.failure?.kind === 'not-json') return { rec, jsonError: rec.failure.message };
      if (rec.failure && rec.failure.kind !== 'aborted')
        return { rec, jsonError: `the response did not complete (${rec.failure.kind}: ${rec.failure.message})` };
      const { json, error } = bodyJson(rec);
      return { rec, json, jsonError: error };
    }
    // The reads the recording keeps are replayed from it (the decoder counted them instead of keeping them).
    const decoder = this.sse ?? this.nd!;
    decoder.recorded = () => rec.reads;
    // End of input first: it may complete a last line (NDJSON without a final newline) before the figures are taken.
    const nd = mode === 'ndjson' ? this.nd!.end() : undefined;
    const sse = mode === 'sse' ? this.sse!.end() : undefined;
    const events = this.adapter.out;
    if (this.lazy) lazyText(this.flavour, events, sse, nd);
    const metrics = requestMetrics({
      tEnd: rec.tEnd,
      columns: { times: events.tokenTimes, chars: events.tokenChars },
      usageCompletionTokens: events.usage?.completion_tokens,
      charsPerToken,
    });
    return sse ? { rec, sse, events, metrics } : { rec, events, metrics };
  }
}

/**
 * The parsed chunks, tokens, text and reasoning of a lazily decoded stream, on first read: the flavour's adapter
 * replayed over the retained events, followed by what the live adapter kept of the events past the byte cap.
 */
function lazyText(flavour: ApiFlavour, events: StreamEvents, sse?: SseDecoded, nd?: NdjsonDecoded): void {
  const tail = { tokens: events.tokens, text: events.text, reasoning: events.reasoning };
  lazyFields(events, ['chunks', 'tokens', 'text', 'reasoning'], () => {
    let out: StreamEvents;
    if (nd) {
      const a = ollamaAdapter();
      for (const l of nd.lines) a.line(l);
      out = a.out;
    } else {
      const a = sseAdapterFor(flavour);
      for (const ev of sse?.events ?? []) a.event(ev);
      out = a.out;
    }
    return {
      chunks: out.chunks,
      tokens: tail.tokens.length ? [...out.tokens, ...tail.tokens] : out.tokens,
      text: out.text + tail.text,
      reasoning: out.reasoning + tail.reasoning,
    };
  });
}

/** The request body for a generation: model, profile extras, forced length when asked. */
export function generationBody(
  ctx: Requester,
  flavour: ApiFlavour,
  o: {
    prompt: string;
    maxTokens: number;
    stream: boolean;
    exactLength?: boolean;
    extra?: Record<string, unknown>;
    system?: string;
  },
): Record<string, unknown> {
  const force = o.exactLength ? ctx.profile.forceLength : undefined;
  const forceFields: Record<string, unknown> = {};
  if (force?.ignoreEos) forceFields.ignore_eos = true;
  if (force?.minTokens) forceFields.min_tokens = o.maxTokens;
  const messages = [...(o.system ? [{ role: 'system', content: o.system }] : []), { role: 'user', content: o.prompt }];
  switch (flavour) {
    case 'openai-chat':
      return {
        model: ctx.profile.model,
        messages,
        max_tokens: o.maxTokens,
        stream: o.stream,
        temperature: 0,
        ...(ctx.profile.extraBody ?? {}),
        ...forceFields,
        ...(o.extra ?? {}),
      };
    case 'openai-completions':
      return {
        model: ctx.profile.model,
        prompt: o.prompt,
        max_tokens: o.maxTokens,
        stream: o.stream,
        temperature: 0,
        ...forceFields,
        ...(o.extra ?? {}),
      };
    case 'anthropic-messages':
      return {
        model: ctx.profile.model,
        messages: [{ role: 'user', content: o.prompt }],
        ...(o.system ? { system: o.system } : {}),
        max_tokens: o.maxTokens,
        stream: o.stream,
        temperature: 0,
        ...(o.extra ?? {}),
      };
    case 'ollama-native':
      return {
        model: ctx.profile.model,
        messages,
        stream: o.stream,
        options: { num_predict: o.maxTokens, temperature: 0 },
        ...(o.extra ?? {}),
      };
  }
}

/** A prompt that begins with text unique to this request and run. */
export function uniquePrompt(ctx: Requester, body: string): string {
  return `[request ${ctx.nonce()}] ${body}`;
}

/** Send a request in a flavour, record it raw, decode the stream as it arrives, compute metrics. */
export async function send(
  ctx: Requester,
  flavour: ApiFlavour,
  body: unknown,
  opts: SendOptions = {},
): Promise<Exchange> {
  const stream =
    typeof body === 'object' &&
    body !== null &&
    (body as { stream?: unknown }).stream !== false &&
    ((body as { stream?: unknown }).stream === true || flavour === 'ollama-native');
  const headers: Record<string, string> = { ...ctx.headers };
  if (flavour === 'anthropic-messages') headers['anthropic-version'] = '2023-06-01';
  if (stream && flavour !== 'ollama-native') headers.accept = 'text/event-stream';
  const signal = opts.signal ? AbortSignal.any([opts.signal, ctx.signal]) : ctx.signal;
  const key = paceKey(ctx.baseUrl, ctx.profile.model);
  const pace = paceOf(observations(ctx.memory, key));
  // Deadlines sized from the pace (the profile's are floors, lowered only by this run's evidence that requests of
  // this kind get no end: lib/measure/deadline-evidence.ts); a caller's explicit deadlines are kept as given.
  const url = `${ctx.baseUrl}${GENERATION_PATH[flavour]}`;
  const kind = requestKind('POST', url, { ...(body as object), stream });
  const seen = evidenceFor(ctx.memory, kind);
  // Another check of this run has seen a stream of this kind run far past its max_tokens with no end: one that needs a
  // complete answer would only repeat that (seconds each, for nothing). It is not sent; its recording says why, and a
  // check built on it is blocked by the first to report it (suites/support/root-causes.ts, lib/check/blocked.ts).
  if (
    seen?.kind === 'endless' &&
    seenInCheck(seen) &&
    seen.check !== ctx.owner &&
    opts.stopAfterTokens === undefined &&
    !opts.judgesEnd
  )
    return notSent(
      ctx,
      flavour,
      url,
      body,
      stream,
      { kind: kind!, seenIn: seen.check },
      `not sent: this run has seen ${describeEvidence(seen)}; a request of this kind that needs a complete answer would not get one`,
    );
  const deadlines = requestDeadlines(ctx.deadlines, pace, shapeOf(flavour, body), opts.deadlines, seen);
  const decode = stream ? new StreamDecode(flavour, MAX_RECORDED_BYTES, true) : undefined;
  // Cut a stream that runs away (far past max_tokens) or sends one endless line: the server's failure, bounded.
  const guards = streamGuards(body);
  const detectorOpts: SendOptions = {
    ...opts,
    onToken: (t, n) => {
      guards.onToken(n);
      opts.onToken?.(t, n);
    },
  };
  const stallFloorMs = opts.deadlines?.tokenIdleMs === undefined ? ctx.deadlines.tokenIdleMs : undefined;
  const rec = await record({
    url,
    method: 'POST',
    headers,
    body,
    deadlines,
    signal,
    tokenProgress: stream,
    wholeJson: !stream,
    onRead: decode ? guards.wrap(decode.reader(detectorOpts, stallFloorMs)) : undefined,
    secrets: ctx.secrets,
    maxBytes: MAX_RECORDED_BYTES,
    onEnded: endingListener(ctx, 'POST', url, body, ctx.deadlines),
  });
  const x = decode
    ? decode.finish(rec, stream, pace?.charsPerToken)
    : decodeExchange(flavour, rec, stream, pace?.charsPerToken);
  observeExchange(ctx.memory, key, x);
  if (guards.ranAway) {
    // Past max_tokens with no end in sight: later streams of this kind get a total sized from this one's own pace.
    const times = x.events?.tokenTimes ?? [];
    const gapMs = times.length > 1 ? (times.at(-1)! - times[0]!) / (times.length - 1) : undefined;
    noteEnding(ctx, kind, rec, ctx.deadlines, undefined, { gapMs, ttftMs: times[0] });
  }
  return x;
}

/** The exchange of a request not sent (its failure says why): no status, no byte, nothing in the journal. */
function notSent(
  ctx: Requester,
  flavour: ApiFlavour,
  url: string,
  body: unknown,
  stream: boolean,
  notSent: NonNullable<Recording['notSent']>,
  why: string,
): Exchange {
  const rec: Recording = {
    method: 'POST',
    url,
    requestBody: redact(JSON.stringify(body), ctx.secrets).slice(0, 64 * 1024),
    t0Abs: performance.now(),
    headers: {},
    reads: [],
    tEnd: 0,
    body: new Uint8Array(0),
    truncated: false,
    wireBytes: 0,
    failure: { kind: 'overflow', message: why },
    notSent,
  };
  return decodeExchange(flavour, rec, stream);
}

/** max_tokens and prompt size of a request body, for sizing its deadlines. */
function shapeOf(flavour: ApiFlavour, body: unknown): { maxTokens?: number; promptChars?: number } {
  if (typeof body !== 'object' || body === null) return {};
  const b = body as { max_tokens?: unknown; options?: { num_predict?: unknown }; messages?: unknown; prompt?: unknown };
  const mt = flavour === 'ollama-native' ? b.options?.num_predict : b.max_tokens;
  const prompt = JSON.stringify(b.messages ?? b.prompt ?? '');
  return { maxTokens: typeof mt === 'number' && mt > 0 ? mt : undefined, promptChars: prompt.length };
}

/** Feed the pace with a complete streamed answer (lib/measure/pace.ts). */
function observeExchange(memory: RunMemory, key: string, x: Exchange): void {
  const m = x.metrics;
  if (
    !m ||
    !x.events ||
    x.rec.status !== 200 ||
    x.rec.failure ||
    m.completionTokens === undefined ||
    m.tokenSource === undefined
  )
    return;
  const usage = x.events.usage;
  const { tokenTimes, tokenChars } = x.events;
  let chars = 0;
  let tokenReads = 0;
  for (let i = 0; i < tokenTimes.length; i++) {
    chars += tokenChars[i]!;
    if (i === 0 || tokenTimes[i] !== tokenTimes[i - 1]) tokenReads++; // times never decrease: a new time, a new read
  }
  observe(memory, key, {
    at: performance.now(),
    tokens: m.completionTokens,
    tokenSource: m.tokenSource,
    e2eMs: m.e2eMs,
    ttftMs: m.ttftMs,
    promptTokens: usage?.prompt_tokens,
    gapMs: median(m.itlMs),
    tokenEvents: tokenTimes.length,
    tokenReads,
    charsPerToken: usage?.completion_tokens && chars > 0 ? chars / usage.completion_tokens : undefined,
  });
}

/** The pace this run has measured for the context's server (undefined before its first streamed answer). */
export function paceFor(ctx: Requester): Pace | undefined {
  return paceOf(observations(ctx.memory, paceKey(ctx.baseUrl, ctx.profile.model)));
}

/** Tokens of the quick speed probe: a few seconds at 3 tok/s, enough for a per-token time. */
const PROBE_TOKENS = 12;

/**
 * The pace of the context's server: what this run measured so far, or one short probe stream when nothing was
 * measured yet (a check run alone with -t). Undefined when the probe got no answer (the check's own requests will
 * show why).
 */
export async function measurePace(ctx: Requester): Promise<Pace | undefined> {
  const known = paceFor(ctx);
  if (known) return known;
  ctx.log(`measuring the server's speed first: one stream of ${PROBE_TOKENS} tokens`);
  await chat(
    ctx,
    generationBody(ctx, 'openai-chat', {
      prompt: uniquePrompt(ctx, 'Count from one to twenty in words.'),
      maxTokens: PROBE_TOKENS,
      stream: true,
      exactLength: true,
      extra: { stream_options: { include_usage: true } },
    }),
  );
  return paceFor(ctx);
}

/** Decode a finished recording (the same decoding send() does live). */
export function decodeExchange(flavour: ApiFlavour, rec: Recording, stream: boolean, charsPerToken?: number): Exchange {
  const d = new StreamDecode(flavour, Infinity);
  if (streamMode(flavour, rec, stream)) for (const r of rec.reads) d.push(r.t, r.bytes);
  return d.finish(rec, stream, charsPerToken);
}

export function chat(ctx: Requester, body: unknown, opts?: SendOptions): Promise<Exchange> {
  return send(ctx, 'openai-chat', body, opts);
}

/** GET a path under the base URL (with auth headers), JSON-decoded. */
export async function getJson(ctx: Requester, path: string): Promise<Exchange> {
  const rec = await record({
    url: `${ctx.baseUrl}${path}`,
    headers: ctx.headers,
    deadlines: ctx.deadlines,
    signal: ctx.signal,
    secrets: ctx.secrets,
  });
  const { json, error } = bodyJson(rec);
  return { rec, json, jsonError: error };
}

/** A short human description of a failed exchange, for messages. */
export function describeExchange(x: Exchange): string {
  if (x.rec.failure)
    return `${x.rec.failure.kind}: ${x.rec.failure.message}${x.rec.status ? ` (after HTTP ${x.rec.status})` : ''}`;
  return `HTTP ${x.rec.status}`;
}
