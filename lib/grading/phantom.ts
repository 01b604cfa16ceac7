// Phantom gen_tps: a decode rate the stream that produced it could not have had.
//
// Pure functions over plain numbers (ms since the request's t0), so the same code grades the `metrics` checks
// and lets reporters flag figures of any check from its results file (evidence: tokenTimes, readTimes, e2eMs).
//
// Two kinds of evidence (docs/grading.md "Measuring"; seed 000 / 004):
//  1. Delivery: the tokens reached the client in a window far shorter than the generation took. A server that
//     buffers and flushes (vllm-mlx's MLLM path: role chunk at once, every content token in one write at the end)
//     makes (tokens − 1) / (last − first) explode: 14000 tok/s. Cues: most token events in ONE read, or almost all
//     gaps between token events under a millisecond; the cause is named by when the first bytes came (an early role
//     chunk then late content, or nothing at all until the end).
//  2. Physics: decode is memory-bound, so one stream cannot beat memory bandwidth / active bytes read per token
//     (400 GB/s over ~1.7 GB for a 35B-A3B MoE at 4 bit: about 235 tok/s), with a margin; speculative decoding
//     legitimately beats the single-token bound by a bounded factor.
//
// A normal stream is never flagged: every rule needs at least `minTokenEvents` token events and a burst that
// per-token writes cannot produce. A client that was itself frozen (event-loop stall) can merge reads; the
// assessment says `inconclusive` then rather than accusing the server.
import type { Threshold } from '../model/check.ts';

type PhantomThresholdName = 'minTokenEvents' | 'oneReadShare' | 'burstFactor' | 'earlyShare' | 'lateShare';
export type PhantomThresholds = Record<PhantomThresholdName, number>;

/**
 * The fastest single-stream rate assumed when neither the server nor the profile tells one (tok/s): four times the
 * top of the range the suite supports (5000 tok/s), so no real server is ever faster. Against it only a delivery
 * faster than any generation (a flush within a few ms) counts as a burst.
 */
const DEFAULT_REFERENCE_TPS = 20_000;

/**
 * A stall of S ms merges at most what is generated in S at the reference rate; the rate may be off by a few tens of %
 * (a server's own timer, our end-to-end estimate), so a read is explained by the stall up to 1.5x that.
 */
const STALL_RATE_MARGIN = 1.5;

/** Defaults with their reasons; checks expose them as thresholds (profiles override), reporters use them as they are. */
export const PHANTOM_THRESHOLDS: Record<PhantomThresholdName, Threshold> = {
  minTokenEvents: {
    value: 8,
    why: 'with fewer token events a burst cannot be told from coincidence (the last events often share a read with [DONE])',
  },
  oneReadShare: {
    value: 0.5,
    why: 'a streaming server writes each event when its token is ready; half or more of the token events in one read means they were held and flushed together (unless our own stall explains it)',
  },
  burstFactor: {
    value: 3,
    why: 'tokens delivered at least 3x faster than they can have been generated (the server-reported rate, the rate measured end to end, or the declared bound) were held and flushed: an honest stream arrives at its generation rate, a few tens of % either way',
  },
  earlyShare: {
    value: 0.25,
    why: 'first bytes within the first quarter of the request count as "early" (the role chunk sent at admission)',
  },
  lateShare: {
    value: 0.8,
    why: 'a first token after 80 % of the request is "near the end": the generation happened before the client saw any of it',
  },
};

function phantomDefaults(): PhantomThresholds {
  return Object.fromEntries(Object.entries(PHANTOM_THRESHOLDS).map(([k, v]) => [k, v.value])) as PhantomThresholds;
}

/** What one streamed request looked like on the wire, in ms since its t0. */
interface StreamTiming {
  /** Arrival of each token-bearing event; events decoded from the same read share that read's time. */
  tokenTimes: readonly number[];
  /** Arrival of each body read (the first is when any body byte, e.g. a role chunk, arrived). */
  readTimes?: readonly number[];
  /** t0 → end of stream. */
  e2eMs: number;
  /** Completion tokens (usage, else estimated from the text); events may carry several tokens. */
  completionTokens?: number;
  /** How late our client's timestamps may have been during the request (ms: measured event-loop stall, preflight lag): lib/measure/client-lag.ts clientAllowanceMs. */
  clientStallMs?: number;
  /**
   * The fastest rate this stream's tokens can have been generated at (tok/s): the server-reported decode rate, the
   * rate measured end to end (e2e against length), or the declared physical bound. Bursts are judged against it (the
   * stream's own cadence), not against a fixed gap. Default DEFAULT_REFERENCE_TPS.
   */
  referenceTps?: number;
  /** Where referenceTps comes from, for messages. */
  referenceSource?: string;
  /** Older name of referenceTps (the physical bound with its margin); used when referenceTps is not given. */
  maxPlausibleTps?: number;
}

type PhantomCauseKind = 'one-read' | 'burst' | 'late-content-after-role' | 'whole-response-at-end';

interface PhantomCause {
  kind: PhantomCauseKind;
  /** One line with the figures, e.g. "32 of 32 token events arrived in one read at 291 ms of 292 ms". */
  detail: string;
}

interface PhantomFigures {
  tokenEvents: number;
  /** Completion tokens the rates use (usage or estimate; events when neither). */
  tokens?: number;
  /** Largest number of token events that arrived in one read, and when. */
  maxEventsInOneRead: number;
  maxReadAtMs?: number;
  /** Share of gaps between successive token events shorter than 1 / (burstFactor × referenceTps). */
  fastGapShare?: number;
  firstBytesMs?: number;
  ttftMs?: number;
  e2eMs: number;
  /** First → last token event. */
  tokenWindowMs?: number;
  /** The naive gen_tps: (tokens − 1) / window; undefined over a zero-length window. */
  genTps?: number;
  /** A lower bound on that rate when the window is below timer resolution: (tokens − 1) / max(window, 1 ms). */
  genTpsAtLeast?: number;
  /** The generation rate bursts were judged against (tok/s), and where it came from. */
  referenceTps: number;
  referenceSource: string;
  /** Shortest time the stream's tokens take to generate at referenceTps (ms). */
  minSpanMs?: number;
  /** Our client's stall allowance (ms). */
  clientStallMs?: number;
}

export interface PhantomAssessment {
  /** The gen_tps figure of this stream is phantom (delivery evidence). */
  phantom: boolean;
  causes: PhantomCause[];
  /** Set when the evidence would flag the stream but the client was frozen long enough to explain it. */
  inconclusive?: string;
  /** Too few token events to judge (not flagged). */
  tooShort?: boolean;
  figures: PhantomFigures;
}

const r1 = (x: number) => Math.round(x * 10) / 10;
const ms = (x: number | undefined) => (x === undefined ? 'n/a' : `${r1(x)} ms`);
const tps = (x: number) => `${x >= 100 ? Math.round(x) : r1(x)} tok/s`;

/** Rate over a window, never Infinity: undefined below zero tokens or a non-positive window. */
export function rateTps(tokens: number | undefined, windowMs: number | undefined): number | undefined {
  if (tokens === undefined || windowMs === undefined || !(windowMs > 0) || !(tokens >= 0)) return undefined;
  return tokens / (windowMs / 1000);
}

/** (tokens − 1) / max(window, resolution): what a zero-length window still proves about the rate. */
export function genTpsAtLeast(
  tokens: number | undefined,
  windowMs: number | undefined,
  resolutionMs = 1,
): number | undefined {
  if (tokens === undefined || tokens < 2 || windowMs === undefined || !(windowMs >= 0)) return undefined;
  return (tokens - 1) / (Math.max(windowMs, resolutionMs) / 1000);
}

/**
 * Judge one stream's delivery against its own generation rate. Tokens can reach the client no faster than they are
 * generated: (tokens − 1) of them take at least minSpan = (tokens − 1) / referenceTps. A stream whose tokens arrived
 * in a window burstFactor times shorter than that (a burst), or with most token events in one read, was held and
 * flushed — unless our own client stalled long enough to have compressed it (then: inconclusive).
 */
export function assessStream(s: StreamTiming, th: Partial<PhantomThresholds> = {}): PhantomAssessment {
  const t = { ...phantomDefaults(), ...th };
  const times = s.tokenTimes.filter((x) => Number.isFinite(x));
  const n = times.length;
  const e2e = s.e2eMs;
  const firstBytes = s.readTimes && s.readTimes.length ? s.readTimes[0] : times[0];
  const ttft = n ? times[0] : undefined;
  const window = n ? times[n - 1] - times[0] : undefined;
  const tokens = s.completionTokens !== undefined && s.completionTokens >= n ? s.completionTokens : n || undefined;
  const ref =
    s.referenceTps && s.referenceTps > 0
      ? s.referenceTps
      : s.maxPlausibleTps && s.maxPlausibleTps > 0
        ? s.maxPlausibleTps
        : DEFAULT_REFERENCE_TPS;
  const refSource =
    s.referenceTps && s.referenceTps > 0
      ? (s.referenceSource ?? 'given')
      : s.maxPlausibleTps && s.maxPlausibleTps > 0
        ? 'the declared physical bound'
        : `no rate known: the ${DEFAULT_REFERENCE_TPS} tok/s ceiling`;
  const perEvent = tokens !== undefined && n > 0 ? tokens / n : 1;
  const spanOf = (events: number) => (Math.max(0, events * perEvent - 1) / ref) * 1000;

  // Largest group of token events sharing one read (identical arrival time).
  let maxGroup = 0;
  let maxAt: number | undefined;
  for (let i = 0; i < n; ) {
    let j = i;
    while (j < n && times[j] === times[i]) j++;
    if (j - i > maxGroup) {
      maxGroup = j - i;
      maxAt = times[i];
    }
    i = j;
  }
  const fastGapMs = (1000 / (t.burstFactor * ref)) * perEvent;
  let fast = 0;
  for (let i = 1; i < n; i++) if (times[i] - times[i - 1] < fastGapMs) fast++;
  const fastShare = n > 1 ? fast / (n - 1) : undefined;
  const minSpan = n > 1 ? spanOf(n) : undefined;

  const figures: PhantomFigures = {
    tokenEvents: n,
    tokens,
    maxEventsInOneRead: maxGroup,
    maxReadAtMs: maxAt,
    fastGapShare: fastShare,
    firstBytesMs: firstBytes,
    ttftMs: ttft,
    e2eMs: e2e,
    tokenWindowMs: window,
    genTps: tokens !== undefined && tokens >= 2 ? rateTps(tokens - 1, window) : undefined,
    genTpsAtLeast: genTpsAtLeast(tokens, window),
    referenceTps: ref,
    referenceSource: refSource,
    minSpanMs: minSpan,
    clientStallMs: s.clientStallMs,
  };
  if (n < t.minTokenEvents) return { phantom: false, causes: [], tooShort: true, figures };

  const stall = Math.max(0, s.clientStallMs ?? 0);
  const oneRead = maxGroup / n >= t.oneReadShare;
  const burst = window !== undefined && minSpan !== undefined && window * t.burstFactor < minSpan;
  if (!oneRead && !burst) return { phantom: false, causes: [], figures };

  const causes: PhantomCause[] = [];
  // Name the cause by when the first bytes came, relative to the request.
  const early = firstBytes !== undefined && firstBytes <= t.earlyShare * e2e;
  const late = ttft !== undefined && ttft >= t.lateShare * e2e;
  if (late && early && firstBytes !== undefined && ttft !== undefined && ttft - firstBytes > 0) {
    causes.push({
      kind: 'late-content-after-role',
      detail: `the first bytes (a role chunk) came at ${ms(firstBytes)}, the first content token only at ${ms(ttft)} of ${ms(e2e)}: content was held and flushed at the end`,
    });
  } else if (late && firstBytes !== undefined && firstBytes >= t.lateShare * e2e) {
    causes.push({
      kind: 'whole-response-at-end',
      detail: `nothing arrived before ${ms(firstBytes)} of ${ms(e2e)}: the whole response (headers and role chunk included) came at the end`,
    });
  }
  if (oneRead) {
    causes.push({
      kind: 'one-read',
      detail: `${maxGroup} of ${n} token events arrived in one read at ${ms(maxAt)} of ${ms(e2e)}`,
    });
  }
  if (burst) {
    causes.push({
      kind: 'burst',
      detail: `${tokens} tokens arrived within ${ms(window)}, ${t.burstFactor}x or more faster than the ${ms(minSpan)} they take to generate at ${tps(ref)} (${refSource})`,
    });
  }
  // Our own client, frozen for `stall` ms, merges whatever arrives meanwhile: a window up to `stall` longer, a read
  // holding what is generated in `stall`. Only evidence that survives that allowance accuses the server.
  const burstSurvives = burst && (window! + stall) * t.burstFactor < minSpan!;
  const oneReadSurvives = oneRead && STALL_RATE_MARGIN * stall < spanOf(maxGroup);
  if (!burstSurvives && !oneReadSurvives) {
    return {
      phantom: false,
      causes,
      inconclusive: `our client lagged up to ${ms(stall)} (measured event-loop stall or preflight arrival lag); ${maxGroup} token events take at least ${ms(spanOf(maxGroup))} to generate at ${tps(ref)} (${refSource}), so the stall (x${STALL_RATE_MARGIN} for the rate's error) could have merged them`,
      figures,
    };
  }
  return { phantom: true, causes, figures };
}

/** One line naming the causes of a phantom assessment. */
export function describeCauses(a: PhantomAssessment): string {
  return a.causes.map((c) => c.detail).join('; ');
}

/** Short label for tables: "PHANTOM (one read)". */
export function causeLabel(kinds: readonly PhantomCauseKind[] | readonly string[]): string {
  const names: Record<string, string> = {
    'one-read': 'one read',
    burst: 'burst',
    'late-content-after-role': 'role first, content at end',
    'whole-response-at-end': 'all at end',
    'above-physical-bound': 'above physical bound',
  };
  return [...new Set(kinds)].map((k) => names[k] ?? k).join(', ');
}

// -------------------------------------------------------------------------------------------------------------
// Physics

interface Hardware {
  memoryBandwidthGBs: number;
  activeBytesPerTokenGB: number;
  speculativeDecoding?: boolean;
}

export const PHYSICAL_THRESHOLDS: Record<'margin' | 'speculativeFactor', Threshold> = {
  margin: {
    value: 1.5,
    why: 'declared bandwidth is a peak figure and active bytes per token an estimate (quantisation scales, shared experts); real servers stay well below the bound, so 1.5x keeps honest ones clear',
  },
  speculativeFactor: {
    value: 4,
    why: 'speculative decoding accepts a few draft tokens per verified step; published speedups are 2-3x, so the single-token bound times 4 is still a hard ceiling',
  },
};

/** Single-stream decode bound (tok/s): memory bandwidth / active bytes read per generated token. */
export function physicalBoundTps(hw: Hardware | undefined): number | undefined {
  if (!hw || !(hw.memoryBandwidthGBs > 0) || !(hw.activeBytesPerTokenGB > 0)) return undefined;
  return hw.memoryBandwidthGBs / hw.activeBytesPerTokenGB;
}

interface PhysicalAssessment {
  boundTps: number;
  /** bound × margin (× speculativeFactor when the profile declares speculative decoding). */
  limitTps: number;
  above: boolean;
  detail: string;
}

export function assessPhysical(
  rateTps: number | undefined,
  hw: Hardware | undefined,
  o: Partial<Record<'margin' | 'speculativeFactor', number>> = {},
): PhysicalAssessment | undefined {
  const bound = physicalBoundTps(hw);
  if (bound === undefined || rateTps === undefined || !Number.isFinite(rateTps)) return undefined;
  const margin = o.margin ?? PHYSICAL_THRESHOLDS.margin.value;
  const spec = hw?.speculativeDecoding ? (o.speculativeFactor ?? PHYSICAL_THRESHOLDS.speculativeFactor.value) : 1;
  const limit = bound * margin * spec;
  const formula =
    `${hw!.memoryBandwidthGBs} GB/s / ${hw!.activeBytesPerTokenGB} GB per token = ${r1(bound)} tok/s` +
    `, x${margin} margin${spec !== 1 ? `, x${spec} for declared speculative decoding` : ''} = ${r1(limit)} tok/s`;
  return {
    boundTps: bound,
    limitTps: limit,
    above: rateTps > limit,
    detail: `${r1(rateTps)} tok/s ${rateTps > limit ? 'is above' : 'is within'} the physical bound (${formula})`,
  };
}

// -------------------------------------------------------------------------------------------------------------
// Reporter side: flags recomputed from a results file entry (plain JSON).

interface PhantomFlag {
  /** Causes found (delivery kinds, or 'above-physical-bound'). */
  kinds: string[];
  /** Streams flagged / streams judged. */
  flagged: number;
  judged: number;
  detail: string;
}

function numArray(v: unknown): number[] | undefined {
  return Array.isArray(v) && v.every((x) => typeof x === 'number') ? (v as number[]) : undefined;
}

/**
 * Delivery flags of a check from its evidence entries (each with tokenTimes, readTimes, e2eMs). A figure is flagged
 * when at least half of the judged streams are phantom. Pure over results.json content.
 */
export function phantomFromEvidence(
  evidence: unknown,
  clientStallMs?: number,
  th: Partial<PhantomThresholds> = {},
  maxPlausibleTps?: number,
): PhantomFlag | undefined {
  if (!Array.isArray(evidence)) return undefined;
  let judged = 0;
  let flagged = 0;
  const kinds: string[] = [];
  let first: string | undefined;
  for (const ev of evidence) {
    if (!ev || typeof ev !== 'object') continue;
    const e = ev as Record<string, unknown>;
    const tokenTimes = numArray(e.tokenTimes);
    if (!tokenTimes || typeof e.e2eMs !== 'number') continue;
    const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
    const a = assessStream(
      {
        tokenTimes,
        readTimes: numArray(e.readTimes),
        e2eMs: e.e2eMs,
        clientStallMs,
        maxPlausibleTps,
        referenceTps: num(e.referenceTps),
        referenceSource: typeof e.referenceSource === 'string' ? e.referenceSource : undefined,
        completionTokens: num(e.completionTokens),
      },
      th,
    );
    if (a.tooShort) continue;
    judged++;
    if (a.phantom) {
      flagged++;
      kinds.push(...a.causes.map((c) => c.kind));
      first ??= `${typeof e.label === 'string' ? `${e.label}: ` : ''}${describeCauses(a)}`;
    }
  }
  if (judged === 0 || flagged * 2 < judged) return undefined;
  return { kinds: [...new Set(kinds)], flagged, judged, detail: `${flagged}/${judged} streams: ${first}` };
}

/** bound × margin (× speculativeFactor): the fastest single-stream rate a profile's hardware allows (tok/s). */
export function maxPlausibleTps(
  hardware: unknown,
  o: Partial<Record<'margin' | 'speculativeFactor', number>> = {},
): number | undefined {
  const hw = hardware as Hardware | undefined;
  if (!hw || typeof hw !== 'object') return undefined;
  const bound = physicalBoundTps(hw);
  if (bound === undefined) return undefined;
  const spec = hw.speculativeDecoding ? (o.speculativeFactor ?? PHYSICAL_THRESHOLDS.speculativeFactor.value) : 1;
  return bound * (o.margin ?? PHYSICAL_THRESHOLDS.margin.value) * spec;
}

/** Physical-bound flag for a gen_tps figure given the profile's hardware (from the results header). */
export function physicalFlag(genTps: number | undefined, hardware: unknown, margin?: number): PhantomFlag | undefined {
  const hw = hardware as Hardware | undefined;
  if (
    !hw ||
    typeof hw !== 'object' ||
    typeof hw.memoryBandwidthGBs !== 'number' ||
    typeof hw.activeBytesPerTokenGB !== 'number'
  )
    return undefined;
  const a = assessPhysical(genTps, hw, margin !== undefined ? { margin } : {});
  if (!a?.above) return undefined;
  return { kinds: ['above-physical-bound'], flagged: 1, judged: 1, detail: a.detail };
}
