// Hand-made capacity tables (results.json `capacity`) for the reporters' and the merge's self-tests: a sweep that
// saturates at 8 streams, request-rate runs with goodput, one level flagged for burst delivery and one client-bound,
// hostile strings in the free-text fields a report prints.

import type { CapacityLevel, CapacityTable } from '../../lib/capacity/types.ts';
import type { ResultsFile } from '../../reporters/results-types.ts';
import { HOSTILE } from './results-samples.ts';

const pct = (p50: number, p90: number, p99: number) => ({ p50, p90, p99 });

/** One level: `tokens` output tokens over `windowMs` from `t0` on the machine's clock. */
export function level(o: Partial<CapacityLevel> & { t0: number; windowMs: number; tokens: number }): CapacityLevel {
  const { t0, windowMs, tokens, ...rest } = o;
  const sent = rest.sent ?? 8;
  return {
    mode: 'concurrency',
    startedAt: t0,
    endedAt: t0 + windowMs,
    sent,
    completed: sent,
    errored: 0,
    timedOut: 0,
    ttftMs: pct(20, 30, 40),
    itlMs: pct(8, 9, 12),
    e2eMs: pct(500, 600, 700),
    tpsPerStream: pct(110, 120, 125),
    aggregateTps: (tokens * 1000) / windowMs,
    inputTokens: sent * 32,
    outputTokens: tokens,
    streamedTokens: tokens,
    client: { cpuUsPerEvent: 40, loopLagP99Ms: 3, clientBound: false },
    flags: [],
    ...rest,
  };
}

export const BURST_REASON = 'ITL p50 0.02 ms: burst delivery, not a decode rate';
export const CLIENT_REASON = `client CPU 400 µs per event above its bound ${HOSTILE.img}`;

/** A sweep 1…32 saturating at 8 streams (~1000 tok/s), a burst-flagged level at 32, rate runs with goodput. */
export function capacityTable(machine = 'box-a', t0 = 1_764_000_000_000): CapacityTable {
  const sweep = [1, 2, 4, 8, 16, 32].map((c, i) => {
    const agg = 125 * Math.min(c, 8) * (c === 32 ? 0.9 : 1);
    return level({
      machine,
      concurrency: c,
      t0: t0 + i * 10_000,
      windowMs: 4000,
      tokens: agg * 4,
      sent: c * 2,
      ttftMs: pct(20 + c, 25 + 2 * c, 30 + 4 * c),
      itlMs:
        c === 32 ? pct(0.02, 0.05, 0.1) : pct(8 * Math.max(1, c / 8), 9 * Math.max(1, c / 8), 12 * Math.max(1, c / 8)),
      flags: c === 32 ? [{ figure: 'itl', reason: BURST_REASON }] : [],
      client:
        c === 16
          ? { cpuUsPerEvent: 400, loopLagP99Ms: 80, clientBound: true, reason: CLIENT_REASON }
          : { cpuUsPerEvent: 40, loopLagP99Ms: 3, clientBound: false },
    });
  });
  const rates = [2, 4, 8].map((r, i) =>
    level({
      machine,
      mode: 'rate',
      ratePerS: r,
      arrival: 'poisson',
      seed: 7,
      t0: t0 + 100_000 + i * 10_000,
      windowMs: 5000,
      tokens: r * 5 * 64,
      sent: r * 5,
      goodput: { ratePerS: r * (r === 8 ? 0.5 : 1), fraction: r === 8 ? 0.5 : 1 },
    }),
  );
  return {
    workload: { kind: 'synthetic', inputTokens: 32, outputTokens: 64 },
    slo: { ttftP99Ms: 200, itlP99Ms: 50 },
    levels: [...sweep, ...rates],
    saturation: { concurrency: 8, aggregateTps: 1000, noiseBand: 0.05, why: `rose < 5 % past 8 ${HOSTILE.script}` },
    machines: [machine],
  };
}

/** A results file of the reference project on `machine` carrying the table. */
export function capacityResults(machine = 'box-a'): ResultsFile & { capacity: CapacityTable } {
  return {
    header: {
      suite: { name: 'llm-server-conformance', version: '0.1.0' },
      date: '2026-12-02T10:00:00.000Z',
      project: 'capacity-sample',
      profile: { id: 'capacity-sample' },
      server: { identity: { name: 'reference', version: '1' } },
      machine: { label: machine, platform: 'linux', arch: 'x64', cpus: 2, memGiB: 8, node: 'v20' },
      tier: 'quick',
      strict: false,
    },
    checks: [],
    finished: { date: '2026-12-02T10:05:00.000Z', reason: 'passed' },
    capacity: capacityTable(machine),
  };
}
