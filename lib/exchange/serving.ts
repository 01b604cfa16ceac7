// How many requests a server serves at once, measured when it does not say (no /slots, /props, /metrics, nothing
// declared). Streams are started one after another, each long enough to outlast the ladder; the first one whose first
// token does not come while the others run, but only once one of them has ended, shows the server full: it serves as
// many at once as were running. A one-slot server shows it at the second stream. Repeated, and judged only when every
// repetition agrees and the waiting stream's first token followed that end promptly. Streams are never aborted: a
// server that keeps generating after a disconnect would keep the slot and spoil what is measured next.

import { median } from '../measure/stats.ts';
import { pause } from '../measure/timing.ts';
import type { Requester, SharedSlice } from '../model/check.ts';
import { fmt } from '../model/verdict.ts';
import { describeExchange } from './exchange.ts';
import { type LiveStream, startStream, within } from './live-stream.ts';

/** One repetition of the ladder. */
export interface ServingRep {
  /** Streams running when one had to wait (undefined when none waited, or the repetition broke). */
  concurrency?: number;
  /** The waiting stream: from its start to its first token, and to the first end among the running ones. */
  waitedMs?: number;
  untilEndMs?: number;
  /** From that end to its first token. */
  afterEndMs?: number;
  /** All this many streams got their first token while the others ran. */
  allServed?: number;
  /** Why this repetition decides nothing. */
  broken?: string;
}

export interface Serving {
  /** Requests served at once, when measured. */
  concurrency?: number;
  /** "measured: …" with the figures, or why it could not be. */
  how: string;
  loneTtftMs?: number;
  tokens?: number;
  reps: ServingRep[];
}

const SERVING_LIMITS = {
  /** The most streams opened at once: a server that serves more is "more than 8", not measured exactly. */
  maxStreams: 8,
  repetitions: 2,
};

/**
 * The concurrency the repetitions show, or why none: every repetition must find the same count, and in each the
 * waiting stream must really have waited (at least 3 lone TTFTs, 100 ms floor) and got its first token soon after the
 * end it waited for (within 5 lone TTFTs, 1 s floor) — a slow server that starts late is not a full one.
 */
export function judgeServing(
  reps: ServingRep[],
  loneTtftMs: number,
  minReps = 2,
): Pick<Serving, 'concurrency' | 'how'> {
  const broken = reps.find((r) => r.broken);
  if (broken) return { how: `serving concurrency not measured: ${broken.broken}` };
  const more = reps.find((r) => r.allServed);
  if (more)
    return {
      how: `serving concurrency measured as more than ${more.allServed! - 1}: ${more.allServed} streams all got their first token while the others ran (declare "slots")`,
    };
  const counts = [...new Set(reps.map((r) => r.concurrency))];
  if (reps.length < minReps || counts.length !== 1 || counts[0] === undefined)
    return {
      how: `serving concurrency not measured: ${reps.length} repetition(s) found ${reps.map((r) => r.concurrency ?? '?').join(', ')} at once`,
    };
  const minWait = Math.max(100, 3 * loneTtftMs);
  const maxAfter = Math.max(1_000, 5 * loneTtftMs);
  const weak = reps.find((r) => r.waitedMs! < minWait || r.afterEndMs! > maxAfter);
  if (weak)
    return {
      how: `serving concurrency not measured: the waiting stream's first token came ${fmt(weak.waitedMs, 0)} ms after its start and ${fmt(weak.afterEndMs, 0)} ms after a running stream ended (a full server: ≥ ${fmt(minWait, 0)} ms and ≤ ${fmt(maxAfter, 0)} ms)`,
    };
  const c = counts[0];
  const n = reps.length;
  const ratio = median(reps.map((r) => r.waitedMs! / r.untilEndMs!));
  const what =
    c === 1
      ? "the server serves one at a time: a second stream's first token waited for the first stream's end"
      : `the server serves ${c} at once: a stream started beside ${c} running ones got its first token only after the first of them ended`;
  return {
    concurrency: c,
    how: `measured (not reported): ${what}, in ${n} of ${n} repetitions (it waited a median ${fmt(median(reps.map((r) => r.waitedMs!)), 0)} ms, ${fmt(ratio, 2)}x the time until that end; first token ${fmt(median(reps.map((r) => r.afterEndMs!)), 0)} ms after it; alone ${fmt(loneTtftMs, 0)} ms)`,
  };
}

/** Each stream decodes for about this long, so the ladder of streams fits inside the first one's life. */
const STREAM_MS = 1_500;
/** The lone streams that time a TTFT and a decode step. */
const LONE_TOKENS = 32;

/**
 * Tokens per stream: about 8 lone TTFTs of decoding (1.5-6 s), so a stream outlives the ladder's next start and a
 * wait for its end is long beside a TTFT (judgeServing asks for 3).
 */
function tokensFor(ctx: Requester, loneTtftMs: number, msPerToken: number | undefined): number {
  const wantMs = Math.min(6_000, Math.max(STREAM_MS, 8 * loneTtftMs));
  const want = msPerToken ? Math.round(wantMs / msPerToken) : 200;
  const window = ctx.server.contextWindow?.value;
  return Math.max(32, Math.min(want, 2_000, window !== undefined ? window - 256 : 2_000));
}

/** Which comes first for stream `s`: its first token, the end of a running stream, or the bound. */
async function firstOf(
  s: LiveStream,
  running: LiveStream[],
  boundMs: number,
  signal: AbortSignal,
): Promise<'token' | 'ended' | 'end' | 'timeout'> {
  const timer = new AbortController();
  type Event = 'token' | 'ended' | 'end' | 'timeout';
  const r = await Promise.race<Event>([
    s.reach(1).then((ok): Event => (ok ? 'token' : 'ended')),
    ...running.map((o) => o.done.then(() => 'end' as const)),
    pause(boundMs, AbortSignal.any([timer.signal, signal])).then(() => 'timeout' as const),
  ]);
  timer.abort();
  return r;
}

/** The longest a ladder step waits while the running streams still produce tokens. */
const CEILING_MS = 60_000;

/**
 * Repeats `step` (bounded by `stepMs`) while it times out and the streams still produce tokens: a long stream on a
 * slow server is waited for, a stalled one is not; never past CEILING_MS.
 */
async function whileProgressing<T extends string>(
  streams: LiveStream[],
  stepMs: number,
  signal: AbortSignal,
  step: () => Promise<T | 'timeout'>,
): Promise<T | 'timeout'> {
  const t0 = performance.now();
  let last = streams.map((o) => o.count);
  for (;;) {
    const r = await step();
    if (r !== 'timeout' || signal.aborted) return r;
    const now = streams.map((o) => o.count);
    const progressing = now.some((c, j) => c > last[j]!);
    last = now;
    if (!progressing || performance.now() - t0 + stepMs > CEILING_MS) return r;
  }
}

async function ladder(ctx: Requester, tokens: number, rep: number, boundMs: number): Promise<ServingRep> {
  const all: LiveStream[] = [];
  try {
    for (let i = 0; i <= SERVING_LIMITS.maxStreams; i++) {
      const running = all.filter((o) => !o.ended);
      if (running.length < all.length)
        return {
          broken: `a stream ended before stream ${i + 1} started (streams too short to fill the server, or its tokens came only at its end)`,
        };
      const s = startStream(
        ctx,
        tokens,
        true,
        `Write a long story about a lighthouse keeper (serving ${rep}.${i + 1}).`,
      );
      all.push(s);
      const r = await whileProgressing(running, boundMs, ctx.signal, () => firstOf(s, running, boundMs, ctx.signal));
      if (r === 'token') continue;
      if (r === 'ended')
        return { broken: `stream ${i + 1} got no token (${describeExchange(await s.done)}): refused, not queued` };
      if (r === 'timeout' && !running.length)
        return { broken: `stream 1 got no token within ${boundMs} ms: nothing streamed to measure by` };
      if (r === 'timeout')
        return {
          broken: `stream ${i + 1}: no first token, and no running stream ended (they stalled, or ran past ${CEILING_MS / 1000} s)`,
        };
      // A running stream ended first: it must have run to its limit, or the wait may be the model stopping early.
      const ended = running.filter((o) => o.ended);
      const endAbs = Math.min(...ended.map((o) => o.endAbs!));
      const x = await ended[0]!.done;
      const made = x.metrics?.completionTokens ?? ended[0]!.count;
      if (made < 0.9 * tokens)
        return {
          broken: `a running stream ended by itself after ${made} of ${tokens} tokens before stream ${i + 1} was served (declare forceLength)`,
        };
      if (!(await within(s.reach(1), boundMs, ctx.signal)))
        return { broken: `stream ${i + 1} got no first token within ${boundMs} ms of a running stream's end` };
      return {
        concurrency: running.length,
        waitedMs: s.firstAbs! - s.startAbs,
        untilEndMs: endAbs - s.startAbs,
        afterEndMs: s.firstAbs! - endAbs,
      };
    }
    return { allServed: SERVING_LIMITS.maxStreams + 1 };
  } finally {
    // Every stream runs to its end: never aborted (see the head of this file), but bounded.
    const drained = await whileProgressing(all, boundMs, ctx.signal, async () =>
      (await within(
        Promise.all(all.map((o) => o.done)).then(() => true),
        boundMs,
        ctx.signal,
      ))
        ? 'done'
        : 'timeout',
    );
    if (drained === 'timeout') for (const o of all) o.ac.abort();
    await Promise.all(all.map((o) => o.done));
  }
}

/**
 * Per server: what measureServing found in this run, for the checks after it (lib/exchange/batching.ts): shared by the
 * run's workers (the stream family measures it, the parallel family's file reads it).
 */
const SERVING: SharedSlice<Record<string, { concurrency?: number; how: string }>> = { name: 'serving', initial: {} };
const keyOf = (ctx: Pick<Requester, 'runId' | 'baseUrl' | 'profile'>) =>
  `${ctx.runId}|${ctx.baseUrl}|${ctx.profile.id}`;

/** The serving concurrency this run measured for the server, when it did (undefined: not measured, or no figure). */
export function measuredServing(
  ctx: Pick<Requester, 'memory' | 'runId' | 'baseUrl' | 'profile'>,
): { concurrency: number; how: string } | undefined {
  const s = ctx.memory.shared(SERVING).read()[keyOf(ctx)];
  return s?.concurrency !== undefined ? { concurrency: s.concurrency, how: s.how } : undefined;
}

/**
 * The serving concurrency, measured (a lone TTFT, then `repetitions` ladders); bounded by the ladder's bounds. Kept in
 * the run's memory: later checks that need the slots read it (measuredServing).
 */
export async function measureServing(ctx: Requester): Promise<Serving> {
  const s = await measureOnce(ctx);
  recordServing(ctx, s);
  return s;
}

/** Keep what a measurement found in the run's memory (measureServing does it). */
export function recordServing(ctx: Pick<Requester, 'memory' | 'runId' | 'baseUrl' | 'profile'>, s: Serving): void {
  const k = keyOf(ctx);
  ctx.memory.shared(SERVING).update((all) => ({ ...all, [k]: { concurrency: s.concurrency, how: s.how } }));
}

async function measureOnce(ctx: Requester): Promise<Serving> {
  // Two lone streams of 32 tokens: the TTFT a stream gets when nothing else runs, and the decode time per token.
  const ttfts: number[] = [];
  const perToken: number[] = [];
  for (let i = 0; i < 2; i++) {
    const s = startStream(ctx, LONE_TOKENS, true, `Say hello (serving, alone ${i + 1}).`);
    await s.done;
    if (s.firstAbs === undefined) continue;
    ttfts.push(s.firstAbs - s.startAbs);
    // Tokens bunched at the end (their span under a quarter of the TTFT) say nothing of the decode step: then half
    // the whole request's time per token, an estimate that keeps the streams from growing past what is needed.
    if (s.count > 1 && s.endAbs !== undefined) {
      const span = s.endAbs - s.firstAbs;
      const ttft = s.firstAbs - s.startAbs;
      perToken.push(span >= 0.25 * ttft && span > 0 ? span / (s.count - 1) : (0.5 * (s.endAbs - s.startAbs)) / s.count);
    }
  }
  const loneTtftMs = median(ttfts);
  if (loneTtftMs === undefined)
    return { how: 'serving concurrency not measured: a short stream gave no first token', reps: [] };
  const msPerToken = median(perToken);
  const tokens = tokensFor(ctx, loneTtftMs, msPerToken);
  const streamMs = tokens * (msPerToken ?? 20);
  const boundMs = Math.round(Math.min(30_000, Math.max(5_000, 2 * streamMs + 10 * loneTtftMs)));
  const reps: ServingRep[] = [];
  for (let rep = 1; rep <= SERVING_LIMITS.repetitions; rep++) {
    const r = await ladder(ctx, tokens, rep, boundMs);
    reps.push(r);
    if (r.broken || r.allServed) break;
  }
  return { ...judgeServing(reps, loneTtftMs, SERVING_LIMITS.repetitions), loneTtftMs, tokens, reps };
}
