// A held answer told from a fast one by its length (issue 33). When every token of a stream arrives within our own
// client's lag, its arrival span cannot tell an answer held to the end and flushed from an absurdly fast decode after a
// long wait. Its length can: a streamed answer's first token comes after the prefill, however many tokens follow it; a
// held answer's first token comes with its last, so its TTFT grows with the answer as its end to end time does.
// Pure over plain numbers: answers of two lengths, each its TTFT and end to end time (ms) at one stream.
import { median } from '../measure/stats.ts';
import type { Threshold } from '../model/check.ts';
import { fmt } from '../model/verdict.ts';

const HELD_THRESHOLDS: Record<'heldShare' | 'minGrowthMs' | 'noiseFactor', Threshold> = {
  heldShare: {
    value: 0.5,
    why: "the longer answers' extra TTFT over their extra end to end time: about 0 when streamed (the first token comes after the prefill whatever follows), about 1 when held (it comes with the last); half way tells them apart",
  },
  minGrowthMs: {
    value: 50,
    why: 'the longer answers must take at least this much longer end to end than the shorter ones: timers, scheduling and a busy client move one TTFT by tens of ms (4 tokens at 8 ms steps, 24 ms, tell nothing)',
  },
  noiseFactor: {
    value: 2,
    why: "the extra end to end time must also be twice the spread of the TTFTs at one length (the server's own jitter): a difference of medians inside it says nothing",
  },
};

/** One answer: its completion tokens (usage, else the stream's count), TTFT and end to end time (ms). */
export interface LengthSample {
  tokens: number;
  ttftMs: number;
  e2eMs: number;
}

export interface HeldJudgement {
  /** held: content came with the end; streamed: the first token did not wait for the rest; unknown: length did not tell. */
  kind: 'held' | 'streamed' | 'unknown';
  /** One line with the figures. */
  detail: string;
  /** Extra TTFT of the longer answers over their extra end to end time (medians), when both were measured. */
  share?: number;
}

const spread = (v: readonly number[]) => (v.length ? Math.max(...v) - Math.min(...v) : 0);

/**
 * Held, streamed or unknown from answers of two lengths: the share of the longer answers' extra end to end time
 * (median against median) that their first token waited too. Each length needs two answers or more, the longer ones
 * more tokens, and an extra end to end time beyond noise (HELD_THRESHOLDS).
 */
export function judgeHeldByLength(
  short: readonly LengthSample[],
  long: readonly LengthSample[],
  th: Partial<Record<keyof typeof HELD_THRESHOLDS, number>> = {},
): HeldJudgement {
  const t = {
    heldShare: th.heldShare ?? HELD_THRESHOLDS.heldShare.value,
    minGrowthMs: th.minGrowthMs ?? HELD_THRESHOLDS.minGrowthMs.value,
    noiseFactor: th.noiseFactor ?? HELD_THRESHOLDS.noiseFactor.value,
  };
  if (short.length < 2 || long.length < 2)
    return {
      kind: 'unknown',
      detail: `too few answers to compare (${short.length} short, ${long.length} long; 2 of each at least)`,
    };
  const m = (xs: readonly LengthSample[], k: keyof LengthSample) => median(xs.map((x) => x[k]))!;
  const [nS, nL] = [m(short, 'tokens'), m(long, 'tokens')];
  const [tS, tL] = [m(short, 'ttftMs'), m(long, 'ttftMs')];
  const [eS, eL] = [m(short, 'e2eMs'), m(long, 'e2eMs')];
  const figures = `median TTFT ${fmt(tS)} ms at ${Math.round(nS)} tokens, ${fmt(tL)} ms at ${Math.round(nL)} tokens; end to end ${fmt(eS)} and ${fmt(eL)} ms`;
  if (!(nL > nS)) return { kind: 'unknown', detail: `the longer answers were not longer (${figures})` };
  const growth = eL - eS;
  const noise = Math.max(spread(short.map((x) => x.ttftMs)), spread(long.map((x) => x.ttftMs)));
  const floor = Math.max(t.minGrowthMs, t.noiseFactor * noise);
  if (!(growth >= floor))
    return {
      kind: 'unknown',
      detail: `the longer answers took only ${fmt(growth)} ms longer end to end, within noise (at least ${fmt(floor)} ms needed: ${t.minGrowthMs} ms, and ${t.noiseFactor}x the TTFT spread ${fmt(noise)} ms): ${figures}`,
    };
  const share = (tL - tS) / growth;
  if (share >= t.heldShare)
    return {
      kind: 'held',
      share,
      detail: `the first token waited for the whole answer: TTFT grew with the answer's length by ${fmt(tL - tS)} ms, ${Math.round(share * 100)} % of its ${fmt(growth)} ms of extra decode (${figures})`,
    };
  return {
    kind: 'streamed',
    share,
    detail: `the first token did not wait for the rest: TTFT moved ${fmt(tL - tS)} ms, ${Math.round(share * 100)} % of the ${fmt(growth)} ms the longer answers took longer (${figures})`,
  };
}
