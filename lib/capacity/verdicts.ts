// The capacity family's verdicts, pure over the capacity table: throughput under overload must not collapse, no
// errors at or below the slot count, no starvation at saturation. Each threshold has its reason (docs/capacity.md).

import { finite, median } from '../measure/stats.ts';
import { fmt } from '../model/verdict.ts';
import type { CapacityLevel, CapacityTable } from './types.ts';

export const VERDICT_THRESHOLDS = {
  collapseBelow: {
    value: 0.7,
    why: 'a correct server past saturation queues the extra requests and keeps serving what it served at saturation (a few % lost to scheduling); 30 % less, with the whole interval below, is throughput lost to overload itself',
  },
  starvationFactor: {
    value: 3,
    why: 'a fair queue at saturation makes no request wait much longer than one median service time beyond the median TTFT; a p99 TTFT 3x past the larger of the median TTFT and the median service time means some requests were passed over',
  },
};

type Judged = {
  outcome: 'pass' | 'fail' | 'borderline' | 'inconclusive';
  message: string;
  metrics?: Record<string, unknown>;
};

const sweep = (t: CapacityTable) => t.levels.filter((l) => l.mode === 'concurrency');
const label = (l: CapacityLevel) => `${l.concurrency} streams`;
const satLevel = (t: CapacityTable) => sweep(t).find((l) => l.concurrency === t.saturation?.concurrency);

/**
 * The interval a level's aggregate moves in: the aggregate scaled by its rounds' spread about their median; the figure
 * itself when it has no rounds. Scaled, not the rounds' own figures: past saturation a closed loop's streams fall out
 * of step, each round's window (its first start to its last end) overlaps the next and its figure reads low (a real
 * llama-server, 4 slots, 8 streams: rounds 54, 52, 39 tok/s beside an aggregate of 78.9 over the level), while their
 * spread about their median is still the level's noise.
 */
function range(l: CapacityLevel): [number, number] {
  const r = finite(l.roundTps ?? []).filter((x) => x > 0);
  const m = median(r);
  if (!r.length || m === undefined) return [l.aggregateTps, l.aggregateTps];
  return [(l.aggregateTps * Math.min(...r)) / m, (l.aggregateTps * Math.max(...r)) / m];
}

/** Levels past saturation against the saturation level: ratio of aggregates with the interval from their rounds. */
export function judgeCollapse(t: CapacityTable, below = VERDICT_THRESHOLDS.collapseBelow.value): Judged {
  const sat = satLevel(t);
  if (!sat)
    return { outcome: 'inconclusive', message: 'the sweep found no saturation point: no overload level to judge' };
  const over = sweep(t).filter((l) => (l.concurrency ?? 0) > sat.concurrency! && l.completed > 0);
  if (!over.length)
    return {
      outcome: 'inconclusive',
      message: `no level past saturation (${label(sat)}) was served: nothing to judge under overload`,
    };
  const [sLo, sHi] = range(sat);
  const rows = over.map((l) => {
    const [lo, hi] = range(l);
    return { l, ratio: l.aggregateTps / sat.aggregateTps, lo: lo / sHi, hi: hi / sLo };
  });
  const worst = rows.reduce((a, b) => (b.ratio < a.ratio ? b : a));
  const text = (r: (typeof rows)[number]) =>
    `${label(r.l)}: ${fmt(r.l.aggregateTps)} tok/s = ${fmt(r.ratio)}x the saturation level's ${fmt(sat.aggregateTps)} tok/s at ${label(sat)} (interval ${fmt(r.lo)}-${fmt(r.hi)}x over their rounds)`;
  const metrics = { ratio: worst.ratio, lo: worst.lo, hi: worst.hi, threshold: below };
  if (worst.hi < below)
    return {
      outcome: 'fail',
      message: `throughput collapses under overload: ${text(worst)}, below ${below}x`,
      metrics,
    };
  if (worst.ratio < below)
    return {
      outcome: 'borderline',
      message: `throughput drops under overload: ${text(worst)}; the interval reaches back above ${below}x`,
      metrics,
    };
  return { outcome: 'pass', message: `no collapse under overload: ${rows.map(text).join('; ')}`, metrics };
}

/** No errors or timeouts at levels of at most `slots` streams (the declared, reported or measured slot count). */
export function judgeErrorsBelowSlots(t: CapacityTable, slots: number, slotsSource: string): Judged {
  const within = sweep(t).filter((l) => (l.concurrency ?? Infinity) <= slots);
  if (!within.length) return { outcome: 'inconclusive', message: `no level of at most ${slots} streams was measured` };
  const bad = within.filter((l) => l.errored + l.timedOut > 0);
  if (bad.length)
    return {
      outcome: 'fail',
      message: `requests failed at or below the server's ${slots} slots (${slotsSource}): ${bad
        .map((l) => `${label(l)}: ${l.errored} errored, ${l.timedOut} timed out of ${l.sent}`)
        .join('; ')}`,
      metrics: { slots, levels: bad.map((l) => l.concurrency) },
    };
  return {
    outcome: 'pass',
    message: `every request served at ${within.map(label).join(', ')} (at most the ${slots} slots, ${slotsSource})`,
    metrics: { slots },
  };
}

/**
 * p99 TTFT within starvationFactor x the larger of the median TTFT and the median service time, at the saturation
 * level and every level past it (the worst is reported); levels with fewer than 4 served requests have no p99.
 */
export function judgeStarvation(t: CapacityTable, factor = VERDICT_THRESHOLDS.starvationFactor.value): Judged {
  const all = sweep(t);
  const sat = satLevel(t);
  const from = sat ? all.filter((l) => (l.concurrency ?? 0) >= sat.concurrency!) : all.slice(-1);
  const judged = from.filter(
    (l) => l.completed >= 4 && l.ttftMs.p99 !== null && l.ttftMs.p50 !== null && l.e2eMs.p50 !== null,
  );
  if (!judged.length)
    return {
      outcome: 'inconclusive',
      message: `no level ${sat ? `at or past saturation (${label(sat)})` : '(no saturation found)'} served 4 or more requests: no p99 to judge`,
    };
  const rows = judged.map((l) => {
    const service = Math.max(0, l.e2eMs.p50! - l.ttftMs.p50!);
    const base = Math.max(l.ttftMs.p50!, service, 1e-9);
    return { l, service, ratio: l.ttftMs.p99! / base };
  });
  const worst = rows.reduce((a, b) => (b.ratio > a.ratio ? b : a));
  const l = worst.l;
  const where = sat
    ? `at saturation (${label(sat)}) and past it`
    : `at the last level (${label(l)}; no saturation found)`;
  const figures = `${label(l)}: TTFT p99 ${fmt(l.ttftMs.p99!)} ms, p50 ${fmt(l.ttftMs.p50!)} ms, median service time ${fmt(worst.service)} ms`;
  const metrics = {
    ttftP99Ms: l.ttftMs.p99,
    ttftP50Ms: l.ttftMs.p50,
    serviceMs: worst.service,
    ratio: worst.ratio,
    factor,
  };
  if (worst.ratio > factor)
    return {
      outcome: 'fail',
      message: `starvation ${where}: ${figures}; p99 is ${fmt(worst.ratio)}x the larger of the two (bound ${factor}x)`,
      metrics,
    };
  return {
    outcome: 'pass',
    message: `no starvation ${where}: worst ${figures} (${fmt(worst.ratio)}x, bound ${factor}x)`,
    metrics,
  };
}
