// HTTP client that records every body read with a timestamp taken before any parsing.
// undici's dispatch() with a handler of ours, over one keep-alive Agent per process (idle ≤ 4 s: uvicorn closes at 5 s).
import { Readable } from 'node:stream';
import { Agent, errors as undiciErrors } from 'undici';
import { redact } from '../config/secrets.ts';
import { lazyFields } from '../lazy.ts';
import type { BodyRead, Deadlines, Recording, RequestFailure } from '../model/types.ts';
import {
  CAPS,
  chargeRun,
  chunkDecoder,
  type JournalEntry,
  journalStart,
  parseUrl,
  recordingCaps,
  withSocketUse,
} from './transport.ts';

export const DEFAULT_DEADLINES: Deadlines = {
  connectMs: 5_000,
  headersMs: 60_000,
  tokenIdleMs: 30_000,
  totalMs: 120_000,
};

/** Raw bytes kept per recording; enough for every framing check, small enough for results files. */
export const MAX_RECORDED_BYTES = CAPS.recordedBytesPerStream;

let sharedAgent: Agent | undefined;
function newAgent(connectMs: number): Agent {
  return new Agent({
    connections: null,
    pipelining: 1,
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 4_000,
    headersTimeout: 0, // our own deadlines apply (a long prefill is legitimate)
    bodyTimeout: 0,
    connect: { timeout: connectMs },
  });
}
function agent(connectMs: number): Agent {
  sharedAgent ??= newAgent(connectMs);
  return sharedAgent;
}

/** Close pooled sockets (e.g. before a check that must see a fresh connection). */
export async function resetConnections(): Promise<void> {
  const a = sharedAgent;
  sharedAgent = undefined;
  if (a) await a.close().catch(() => undefined);
}

interface RequestOptions {
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
  /**
   * Called synchronously for every body read (after its timestamp is taken). `recorded`: the recording keeps this
   * read whole, with its time (rec.reads gives it back), so a caller replaying the reads later need not keep it.
   */
  onRead?: (t: number, bytes: Uint8Array, control: StreamControl, recorded: boolean) => void;
  /**
   * When set, the token-inactivity deadline applies and is reset only by control.progress():
   * the caller decides what a token-bearing event is (pings and comments are not progress).
   */
  tokenProgress?: boolean;
  /** Secrets to scrub from the recorded request body. */
  secrets?: string[];
  maxBytes?: number;
  /**
   * A non-streamed answer, which must be one JSON object: a 2xx body whose first non-space byte is not `{` (an SSE
   * body, an HTML page, text) is cut there (`not-json`), and a body that has begun must end within the stall floor
   * (tokenIdleMs): a whole answer is sent at once when it is done, so one that keeps coming or trickles has stalled
   * (`token-idle`, wholeBody()).
   */
  wholeJson?: boolean;
  /**
   * Told the recording when the exchange has ended (after its one retry): the run's deadline evidence listens here
   * (lib/measure/deadline-evidence.ts endingListener), so a kind of request the server leaves without an end is known.
   */
  onEnded?: (rec: Recording) => void;
}

export interface StreamControl {
  /** Mark token progress (resets the token-inactivity deadline; `nextIdleMs` re-sizes it, `why` names the rule). */
  progress(nextIdleMs?: number, why?: string): void;
  /** Stop reading: closes the connection (the server sees a disconnect). */
  abort(reason?: string): void;
  /** Stop reading because the server sent too much (past a cap, past max_tokens): graded as the server's failure. */
  overflow(reason: string): void;
}

class Deadline extends Error {
  constructor(
    readonly kind: RequestFailure,
    message: string,
  ) {
    super(message);
  }
}

function classify(err: unknown, signalReason: unknown): { kind: RequestFailure; message: string } {
  if (signalReason instanceof Deadline) return { kind: signalReason.kind, message: signalReason.message };
  if (err instanceof Deadline) return { kind: err.kind, message: err.message };
  const e = err as { code?: string; message?: string; name?: string; cause?: { code?: string } };
  const code = e?.code ?? e?.cause?.code ?? '';
  const msg = `${e?.name ?? 'Error'}: ${e?.message ?? String(err)}${code ? ` (${code})` : ''}`;
  if (signalReason !== undefined)
    return { kind: 'aborted', message: String((signalReason as Error)?.message ?? signalReason) };
  if (
    err instanceof undiciErrors.ConnectTimeoutError ||
    /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|EADDRNOTAVAIL|UND_ERR_CONNECT/.test(code)
  )
    return { kind: 'connect', message: msg };
  return { kind: 'reset', message: msg };
}

/**
 * A reset before any response on a socket that had carried an earlier request (the keep-alive race: the server
 * closed it idle just as we reused it). Only this is retried, once, on a fresh connection; a reset on a fresh
 * connection is the server's own doing and is graded.
 */
function isReusedSocketReset(rec: Recording): boolean {
  return rec.failure?.kind === 'reset' && rec.status === undefined && rec.socketReused === true;
}

/**
 * Send one request and record it. Never throws for server behaviour: failures are in `failure`.
 * All deadlines are enforced, so no call can hang.
 */
export async function record(opts: RequestOptions): Promise<Recording> {
  const rec = await recordRetrying(opts);
  opts.onEnded?.(rec);
  return rec;
}

async function recordRetrying(opts: RequestOptions): Promise<Recording> {
  const first = await recordOnce(opts);
  if (!isReusedSocketReset(first)) return first;
  // A dispatcher of its own guarantees a fresh connection without closing sockets other requests are using.
  const fresh = newAgent(opts.deadlines?.connectMs ?? DEFAULT_DEADLINES.connectMs);
  try {
    const second = await recordOnce(opts, fresh);
    second.retriedAfter = first.failure!.message;
    return second;
  } finally {
    void fresh.close().catch(() => undefined);
  }
}

/** One request as sent: method, headers and the encoded body. */
interface Outgoing {
  method: NonNullable<RequestOptions['method']>;
  headers: Record<string, string>;
  payload: string | Uint8Array | undefined;
}

/** One attempt at a request: its deadlines and abort, what the caller controls, and the recording so far. */
interface Attempt {
  readonly opts: RequestOptions;
  readonly d: Deadlines;
  readonly caps: { bytes: number; reads: number };
  readonly ac: AbortController;
  readonly timers: NodeJS.Timeout[];
  readonly onCallerAbort: () => void;
  readonly rec: Recording;
  readonly entry: JournalEntry;
  readonly control: StreamControl;
  /** The body's reads as kept (within the caps). */
  readonly kept: KeptReads;
  wire: number;
  idleTimer: NodeJS.Timeout | undefined;
  /** performance.now() of the last token progress (the token-inactivity bound runs from it). */
  progressAt: number;
  idleMs: number;
  idleWhy: string;
  headersTimer: NodeJS.Timeout | undefined;
  /** wholeJson: the first non-space byte of the body has been seen (and judged). */
  bodyBegun?: boolean;
  /** performance.now() when the request was sent: every time in the recording is relative to it. */
  t0: number;
  /** Which kind of socket the request went out on (set when it is dispatched). */
  socketUse?: { reused?: boolean };
}

async function recordOnce(opts: RequestOptions, dispatcher?: Agent): Promise<Recording> {
  const out = outgoing(opts);
  const a = startAttempt(opts, out);
  try {
    await exchange(a, out, dispatcher);
  } catch (err) {
    failed(a, err);
  } finally {
    stopAttempt(a);
  }
  return finishRecording(a);
}

function outgoing(opts: RequestOptions): Outgoing {
  const method = opts.method ?? (opts.body === undefined ? 'GET' : 'POST');
  const headers: Record<string, string> = { ...opts.headers };
  let payload: string | Uint8Array | undefined;
  if (typeof opts.body === 'string' || opts.body instanceof Uint8Array) payload = opts.body;
  else if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  return { method, headers, payload };
}

/** Arms the total deadline, wires the caller's abort, opens the recording and its journal entry; t0 is taken last. */
function startAttempt(opts: RequestOptions, out: Outgoing): Attempt {
  const d: Deadlines = { ...DEFAULT_DEADLINES, ...opts.deadlines };
  const ac = new AbortController();
  const requestBody =
    out.payload === undefined
      ? undefined
      : redact(
          typeof out.payload === 'string' ? out.payload : Buffer.from(out.payload).toString('utf8'),
          opts.secrets,
        ).slice(0, 64 * 1024);
  const url = redact(opts.url, opts.secrets);
  const caps = recordingCaps(opts.maxBytes);
  const a: Attempt = {
    opts,
    d,
    ac,
    caps,
    timers: [],
    onCallerAbort: () => {
      if (!ac.signal.aborted) ac.abort(opts.signal?.reason ?? new Error('aborted by caller'));
    },
    rec: {
      method: out.method,
      url,
      requestBody,
      t0Abs: 0,
      headers: {},
      reads: [],
      tEnd: 0,
      body: new Uint8Array(0),
      truncated: false,
    },
    entry: journalStart({ method: out.method, url, body: requestBody?.slice(0, 2_000), tStart: Date.now() }),
    control: {
      progress: (nextIdleMs, why) => armIdle(a, nextIdleMs, why),
      abort: (reason) => {
        if (!ac.signal.aborted) ac.abort(new Deadline('aborted', reason ?? 'aborted by check'));
      },
      overflow: (reason) => cut(a, 'overflow', reason),
    },
    kept: new KeptReads(caps),
    wire: 0,
    idleTimer: undefined,
    progressAt: 0,
    idleMs: d.tokenIdleMs,
    idleWhy: 'token-inactivity deadline',
    headersTimer: undefined,
    t0: 0,
  };
  const sized = d.sizedBy ? ` (${d.sizedBy})` : '';
  a.timers.push(
    setTimeout(
      () => cut(a, 'total-timeout', `no end of response within ${Math.round(d.totalMs)} ms (total deadline)${sized}`),
      d.totalMs,
    ),
  );
  if (opts.signal?.aborted) a.onCallerAbort();
  opts.signal?.addEventListener('abort', a.onCallerAbort, { once: true });
  a.t0 = performance.now();
  a.rec.t0Abs = a.t0;
  a.headersTimer = setTimeout(
    () => cut(a, 'headers-timeout', `no response headers within ${Math.round(d.headersMs)} ms${sized}`),
    d.headersMs,
  );
  a.timers.push(a.headersTimer);
  return a;
}

/** Ends the attempt with a deadline's (or the server's) failure, unless it already ended. */
function cut(a: Attempt, kind: RequestFailure, message: string): void {
  if (!a.ac.signal.aborted) a.ac.abort(new Deadline(kind, message));
}

/**
 * The caller may re-size the bound as the stream shows its own pace (lib/measure/deadlines.ts: a stall is silence far
 * longer than the stream's own token gap). This runs on every token event (thousands of times a second on a fast
 * server), so progress only notes the time; the timer, when it fires, re-arms itself for what is left of the bound
 * since the last progress (the same deadline as re-arming it on every event, without touching the timer list per
 * event). It is re-created only when the bound changes by more than a tenth.
 */
function armIdle(a: Attempt, nextMs?: number, why?: string): void {
  if (!a.opts.tokenProgress) return;
  a.progressAt = performance.now();
  if (nextMs !== undefined && nextMs > 0 && Math.abs(nextMs - a.idleMs) > 0.1 * a.idleMs) {
    a.idleMs = nextMs;
    a.idleWhy = why ?? a.idleWhy;
    if (a.idleTimer) {
      clearTimeout(a.idleTimer);
      a.idleTimer = undefined;
    }
  }
  if (!a.idleTimer) idleTimer(a, a.idleMs);
}

function idleTimer(a: Attempt, ms: number): void {
  a.idleTimer = setTimeout(() => {
    const left = a.progressAt + a.idleMs - performance.now();
    // Timers run on whole milliseconds: within one of the bound is the bound.
    if (left > 1) return idleTimer(a, left);
    cut(
      a,
      'token-idle',
      `no token-bearing event for ${Math.round(a.idleMs)} ms (${a.idleWhy}; pings and comments do not count)`,
    );
  }, ms);
}

/** undici's handler controller (its new handler API): what the recorder uses of it. */
interface DispatchController {
  abort(reason: unknown): void;
  pause(): void;
  resume(): void;
}

/**
 * Sends the request and reads the response; a deadline or abort is left in the signal, other failures reject.
 * undici's dispatch() with a handler of ours: each body read comes straight from its HTTP parser, timestamped on
 * arrival, with no Readable stream between (request()'s body stream cost ~15 % of the client's CPU per event,
 * BENCHMARKS.md issue 23). A compressed body goes through a Readable of ours, its decoder being asynchronous.
 */
function exchange(a: Attempt, out: Outgoing, dispatcher?: Agent): Promise<void> {
  // Redirects are never followed (a plain dispatch has no redirect handling): the Authorization header must not
  // travel to another origin; checks see the 3xx itself.
  const u = parseUrl(a.opts.url);
  // As new URL() says it (never with the URL itself: it may carry credentials).
  if (!u) return Promise.reject(Object.assign(new TypeError('Invalid URL'), { code: 'ERR_INVALID_URL' }));
  return new Promise<void>((resolve, reject) => {
    let controller: DispatchController | undefined;
    let compressed: { queue: Readable; done: Promise<void> } | undefined;
    let settled = false;
    const onAbort = () => controller?.abort(a.ac.signal.reason);
    const settle = (err?: unknown) => {
      if (settled) return;
      settled = true;
      a.ac.signal.removeEventListener('abort', onAbort);
      if (err === undefined) resolve();
      else reject(err);
    };
    a.ac.signal.addEventListener('abort', onAbort, { once: true });
    const handler = {
      onRequestStart(c: DispatchController) {
        controller = c;
        if (a.ac.signal.aborted) c.abort(a.ac.signal.reason);
      },
      onResponseStart(c: DispatchController, status: number, headers: Record<string, string | string[] | undefined>) {
        readHeaders(a, status, headers);
        armIdle(a);
        const decoder = chunkDecoder(a.rec.headers['content-encoding']);
        if (!decoder) return;
        const queue = new Readable({ read: () => c.resume() });
        compressed = { queue, done: readCompressed(a, queue, decoder) };
        compressed.done.then(
          () => settle(),
          (err) => settle(err),
        );
      },
      onResponseData(c: DispatchController, chunk: Uint8Array) {
        if (compressed) {
          if (!compressed.queue.push(chunk)) c.pause();
        } else accept(a, performance.now() - a.t0, chunk);
      },
      onResponseEnd() {
        if (compressed) compressed.queue.push(null);
        else settle();
      },
      onResponseError(_c: DispatchController, err: unknown) {
        // A compressed body's reader ends with the error (it may be awaiting its decoder): it settles the exchange.
        if (compressed) compressed.queue.destroy(err as Error);
        else settle(err);
      },
    };
    const { use } = withSocketUse(() =>
      (dispatcher ?? agent(a.d.connectMs)).dispatch(
        { origin: u.origin, path: u.pathname + u.search, method: out.method, headers: out.headers, body: out.payload },
        handler as unknown as Parameters<Agent['dispatch']>[1],
      ),
    );
    a.socketUse = use;
  }).finally(() => {
    a.rec.socketReused = a.socketUse?.reused;
    if (a.ac.signal.aborted && !a.rec.failure) a.rec.failure = classify(a.ac.signal.reason, a.ac.signal.reason);
  });
}

function readHeaders(a: Attempt, status: number, headers: Record<string, string | string[] | undefined>): void {
  a.rec.tHeaders = performance.now() - a.t0;
  clearTimeout(a.headersTimer);
  a.rec.status = status;
  for (const [k, v] of Object.entries(headers)) a.rec.headers[k] = Array.isArray(v) ? v.join(', ') : String(v ?? '');
  a.opts.onHeaders?.(status, a.rec.headers);
}

/** A compressed body, decoded here read by read (each read's output keeps the wire read's time). */
async function readCompressed(
  a: Attempt,
  body: Readable,
  decoder: NonNullable<ReturnType<typeof chunkDecoder>>,
): Promise<void> {
  let t = 0;
  for await (const chunk of body) {
    t = performance.now() - a.t0;
    const bytes = chunk as Uint8Array;
    if (!accept(a, t, bytes, await decoder.push(bytes))) break;
  }
  if (!a.ac.signal.aborted) {
    const tail = await decoder.end();
    if (tail.length) keep(a, t, tail);
  }
  if (decoder.error && !a.ac.signal.aborted) cut(a, 'reset', `the body could not be decoded: ${decoder.error}`);
}

/** One read off the wire (timestamp already taken); false when the recording must stop. */
function accept(a: Attempt, t: number, bytes: Uint8Array, decoded: Uint8Array = bytes): boolean {
  a.wire += bytes.length;
  keep(a, t, decoded);
  if (a.opts.wholeJson && !a.bodyBegun) wholeBody(a, decoded);
  const cap = a.d.readCapBytes ?? CAPS.readBytesPerStream;
  if (!a.ac.signal.aborted && a.wire > cap)
    a.control.overflow(
      cap === CAPS.readBytesPerStream
        ? `the response went on past ${cap / 2 ** 20} MiB without ending (read cap per stream)`
        : `the response went on past ${Math.round(cap / 1024)} KiB without ending (read cap per stream, ${a.d.sizedBy ?? "sized from this run's evidence"})`,
    );
  return !a.ac.signal.aborted;
}

const EMPTY = new Uint8Array(0);

/** JSON's insignificant whitespace (RFC 8259 §2): what may come before the `{` of a whole answer. */
const JSON_SPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * The early decision on a whole (non-streamed) answer, at its first non-space byte: not `{` on a 2xx answer is cut at
 * once (`not-json`: no later byte can make it the JSON object it must be; an error status's body is the error checks'
 * to read, whole); `{` arms the bound on the rest of the body (the stall floor: a whole answer comes at once).
 */
function wholeBody(a: Attempt, bytes: Uint8Array): void {
  let i = 0;
  while (i < bytes.length && JSON_SPACE.has(bytes[i]!)) i++;
  if (i === bytes.length) return;
  a.bodyBegun = true;
  const status = a.rec.status ?? 0;
  if (bytes[i] !== 0x7b && status >= 200 && status < 300) {
    cut(a, 'not-json', notJsonMessage(a, bytes, i));
    return;
  }
  const ms = Math.round(a.d.tokenIdleMs);
  a.timers.push(
    setTimeout(
      () =>
        cut(
          a,
          'token-idle',
          `the body of a non-streamed answer began and had not ended ${ms} ms later (a whole answer is sent at once when it is done; the stall floor)`,
        ),
      ms,
    ),
  );
}

/** What a whole answer's first bytes are, as evidence: an SSE body, an HTML page, or other text. */
function notJsonMessage(a: Attempt, bytes: Uint8Array, start: number): string {
  const head = Buffer.from(bytes.subarray(start, start + 80)).toString('utf8');
  const what = /^(data|event|id|retry)\s*:|^:/.test(head)
    ? 'an SSE body'
    : /^<(!doctype|html|head|body|\?xml)/i.test(head)
      ? 'an HTML page'
      : 'a body';
  const type = a.rec.headers['content-type'];
  return `answered a non-streamed request with ${what}${type ? ` (Content-Type ${type})` : ''}, not JSON: a whole answer is one JSON object and its first bytes ${JSON.stringify(head.length < 80 ? head : `${head}…`)} cannot begin one (cut at once, after ${a.wire} bytes)`;
}

/** Records a read within the caps (past them, the recording is marked truncated) and hands it to the caller. */
function keep(a: Attempt, t: number, bytes: Uint8Array): void {
  const recorded = a.kept.keep(t, bytes);
  if (a.kept.truncated) a.rec.truncated = true;
  a.opts.onRead?.(t, bytes, a.control, recorded);
}

/**
 * A body's reads as a recording keeps them: the bytes (up to caps.bytes) copied into blocks of our own as they are
 * read, and each read's time and length as two columns of numbers (up to caps.reads); `rec.body` and `rec.reads`
 * (views on the blocks) are built from them when first read. Why copies: a read as undici hands it over is a view on
 * the socket's own read buffer, and keeping it for the whole stream kept a view, an ArrayBuffer and its backing store
 * per read alive, which every minor GC copied and swept (BENCHMARKS.md, issue 23); a copy lets the read die young.
 */
export class KeptReads {
  private readonly arena = new ByteArena();
  private readonly times: number[] = [];
  private readonly lengths: number[] = [];
  /** The read that crossed the byte cap, whole (rec.reads gives reads whole, the body only what was kept). */
  private crossing?: { i: number; bytes: Uint8Array };
  /** Body bytes kept. */
  bytes = 0;
  truncated = false;
  constructor(private readonly caps: { bytes: number; reads: number }) {}
  /** Reads timed. */
  get count(): number {
    return this.times.length;
  }
  get lastT(): number | undefined {
    return this.times.at(-1);
  }
  /** Keeps what fits; true when rec.reads will give this read back whole, with its time. */
  keep(t: number, bytes: Uint8Array): boolean {
    const within = this.bytes < this.caps.bytes;
    const n = within ? Math.min(bytes.length, this.caps.bytes - this.bytes) : 0;
    const timed = this.times.length < this.caps.reads;
    if (timed) {
      if (n < bytes.length && within) this.crossing = { i: this.times.length, bytes };
      this.times.push(t);
      this.lengths.push(n);
    }
    if (n > 0) {
      this.arena.append(n === bytes.length ? bytes : bytes.subarray(0, n));
      this.bytes += n;
    }
    if (!timed || n < bytes.length) this.truncated = true;
    return timed && within;
  }
  /** Defines rec.body and rec.reads, each built on first read (the reads as views on the blocks: no copy). */
  finish(rec: Recording): void {
    const { arena, times, lengths, crossing } = this;
    lazyFields(rec, ['body'], () => ({ body: arena.bytes() }));
    lazyFields(rec, ['reads'], () => {
      // A read lies whole in one block (append starts a new block for a read that does not fit the current one).
      const blocks = arena.parts();
      let b = 0;
      let o = 0;
      const reads = times.map((t, i): BodyRead => {
        const n = lengths[i]!;
        if (!n) return { t, bytes: EMPTY };
        if (o + n > blocks[b]!.length) {
          b++;
          o = 0;
        }
        o += n;
        return { t, bytes: crossing?.i === i ? crossing.bytes : blocks[b]!.subarray(o - n, o) };
      });
      return { reads };
    });
  }
}

/**
 * Bytes appended into blocks that double in size (1 KiB to 256 KiB): a short answer costs one small block, a long
 * stream a few large ones, and appending is a copy, never a reallocation.
 */
class ByteArena {
  private readonly blocks: Uint8Array[] = [];
  private block: Uint8Array = EMPTY;
  private used = 0;
  append(bytes: Uint8Array): void {
    if (this.used + bytes.length > this.block.length) {
      if (this.used) this.blocks.push(this.block.subarray(0, this.used));
      const next = Math.min(256 << 10, Math.max(1 << 10, this.block.length * 2));
      // Not zeroed: nothing past `used` is ever exposed (small blocks come from Node's shared pool).
      this.block = Buffer.allocUnsafe(Math.max(next, bytes.length));
      this.used = 0;
    }
    this.block.set(bytes, this.used);
    this.used += bytes.length;
  }
  /** The blocks' filled parts, in order. */
  parts(): Uint8Array[] {
    return [...this.blocks, this.block.subarray(0, this.used)];
  }
  /** Everything appended, as one array (the last block itself when it is the only one). */
  bytes(): Uint8Array {
    return this.blocks.length ? concat(this.parts()) : this.block.subarray(0, this.used);
  }
}

/** A failure thrown by the request or the body (a deadline's abort shows up here as the signal's reason). */
function failed(a: Attempt, err: unknown): void {
  const rec = a.rec;
  rec.failure = classify(err, a.ac.signal.aborted ? a.ac.signal.reason : undefined);
  if (rec.failure.kind === 'reset' && rec.status === undefined && rec.socketReused !== true)
    rec.failure.message +=
      ' — on a fresh connection: the server reset it before answering (not retried; only a reset on a reused keep-alive socket is)';
}

function stopAttempt(a: Attempt): void {
  a.rec.tEnd = performance.now() - a.t0;
  for (const t of a.timers) clearTimeout(t);
  if (a.idleTimer) clearTimeout(a.idleTimer);
  a.opts.signal?.removeEventListener('abort', a.onCallerAbort);
}

/** Says how far a cut response had got, assembles the kept body, charges the run's caps and closes the journal entry. */
function finishRecording(a: Attempt): Recording {
  const { rec, wire, kept } = a;
  rec.wireBytes = wire;
  // Assembled when first read: most streams are read through their decoded events, never as one body or reads.
  kept.finish(rec);
  // A deadline that cut a response mid-body says how much came (one byte a second reads differently from nothing).
  if (rec.failure && rec.status !== undefined && /timeout|token-idle/.test(rec.failure.kind)) {
    const last = kept.lastT;
    rec.failure.message += ` (${wire} bytes in ${kept.count} reads had arrived${last !== undefined ? `, the last ${Math.round(rec.tEnd - last)} ms before the cut` : ''})`;
  }
  const declared = Number(rec.headers['content-length']);
  if (
    rec.failure &&
    rec.status !== undefined &&
    Number.isFinite(declared) &&
    declared > wire &&
    !rec.headers['content-encoding']
  )
    rec.failure.message += ` (the body ended after ${wire} of the ${declared} bytes its Content-Length announced)`;
  chargeRun(kept.bytes, kept.count);
  a.entry.tEnd = Date.now();
  a.entry.status = rec.status;
  if (rec.failure) a.entry.failure = `${rec.failure.kind}: ${rec.failure.message}`;
  return rec;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
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
    // A body cut at exactly its announced length: the Content-Length was shorter than the body the server meant.
    const declared = Number(rec.headers['content-length']);
    const truncated = /Unterminated|Unexpected end|end of JSON/i.test((e as Error).message);
    if (rec.truncated)
      return {
        error: `not JSON within the first ${rec.body.length} bytes kept of a ${rec.wireBytes ?? '?'}-byte body (record cap per stream): ${(e as Error).message}`,
      };
    const cut =
      truncated && Number.isFinite(declared) && declared === (rec.wireBytes ?? rec.body.length)
        ? ` (the body stops at the ${declared} bytes its Content-Length announced)`
        : '';
    return { error: `not JSON: ${(e as Error).message}${cut}` };
  }
}
