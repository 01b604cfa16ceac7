// Family `stream`: does the server really stream? Timing checks on /v1/chat/completions with stream: true.
// Medians over repetitions; a verdict fails only when a confidence bound is past the threshold; too short or too
// noisy a measurement, or a starved client, is inconclusive (a warn), never a pass and never a fail.
// Reference: the seeds (Rapid-MLX's TTFT equalled the whole response time), OpenAI API reference "stream".
//
// The verdict rules are pure functions in lib/grading/stream.ts; this file records the streams, times the slots and
// hands them the figures.

import { usableSlots } from '../lib/exchange/batching.ts';
import {
  chat,
  describeExchange,
  type Exchange,
  generationBody,
  measurePace,
  paceFor,
  uniquePrompt,
} from '../lib/exchange/exchange.ts';
import { streamEvidence, streamProblem } from '../lib/exchange/exchange-evidence.ts';
import { type LiveStream, startStream, within } from '../lib/exchange/live-stream.ts';
import { promptOfTokens } from '../lib/exchange/prompts.ts';
import { incompleteVerdict, type SharedRecording, shared } from '../lib/exchange/recordings.ts';
import { textlessNote, textlessTokens } from '../lib/exchange/served.ts';
import { type BusyReader, findBusyReader } from '../lib/exchange/server-load.ts';
import { measureServing, type Serving } from '../lib/exchange/serving.ts';
import {
  brokenLongStreams,
  gradeCancelByCounters,
  gradeCancelByDelay,
  gradeHeadersEarly,
  gradeSpread,
  gradeTtftBeforeEnd,
  itlOf,
  orphanNotCancellable,
  tooFewLongStreams,
} from '../lib/grading/stream.ts';
import { clientAllowanceMs } from '../lib/measure/client-lag.ts';
import { budgetText, endedByUs } from '../lib/measure/deadlines.ts';
import { decodeMsPerToken, describePace, expectedMs, type Pace, sizedFrom, tokensAt } from '../lib/measure/pace.ts';
import { median } from '../lib/measure/stats.ts';
import { pollUntil } from '../lib/measure/timing.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Verdict } from '../lib/model/types.ts';
import { fail, fmt, inconclusive } from '../lib/model/verdict.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';
import { blockedIfUnserved } from './support/root-causes.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'stream',
  order: 90,
  timing: true,
  what: 'real streaming: TTFT well below end-to-end time, tokens spread over time, headers before prefill ends, cancel frees the slot',
};

// ------------------------------------------------------------------------------------------------------------
// Long streams shared by ttft-before-end and spread (one recording, two readings), recorded once per run and server
// (lib/http/recordings.ts). Their length is sized from the measured speed (lib/measure/pace.ts): long enough that the decode
// dwarfs the TTFT and lasts about `decodeMs`, never fewer than `minTokens`, and all of them within the share of the
// check's bound the recording may spend. Each stream is sized again from the pace just measured, so a server that
// slows down mid-recording gets shorter streams rather than a deadline it cannot meet.

interface LongStreams {
  exchanges: Exchange[];
  /** Tokens asked of each stream. */
  sizes: number[];
  /** The fewest tokens a stream needs to be judged. */
  minTokens: number;
  /** Streams planned; fewer were recorded when the budget ran out (the reason is in `short`). */
  planned: number;
  short?: string;
  /** How the length was chosen (said in every message). */
  sizing: string;
}

/** Streams recorded for the two checks (medians over them; at least 2 must be usable). */
const LONG_REPS = 3;
/** Share of the check's bound the shared recording may spend (the rest is the reader's and the grace). */
const LONG_BUDGET_SHARE = 0.6;

function longSizing(ctx: CheckContext, pace: Pace | undefined): { tokens: number } {
  const min = ctx.threshold('minTokens');
  const window = ctx.server.contextWindow?.value;
  const max = Math.max(min, Math.min(ctx.threshold('maxTokens'), window !== undefined ? window - 256 : Infinity));
  if (!pace) return { tokens: Math.max(min, Math.min(max, 128)) };
  const targetMs = Math.max(ctx.threshold('decodeMs'), 10 * (pace.ttftMs ?? 0));
  const tokens = tokensAt(pace, { targetMs, min, max, wallCapMs: (LONG_BUDGET_SHARE * LONG_TIMEOUT_MS) / LONG_REPS });
  return { tokens };
}

async function recordLong(ctx: CheckContext): Promise<LongStreams> {
  const min = ctx.threshold('minTokens');
  const budgetMs = LONG_BUDGET_SHARE * (ctx.check.timeoutMs ?? 60_000);
  const t0 = performance.now();
  const first = longSizing(ctx, await measurePace(ctx));
  const sizing = `${sizedFrom(paceFor(ctx))}: ${LONG_REPS} streams of ~${first.tokens} tokens`;
  ctx.log(`recording ${sizing}, one after another`);
  const exchanges: Exchange[] = [];
  const sizes: number[] = [];
  let short: string | undefined;
  for (let i = 0; i < LONG_REPS && !ctx.signal.aborted; i++) {
    // One length for all streams (the ratio of medians compares like with like); the time each one costs is
    // re-estimated from the pace just measured, so a server that slowed down gets fewer streams, not a deadline.
    const tokens = first.tokens;
    const pace = paceFor(ctx);
    const perStreamMs = pace ? expectedMs(pace, tokens) : 0;
    const left = budgetMs - (performance.now() - t0);
    if (i > 0 && perStreamMs > left) {
      short = `${i} of ${LONG_REPS} streams recorded: the next (${tokens} tokens, ~${Math.round(perStreamMs)} ms at ${describePace(paceFor(ctx))}) would not fit the ${Math.round(left)} ms left of the recording's budget`;
      break;
    }
    const body = generationBody(ctx, 'openai-chat', {
      prompt: uniquePrompt(
        ctx,
        'Write a long story about a river that crosses a city, with many details, at least 400 words.',
      ),
      maxTokens: tokens,
      stream: true,
      exactLength: true,
      extra: { stream_options: { include_usage: true } },
    });
    sizes.push(tokens);
    exchanges.push(await chat(ctx, body));
  }
  return { exchanges, sizes, minTokens: min, planned: LONG_REPS, short, sizing };
}

function longStreams(ctx: CheckContext): Promise<SharedRecording<LongStreams>> {
  return shared(
    ctx,
    'stream-long',
    () => recordLong(ctx),
    (ls) => ls.exchanges.map((x) => x.rec),
  );
}

/** The usable streams (complete, long enough), or a verdict explaining why there are none. */
function usable(
  r: SharedRecording<LongStreams>,
  what: string,
): { ok: Exchange[]; ls: LongStreams } | { verdict: Verdict } {
  if (r.incomplete) return { verdict: incompleteVerdict(r, what) };
  const ls = r.value;
  const problems = ls.exchanges.map(streamProblem);
  const broken = brokenLongStreams(
    problems,
    ls.exchanges.map((x, i) => streamEvidence(`request ${i + 1}`, x)),
  );
  if (broken) {
    const failed = ls.exchanges.filter((_x, i) => problems[i]).map((x) => x.rec);
    return { verdict: blockedIfUnserved(broken, failed) };
  }
  const tokens = ls.exchanges.map((x) => x.metrics?.completionTokens ?? 0);
  const sources = [...new Set(ls.exchanges.map((x) => x.metrics?.tokenSource ?? 'none'))].join('/');
  // Tokens served without text (lib/measure/served.ts) have no arrival times: long enough by usage, but nothing to time.
  const ok = ls.exchanges.filter(
    (x) => (x.metrics?.completionTokens ?? 0) >= ls.minTokens && textlessTokens(x) === undefined,
  );
  if (ok.length < 2) {
    const textless = textlessNote(ls.exchanges);
    const counts = { completionTokens: tokens, tokenSource: sources, usable: ok.length, recorded: ls.exchanges.length };
    return { verdict: tooFewLongStreams({ long: ls, ...counts, textless, short: ls.short, what }) };
  }
  return { ok, ls };
}

// ------------------------------------------------------------------------------------------------------------
// stream.cancel-frees-slot helpers

const ORPHAN_TOKENS = 500;
const TOKENS_BEFORE_ABORT = 8;

/** The orphan keeps generating for about this long after the abort unless cancelled (sized from the measured speed). */
const ORPHAN_MS = 6_000;

function orphanTokens(ctx: CheckContext): number {
  const window = ctx.server.contextWindow?.value;
  const pace = paceFor(ctx);
  const want = pace ? Math.round(ORPHAN_MS / decodeMsPerToken(pace)) : ORPHAN_TOKENS;
  return Math.max(64, Math.min(want, window !== undefined ? window - 256 : 4096));
}

/** How long a stream may take to produce its first tokens before the check gives up on it. */
const startBound = (ctx: CheckContext) => Math.min(ctx.deadlines.headersMs, 25_000) + 5_000;

const ORPHAN_PROMPT = 'Write a very long essay about the history of rivers and cities, with many chapters.';

async function cancelByCounters(ctx: CheckContext, reader: BusyReader): Promise<Verdict | undefined> {
  const freeWithin = ctx.threshold('freeWithinMs');
  const baseline = await reader.read();
  if (baseline === undefined) return undefined;
  const n = orphanTokens(ctx);
  const forced = !!ctx.profile.forceLength;
  let orphan: LiveStream;
  for (let attempt = 1; ; attempt++) {
    orphan = startStream(ctx, n, true, ORPHAN_PROMPT);
    if (await within(orphan.reach(TOKENS_BEFORE_ABORT), startBound(ctx), ctx.signal)) break;
    orphan.ac.abort();
    const x = await orphan.done;
    const timedOut = x.rec.failure?.kind === 'aborted';
    const problem = timedOut ? undefined : streamProblem(x);
    const v = orphanNotCancellable({
      timedOut,
      problem,
      textless: textlessNote([x]),
      attempt,
      events: orphan.count,
      maxTokens: n,
      tokensBeforeAbort: TOKENS_BEFORE_ABORT,
      startBoundMs: startBound(ctx),
      evidence: [streamEvidence('orphan', x)],
    });
    // Tokens served without text (lib/measure/served.ts) give nothing to cut the stream after: once more, with a fresh prompt.
    if (!v) continue;
    return problem ? blockedIfUnserved(v, [x.rec]) : v;
  }
  const busyDuring = await reader.read();
  if (busyDuring === undefined || busyDuring <= baseline) {
    orphan.ac.abort();
    await orphan.done;
    return undefined; // the counter does not reflect our request: no evidence here
  }
  const itl = itlOf(orphan, performance.now());
  orphan.ac.abort();
  const abortedAt = performance.now();
  const x = await orphan.done;
  const seen = orphan.count;
  const polled = await pollUntil(reader.read, (v) => v !== undefined && v <= baseline, {
    intervalMs: 20,
    deadlineMs: freeWithin,
    signal: ctx.signal,
  });
  const freedMs = performance.now() - abortedAt;
  const remainingMs = itl !== undefined ? (n - seen) * itl : undefined;
  let drained: { ok: boolean; elapsedMs: number } | undefined;
  if (!polled.ok) {
    // Still busy. Keep watching until the orphan would have ended by itself: a counter that drops then is the
    // generation running to its end (the fault); one that never drops may just be stale (vLLM updates its gauges
    // per engine step, and an idle engine does not step), so the timing method decides instead.
    const drainMs = Math.min(15_000, 2 * (remainingMs ?? 5_000) + 1_000);
    ctx.log(
      `slot still busy ${Math.round(freedMs)} ms after the disconnect; watching it for up to ${Math.round(drainMs)} ms (the orphan's natural end is about ${fmt(remainingMs, 0)} ms away)`,
    );
    const d = await pollUntil(reader.read, (v) => v !== undefined && v <= baseline, {
      intervalMs: 50,
      deadlineMs: drainMs,
      signal: ctx.signal,
    });
    drained = d;
    if (!d.ok)
      ctx.log(
        `${reader.source} stayed at ${d.value ?? 'unknown'} even after the orphan would have ended: a stale counter is no evidence; judging by timing instead`,
      );
  }
  return gradeCancelByCounters({
    source: reader.source,
    baseline,
    busyDuring,
    polled,
    drained,
    tokensBeforeAbort: seen,
    orphanMaxTokens: n,
    itlMs: itl,
    remainingMs,
    forced,
    freeWithinMs: freeWithin,
    evidence: [streamEvidence('orphan (aborted)', x)],
  });
}

async function cancelByDelay(ctx: CheckContext): Promise<Verdict> {
  const freeWithin = ctx.threshold('freeWithinMs');
  const slots = usableSlots(ctx);
  // Slots neither declared nor reported: measure how many the server serves at once (lib/measure/serving.ts).
  let measured: Serving | undefined;
  if (slots.value === undefined) {
    ctx.log('slots unknown: measuring how many streams the server serves at once');
    measured = await measureServing(ctx);
    if (measured.concurrency === undefined)
      return inconclusive(
        `no busy-slot counter (/slots, /metrics) to read, and the timing method must fill every slot: ${slots.why}; ${measured.how}`,
        { serving: measured },
      );
  }
  const k = Math.min(64, Math.max(1, measured?.concurrency ?? slots.value!));
  const slotsNote = measured ? ` (slot count ${measured.how})` : '';
  const n = orphanTokens(ctx);
  // Baseline: a lone short request's TTFT, so a slow prefill is not taken for a held slot.
  const lone = await chat(
    ctx,
    generationBody(ctx, 'openai-chat', { prompt: uniquePrompt(ctx, 'Say hello.'), maxTokens: 4, stream: true }),
  );
  const loneProblem = streamProblem(lone);
  if (loneProblem || lone.metrics?.ttftMs === undefined) {
    return inconclusive(
      `a short baseline stream gave no first token (${loneProblem ?? 'no token-bearing event'}): the all-slots-busy delay cannot be measured`,
    );
  }
  const baseTtft = lone.metrics.ttftMs;
  const allowed = freeWithin + 3 * baseTtft;
  ctx.log(`filling all ${k} slots with ${n}-token streams, then disconnecting them while a probe waits`);
  const orphans = Array.from({ length: k }, (_, i) => startStream(ctx, n, true, `${ORPHAN_PROMPT} (part ${i + 1})`));
  const abortAll = async () => {
    for (const o of orphans) o.ac.abort();
    return Promise.all(orphans.map((o) => o.done));
  };
  const started = await within(
    Promise.all(orphans.map((o) => o.reach(2))).then((r) => r.every(Boolean)),
    startBound(ctx),
    ctx.signal,
  );
  if (!started) {
    const xs = await abortAll();
    const live = orphans.filter((o) => o.count >= 2).length;
    const problem = xs.map(streamProblem).find((p) => p);
    return inconclusive(
      `only ${live} of ${k} slots were streaming at once${problem ? ` (${problem})` : ''}: the all-slots-busy delay needs every declared slot busy`,
    );
  }
  const probe = startStream(ctx, 4, false, 'Say hello.');
  const counts = orphans.map((o) => o.count);
  const held = await within(
    Promise.all(orphans.map((o, i) => o.reach(counts[i]! + 8))).then((r) => r.every(Boolean)),
    5_000,
    ctx.signal,
  );
  if (probe.ended && probe.count === 0) {
    await abortAll();
    const px = await probe.done;
    return inconclusive(
      `the probe was answered at once while all ${k} slots were busy (${describeExchange(px)}): admission control, not queueing, so a held slot cannot be timed`,
      { slots: k },
      [streamEvidence('probe', px)],
    );
  }
  if (probe.count > 0) {
    const xs = await abortAll();
    probe.ac.abort();
    await probe.done;
    return inconclusive(
      `the probe was served while all ${k} slots were busy: the server runs more than ${k} requests at once, so a held slot would not delay it (declare the real slot count)`,
      { slots: k },
      xs.slice(0, 4).map((x, i) => streamEvidence(`orphan ${i + 1}`, x)),
    );
  }
  if (!held) {
    await abortAll();
    probe.ac.abort();
    await probe.done;
    return inconclusive(
      'the busy streams stalled while the probe waited: no clean all-slots-busy state to measure from',
    );
  }
  const itl = median(orphans.map((o) => itlOf(o, performance.now())));
  const seen = Math.max(...orphans.map((o) => o.count));
  const xs = await abortAll();
  const abortedAt = performance.now();
  const got = await within(probe.reach(1), 2 * allowed, ctx.signal);
  const delay = probe.firstAbs !== undefined ? probe.firstAbs - abortedAt : undefined;
  probe.ac.abort();
  const px = await probe.done;
  if (!got && px.rec.status !== undefined && px.rec.status !== 200) {
    return inconclusive(
      `after the disconnect the probe got ${describeExchange(px)} instead of a stream: cannot time the freed slot`,
      undefined,
      [streamEvidence('probe', px)],
    );
  }
  return gradeCancelByDelay({
    slots: k,
    slotsNote,
    serving: measured,
    baselineTtftMs: baseTtft,
    freeWithinMs: freeWithin,
    allowedMs: allowed,
    probeInTime: got,
    probeDelayMs: delay,
    itlMs: itl,
    remainingMs: itl !== undefined ? (n - seen) * itl : undefined,
    orphanMaxTokens: n,
    forced: !!ctx.profile.forceLength,
    evidence: [
      streamEvidence('probe', px),
      ...xs.slice(0, 3).map((x, i) => streamEvidence(`orphan ${i + 1} (aborted)`, x)),
    ],
  });
}

// ------------------------------------------------------------------------------------------------------------
// stream.headers-early: up to 3 long-prompt streams of 2 tokens, timed from the request to its headers and first token

async function recordPrefills(
  ctx: CheckContext,
): Promise<{ xs: Exchange[]; sizes: number[]; rate: number | undefined } | { verdict: Verdict }> {
  const window = ctx.server.contextWindow?.value;
  const cap = Math.floor(Math.min(ctx.threshold('promptTokens'), window !== undefined ? window * 0.75 : Infinity));
  const prefillMs = ctx.threshold('prefillMs');
  // Prompt length from the measured prefill rate (lib/measure/pace.ts), re-sized after each request; 1000 tokens until
  // a rate is known. The loop stops when the next request would not fit 60 % of the check's bound.
  const sizeFor = (tps: number | undefined) =>
    Math.max(Math.min(256, cap), Math.min(cap, tps !== undefined ? Math.round((tps * prefillMs) / 1000) : 1000));
  let rate = paceFor(ctx)?.prefillTps;
  let target = sizeFor(rate);
  const budgetMs = 0.6 * (ctx.check.timeoutMs ?? 60_000);
  const t0 = performance.now();
  const xs: Exchange[] = [];
  const sizes: number[] = [];
  for (let i = 0; i < 3; i++) {
    const expect = rate !== undefined ? (target / rate) * 1000 : 0;
    if (i >= 2 && performance.now() - t0 + expect > budgetMs) break;
    let prompt: string;
    try {
      prompt = (await promptOfTokens(ctx, target, i * 97)).prompt;
    } catch (e) {
      return { verdict: inconclusive(`cannot build a prompt of a known length: ${(e as Error).message}`) };
    }
    const x = await chat(ctx, generationBody(ctx, 'openai-chat', { prompt, maxTokens: 2, stream: true }));
    const evidence = [streamEvidence(`request ${i + 1}`, x)];
    if (x.rec.failure?.kind === 'headers-timeout') {
      const requirement =
        'Response headers SHOULD be sent when the request is accepted, before a long prefill ends, so clients with header timeouts keep waiting.';
      const actual = `no response headers within ${ctx.deadlines.headersMs} ms for a ${target}-token prompt: ${describeExchange(x)}`;
      const expected = `headers within ${ctx.deadlines.headersMs} ms (the headers deadline)`;
      return { verdict: fail({ requirement, expected, actual }, undefined, evidence) };
    }
    const problem = streamProblem(x);
    if (endedByUs(x.rec)) {
      const why = budgetText(`the ${target}-token request ended`, paceFor(ctx), describeExchange(x));
      return { verdict: inconclusive(why, undefined, evidence) };
    }
    if (problem) {
      const why = `the ${target}-token request did not give a stream to time (${problem}); the context and api checks judge that`;
      return { verdict: blockedIfUnserved(inconclusive(why, undefined, evidence), [x.rec]) };
    }
    xs.push(x);
    sizes.push(target);
    const sent = x.events?.usage?.prompt_tokens ?? target;
    const ttft = x.metrics?.ttftMs;
    if (ttft !== undefined && ttft > 0) rate = (sent / ttft) * 1000;
    target = sizeFor(rate);
  }
  return { xs, sizes, rate };
}

// ------------------------------------------------------------------------------------------------------------

/** Thresholds that size the long streams (shared by ttft-before-end and spread: one recording). */
const LONG_SIZING = {
  minTokens: {
    value: 32,
    why: "the fewest tokens that still judge: a streaming server's TTFT is then ~1/32 of the stream, a fifth of the text is 6 tokens",
  },
  maxTokens: {
    value: 1024,
    why: 'the most tokens asked of a stream (also capped by the window): about 0.2 s at 5000 tok/s',
  },
  decodeMs: {
    value: 2_000,
    why: 'each stream decodes for about this long (and for at least 10 TTFTs), so jitter of a few ms is small beside it at any speed',
  },
};
/** Bound of each long-stream check: 3 streams of the minimum length at 3 tok/s (about 35 s) fit 60 % of it. */
const LONG_TIMEOUT_MS = 120_000;

export const checks: CheckDef[] = [
  {
    id: 'stream.ttft-before-end',
    title: 'the first token arrives long before the end of a long generation',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    provides: ['ttft_p50', 'first_token_share'],
    rationale:
      'Streaming exists to show text as it is generated; a server that sends the first token with the last (Rapid-MLX: TTFT equal to the whole response time) is not streaming.',
    reference:
      'OpenAI API reference, Chat Completions `stream`: "partial message deltas will be sent … as they become available"; seed 000 (Rapid-MLX TTFT ≈ e2e)',
    requires: ['openai-chat'],
    thresholds: {
      ...LONG_SIZING,
      maxRatio: {
        value: 0.5,
        why: 'a streaming server has ttft/e2e ≈ prefill/(prefill + decode), far below half once the decode lasts 10 TTFTs; a buffered one has ≈ 1',
      },
    },
    timeoutMs: LONG_TIMEOUT_MS,
    async run(ctx) {
      const rec = await longStreams(ctx);
      const u = usable(rec, 'the long streams were recorded');
      if ('verdict' in u) return u.verdict;
      // Our lateness while the streams were recorded (sampled at 1 ms: lib/measure/client-lag.ts), with the run's preflight lag.
      const lag = ctx.clientLag({ p99Ms: rec.lag.p99Ms, maxMs: clientAllowanceMs(rec.lag) });
      return gradeTtftBeforeEnd({
        streams: u.ok.map((x) => ({
          ttftMs: x.metrics?.ttftMs,
          e2eMs: x.rec.tEnd,
          completionTokens: x.metrics?.completionTokens,
          tokenEvents: x.events?.tokens.length,
          reads: x.rec.reads.length,
        })),
        long: u.ls,
        maxRatio: ctx.threshold('maxRatio'),
        lag,
        evidence: u.ok.map((x, i) => streamEvidence(`stream ${i + 1}`, x)),
      });
    },
  },
  {
    id: 'stream.spread',
    title: 'tokens arrive spread over the request, not in one burst at the end',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    provides: ['read_share'],
    rationale:
      'A server that holds tokens and flushes them at the end breaks live display and makes naive clients compute phantom tokens/s (vllm-mlx 14000 tok/s).',
    reference:
      'OpenAI API reference, Chat Completions `stream`; seed 000 (vllm-mlx phantom gen_tps from burst delivery); docs/servers.md "Burst delivery"',
    requires: ['openai-chat'],
    thresholds: {
      ...LONG_SIZING,
      maxReadShare: {
        value: 0.2,
        why: 'one read carrying a fifth of the text needs a client stall of a fifth of the decode (hundreds of ms at the sized length, which the lag sampler sees); a burst puts everything in one or two reads',
      },
      maxLateShare: {
        value: 0.25,
        why: 'a steady stream puts ~5 % of its text in the last 5 % of the request time; a flush at the end puts ~100 % there',
      },
    },
    timeoutMs: LONG_TIMEOUT_MS,
    async run(ctx) {
      const rec = await longStreams(ctx);
      const u = usable(rec, 'the long streams were recorded');
      if ('verdict' in u) return u.verdict;
      return gradeSpread({
        streams: u.ok.map((x) => ({ tokens: x.events!.tokens, rec: x.rec })),
        long: u.ls,
        maxReadShare: ctx.threshold('maxReadShare'),
        maxLateShare: ctx.threshold('maxLateShare'),
        lag: ctx.clientLag({ p99Ms: rec.lag.p99Ms, maxMs: clientAllowanceMs(rec.lag) }),
        evidence: u.ok.map((x, i) => streamEvidence(`stream ${i + 1}`, x)),
      });
    },
  },
  {
    id: 'stream.headers-early',
    title: 'response headers arrive before a long prefill ends',
    level: 'SHOULD',
    dependsOn: ['sse.content-type'],
    rationale:
      'Clients with a header timeout give up on a server that sends nothing while it prefills a long prompt; headers (and pings) keep the connection visibly alive.',
    reference:
      'RFC 9110 §15 (status sent when known) and OpenAI `stream`; docs/servers.md "SSE comments" (oMLX sends `: keep-alive` at open, llama.cpp pings while idle)',
    requires: ['openai-chat'],
    thresholds: {
      promptTokens: {
        value: 3000,
        why: 'the longest prompt asked (within a 4096-token window): at 20,000 tok/s of prefill it takes 150 ms, well above timer noise',
      },
      prefillMs: {
        value: 1_500,
        why: 'prompts are sized from the measured prefill rate to prefill for about this long (never above promptTokens), so a 200 tok/s server is not asked for 15 s prefills',
      },
      minPrefillMs: {
        value: 100,
        why: 'below this, header and first-token times are within the noise of a loaded 2-core client',
      },
      maxHeadersShare: {
        value: 0.5,
        why: 'headers sent on admission arrive within milliseconds; half the prefill still leaves room for tokenising first',
      },
    },
    timeoutMs: 90_000,
    async run(ctx) {
      const r = await recordPrefills(ctx);
      if ('verdict' in r) return r.verdict;
      const firstToken = (x: Exchange) =>
        x.metrics?.ttftMs ?? x.rec.reads.find((b) => b.bytes.length > 0)?.t ?? x.rec.tEnd;
      return gradeHeadersEarly({
        requests: r.xs.map((x) => ({ headersMs: x.rec.tHeaders, prefillEndMs: firstToken(x) })),
        promptTokens: r.sizes,
        prefillTps: r.rate,
        minPrefillMs: ctx.threshold('minPrefillMs'),
        maxHeadersShare: ctx.threshold('maxHeadersShare'),
        lag: ctx.clientLag(),
        evidence: r.xs.map((x, i) => streamEvidence(`request ${i + 1}`, x)),
      });
    },
  },
  {
    id: 'stream.cancel-frees-slot',
    disturbs: true, // abandoned streams: the health sentinel probes after it
    title: 'a client disconnect stops the generation and frees its slot',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'Every abandoned request (a closed tab, a client timeout) otherwise keeps a slot and the GPU busy until it ends, delaying everyone else.',
    reference:
      'RFC 9110 §9.5 / client abort; documented server behaviour: llama.cpp and vLLM cancel on disconnect (/slots is_processing, vllm:num_requests_running)',
    requires: ['openai-chat'],
    thresholds: {
      freeWithinMs: {
        value: 1000,
        why: 'a server notices a closed socket at its next write, one decode step later; a second covers slow steps and polling',
      },
      useServerCounters: {
        value: 1,
        why: '1: read /slots or /metrics when the server has them; 0: judge by the all-slots-busy delay only (counters that lag or lie)',
      },
    },
    // The serving-concurrency measurement (slots unknown) takes up to a minute on a loaded machine.
    timeoutMs: 150_000,
    async run(ctx) {
      if (ctx.threshold('useServerCounters') !== 0) {
        const reader = await findBusyReader(ctx);
        if (reader) {
          const v = await cancelByCounters(ctx, reader);
          if (v) return v;
          ctx.log(`${reader.source} did not show the request as busy; falling back to the all-slots-busy delay`);
        }
      }
      return cancelByDelay(ctx);
    },
  },
];

/** 4 ms decode steps halve the measured-concurrency proofs' time (the ladder's streams run to their end). */
const FAST_DECODE = ['--decode-step-ms', '4'];

export const proofs: Proof[] = [
  passProof('stream.ttft-before-end', { messageIncludes: ['median TTFT', 'vs median end-to-end'] }),
  faultProof('stream.ttft-before-end', 'stream-burst-at-end', ['median TTFT', 'before the end of the stream']),
  faultProof('stream.ttft-before-end', 'stream-role-now-content-at-end', [
    'median TTFT',
    'before the end of the stream',
  ]),
  passProof('stream.spread', { messageIncludes: ['largest single read', 'last 5 % of the request time'] }),
  faultProof('stream.spread', 'stream-burst-at-end', ['one read at', 'in the last 5 %']),
  faultProof('stream.spread', 'stream-role-now-content-at-end', ['one read at', 'in the last 5 %']),
  passProof('stream.headers-early', { messageIncludes: ['headers after', 'of the prefill'] }),
  faultProof('stream.headers-early', 'stream-headers-after-prefill', ['headers came only with the first token'], {
    expect: 'warn',
  }),
  passProof('stream.cancel-frees-slot', { messageIncludes: ['busy', 'after the client disconnected'] }),
  faultProof('stream.cancel-frees-slot', 'stream-continue-after-disconnect', [
    'still 1 busy',
    'when the orphaned generation would have run to its end',
  ]),
  passProof('stream.cancel-frees-slot', {
    messageIncludes: ['slots busy', 'the waiting probe got its first token'],
    profile: { thresholds: { 'stream.cancel-frees-slot': { useServerCounters: 0 } } },
    note: 'timing-only evidence (all slots busy)',
  }),
  faultProof('stream.cancel-frees-slot', 'stream-continue-after-disconnect', ['kept the slots'], {
    profile: { thresholds: { 'stream.cancel-frees-slot': { useServerCounters: 0 } } },
    note: 'timing-only evidence (all slots busy)',
  }),
  // Slots neither declared nor reported (/slots and /metrics hidden): the serving concurrency is measured.
  faultProof(
    'stream.cancel-frees-slot',
    ['discovery-hide-slots', 'stream-continue-after-disconnect'],
    ['kept the slots', 'measured (not reported)', "a second stream's first token waited for the first stream's end"],
    {
      // 8 ms steps (not FAST_DECODE): the orphan must outlast the probe's wait after the disconnect (2 × ~1 s allowed).
      serverArgs: ['--slots', '1'],
      profile: { slots: undefined },
      note: 'one slot, its count hidden, nothing declared',
    },
  ),
  passProof('stream.cancel-frees-slot', {
    faults: ['discovery-hide-slots'],
    serverArgs: ['--slots', '1', ...FAST_DECODE],
    profile: { slots: undefined },
    messageIncludes: ['all 1 slots busy', 'measured (not reported): the server serves one at a time'],
    note: 'one slot, its count hidden, nothing declared',
  }),
  passProof('stream.cancel-frees-slot', {
    faults: ['discovery-hide-slots'],
    serverArgs: FAST_DECODE,
    profile: { slots: undefined },
    messageIncludes: ['all 4 slots busy', 'measured (not reported): the server serves 4 at once'],
    note: 'four slots, their count hidden, nothing declared',
  }),
];
