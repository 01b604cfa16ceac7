// Transport facts the recorder needs and undici's dispatch() does not give: which socket a request went out on (a
// reset on a reused keep-alive socket is retried once; a reset on a fresh connection is the server's failure),
// decoding of a compressed body as it streams (undici hands over the wire bytes), the caps that keep
// memory bounded against a server that never stops sending, and a short journal of the last requests (so "the
// server stopped answering after …" can name the request).
import dc from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import { createBrotliDecompress, createGunzip, createInflate, type Gunzip, constants as zc } from 'node:zlib';

// ------------------------------------------------------------------------------------------------------------
// Caps (docs/hostile.md "Memory bounds"). A stream past a read cap is cut and graded as the server's failure; past a
// record cap the bytes are still read and counted, only not kept.

export const CAPS = {
  /** Bytes kept per recording (framing checks read these). */
  recordedBytesPerStream: 1 << 20,
  /** Timestamped reads kept per recording. */
  recordedReadsPerStream: 20_000,
  /** Bytes kept over all recordings of one process (one test file's worker); past it each recording keeps 64 KiB. */
  recordedBytesPerRun: 256 << 20,
  /** Timestamped reads kept over all recordings of one process; past it each recording keeps 1,000. */
  recordedReadsPerRun: 2_000_000,
  /** Bytes read from one response before it is cut (a server sending without end); a real answer is far smaller. */
  readBytesPerStream: 16 << 20,
  /** One SSE/NDJSON line longer than this without a newline cuts the stream. */
  lineBytes: 1 << 20,
} as const;

let runBytes = 0;
let runReads = 0;

/** What a request needs of its URL (parsed once per distinct URL: a run sends thousands to a handful). */
interface UrlParts {
  origin: string;
  pathname: string;
  search: string;
}
const urlParts = new Map<string, UrlParts>();

/** The URL's parts, or undefined when it does not parse; remembered for up to 256 distinct URLs. */
export function parseUrl(url: string): UrlParts | undefined {
  let p = urlParts.get(url);
  if (p) return p;
  try {
    const u = new URL(url);
    p = { origin: u.origin, pathname: u.pathname, search: u.search };
  } catch {
    return undefined;
  }
  if (urlParts.size >= 256) urlParts.clear();
  urlParts.set(url, p);
  return p;
}

/** Per-recording caps, shrunk once the run-wide budget is spent. */
export function recordingCaps(requested?: number): { bytes: number; reads: number } {
  const bytes = Math.min(
    requested ?? CAPS.recordedBytesPerStream,
    runBytes < CAPS.recordedBytesPerRun ? CAPS.recordedBytesPerStream : 64 << 10,
  );
  const reads = runReads < CAPS.recordedReadsPerRun ? CAPS.recordedReadsPerStream : 1_000;
  return { bytes, reads };
}

/** Account what one recording kept against the run-wide budget. */
export function chargeRun(bytes: number, reads: number): void {
  runBytes += bytes;
  runReads += reads;
}

// ------------------------------------------------------------------------------------------------------------
// Which socket a request used

interface SocketUse {
  /** The socket had carried an earlier request (keep-alive reuse); undefined until the headers are sent. */
  reused?: boolean;
}

let tagging: SocketUse | undefined;
const tags = new WeakMap<object, SocketUse>();
const socketRequests = new WeakMap<Socket, number>();
let subscribed = false;

function subscribe(): void {
  if (subscribed) return;
  subscribed = true;
  // undici creates its Request synchronously inside dispatch(), so the tag set around the call is the right one.
  dc.subscribe('undici:request:create', (m) => {
    if (tagging) tags.set((m as { request: object }).request, tagging);
  });
  dc.subscribe('undici:client:sendHeaders', (m) => {
    const { request, socket } = m as { request: object; socket: Socket };
    const n = socketRequests.get(socket) ?? 0;
    socketRequests.set(socket, n + 1);
    const tag = tags.get(request);
    if (tag) tag.reused = n > 0;
  });
}

/** Call `dispatch` (which must create its undici request synchronously) and learn which kind of socket it went out on. */
export function withSocketUse<T>(dispatch: () => T): { result: T; use: SocketUse } {
  subscribe();
  const use: SocketUse = {};
  tagging = use;
  try {
    return { result: dispatch(), use };
  } finally {
    tagging = undefined;
  }
}

// ------------------------------------------------------------------------------------------------------------
// Content decoding, chunk by chunk (each read's output keeps that read's timestamp)

interface ChunkDecoder {
  /** Decoded bytes of this wire chunk (all of them: the decoder is flushed per chunk). */
  push(chunk: Uint8Array): Promise<Uint8Array>;
  end(): Promise<Uint8Array>;
  /** Decoding failed (corrupt data): the reason. */
  error?: string;
}

export function chunkDecoder(contentEncoding: string | undefined): ChunkDecoder | undefined {
  const enc = (contentEncoding ?? '').trim().toLowerCase();
  if (!enc || enc === 'identity') return undefined;
  const z: Gunzip | undefined =
    enc === 'gzip' || enc === 'x-gzip'
      ? createGunzip()
      : enc === 'deflate'
        ? createInflate()
        : enc === 'br'
          ? createBrotliDecompress()
          : undefined;
  if (!z) return undefined; // unknown coding: recorded as it came, the checks see the bytes
  let out: Buffer[] = [];
  // A corrupt stream errors instead of calling back: whichever comes first settles the wait.
  const settle = (start: (done: () => void) => void) =>
    new Promise<void>((r) => {
      const done = () => {
        z.off('error', done);
        r();
      };
      z.once('error', done);
      start(done);
    });
  const take = () => {
    const o = Buffer.concat(out);
    out = [];
    return dec.error ? new Uint8Array(0) : o;
  };
  const dec: ChunkDecoder = {
    async push(chunk) {
      if (dec.error) return new Uint8Array(0);
      await settle((done) => {
        z.write(chunk);
        z.flush(enc === 'br' ? zc.BROTLI_OPERATION_FLUSH : zc.Z_SYNC_FLUSH, done);
      });
      return take();
    },
    async end() {
      if (dec.error) return new Uint8Array(0);
      await settle((done) => z.end(done));
      return take();
    },
  };
  z.on('data', (d: Buffer) => out.push(d));
  z.on('error', (e) => {
    dec.error = `${enc} decoding failed: ${e.message}`;
  });
  return dec;
}

// ------------------------------------------------------------------------------------------------------------
// Journal: the last requests of this process, redacted

export interface JournalEntry {
  method: string;
  url: string;
  /** Redacted, capped request body. */
  body?: string;
  tStart: number;
  tEnd?: number;
  status?: number;
  failure?: string;
}

const journal: JournalEntry[] = [];
const JOURNAL_LENGTH = 16;

export function journalStart(e: JournalEntry): JournalEntry {
  journal.push(e);
  if (journal.length > JOURNAL_LENGTH) journal.shift();
  return e;
}

/** The last requests (oldest first); entries are live objects completed as requests end. */
export function recentRequests(): readonly JournalEntry[] {
  return journal;
}

/** One line naming a request, for messages: `POST /v1/chat/completions {"model":…} (HTTP 200 / reset: …)`. */
export function describeRequest(e: JournalEntry | undefined, max = 300): string {
  if (!e) return 'no request recorded';
  let path = e.url;
  try {
    const u = new URL(e.url);
    path = u.pathname + u.search;
  } catch {
    /* keep as is */
  }
  const body = e.body ? ` ${e.body.length > max ? `${e.body.slice(0, max)}…` : e.body}` : '';
  const end = e.failure
    ? ` → ${e.failure}`
    : e.status !== undefined
      ? ` → HTTP ${e.status}`
      : e.tEnd === undefined
        ? ' → no answer yet'
        : '';
  return `${e.method} ${path}${body}${end}`;
}
