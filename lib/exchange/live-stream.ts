// A streamed chat request watched while it runs: its token count and times, a promise per token count, and when it
// started, got its first token and ended. What the checks that hold slots busy use (stream.cancel-frees-slot, the
// serving-concurrency measurement).

import { pause } from '../measure/timing.ts';
import type { Requester } from '../model/check.ts';
import { chat, type Exchange, generationBody, uniquePrompt } from './exchange.ts';

export interface LiveStream {
  ac: AbortController;
  done: Promise<Exchange>;
  count: number;
  times: number[];
  /** Absolute time (performance.now()) the request was started. */
  startAbs: number;
  /** Absolute time of the first token-bearing event. */
  firstAbs?: number;
  /** Absolute time the response ended (completed, refused or failed). */
  endAbs?: number;
  /** The response has ended (completed, refused or failed). */
  ended: boolean;
  /** Resolves when `count` reaches n (false if the stream ended first). */
  reach(n: number): Promise<boolean>;
}

export function startStream(ctx: Requester, maxTokens: number, exact: boolean, what: string): LiveStream {
  const ac = new AbortController();
  const waiters: { n: number; resolve: (ok: boolean) => void }[] = [];
  const s: LiveStream = {
    ac,
    count: 0,
    times: [],
    ended: false,
    startAbs: performance.now(),
    done: undefined as unknown as Promise<Exchange>,
    reach(n) {
      if (s.count >= n) return Promise.resolve(true);
      return new Promise((resolve) => waiters.push({ n, resolve }));
    },
  };
  // Usage tells a generation served as tokens without text (lib/measure/served.ts) from one that ended early.
  const body = generationBody(ctx, 'openai-chat', {
    prompt: uniquePrompt(ctx, what),
    maxTokens,
    stream: true,
    exactLength: exact,
    extra: { stream_options: { include_usage: true } },
  });
  s.done = chat(ctx, body, {
    signal: ac.signal,
    onToken: (t, count) => {
      s.count = count;
      s.times.push(t);
      s.firstAbs ??= performance.now();
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (count >= waiters[i]!.n) {
          waiters[i]!.resolve(true);
          waiters.splice(i, 1);
        }
      }
    },
  }).finally(() => {
    s.ended = true;
    s.endAbs = performance.now();
    for (const w of waiters.splice(0)) w.resolve(false);
  });
  return s;
}

/** Resolves true if `p` settles true within `ms`, false on timeout. */
export async function within(p: Promise<boolean>, ms: number, signal: AbortSignal): Promise<boolean> {
  const timeout = new AbortController();
  const both = AbortSignal.any([timeout.signal, signal]);
  const r = await Promise.race([p, pause(ms, both).then(() => false)]);
  timeout.abort();
  return r;
}
