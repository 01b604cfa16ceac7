// HTTP client that records every body read with a timestamp taken before any parsing.
// undici's request() over one keep-alive Agent per process (idle ≤ 4 s: uvicorn closes at 5 s).
import { Agent, request as undiciRequest, errors as undiciErrors } from 'undici';
import type { Deadlines, Recording, RequestFailure } from './types.ts';
import { redact } from './secrets.ts';

export const DEFAULT_DEADLINES: Deadlines = {
  connectMs: 5_000,
  headersMs: 60_000,
  tokenIdleMs: 30_000,
  totalMs: 120_000,
};

/** Raw bytes kept per recording; enough for every framing check, small enough for results files. */
export const MAX_RECORDED_BYTES = 1 << 20;

let sharedAgent: Agent | undefined;
function agent(connectMs: number): Agent {
  sharedAgent ??= new Agent({
    connections: null,
    pipelining: 1,
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 4_000,
    headersTimeout: 0, // our own deadlines apply (a long prefill is legitimate)
    bodyTimeout: 0,
    connect: { timeout: connectMs },
  });
  return sharedAgent;
}

/** Close pooled sockets (e.g. before a check that must see a fresh connection). */
export async function resetConnections(): Promise<void> {
  const a = sharedAgent;
  sharedAgent = undefined;
  if (a) await a.close().catch(() => undefined);
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'HEAD';
  url: string;
  headers?: Record<string, string>;
  /** Object bodies are JSON-encoded; strings/Uint8Array are sent as they are. */
  body?: unknown;
  deadlines?: Partial<Deadlines>;
  /** Caller's abort (e.g. cancel after N tokens). */
  signal?: AbortSignal;
  /** Called once when the status and headers have arrived, before the body (e.g. to hand a Response to a client). */
  onHeaders?: (status: number, headers: Record<string, string>) => void;
  /** Called synchronously for every body read (after its timestamp is taken). */
  onRead?: (t: number, bytes: Uint8Array, control: StreamControl) => void;
  /**
   * When set, the token-inactivity deadline applies and is reset only by control.progress():
   * the caller decides what a token-bearing event is (pings and comments are not progress).
   */
  tokenProgress?: boolean;
  /** Secrets to scrub from the recorded request body. */
  secrets?: string[];
  maxBytes?: number;
}

export interface StreamControl {
  /** Mark token progress (resets the token-inactivity deadline; `nextIdleMs` re-sizes it, `why` names the rule). */
  progress(nextIdleMs?: number, why?: string): void;
  /** Stop reading: closes the connection (the server sees a disconnect). */
  abort(reason?: string): void;
}

class Deadline extends Error {
  constructor(readonly kind: RequestFailure, message: string) {
    super(message);
  }
}

function classify(err: unknown, signalReason: unknown): { kind: RequestFailure; message: string } {
  if (signalReason instanceof Deadline) return { kind: signalReason.kind, message: signalReason.message };
  if (err instanceof Deadline) return { kind: err.kind, message: err.message };
  const e = err as { code?: string; message?: string; name?: string; cause?: { code?: string } };
  const code = e?.code ?? e?.cause?.code ?? '';
  const msg = `${e?.name ?? 'Error'}: ${e?.message ?? String(err)}${code ? ` (${code})` : ''}`;
  if (signalReason !== undefined) return { kind: 'aborted', message: String((signalReason as Error)?.message ?? signalReason) };
  if (err instanceof undiciErrors.ConnectTimeoutError || /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|EADDRNOTAVAIL|UND_ERR_CONNECT/.test(code))
    return { kind: 'connect', message: msg };
  return { kind: 'reset', message: msg };
}

/** A reset on a socket the pool had reused: retried once on a fresh connection, never graded. */
function isReusedSocketReset(rec: Recording): boolean {
  return rec.failure?.kind === 'reset' && rec.status === undefined && rec.reads.length === 0 && rec.tEnd < 1_000;
}

/**
 * Send one request and record it. Never throws for server behaviour: failures are in `failure`.
 * All deadlines are enforced, so no call can hang.
 */
export async function record(opts: RequestOptions): Promise<Recording> {
  const first = await recordOnce(opts);
  if (!isReusedSocketReset(first)) return first;
  await resetConnections();
  return recordOnce(opts);
}

async function recordOnce(opts: RequestOptions): Promise<Recording> {
  const d: Deadlines = { ...DEFAULT_DEADLINES, ...opts.deadlines };
  const maxBytes = opts.maxBytes ?? MAX_RECORDED_BYTES;
  const method = opts.method ?? (opts.body === undefined ? 'GET' : 'POST');
  const headers: Record<string, string> = { ...opts.headers };
  let payload: string | Uint8Array | undefined;
  if (typeof opts.body === 'string' || opts.body instanceof Uint8Array) payload = opts.body;
  else if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const ac = new AbortController();
  const timers: NodeJS.Timeout[] = [];
  const fail = (kind: RequestFailure, message: string) => {
    if (!ac.signal.aborted) ac.abort(new Deadline(kind, message));
  };
  timers.push(setTimeout(() => fail('total-timeout', `no end of response within ${d.totalMs} ms (total deadline)`), d.totalMs));
  const onCallerAbort = () => {
    if (!ac.signal.aborted) ac.abort(opts.signal?.reason ?? new Error('aborted by caller'));
  };
  if (opts.signal?.aborted) onCallerAbort();
  opts.signal?.addEventListener('abort', onCallerAbort, { once: true });

  let idleTimer: NodeJS.Timeout | undefined;
  let idleMs = d.tokenIdleMs;
  let idleWhy = 'token-inactivity deadline';
  let lastProgress = 0;
  // The caller may re-size the bound as the stream shows its own pace (lib/deadlines.ts: a stall is silence far
  // longer than the stream's own token gap). One timer per request, re-armed only when it fires early: a stream of
  // thousands of tokens per second must not churn a timer per token.
  const checkIdle = () => {
    const silent = performance.now() - lastProgress;
    if (silent >= idleMs) fail('token-idle', `no token-bearing event for ${Math.round(idleMs)} ms (${idleWhy}; pings and comments do not count)`);
    else idleTimer = setTimeout(checkIdle, idleMs - silent);
  };
  const armIdle = (nextMs?: number, why?: string) => {
    if (!opts.tokenProgress) return;
    if (nextMs !== undefined && nextMs > 0) {
      // A shorter bound (the first token's prefill allowance giving way to the stream's gap) needs an earlier timer.
      if (nextMs < idleMs && idleTimer) { clearTimeout(idleTimer); idleTimer = undefined; }
      idleMs = nextMs;
      idleWhy = why ?? idleWhy;
    }
    lastProgress = performance.now();
    idleTimer ??= setTimeout(checkIdle, idleMs);
  };

  const rec: Recording = {
    method,
    url: redact(opts.url, opts.secrets),
    requestBody: payload === undefined ? undefined : redact(typeof payload === 'string' ? payload : Buffer.from(payload).toString('utf8'), opts.secrets).slice(0, 64 * 1024),
    t0Abs: 0,
    headers: {},
    reads: [],
    tEnd: 0,
    body: new Uint8Array(0),
    truncated: false,
  };
  const parts: Uint8Array[] = [];
  let kept = 0;
  const control: StreamControl = {
    progress: armIdle,
    abort: (reason) => {
      if (!ac.signal.aborted) ac.abort(new Deadline('aborted', reason ?? 'aborted by check'));
    },
  };

  const t0 = performance.now();
  rec.t0Abs = t0;
  timers.push(setTimeout(() => fail('headers-timeout', `no response headers within ${d.headersMs} ms`), d.headersMs));
  const headersTimer = timers[timers.length - 1];
  try {
    const res = await undiciRequest(opts.url, {
      method,
      headers,
      body: payload,
      dispatcher: agent(d.connectMs),
      signal: ac.signal,
      maxRedirections: 0, // never follow redirects: the Authorization header must not travel to another origin
    } as Parameters<typeof undiciRequest>[1]);
    rec.tHeaders = performance.now() - t0;
    clearTimeout(headersTimer);
    rec.status = res.statusCode;
    for (const [k, v] of Object.entries(res.headers)) rec.headers[k] = Array.isArray(v) ? v.join(', ') : String(v ?? '');
    opts.onHeaders?.(res.statusCode, rec.headers);
    armIdle();
    for await (const chunk of res.body) {
      const t = performance.now() - t0; // timestamp first, before any parsing
      const bytes = chunk as Uint8Array;
      rec.reads.push({ t, bytes: kept < maxBytes ? bytes : new Uint8Array(0) });
      if (kept < maxBytes) {
        const room = maxBytes - kept;
        parts.push(bytes.length <= room ? bytes : bytes.subarray(0, room));
        kept += Math.min(bytes.length, room);
        if (bytes.length > room) rec.truncated = true;
      } else rec.truncated = true;
      opts.onRead?.(t, bytes, control);
      if (ac.signal.aborted) break;
    }
    if (ac.signal.aborted) rec.failure = classify(ac.signal.reason, ac.signal.reason);
  } catch (err) {
    rec.failure = classify(err, ac.signal.aborted ? ac.signal.reason : undefined);
  } finally {
    rec.tEnd = performance.now() - t0;
    for (const t of timers) clearTimeout(t);
    if (idleTimer) clearTimeout(idleTimer);
    opts.signal?.removeEventListener('abort', onCallerAbort);
  }
  rec.body = concat(parts, kept);
  return rec;
}

function concat(parts: Uint8Array[], n: number): Uint8Array {
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export function bodyText(rec: Recording): string {
  return new TextDecoder().decode(rec.body);
}

/** Body parsed as JSON, or undefined with the reason. */
export function bodyJson(rec: Recording): { json?: unknown; error?: string } {
  const text = bodyText(rec).trim();
  if (!text) return { error: 'empty body' };
  try {
    return { json: JSON.parse(text) };
  } catch (e) {
    return { error: `not JSON: ${(e as Error).message}` };
  }
}
