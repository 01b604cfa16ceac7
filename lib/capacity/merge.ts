// Several load generators against one server, merged into one capacity table (docs/capacity-machines.md).
//
// Each machine ran the same start schedule (the same levels in the same order, each level started at the agreed
// time on its own clock) and wrote its own table. Clocks of different machines are never compared: a level keeps the
// `machine` that measured it, and only durations (end − start on one clock) cross machines. The rule for a merged
// level, stated once here and in the docs:
//   window    W = the longest of the machines' own windows for that level (endedAt − startedAt on each clock);
//   aggregate = Σ completed output tokens of every machine / W: all machines started the level together, so the
//               server served all those tokens within the longest window (off only by the start skew, which the
//               schedule keeps small beside a level's seconds);
//   counts and tokens are sums; goodput = Σ (good requests) / W (each part's good requests from its own duration;
//   W at least each part's vLLM duration, which may start before its first send); a level's concurrency or rate is the sum of the
//   machines' (what the server saw at once);
//   percentiles cannot be merged from percentiles: the combined p-th percentile lies between the machines' lowest
//   and highest, so latencies show the highest (the bound a user plans with) and per-stream tok/s the lowest;
//   means and population stds can: the sample-weighted mean, and the std of the union from each part's n, mean and
//   std; throughputs are the sums over W (vLLM's duration of the merged level);
//   flags are kept, each prefixed by its machine; a level some machine did not run is flagged as a whole, one whose
//   windows differ by more than a quarter (the levels did not overlap as scheduled) on its aggregate;
//   saturation follows the runner's rule (lib/capacity/saturation.ts) over the merged sweep, with the widest of the
//   machines' noise bands.

import { throughputs } from './level.ts';
import { BAND_FLOOR, saturationOf } from './saturation.ts';
import type { CapacityLevel, CapacityTable, FlaggedFigure, Percentiles } from './types.ts';

interface MachineTable {
  /** The load generator's label (--machine); levels that carry their own `machine` keep it. */
  machine: string;
  table: CapacityTable;
}

/** Windows of one level on different machines may differ by this share of the longest before the level is flagged. */
const WINDOW_SPREAD_LIMIT = 0.25;

/** The label of merged levels: the machines joined with '+' (no machine measured them as such). */
export function mergedLabel(machines: readonly string[]): string {
  return machines.join('+');
}

/** The levels that describe the whole server: the merged ones in a merged table, every level otherwise. */
export function serverLevels(t: CapacityTable): CapacityLevel[] {
  if (!t.machines || t.machines.length < 2) return t.levels;
  const label = mergedLabel(t.machines);
  return t.levels.filter((l) => l.machine === label);
}

function key(l: CapacityLevel): string {
  return l.mode === 'rate'
    ? `rate:${l.arrival ?? 'constant'}:${l.burstiness ?? ''}:${l.ratePerS ?? '?'}`
    : `concurrency:${l.concurrency ?? '?'}`;
}

const windowMs = (l: CapacityLevel) => Math.max(0, l.endedAt - l.startedAt);

/** n, mean, population std and max of the union of the parts, exact from each part's own (undefined unless all have them). */
function pooled(ps: Percentiles[]): Pick<Percentiles, 'n' | 'mean' | 'std' | 'max'> | undefined {
  if (!ps.every((p) => p.n !== undefined && (p.n === 0 || (typeof p.mean === 'number' && typeof p.std === 'number'))))
    return undefined;
  const parts = ps.filter((p) => p.n! > 0);
  const n = parts.reduce((a, p) => a + p.n!, 0);
  if (!n) return { n: 0, mean: null, std: null, max: null };
  const mean = parts.reduce((a, p) => a + p.n! * p.mean!, 0) / n;
  const variance = parts.reduce((a, p) => a + p.n! * (p.std! ** 2 + (p.mean! - mean) ** 2), 0) / n;
  const maxes = parts.map((p) => p.max).filter((x): x is number => typeof x === 'number');
  return { n, mean, std: Math.sqrt(variance), max: maxes.length === parts.length ? Math.max(...maxes) : null };
}

function bound(ps: Percentiles[], pick: (xs: number[]) => number): Percentiles {
  const one = (k: 'p50' | 'p90' | 'p99') => {
    const xs = ps.map((p) => p[k]).filter((x): x is number => x !== null);
    return xs.length === ps.length && xs.length ? pick(xs) : null;
  };
  const maxOnly = [...new Set(ps.flatMap((p) => p.maxOnly ?? []))].sort();
  return { p50: one('p50'), p90: one('p90'), p99: one('p99'), ...pooled(ps), ...(maxOnly.length ? { maxOnly } : {}) };
}

const sumOrNull = (xs: Array<number | null>) =>
  xs.some((x) => x === null) ? null : xs.reduce<number>((a, x) => a + x!, 0);
const maxOrNull = (xs: Array<number | null>) => {
  const v = xs.filter((x): x is number => x !== null);
  return v.length ? Math.max(...v) : null;
};

function mergeLevel(parts: CapacityLevel[], machines: readonly string[], label: string): CapacityLevel {
  const first = parts[0]!;
  const w = Math.max(...parts.map(windowMs));
  const tokens = parts.map((l) => l.outputTokens ?? l.streamedTokens);
  const flags: FlaggedFigure[] = parts.flatMap((l) =>
    l.flags.map((f) => ({ ...f, reason: `[${l.machine}] ${f.reason}` })),
  );
  const present = new Set(parts.map((l) => l.machine));
  const missing = machines.filter((m) => !present.has(m));
  if (missing.length)
    flags.push({
      figure: 'level',
      kind: 'merge',
      reason: `measured by ${[...present].join(', ')} only (${missing.join(', ')} ran no such level): the server's load was not the scheduled one`,
    });
  const shortest = Math.min(...parts.map(windowMs));
  if (w > 0 && (w - shortest) / w > WINDOW_SPREAD_LIMIT)
    flags.push({
      figure: 'aggregateTps',
      kind: 'merge',
      reason: `machine windows differ: ${parts.map((l) => `${l.machine} ${(windowMs(l) / 1000).toFixed(2)} s`).join(', ')} (more than ${WINDOW_SPREAD_LIMIT * 100} % apart): the levels did not overlap as scheduled`,
    });
  const good = parts.map((l) => (l.goodput ? l.goodput.ratePerS * (l.durationS ?? windowMs(l) / 1000) : null));
  const sent = parts.reduce((a, l) => a + l.sent, 0);
  const bounds = parts.map((l) => l.physicalBoundTps).filter((x): x is number => x !== undefined);
  const reasons = parts
    .filter((l) => l.client.clientBound)
    .map((l) => `[${l.machine}] ${l.client.reason ?? 'client-bound'}`);
  const sum = (f: (l: CapacityLevel) => number) => parts.reduce((a, l) => a + f(l), 0);
  const inputTokens = sumOrNull(parts.map((l) => l.inputTokens));
  const durationS = Math.max(w / 1000, ...parts.map((l) => l.durationS ?? 0));
  const totalOutputTokens = sum((l) => l.totalOutputTokens ?? l.outputTokens ?? l.streamedTokens);
  const tpots = parts.map((l) => l.tpotMs);
  return {
    mode: first.mode,
    ...(first.mode === 'concurrency' ? { concurrency: sum((l) => l.concurrency ?? 0) } : {}),
    ...(first.mode === 'rate' ? { ratePerS: sum((l) => l.ratePerS ?? 0) } : {}),
    ...(first.arrival ? { arrival: first.arrival } : {}),
    ...(first.burstiness !== undefined ? { burstiness: first.burstiness } : {}),
    ...(first.seed !== undefined ? { seed: first.seed } : {}),
    ...(first.maxConcurrency !== undefined ? { maxConcurrency: sum((l) => l.maxConcurrency ?? 0) } : {}),
    machine: label,
    // A merged level has no clock of its own: its window starts at 0 and lasts W (endedAt − startedAt stays the window).
    startedAt: 0,
    endedAt: w,
    sent,
    completed: sum((l) => l.completed),
    errored: sum((l) => l.errored),
    timedOut: sum((l) => l.timedOut),
    ttftMs: bound(
      parts.map((l) => l.ttftMs),
      (xs) => Math.max(...xs),
    ),
    itlMs: bound(
      parts.map((l) => l.itlMs),
      (xs) => Math.max(...xs),
    ),
    e2eMs: bound(
      parts.map((l) => l.e2eMs),
      (xs) => Math.max(...xs),
    ),
    tpsPerStream: bound(
      parts.map((l) => l.tpsPerStream),
      (xs) => Math.min(...xs),
    ),
    ...(tpots.every((p) => p !== undefined)
      ? {
          tpotMs: bound(tpots as Percentiles[], (xs) => Math.max(...xs)),
        }
      : {}),
    aggregateTps: w > 0 ? (tokens.reduce<number>((a, x) => a + x, 0) * 1000) / w : 0,
    durationS,
    totalOutputTokens,
    ...throughputs({ completed: sum((l) => l.completed), durationS, totalOutputTokens, inputTokens }),
    inputTokens,
    outputTokens: sumOrNull(parts.map((l) => l.outputTokens)),
    streamedTokens: sum((l) => l.streamedTokens),
    ...(good.every((g) => g !== null) && durationS > 0
      ? {
          goodput: {
            ratePerS: good.reduce<number>((a, g) => a + g!, 0) / durationS,
            fraction: sent ? parts.reduce((a, l) => a + (l.goodput?.fraction ?? 0) * l.sent, 0) / sent : 0,
          },
        }
      : {}),
    client: {
      cpuUsPerEvent: maxOrNull(parts.map((l) => l.client.cpuUsPerEvent)),
      loopLagP99Ms: maxOrNull(parts.map((l) => l.client.loopLagP99Ms)),
      clientBound: reasons.length > 0,
      ...(reasons.length ? { reason: reasons.join('; ') } : {}),
    },
    ...(bounds.length ? { physicalBoundTps: Math.min(...bounds) } : {}),
    flags,
  };
}

/**
 * Merge the tables of several machines (each from one load generator) into one: every machine's own levels, each
 * with its `machine`, then one merged level per scheduled level (machine = the labels joined with '+'). Throws when
 * two inputs share a label or the workloads differ (their tables describe different experiments).
 */
export function mergeCapacity(inputs: readonly MachineTable[]): CapacityTable {
  if (inputs.length === 0) throw new Error('merge: no capacity tables to merge');
  const labels = inputs.map((i) => i.machine);
  const dup = labels.find((m, i) => labels.indexOf(m) !== i);
  if (dup) throw new Error(`merge: two tables from machine "${dup}": give each load generator its own --machine label`);
  const w0 = JSON.stringify(inputs[0]!.table.workload);
  for (const i of inputs.slice(1))
    if (JSON.stringify(i.table.workload) !== w0)
      throw new Error(
        `merge: machine "${i.machine}" ran another workload (${JSON.stringify(i.table.workload)}, not ${w0}): only one schedule merges`,
      );
  const machines = [...labels];
  const label = mergedLabel(machines);
  const own = inputs.flatMap((i) => i.table.levels.map((l) => ({ ...l, machine: l.machine ?? i.machine })));
  // Scheduled levels in the order the first machine that ran them ran them.
  const order: string[] = [];
  const byKey = new Map<string, CapacityLevel[]>();
  for (const l of own) {
    const k = key(l);
    if (!byKey.has(k)) {
      byKey.set(k, []);
      order.push(k);
    }
    byKey.get(k)!.push(l);
  }
  const merged = order.map((k) => mergeLevel(byKey.get(k)!, machines, label));
  // The runner's own saturation rule over the merged sweep (levels flagged as a whole left out), with the widest of
  // the machines' noise bands: a merged level is as noisy as its noisiest part.
  const sweep = merged.filter((l) => l.mode === 'concurrency' && l.flags.every((f) => f.figure !== 'level'));
  const sats = inputs.flatMap((i) => (i.table.saturation ? [{ machine: i.machine, ...i.table.saturation }] : []));
  const band = Math.max(BAND_FLOOR.value, ...sats.map((s) => s.noiseBand));
  const sat = saturationOf(
    sweep.map((l) => ({
      concurrency: l.concurrency ?? 0,
      aggregateTps: l.aggregateTps,
      band,
      errored: l.errored,
      timedOut: l.timedOut,
      ttftP50Ms: l.ttftMs.p50,
    })),
  );
  const slo = inputs[0]!.table.slo;
  return {
    workload: inputs[0]!.table.workload,
    ...(slo ? { slo } : {}),
    levels: [...own, ...merged],
    ...(sat
      ? {
          saturation: {
            concurrency: sat.concurrency,
            aggregateTps: sat.aggregateTps,
            noiseBand: sat.noiseBand,
            why: `merged over ${machines.join(', ')}: ${sat.why} (each machine's own: ${sats.length ? sats.map((s) => `${s.machine} ${s.concurrency} streams`).join(', ') : 'none'})`,
          },
        }
      : {}),
    machines,
  };
}
