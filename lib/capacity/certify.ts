// Every figure of a level certified on that level's own streams, or shown flagged with the reason (never dropped,
// never silent): real streaming (lib/grading/phantom.ts on each stream), usage consistent with the stream, the
// server's own timings agreeing where it sends them (lib/decode/server-timings.ts), and the physical bound of batched
// decode where the profile gives the hardware. Our own headroom (client-bound) is judged by lib/capacity/client-meter.ts.

import { serverDecode } from '../decode/server-timings.ts';
import type { Exchange } from '../exchange/exchange.ts';
import { served } from '../exchange/served.ts';
import type { HeldJudgement } from '../grading/held-answer.ts';
import { assessStream, describeCauses, PHANTOM_THRESHOLDS, PHYSICAL_THRESHOLDS } from '../grading/phantom.ts';
import { median } from '../measure/stats.ts';
import { fmt } from '../model/verdict.ts';
import type { CapacityLevel, FlaggedFigure } from './types.ts';

/** Thresholds of the certification, each with its reason (docs/capacity.md "Certification"). */
const CERTIFY = {
  serverTimingsFactor: {
    value: 2,
    why: "a stream's own decode rate and the one the server reports for it differ by timer placement and batching by tens of %, never 2x: beyond that one of them is not the decode rate",
  },
};

const tokenTps = (x: Exchange) => x.events?.usage?.completion_tokens ?? x.metrics?.completionTokens;

/** The reasons of figures left uncertified by what we could not judge (not by a fault of the server) begin so. */
export const NOT_JUDGED = 'not judged';

/** A flag that says something of the server (not our client being the bottleneck, not a figure we could not judge). */
export const isServerFlag = (f: FlaggedFigure) =>
  !f.reason.startsWith('client-bound') && !f.reason.startsWith(NOT_JUDGED);

/**
 * Delivery: a majority of the level's judged streams held and flushed (the phantom rules of lib/grading/phantom.ts).
 * A level none of whose streams could be judged (each too short, or within our own client's lag) has its rate and
 * latency figures uncertified: a burst is then indistinguishable from a stream, so they are flagged as not judged.
 */
function deliveryFlags(
  done: readonly Exchange[],
  stallMs: number,
  lv: Pick<CapacityLevel, 'itlMs' | 'tpotMs'>,
): FlaggedFigure[] {
  let judged = 0;
  let phantom = 0;
  let tooShort = 0;
  let first: string | undefined;
  let unjudged: string | undefined;
  for (const x of done) {
    const tokens = x.events?.tokens ?? [];
    const st = x.events?.serverTimings;
    const ref = st ? serverDecode(st, tokenTps(x)) : undefined;
    const a = assessStream({
      tokenTimes: tokens.map((t) => t.t),
      readTimes: x.rec.reads.map((r) => r.t),
      e2eMs: x.rec.tEnd,
      completionTokens: tokenTps(x),
      clientStallMs: stallMs,
      ...(ref?.tps ? { referenceTps: ref.tps, referenceSource: `the server's ${ref.tpsField}` } : {}),
    });
    if (a.tooShort) tooShort++;
    if (a.tooShort || a.inconclusive) {
      unjudged ??= a.inconclusive;
      continue;
    }
    judged++;
    if (a.phantom) {
      phantom++;
      first ??= describeCauses(a);
    }
  }
  if (judged === 0) {
    const causes = [
      tooShort
        ? `${tooShort} too short to tell (fewer than ${PHANTOM_THRESHOLDS.minTokenEvents.value} token events)`
        : '',
      unjudged ? `${done.length - tooShort} within our client's lag (${unjudged})` : '',
    ].filter(Boolean);
    const why = `${NOT_JUDGED}: no stream of ${done.length} could be judged streamed or burst (${causes.join('; ')})`;
    return (['itl', 'tpot', 'tpsPerStream', 'ttft', 'aggregateTps'] as const).map((figure) => ({
      figure,
      kind: 'not-judged' as const,
      reason: why,
    }));
  }
  if (phantom * 2 < judged) return [];
  return burstFlags(lv, `${phantom}/${judged} streams: ${first}`, `${phantom}/${judged} streams`);
}

/** The rate and latency figures of a level flagged as burst delivery: `why` the figures, `what` in a few words. */
function burstFlags(lv: Pick<CapacityLevel, 'itlMs' | 'tpotMs'>, why: string, what: string): FlaggedFigure[] {
  const because = `burst delivery, not a decode rate (${why})`;
  const burst = (figure: string, reason: string): FlaggedFigure => ({ figure, kind: 'burst', reason });
  return [
    burst('itl', `ITL p50 ${fmt(lv.itlMs.p50 ?? undefined)} ms: ${because}`),
    burst('tpot', `TPOT mean ${fmt(lv.tpotMs?.mean ?? undefined)} ms: ${because}`),
    burst('tpsPerStream', `per-stream tok/s: ${because}`),
    burst('ttft', `TTFT: the first token came with the rest (${because})`),
    burst('aggregateTps', `aggregate tok/s: whole answers delivered in bursts, not streamed (${what})`),
  ];
}

/**
 * A level whose streams could not be judged, judged again by the answers' length (lib/grading/held-answer.ts): held,
 * its rate and latency figures are flagged as burst delivery; streamed, they are certified; unknown, they stay not
 * judged, with what the lengths showed.
 */
export function judgedByLength(
  lv: Pick<CapacityLevel, 'itlMs' | 'tpotMs' | 'flags'>,
  held: HeldJudgement,
): FlaggedFigure[] {
  const rest = lv.flags.filter((f) => f.kind !== 'not-judged');
  if (rest.length === lv.flags.length) return lv.flags;
  if (held.kind === 'held')
    return [
      ...burstFlags(lv, `answers held to the end, told by their length: ${held.detail}`, 'held answers'),
      ...rest,
    ];
  if (held.kind === 'streamed') return rest;
  const unjudged = lv.flags.filter((f) => f.kind === 'not-judged');
  return [
    ...unjudged.map((f) => ({ ...f, reason: `${f.reason}; nor could answers of two lengths: ${held.detail}` })),
    ...rest,
  ];
}

/** Usage against the stream, one way only (events are not tokens, docs/grading.md "Measuring"): fewer tokens than token events is false. */
function usageFlags(done: readonly Exchange[]): FlaggedFigure[] {
  const bad = done.filter((x) => {
    const u = x.events?.usage?.completion_tokens;
    return u !== undefined && u < (x.events?.tokens.length ?? 0);
  });
  if (!bad.length) return [];
  const x = bad[0]!;
  return [
    {
      figure: 'usage',
      kind: 'usage',
      reason: `usage.completion_tokens ${x.events?.usage?.completion_tokens} < ${x.events?.tokens.length} token events streamed (${bad.length}/${done.length} streams): usage does not count what was streamed`,
    },
  ];
}

/** The server's own decode rate against the stream's, median over the streams that report one. */
function timingsFlags(done: readonly Exchange[]): FlaggedFigure[] {
  const ratios: number[] = [];
  let example = '';
  for (const x of done) {
    const st = x.events?.serverTimings;
    const own = x.metrics?.genTps;
    if (!st || own === undefined) continue;
    const sd = serverDecode(st, tokenTps(x));
    if (!sd.tps) continue;
    ratios.push(own / sd.tps);
    example ||= `${sd.tpsField} ${fmt(sd.tps)} tok/s, the stream ${fmt(own)} tok/s`;
  }
  const r = median(ratios);
  const k = CERTIFY.serverTimingsFactor.value;
  if (r === undefined || (r <= k && r >= 1 / k)) return [];
  return [
    {
      figure: 'tpsPerStream',
      kind: 'timings',
      reason: `per-stream tok/s disagrees with the server's own timings by ${fmt(r)}x (median of ${ratios.length} streams; e.g. ${example})`,
    },
  ];
}

/**
 * The physical bound of batched decode (tok/s) with `streams` sequences: one step reads the weights once for the whole
 * batch and each stream's KV cache, so steps/s ≤ bandwidth / (weights + streams × KV), and each step yields one token
 * per stream.
 */
export function batchedBoundTps(
  hw: { memoryBandwidthGBs: number; activeBytesPerTokenGB: number } | undefined,
  streams: number,
  kvBytesPerStreamGB = 0,
): number | undefined {
  if (!hw || !(hw.memoryBandwidthGBs > 0) || !(hw.activeBytesPerTokenGB > 0) || !(streams >= 1)) return undefined;
  return (streams * hw.memoryBandwidthGBs) / (hw.activeBytesPerTokenGB + streams * kvBytesPerStreamGB);
}

function physicalFlags(aggregateTps: number, boundTps: number | undefined, streams: number): FlaggedFigure[] {
  const margin = PHYSICAL_THRESHOLDS.margin.value;
  if (boundTps === undefined || !(aggregateTps > boundTps * margin)) return [];
  return [
    {
      figure: 'aggregateTps',
      kind: 'hardware',
      reason: `aggregate ${fmt(aggregateTps)} tok/s is beyond the hardware: ${streams} streams of batched decode can reach at most ${fmt(boundTps)} tok/s (x${margin} margin: ${fmt(boundTps * margin)})`,
    },
  ];
}

/** Every server-side flag of one level's streams. */
export function certifyLevel(
  xs: readonly Exchange[],
  lv: Pick<CapacityLevel, 'itlMs' | 'tpotMs' | 'aggregateTps' | 'sent'>,
  o: { stallMs: number; boundTps?: number; streams: number },
): FlaggedFigure[] {
  const done = xs.filter(served);
  if (!done.length)
    return [
      {
        figure: 'level',
        kind: 'unserved',
        reason: `no request of ${lv.sent} was served: no figure of this level is the server's`,
      },
    ];
  return [
    ...deliveryFlags(done, o.stallMs, lv),
    ...usageFlags(done),
    ...timingsFlags(done),
    ...physicalFlags(lv.aggregateTps, o.boundTps, o.streams),
  ];
}
