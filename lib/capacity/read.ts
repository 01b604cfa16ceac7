// Reading a capacity table from a results file we did not write this run (another machine's, an older suite's, a
// hand edit): odd fields become null or are left out, a level without its clock window or counts is dropped, and
// nothing throws. Reports and the merge read through here; the runner writes the typed table directly.

import { isJsonObject } from '../json.ts';
import type { Slo } from '../model/types.ts';
import type { CapacityLevel, CapacityTable, FlaggedFigure, FlagKind, Percentiles } from './types.ts';

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const numOrNull = (v: unknown): number | null => num(v) ?? null;

function percentiles(v: unknown): Percentiles {
  const p = isJsonObject(v) ? v : {};
  const n = num(p.n);
  const maxOnly = Array.isArray(p.maxOnly)
    ? p.maxOnly.filter((x): x is 'p90' | 'p99' => x === 'p90' || x === 'p99')
    : [];
  return {
    p50: numOrNull(p.p50),
    p90: numOrNull(p.p90),
    p99: numOrNull(p.p99),
    ...(n !== undefined
      ? { n: Math.max(0, Math.round(n)), mean: numOrNull(p.mean), std: numOrNull(p.std), max: numOrNull(p.max) }
      : {}),
    ...(maxOnly.length ? { maxOnly } : {}),
  };
}

const KINDS: readonly FlagKind[] = ['burst', 'not-judged', 'usage', 'timings', 'hardware', 'unserved', 'merge'];

function flags(v: unknown): FlaggedFigure[] {
  if (!Array.isArray(v)) return [];
  return v.filter(isJsonObject).map((f) => ({
    figure: String(f.figure ?? 'level'),
    ...(KINDS.includes(f.kind as FlagKind) ? { kind: f.kind as FlagKind } : {}),
    reason: String(f.reason ?? 'flagged (no reason given)'),
  }));
}

const ARRIVALS = ['constant', 'poisson', 'gamma', 'at-once'] as const;

function level(v: unknown): CapacityLevel | undefined {
  if (!isJsonObject(v)) return undefined;
  const mode = v.mode === 'rate' ? 'rate' : v.mode === 'concurrency' ? 'concurrency' : undefined;
  const startedAt = num(v.startedAt);
  const endedAt = num(v.endedAt);
  if (!mode || startedAt === undefined || endedAt === undefined) return undefined;
  const c = isJsonObject(v.client) ? v.client : {};
  const g = isJsonObject(v.goodput) ? v.goodput : undefined;
  const count = (x: unknown) => Math.max(0, Math.round(num(x) ?? 0));
  return {
    mode,
    ...(num(v.concurrency) !== undefined ? { concurrency: num(v.concurrency) } : {}),
    ...(num(v.ratePerS) !== undefined ? { ratePerS: num(v.ratePerS) } : {}),
    ...(ARRIVALS.includes(v.arrival as CapacityLevel['arrival'] & string)
      ? { arrival: v.arrival as CapacityLevel['arrival'] }
      : {}),
    ...(num(v.burstiness) !== undefined ? { burstiness: num(v.burstiness) } : {}),
    ...(num(v.seed) !== undefined ? { seed: num(v.seed) } : {}),
    ...(num(v.maxConcurrency) !== undefined ? { maxConcurrency: num(v.maxConcurrency) } : {}),
    ...(typeof v.machine === 'string' && v.machine ? { machine: v.machine } : {}),
    startedAt,
    endedAt,
    sent: count(v.sent),
    completed: count(v.completed),
    errored: count(v.errored),
    timedOut: count(v.timedOut),
    ttftMs: percentiles(v.ttftMs),
    itlMs: percentiles(v.itlMs),
    e2eMs: percentiles(v.e2eMs),
    ...(isJsonObject(v.tpotMs) ? { tpotMs: percentiles(v.tpotMs) } : {}),
    tpsPerStream: percentiles(v.tpsPerStream),
    aggregateTps: num(v.aggregateTps) ?? 0,
    ...(num(v.durationS) !== undefined ? { durationS: num(v.durationS) } : {}),
    ...(num(v.totalOutputTokens) !== undefined ? { totalOutputTokens: num(v.totalOutputTokens) } : {}),
    ...(num(v.requestThroughput) !== undefined ? { requestThroughput: num(v.requestThroughput) } : {}),
    ...(v.inputThroughput === null || num(v.inputThroughput) !== undefined
      ? { inputThroughput: numOrNull(v.inputThroughput) }
      : {}),
    ...(num(v.outputThroughput) !== undefined ? { outputThroughput: num(v.outputThroughput) } : {}),
    ...(v.totalTokenThroughput === null || num(v.totalTokenThroughput) !== undefined
      ? { totalTokenThroughput: numOrNull(v.totalTokenThroughput) }
      : {}),
    inputTokens: numOrNull(v.inputTokens),
    outputTokens: numOrNull(v.outputTokens),
    streamedTokens: count(v.streamedTokens),
    ...(g && num(g.ratePerS) !== undefined
      ? { goodput: { ratePerS: num(g.ratePerS)!, fraction: num(g.fraction) ?? 0 } }
      : {}),
    client: {
      cpuUsPerEvent: numOrNull(c.cpuUsPerEvent),
      loopLagP99Ms: numOrNull(c.loopLagP99Ms),
      clientBound: c.clientBound === true,
      ...(typeof c.reason === 'string' ? { reason: c.reason } : {}),
    },
    ...(num(v.physicalBoundTps) !== undefined ? { physicalBoundTps: num(v.physicalBoundTps) } : {}),
    ...(num(v.inFlight) !== undefined ? { inFlight: count(v.inFlight) } : {}),
    flags: flags(v.flags),
  };
}

function slo(v: unknown): Slo | undefined {
  if (!isJsonObject(v)) return undefined;
  const out: Slo = {};
  for (const k of ['ttftP99Ms', 'itlP99Ms', 'e2eP99Ms'] as const) if (num(v[k]) !== undefined) out[k] = num(v[k]);
  return out;
}

/** The `capacity` of a results file (or a bare table) as far as it can be read; undefined when there is none. */
export function readCapacity(v: unknown): CapacityTable | undefined {
  if (!isJsonObject(v) || !Array.isArray(v.levels)) return undefined;
  const w = isJsonObject(v.workload) ? v.workload : {};
  const workload: CapacityTable['workload'] =
    w.kind === 'dataset'
      ? {
          kind: 'dataset',
          file: String(w.file ?? '?'),
          format: w.format === 'sharegpt' ? 'sharegpt' : 'jsonl-messages',
          prompts: num(w.prompts) ?? 0,
        }
      : { kind: 'synthetic', inputTokens: num(w.inputTokens) ?? 0, outputTokens: num(w.outputTokens) ?? 0 };
  const s = isJsonObject(v.saturation) ? v.saturation : undefined;
  const sl = slo(v.slo);
  const machines = Array.isArray(v.machines) ? v.machines.filter((m): m is string => typeof m === 'string') : [];
  return {
    workload,
    ...(sl ? { slo: sl } : {}),
    levels: v.levels.map(level).filter((l): l is CapacityLevel => l !== undefined),
    ...(s && num(s.concurrency) !== undefined && num(s.aggregateTps) !== undefined
      ? {
          saturation: {
            concurrency: num(s.concurrency)!,
            aggregateTps: num(s.aggregateTps)!,
            noiseBand: num(s.noiseBand) ?? 0,
            why: String(s.why ?? ''),
          },
        }
      : {}),
    ...(machines.length ? { machines } : {}),
  };
}

/** A level's figures behind one plotted or tabulated value are flagged when a flag names one of `figures`, or the
 *  whole level, or our client was the bottleneck during it; the reasons joined, or undefined when certified. */
export function flagReason(l: CapacityLevel, figures: readonly string[]): string | undefined {
  const reasons = l.flags.filter((f) => f.figure === 'level' || figures.includes(f.figure)).map((f) => f.reason);
  if (l.client.clientBound) reasons.push(`client-bound: ${l.client.reason ?? 'our client had no headroom'}`);
  return reasons.length ? [...new Set(reasons)].join('; ') : undefined;
}
