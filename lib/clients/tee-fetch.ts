// A `fetch` handed to a client library: every request goes through our recorder (lib/http/recorder.ts record()), so the
// wire bytes are timestamped on arrival, exactly as for every other check, and the same bytes are handed to the
// client as it pulls them. What the client has pulled is counted, so the chunk a client failed on can be named.
//
// Rules (docs/harness.md "Talking to the server"): only the profile's origin is reachable (a client that tries anything else,
// e.g. a run-time tokenizer download, gets a network error and the attempt is reported); the credentials come from
// the profile and go only into the Authorization header (whatever the client set is removed); redirects are never
// followed (record() uses maxRedirections 0: the client sees the 3xx, as with fetch's redirect: 'manual').

import { redact } from '../config/secrets.ts';
import { GENERATION_PATH, StreamDecode } from '../exchange/exchange.ts';
import { record } from '../http/recorder.ts';
import { streamGuards } from '../http/stream-guards.ts';
import { endingListener, requestKind } from '../measure/deadline-evidence.ts';
import type { RunMemory } from '../model/check.ts';
import type { ApiFlavour, Deadlines, Recording } from '../model/types.ts';

interface TeeExchange {
  method: string;
  /** Redacted URL. */
  url: string;
  /** Bytes of the body handed to the client so far (it pulls; we never push ahead of it). */
  delivered: number;
  /** Resolves when the response ended or failed (never rejects). */
  done: Promise<Recording>;
  rec?: Recording;
}

interface TeeOptions {
  /** Base URL of the server (scheme://host:port[/path]); its origin is the only one reachable. */
  baseUrl: string;
  /** The profile's auth headers (Authorization), added to requests for that origin only. */
  authHeaders: Record<string, string>;
  deadlines: Deadlines;
  /**
   * The profile's floors and who sends: generation requests cut after waiting them out are this run's evidence
   * (lib/measure/deadline-evidence.ts).
   */
  evidence?: { floors: { headersMs: number; totalMs: number }; memory: RunMemory; owner: string };
  /** The check's abort signal. */
  signal: AbortSignal;
  secrets: readonly string[];
  /** Bound on requests per case: a client that retries or loops is stopped here. */
  maxRequests: number;
}

interface Tee {
  fetch: typeof fetch;
  exchanges: TeeExchange[];
  /** Requests refused (another origin, or over maxRequests), as messages. */
  refused: string[];
  /** Wait until every response has ended (bounded by the deadlines of record()). */
  settle(): Promise<Recording[]>;
}

/**
 * For a streamed generation request: the guards send() puts on a stream (lib/http/stream-guards.ts), so a stream far
 * past its max_tokens or one endless line is cut as `overflow` here too, at once, not at the total deadline (and a
 * client's call against an endless server ends as fast as the checks' own requests).
 */
function runawayGuard(path: string, body: unknown): ReturnType<ReturnType<typeof streamGuards>['wrap']> | undefined {
  const flavour = (Object.entries(GENERATION_PATH) as Array<[ApiFlavour, string]>).find(([, p]) =>
    path.endsWith(p),
  )?.[0];
  if (!flavour || !requestKind('POST', `http://x${path}`, body)?.endsWith('(stream)')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === 'string' ? body : Buffer.from(body as Uint8Array).toString('utf8'));
  } catch {
    return undefined;
  }
  const guards = streamGuards(parsed);
  const decode = new StreamDecode(flavour, 0, true);
  return guards.wrap(decode.reader({ onToken: (_t, n) => guards.onToken(n) }));
}

/** Headers a client sets that we replace or that would change the bytes on the wire. */
const DROPPED = [
  'authorization',
  'x-api-key',
  'api-key',
  'proxy-authorization',
  'accept-encoding',
  'content-length',
  'host',
  'connection',
  'transfer-encoding',
  'keep-alive',
];
/** How long we keep recording after a client cancelled the body (a server that never ends is not waited for). */
const AFTER_CANCEL_MS = 5_000;
/** Statuses a Response may not carry a body with. */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

async function bodyOf(
  input: string | URL | Request,
  init: RequestInit | undefined,
): Promise<string | Uint8Array | undefined> {
  const b = init?.body ?? (input instanceof Request && input.body ? await input.clone().arrayBuffer() : undefined);
  if (b === undefined || b === null) return undefined;
  if (typeof b === 'string') return b;
  if (b instanceof Uint8Array) return b;
  if (b instanceof ArrayBuffer) return new Uint8Array(b);
  if (ArrayBuffer.isView(b)) return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  // URLSearchParams, Blob, FormData, streams: let the platform serialise it.
  return new Uint8Array(await new Response(b as ConstructorParameters<typeof Response>[0]).arrayBuffer());
}

export function teeFetch(o: TeeOptions): Tee {
  const origin = new URL(o.baseUrl).origin;
  const exchanges: TeeExchange[] = [];
  const refused: string[] = [];

  const teed = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const req = input instanceof Request ? input : undefined;
    const url = new URL(req ? req.url : input instanceof URL ? input.href : String(input));
    if (url.origin !== origin) {
      const msg = `request to ${redact(url.origin + url.pathname, o.secrets)} refused: only the profile's origin ${origin} is reachable (clients run offline; a run-time download is not allowed)`;
      refused.push(msg);
      throw new TypeError(`fetch failed: ${msg}`);
    }
    if (exchanges.length >= o.maxRequests) {
      const msg = `request ${exchanges.length + 1} refused: at most ${o.maxRequests} request(s) per case (retries are switched off in every client)`;
      refused.push(msg);
      throw new TypeError(`fetch failed: ${msg}`);
    }
    const method = (init?.method ?? req?.method ?? 'GET').toUpperCase();
    const h = new Headers(req?.headers);
    new Headers(init?.headers).forEach((v, k) => h.set(k, v));
    for (const k of DROPPED) h.delete(k);
    const headers: Record<string, string> = { ...Object.fromEntries(h.entries()), ...o.authHeaders };
    const body = await bodyOf(input, init);

    // Our abort ends the recording. The client's abort (its signal, or cancelling the body) only ends what it is handed:
    // we keep recording what the server sends, for a bounded while, so the wire is judged whole and not cut by the client.
    const ac = new AbortController();
    const clientSignal = init?.signal ?? req?.signal;
    const queue: Uint8Array[] = [];
    let ended = false;
    let cancelled = false;
    let streamError: Error | undefined;
    let wake: (() => void) | undefined;
    const notify = () => {
      const w = wake;
      wake = undefined;
      w?.();
    };
    const stopHanding = (why: string) => {
      if (cancelled) return;
      cancelled = true;
      queue.length = 0;
      const t = setTimeout(
        () => ac.abort(new Error(`${why} and the server had not ended the response ${AFTER_CANCEL_MS} ms later`)),
        AFTER_CANCEL_MS,
      );
      void ex.done.finally(() => clearTimeout(t));
    };

    const ex: TeeExchange = {
      method,
      url: redact(url.href, o.secrets),
      delivered: 0,
      done: Promise.resolve(undefined as unknown as Recording),
    };
    exchanges.push(ex);

    let resolveHeaders!: (r: Response) => void;
    let rejectHeaders!: (e: Error) => void;
    const headersArrived = new Promise<Response>((res, rej) => {
      resolveHeaders = res;
      rejectHeaders = rej;
    });

    const stream = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          while (queue.length === 0 && !ended)
            await new Promise<void>((r) => {
              wake = r;
            });
          const next = queue.shift();
          if (next) {
            ex.delivered += next.length;
            controller.enqueue(next);
          } else if (streamError) controller.error(streamError);
          else controller.close();
        },
        cancel() {
          stopHanding('the client cancelled the response body');
        },
      },
      { highWaterMark: 0 },
    );

    let gotHeaders = false;
    const onClientAbort = () => {
      const reason =
        clientSignal?.reason instanceof Error
          ? clientSignal.reason
          : new DOMException('This operation was aborted', 'AbortError');
      if (!gotHeaders) rejectHeaders(reason);
      else {
        streamError = reason;
        ended = true;
        notify();
      }
      stopHanding('the client aborted its request');
    };
    const runaway = runawayGuard(url.pathname, body);
    ex.done = record({
      url: url.href,
      method: method as 'GET' | 'POST' | 'HEAD',
      headers,
      body,
      deadlines: o.deadlines,
      // A whole (non-streamed) generation answer is cut at a first byte no JSON object begins with, as in send().
      wholeJson: requestKind(method, url.href, body)?.endsWith('(whole)'),
      ...(o.evidence ? { onEnded: endingListener(o.evidence, method, url.href, body, o.evidence.floors) } : {}),
      signal: AbortSignal.any([o.signal, ac.signal]),
      secrets: [...o.secrets],
      onHeaders(status, hs) {
        gotHeaders = true;
        const rh = new Headers();
        for (const [k, v] of Object.entries(hs)) if (k !== 'content-length' && k !== 'transfer-encoding') rh.set(k, v);
        const res = new Response(NULL_BODY.has(status) || method === 'HEAD' ? null : stream, { status, headers: rh });
        Object.defineProperty(res, 'url', { value: url.href });
        resolveHeaders(res);
      },
      onRead(t, bytes, control, recorded) {
        runaway?.(t, bytes, control, recorded);
        if (cancelled) return;
        queue.push(bytes);
        notify();
      },
    }).then((rec) => {
      clientSignal?.removeEventListener('abort', onClientAbort);
      ex.rec = rec;
      if (rec.failure) {
        const err = new TypeError(`fetch failed: ${rec.failure.kind}: ${rec.failure.message}`);
        if (!gotHeaders) rejectHeaders(err);
        else streamError = err;
      }
      ended = true;
      notify();
      return rec;
    });
    if (clientSignal?.aborted) onClientAbort();
    else clientSignal?.addEventListener('abort', onClientAbort, { once: true });
    return headersArrived;
  };

  return {
    fetch: teed as typeof fetch,
    exchanges,
    refused,
    settle: () => Promise.all(exchanges.map((e) => e.done)),
  };
}
