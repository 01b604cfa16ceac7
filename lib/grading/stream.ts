// The verdict rules of the `stream` family, as pure functions of what its checks measured (suites/stream.ts records
// the streams, times the slots and calls exactly these). No clock, no I/O: what an exchange or a live stream was is
// passed in as figures (or its recording), with the evidence already built, so test/stream-grading.test.ts can feed
// each rule hand-made figures.
//
// Timing rules follow docs/grading.md "Timing verdicts": fail only when a confidence bound is past the threshold,
// borderline evidence warns with the figures, and a verdict our client's own lag could explain is inconclusive.

import { escapeBytes } from '../decode/stream-decoder.ts';
import { bodyText } from '../http/recorder.ts';
import { bootstrapMedianCI, bootstrapRatioCI, median, summarize } from '../measure/stats.ts';
import { bandAbove, type ReadSpread, readSpread, stallShare } from '../measure/timing.ts';
import type { ClientLag, Evidence, Recording, Verdict } from '../model/types.ts';
import { borderline, fail, fmt, inconclusive, pass, pct } from '../model/verdict.ts';

const ms = (x: number | undefined) => `${fmt(x, 1)} ms`;
/** Inconclusive, never a fail: our client's own lateness (`lag`) could explain the figures. */
const lagExplains = (lag: ClientLag, figures: string, metrics: Verdict['metrics'], evidence: Evidence[]) =>
  inconclusive(
    `our client's own lag of up to ${ms(lag.ms)} (${lag.source}) could explain ${figures}`,
    metrics,
    evidence,
  );
/** "128" when every stream asked the same length, else "96–128". */
const fmtSizes = (xs: number[]) => (new Set(xs).size === 1 ? `${xs[0]}` : `${Math.min(...xs)}–${Math.max(...xs)}`);

// ------------------------------------------------------------------------------------------------------------
// The long streams shared by stream.ttft-before-end and stream.spread

/** How the long streams were sized (said in every message of the two checks). */
interface LongSizing {
  /** Tokens asked of each stream. */
  sizes: number[];
  /** The fewest tokens a stream needs to be judged. */
  minTokens: number;
  /** How the length was chosen. */
  sizing: string;
}

/**
 * Long streams that did not give a complete 200 stream (`problems[i]` says why, undefined for a good one): the check
 * fails before judging any timing. Undefined when every stream is complete.
 */
export function brokenLongStreams(
  problems: ReadonlyArray<string | undefined>,
  evidence: Evidence[],
): Verdict | undefined {
  const broken = problems.map((p, i) => (p ? `request ${i + 1}: ${p}` : undefined)).filter((p): p is string => !!p);
  if (broken.length === 0) return undefined;
  return fail(
    {
      requirement:
        'A streaming chat completion MUST answer 200 with a complete event stream before its timing can be judged.',
      expected:
        "HTTP 200, text/event-stream, ending normally (a silence far longer than the stream's own token gap is a stall)",
      actual: broken[0]!,
      violations: broken.slice(1),
    },
    undefined,
    evidence,
  );
}

/**
 * Fewer than 2 streams long enough to judge (complete ones: the suite fails broken streams before this): inconclusive,
 * saying whether tokens came without text to time, the recording ran out of budget, or the answers were too short.
 */
export function tooFewLongStreams(input: {
  long: LongSizing;
  /** Completion tokens of every recorded stream, and where the counts came from ("usage", "events" …). */
  completionTokens: number[];
  tokenSource: string;
  usable: number;
  recorded: number;
  /** lib/exchange/served.ts textlessNote of the recorded streams ('' when every token carried text). */
  textless: string;
  /** Why fewer streams than planned were recorded, if so. */
  short?: string;
  /** What the streams are for ("the long streams were recorded"). */
  what: string;
}): Verdict {
  const { long: ls, completionTokens: tokens } = input;
  if (input.textless)
    return inconclusive(
      `${input.usable} of ${input.recorded} streams carried text to time${input.textless}; ${input.what} needs 2 (${ls.sizing})`,
      { completionTokens: tokens, sizes: ls.sizes },
    );
  if (input.short)
    return inconclusive(`${input.short}; ${input.what} needs 2 (${ls.sizing})`, {
      completionTokens: tokens,
      sizes: ls.sizes,
    });
  return inconclusive(
    `responses too short to judge: completion tokens ${JSON.stringify(tokens)} (from ${input.tokenSource}), need at least ${ls.minTokens} in 2 of ${input.recorded} ` +
      `(declare forceLength in the profile if the server supports ignore_eos or min_tokens)`,
    { completionTokens: tokens, tokenSource: input.tokenSource },
  );
}

/** One long stream as stream.ttft-before-end reads it. */
interface TtftStream {
  ttftMs?: number;
  /** The whole request time (ms since t0). */
  e2eMs: number;
  completionTokens?: number;
  /** Token-bearing events and body reads (for the per-stream lines of a failure). */
  tokenEvents?: number;
  reads: number;
}

/**
 * stream.ttft-before-end: median TTFT / median end-to-end time (bootstrap CI) at most `maxRatio`; fail when the CI's
 * lower bound is above it, warn between; inconclusive when our client's lag could explain the ratio.
 */
export function gradeTtftBeforeEnd(input: {
  streams: readonly TtftStream[];
  long: LongSizing;
  maxRatio: number;
  lag: ClientLag;
  evidence: Evidence[];
}): Verdict {
  const { streams, long: ls, maxRatio, evidence } = input;
  const ttfts = streams.map((s) => s.ttftMs);
  const e2es = streams.map((s) => s.e2eMs);
  const ci = bootstrapRatioCI(ttfts, e2es, { seed: 1 });
  const stall = input.lag.ms;
  const metrics = {
    sizes: ls.sizes,
    sizing: ls.sizing,
    ratio: ci.estimate,
    ratioLow: ci.low,
    ratioHigh: ci.high,
    ttftMs: summarize(ttfts),
    e2eMs: summarize(e2es),
    ttftSamples: ttfts,
    e2eSamples: e2es,
    completionTokens: streams.map((s) => s.completionTokens),
    clientStallMs: stall,
  };
  const band = bandAbove(ci.estimate, ci.low, maxRatio);
  const figures = `median TTFT ${ms(median(ttfts))} vs median end-to-end ${ms(median(e2es))} (ratio ${fmt(ci.estimate, 3)}, 95 % CI ${fmt(ci.low, 3)}–${fmt(ci.high, 3)}) over ${streams.length} streams of ${fmtSizes(ls.sizes)} tokens (${ls.sizing})`;
  if (band === 'pass') return pass(figures, metrics, evidence);
  const medTtft = median(ttfts)!;
  const medE2e = median(e2es)!;
  if ((medTtft - stall) / medE2e <= maxRatio) {
    return lagExplains(input.lag, figures, metrics, evidence);
  }
  if (band === 'fail') {
    return fail(
      {
        requirement: `For a generation of ${fmtSizes(ls.sizes)} tokens (at least ${ls.minTokens}, sized so the decode dwarfs the TTFT), median TTFT MUST be at most ${maxRatio} of median end-to-end time: tokens are streamed as they are generated, not held until the end.`,
        expected: `ttft / e2e ≤ ${maxRatio} (a streaming server: about prefill / (prefill + ${fmtSizes(ls.sizes)} decode steps))`,
        actual: `${figures}: the first token arrived only ${ms(medE2e - medTtft)} before the end of the stream`,
        violations: streams.map(
          (s, i) =>
            `stream ${i + 1}: TTFT ${ms(s.ttftMs)}, end ${ms(s.e2eMs)}, ${s.completionTokens} tokens in ${s.tokenEvents} events over ${s.reads} reads`,
        ),
      },
      metrics,
      evidence,
    );
  }
  return borderline(`borderline: ${figures}; the threshold is ${maxRatio}`, metrics, evidence);
}

/** One long stream as stream.spread reads it: its token events and its recording (request time, bytes). */
interface SpreadStream {
  tokens: ReadonlyArray<{ t: number; text: string }>;
  rec: Recording;
}

/**
 * stream.spread: the largest single read's share of the text and the share in the last 5 % of the request time
 * (medians, bootstrap CIs) at most `maxReadShare` and `maxLateShare`; fail when a lower bound is past its limit, warn
 * between; inconclusive when our client's lag, as a share of each request, could explain both.
 */
export function gradeSpread(input: {
  streams: readonly SpreadStream[];
  long: LongSizing;
  maxReadShare: number;
  maxLateShare: number;
  lag: ClientLag;
  evidence: Evidence[];
}): Verdict {
  const { streams, long: ls, evidence } = input;
  const maxRead = input.maxReadShare;
  const maxLate = input.maxLateShare;
  const spreads = streams.map((x) => readSpread({ tokens: x.tokens, tEnd: x.rec.tEnd }));
  if (spreads.some((s) => !s)) return inconclusive('a stream carried no generated text to time');
  const sp = spreads as ReadSpread[];
  const readShares = sp.map((s) => s.maxReadShare);
  const lateShares = sp.map((s) => s.lateShare);
  const readCi = bootstrapMedianCI(readShares, { seed: 1 });
  const lateCi = bootstrapMedianCI(lateShares, { seed: 2 });
  const stall = input.lag.ms;
  const allowance = streams.map((x) => stallShare(stall, 0, x.rec.tEnd));
  const metrics = {
    sizes: ls.sizes,
    sizing: ls.sizing,
    maxReadShare: readCi.estimate,
    maxReadShareLow: readCi.low,
    lateShare: lateCi.estimate,
    lateShareLow: lateCi.low,
    readShareSamples: readShares,
    lateShareSamples: lateShares,
    reads: sp.map((s) => s.reads),
    events: sp.map((s) => s.events),
    clientStallMs: stall,
  };
  const bands = [bandAbove(readCi.estimate, readCi.low, maxRead), bandAbove(lateCi.estimate, lateCi.low, maxLate)];
  const figures = `largest single read ${pct(readCi.estimate)} of the text (limit ${pct(maxRead)}), last 5 % of the request time ${pct(lateCi.estimate)} (limit ${pct(maxLate)}); medians over ${sp.length} streams of ${fmtSizes(ls.sizes)} tokens (${ls.sizing})`;
  if (bands.every((b) => b === 'pass')) return pass(figures, metrics, evidence);
  const corrected = (xs: number[]) => median(xs.map((v, i) => v - allowance[i]!))!;
  if (corrected(readShares) <= maxRead && corrected(lateShares) <= maxLate) {
    return lagExplains(input.lag, figures, metrics, evidence);
  }
  if (bands.includes('fail')) {
    const violations: string[] = [];
    sp.forEach((s, i) => {
      if (s.maxReadShare > maxRead)
        violations.push(
          `stream ${i + 1}: one read at ${ms(s.maxReadAt)} carried ${pct(s.maxReadShare)} of the text (${s.maxReadEvents} of ${s.events} token events; ${s.reads} reads carried text)`,
        );
      if (s.lateShare > maxLate)
        violations.push(
          `stream ${i + 1}: ${pct(s.lateShare)} of the text arrived after ${ms(s.lateFrom)}, in the last 5 % of the ${ms(streams[i]!.rec.tEnd)} request`,
        );
    });
    const worst = streams[readShares.indexOf(Math.max(...readShares))]!;
    return fail(
      {
        requirement:
          'Tokens MUST arrive spread over the request as they are generated: no single read may carry a large share of them, and the end of the request may not carry most of them (the server holds tokens and flushes them at the end otherwise).',
        expected: `largest read ≤ ${pct(maxRead)} of the text and ≤ ${pct(maxLate)} of it in the last 5 % of the whole request time`,
        actual: figures,
        violations,
        bytes: escapeBytes(bodyText(worst.rec), 300),
      },
      metrics,
      evidence,
    );
  }
  return borderline(`borderline: ${figures}`, metrics, evidence);
}

// ------------------------------------------------------------------------------------------------------------
// stream.headers-early

/** One long-prompt request: when its headers came and when its prefill ended (its first token), ms since t0. */
interface HeadersTiming {
  headersMs?: number;
  prefillEndMs: number;
}

/**
 * stream.headers-early: headers at most `maxHeadersShare` of the way to the first token (median share, bootstrap
 * CI); fail when the lower bound is past it, warn between; inconclusive when the prefill is too short to tell or our
 * client's lag could explain the share.
 */
export function gradeHeadersEarly(input: {
  requests: readonly HeadersTiming[];
  promptTokens: number[];
  /** The prefill rate the prompts were sized from (tok/s). */
  prefillTps?: number;
  minPrefillMs: number;
  maxHeadersShare: number;
  lag: ClientLag;
  evidence: Evidence[];
}): Verdict {
  const { requests: xs, promptTokens: sizes, prefillTps: rate, evidence } = input;
  const minPrefill = input.minPrefillMs;
  const maxShare = input.maxHeadersShare;
  const target2 = fmtSizes(sizes);
  const heads = xs.map((x) => x.headersMs);
  const ends = xs.map((x) => x.prefillEndMs);
  const shares = xs.map((x, i) => (x.headersMs ?? Infinity) / ends[i]!);
  const ci = bootstrapMedianCI(shares, { seed: 3 });
  const metrics = {
    promptTokens: sizes,
    prefillTps: rate,
    headersMs: summarize(heads),
    prefillEndMs: summarize(ends),
    headersShare: ci.estimate,
    headersShareLow: ci.low,
    samples: { heads, ends },
  };
  const medEnd = median(ends)!;
  const figures = `headers after ${ms(median(heads))}, first token after ${ms(medEnd)} (headers at ${pct(ci.estimate)} of the prefill; medians over ${xs.length} requests with ${target2}-token prompts; prompt length sized from the measured prefill rate ${fmt(rate, 0)} tok/s)`;
  if (medEnd < minPrefill) {
    return inconclusive(
      `prefill too short to tell: ${figures}; needs a first token after ≥ ${minPrefill} ms`,
      metrics,
      evidence,
    );
  }
  const band = bandAbove(ci.estimate, ci.low, maxShare);
  if (band === 'pass') return pass(figures, metrics, evidence);
  const stall = input.lag.ms;
  if ((median(heads)! - stall) / medEnd <= maxShare) {
    return lagExplains(input.lag, figures, metrics, evidence);
  }
  if (band === 'fail') {
    return fail(
      {
        requirement:
          'Response headers SHOULD be sent when the request is accepted, before a long prefill ends, so clients with header timeouts keep waiting.',
        expected: `headers within ${pct(maxShare)} of the time to the first token`,
        actual: `${figures}: the status and headers came only with the first token, nothing during the prefill`,
        violations: xs.map((x, i) => `request ${i + 1}: headers ${ms(x.headersMs)}, first token ${ms(ends[i])}`),
      },
      metrics,
      evidence,
    );
  }
  return borderline(`borderline: ${figures}`, metrics, evidence);
}

// ------------------------------------------------------------------------------------------------------------
// stream.cancel-frees-slot

/**
 * Time per token of a live stream: the mean gap over its token span, not the median gap — a fast server delivers
 * several tokens per read, the events of one read share a timestamp, and the median gap is then 0 (llama-server at
 * hundreds of tok/s), which would make every remaining generation look already over. A stream whose tokens all came
 * in one read is timed from its first token to `untilAbs` (when it was aborted).
 */
export function itlOf(s: { times: readonly number[]; firstAbs?: number }, untilAbs?: number): number | undefined {
  const t = s.times;
  if (t.length >= 2 && t[t.length - 1]! > t[0]!) return (t[t.length - 1]! - t[0]!) / (t.length - 1);
  if (untilAbs !== undefined && s.firstAbs !== undefined && t.length >= 1 && untilAbs > s.firstAbs)
    return (untilAbs - s.firstAbs) / t.length;
  return undefined;
}

/**
 * An orphan stream that ended before it could be cancelled: without `tokensBeforeAbort` token events within
 * `startBoundMs` (too slow: inconclusive), not served (`problem`: fail), served as tokens without text (`textless`, the
 * note: undefined while attempts are left, to try once more; then inconclusive), or simply too short (inconclusive).
 */
export function orphanNotCancellable(o: {
  timedOut: boolean;
  problem?: string;
  /** lib/exchange/served.ts textlessNote of the stream ('' when its tokens carried text). */
  textless: string;
  attempt: number;
  /** Token events the stream gave, and the tokens it asked for. */
  events: number;
  maxTokens: number;
  tokensBeforeAbort: number;
  startBoundMs: number;
  evidence: Evidence[];
}): Verdict | undefined {
  if (o.timedOut)
    return inconclusive(
      `no ${o.tokensBeforeAbort} token events within ${o.startBoundMs} ms: too slow to test cancellation`,
      undefined,
      o.evidence,
    );
  if (o.problem)
    return fail({
      requirement: 'A long streaming request MUST start streaming so that cancelling it can be tested.',
      expected: 'HTTP 200 and token events',
      actual: o.problem,
    });
  if (o.textless && o.attempt < 2) return undefined;
  if (o.textless) return inconclusive(`no orphan stream of ${o.attempt} carried text to cancel it after${o.textless}`);
  return inconclusive(
    `the generation ended after ${o.events} token event(s), before it could be cancelled (declare forceLength so ${o.maxTokens} tokens can be requested)`,
  );
}

/** A busy-slot counter polled until it fell back to its baseline (lib/measure/timing.ts pollUntil). */
interface Polled {
  ok: boolean;
  value: number | undefined;
  elapsedMs: number;
  polls: number;
}

/**
 * stream.cancel-frees-slot by the server's busy counter (/slots, /metrics): after the disconnect the counter is back
 * at its baseline within `freeWithinMs` (pass), or only when the orphan would have ended by itself (fail), or between
 * (warn). A counter still busy after the disconnect was watched further (`drained`) until the orphan would have ended:
 * one that never drops even then is stale, no evidence (undefined: the suite times the slots instead). Without
 * forceLength, or with too little of the generation left, a quick release cannot be told from the generation's end:
 * inconclusive.
 */
export function gradeCancelByCounters(input: {
  /** Which counter ("/slots", "/metrics vllm:num_requests_running" …). */
  source: string;
  baseline: number;
  busyDuring: number;
  polled: Polled;
  /** Watched further after `polled` timed out (only then). */
  drained?: Pick<Polled, 'ok' | 'elapsedMs'>;
  tokensBeforeAbort: number;
  orphanMaxTokens: number;
  itlMs?: number;
  /** (orphanMaxTokens − tokensBeforeAbort) × itlMs: how long the orphan would still have generated. */
  remainingMs?: number;
  /** The profile declares forceLength (the orphan cannot end early). */
  forced: boolean;
  freeWithinMs: number;
  evidence: Evidence[];
}): Verdict | undefined {
  const { source, baseline, busyDuring, polled, remainingMs, evidence } = input;
  const seen = input.tokensBeforeAbort;
  const n = input.orphanMaxTokens;
  const itl = input.itlMs;
  const freeWithin = input.freeWithinMs;
  const metrics = {
    method: 'counters',
    source,
    baselineBusy: baseline,
    busyDuring,
    busyAfter: polled.value,
    polls: polled.polls,
    freedAfterMs: polled.ok ? polled.elapsedMs : undefined,
    tokensBeforeAbort: seen,
    orphanMaxTokens: n,
    itlMs: itl,
    expectedRemainingMs: remainingMs,
  };
  if (!polled.ok) {
    if (!input.drained?.ok) return undefined;
    const freedAfter = polled.elapsedMs + input.drained.elapsedMs;
    const m2 = { ...metrics, freedAfterMs: freedAfter };
    if (remainingMs === undefined || freedAfter >= 0.5 * remainingMs) {
      return fail(
        {
          requirement:
            'When the client disconnects, the server MUST stop generating for it and free its slot (generation continues after disconnect otherwise, wasting a slot for every abandoned request).',
          expected: `${source} back to ${baseline} busy within ${freeWithin} ms of the disconnect`,
          actual:
            `still ${polled.value ?? 'unknown'} busy ${Math.round(polled.elapsedMs)} ms after the client disconnected (after ${seen} of ${n} tokens); ` +
            `freed only ${Math.round(freedAfter)} ms after the disconnect, when the orphaned generation would have run to its end (about ${fmt(remainingMs, 0)} ms)`,
        },
        m2,
        evidence,
      );
    }
    return borderline(
      `slow to free the slot: ${source} back to ${baseline} only ${Math.round(freedAfter)} ms after the client disconnected (limit ${freeWithin} ms), ` +
        `though well before the generation's natural end (about ${fmt(remainingMs, 0)} ms)`,
      m2,
      evidence,
    );
  }
  const freed = polled.elapsedMs;
  if (input.forced && remainingMs !== undefined && freed > remainingMs / 2) {
    return inconclusive(
      `the slot was freed ${Math.round(freed)} ms after the disconnect, but the generation had only about ${Math.round(remainingMs)} ms left: cancellation cannot be told from completion`,
      metrics,
      evidence,
    );
  }
  if (!input.forced && itl !== undefined && freed > Math.max(200, 5 * itl)) {
    return inconclusive(
      `the slot was freed ${Math.round(freed)} ms after the disconnect; without forceLength the model may simply have finished (declare forceLength for a clear verdict)`,
      metrics,
      evidence,
    );
  }
  return pass(
    `${source}: busy ${baseline} → ${busyDuring} during the stream → ${polled.value} ${Math.round(freed)} ms after the client disconnected (after ${seen} of ${n} tokens)`,
    metrics,
    evidence,
  );
}

/**
 * stream.cancel-frees-slot by timing alone: with every slot busy and then disconnected, a waiting probe gets its first
 * token within `allowedMs` (pass; inconclusive without forceLength: a busy stream may have ended by itself), later
 * (warn), or not within twice that (fail: the orphaned generations kept the slots).
 */
export function gradeCancelByDelay(input: {
  slots: number;
  /** " (slot count measured …)" when the slot count was measured, else ''. */
  slotsNote: string;
  /** How the slot count was measured (lib/exchange/serving.ts), kept in the metrics. */
  serving?: unknown;
  baselineTtftMs: number;
  freeWithinMs: number;
  /** freeWithinMs + 3 × baselineTtftMs (the probe waited up to twice this). */
  allowedMs: number;
  /** The probe's first token came within twice `allowedMs` of the disconnect. */
  probeInTime: boolean;
  /** When it came (ms after the disconnect), if it did. */
  probeDelayMs?: number;
  itlMs?: number;
  remainingMs?: number;
  orphanMaxTokens: number;
  forced: boolean;
  evidence: Evidence[];
}): Verdict {
  const { slots: k, slotsNote, allowedMs: allowed, probeDelayMs: delay, remainingMs, evidence } = input;
  const baseTtft = input.baselineTtftMs;
  const metrics = {
    method: 'all-slots-busy delay',
    slots: k,
    baselineTtftMs: baseTtft,
    probeDelayAfterDisconnectMs: delay,
    allowedMs: allowed,
    itlMs: input.itlMs,
    expectedRemainingMs: remainingMs,
    orphanMaxTokens: input.orphanMaxTokens,
    serving: input.serving,
  };
  if (!input.probeInTime || delay === undefined) {
    return fail(
      {
        requirement:
          'When the client disconnects, the server MUST stop generating for it and free its slot (generation continues after disconnect otherwise).',
        expected: `with all ${k} slots busy and then disconnected, a waiting request gets its first token within ${Math.round(allowed)} ms (${input.freeWithinMs} ms + 3 × its lone TTFT ${Math.round(baseTtft)} ms)`,
        actual: `no first token ${Math.round(2 * allowed)} ms after all ${k} streams were disconnected: the orphaned generations kept the slots (about ${fmt(remainingMs, 0)} ms of generation left)${slotsNote}`,
      },
      metrics,
      evidence,
    );
  }
  if (delay > allowed) {
    return borderline(
      `the probe waited ${Math.round(delay)} ms after all ${k} streams were disconnected (allowed ${Math.round(allowed)} ms): slow to free slots, or a slow first token${slotsNote}`,
      metrics,
      evidence,
    );
  }
  if (!input.forced) {
    return inconclusive(
      `the probe got its first token ${Math.round(delay)} ms after the disconnect, but without forceLength a busy stream may have ended by itself (declare forceLength for a clear verdict)`,
      metrics,
      evidence,
    );
  }
  return pass(
    `all ${k} slots busy${slotsNote}; ${Math.round(delay)} ms after they were disconnected the waiting probe got its first token (allowed ${Math.round(allowed)} ms)`,
    metrics,
    evidence,
  );
}
