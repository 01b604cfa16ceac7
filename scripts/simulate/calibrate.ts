// Calibration of the false-failure simulation: real runs of the `cycles` and `parallel` families (quick tier) against
// the reference server, optionally under CPU burners, and the fit of their jitter and nominal figures.

import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startReference } from '../../fixtures/reference-server/spawn.ts';
import { makeContext, runCheck } from '../../lib/check/check.ts';
import type { LoopDelay, RssSample } from '../../lib/grading/cycles.ts';
import { type Burner, startBurner } from '../../lib/measure/cpu-burner.ts';
import { median, quantile, theilSen } from '../../lib/measure/stats.ts';
import type { CheckDef } from '../../lib/model/check.ts';
import { freshMemory } from '../../lib/model/memory.ts';
import { checks as cycleChecks, cyclesRun, cyclesWorkload } from '../../suites/cycles.ts';
import { checks as parallelChecks, speedupWorkload } from '../../suites/parallel.ts';
import { fitT, fitTail, type LevelFit, type TailFit, type TFit } from './fit.ts';

export interface CalibrationRaw {
  cyclesRuns: Array<{
    wallTps: number[];
    ttftMs: number[];
    gaps: number[];
    cycleMedians: number[];
    rss: RssSample[];
    loop: LoopDelay;
  }>;
  speedup: Array<{ singles: number[]; aggs: number[]; loop: LoopDelay }>;
  scaling: Array<{
    curve: Array<{ concurrency: number; aggregateTps?: number; ttftP50Ms?: number; perStreamTps?: number }>;
  }>;
  starvation: Array<{ firstMs: number[]; durMs: number[] }>;
  /** The real verdicts of the calibration runs (a small soak in passing). */
  outcomes: Array<{ run: number; check: string; outcome: string; message: string }>;
}

export interface Fit {
  source: string;
  burner: boolean;
  runs: number;
  nominal: {
    cycleTps: number;
    ttftMs: number;
    gapMs: number;
    rssBaseKiB: number;
    rssEarlyKiB: number;
    rssDriftKiBPerRequest: number;
    singleTps: number;
    pairAggregateTps: number;
    scalingTps: Record<string, number>;
    starvationDurMs: number;
    loopP99Ms: number;
    cyclesTokens: number;
    speedupTokens: number;
  };
  jitter: {
    cycleRequest: TailFit;
    cycleLevel: LevelFit;
    ttft: TailFit;
    gap: TailFit;
    rss: TFit;
    single: TailFit;
    pair: TailFit;
    firstToken: TailFit;
  };
}

function loopMonitor() {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  return { read: (): LoopDelay => ({ p99Ms: h.percentile(99) / 1e6, maxMs: h.max / 1e6 }), stop: () => h.disable() };
}

/** Run both families `runs` times for real against the reference server (under a burner unless told not to). */
export async function calibrationRuns(
  runs: number,
  opts: { burners: number; log: (m: string) => void },
): Promise<CalibrationRaw> {
  const raw: CalibrationRaw = { cyclesRuns: [], speedup: [], scaling: [], starvation: [], outcomes: [] };
  const ref = await startReference([]);
  const burners: Burner[] = [];
  try {
    for (let i = 0; i < opts.burners; i++) burners.push(startBurner({ maxMs: 30 * 60_000 }));
    for (let run = 1; run <= runs; run++) {
      const runId = randomBytes(4).toString('hex');
      const o = {
        memory: freshMemory(),
        profile: ref.profile,
        server: ref.info,
        tier: 'quick' as const,
        runId,
        log: () => undefined,
      };
      for (const c of [...cycleChecks, ...parallelChecks]) {
        const { verdict } = await runCheck(c, o);
        raw.outcomes.push({
          run,
          check: c.id,
          outcome: verdict.outcome,
          message: verdict.message.split('\n')[0].slice(0, 200),
        });
        const m = (verdict.metrics ?? {}) as Record<string, any>;
        if (c.id === 'parallel.speedup-2')
          raw.speedup.push({ singles: m.singleTpsSamples ?? [], aggs: m.aggregateTpsSamples ?? [], loop: m.loopDelay });
        if (c.id === 'parallel.scaling') raw.scaling.push({ curve: m.curve ?? [] });
        if (c.id === 'parallel.no-starvation') {
          for (const rep of m.reps ?? []) {
            const streams = rep.streams as Array<{ firstTokenMs?: number; lastTokenMs?: number }>;
            raw.starvation.push({
              firstMs: streams.map((s) => s.firstTokenMs ?? NaN),
              durMs: streams.map((s) => (s.lastTokenMs ?? NaN) - (s.firstTokenMs ?? NaN)),
            });
          }
        }
      }
      // The memoized cycles run of this run id: the raw exchanges behind the four cycles verdicts.
      const mon = loopMonitor();
      const ctx = makeContext(cycleChecks[0] as CheckDef, o, new AbortController().signal, mon.read);
      const cr = (await cyclesRun(ctx)).value;
      mon.stop();
      const measured = cr.requests.filter((q) => q.cycle > 0);
      raw.cyclesRuns.push({
        wallTps: measured.map((q) => q.x.metrics?.wallTps ?? NaN),
        ttftMs: measured.map((q) => q.x.metrics?.ttftMs ?? NaN),
        gaps: measured.flatMap((q) => q.x.metrics?.itlMs ?? []),
        cycleMedians: Array.from(
          { length: cr.completedCycles },
          (_, i) => median(measured.filter((q) => q.cycle === i + 1).map((q) => q.x.metrics?.wallTps)) ?? NaN,
        ),
        rss: cr.rss,
        loop: cr.loop,
      });
      opts.log(
        `calibration run ${run}/${runs}: ${raw.outcomes
          .filter((x) => x.run === run)
          .map((x) => `${x.check} ${x.outcome}`)
          .join(', ')}`,
      );
    }
  } finally {
    for (const b of burners) await b.stop();
    await ref.stop();
  }
  return raw;
}

const logRatios = (xs: number[], ref: number) => xs.filter((x) => x > 0).map((x) => Math.log(ref / x));

export function fitCalibration(raw: CalibrationRaw, burner: boolean, pooled: string[] = []): Fit {
  const p = (xs: number[], q: number) => quantile(xs, q) ?? NaN;
  // One-sided: each sample's slowdown against the run's clean speed (its 90th percentile of tokens/s).
  const cycleReq = raw.cyclesRuns.flatMap((r) => logRatios(r.wallTps, p(r.wallTps, 0.9)));
  const cycleLevel = raw.cyclesRuns.flatMap((r) => logRatios(r.cycleMedians, p(r.cycleMedians, 0.9)));
  const ttft = raw.cyclesRuns.flatMap((r) => r.ttftMs.map((t) => t - p(r.ttftMs, 0.1)));
  const gaps = raw.cyclesRuns.flatMap((r) => r.gaps.map((g) => g - (median(r.gaps) ?? g)));
  // Lag-1 autocorrelation of the cycle levels within runs (pooled), clipped to [0, 0.9].
  let num = 0;
  let den = 0;
  for (const r of raw.cyclesRuns) {
    const ls = r.cycleMedians.map((m) => Math.log((median(r.cycleMedians) ?? m) / m));
    for (let i = 0; i < ls.length; i++) {
      den += ls[i] ** 2;
      if (i > 0) num += ls[i] * ls[i - 1];
    }
  }
  const phi = Math.min(0.9, Math.max(0, den > 0 ? num / den : 0));
  const rssResiduals: number[] = [];
  const drifts: number[] = [];
  const early: number[] = [];
  for (const r of raw.cyclesRuns) {
    const half = r.rss.slice(Math.floor(r.rss.length / 2));
    const ts = theilSen(
      half.map((s) => s.request),
      half.map((s) => s.rssKiB),
    );
    if (ts.slope === undefined || ts.intercept === undefined) continue;
    drifts.push(ts.slope);
    for (const s of half) rssResiduals.push(s.rssKiB - (ts.intercept + ts.slope * s.request));
    early.push((r.rss[Math.floor(r.rss.length / 2)]?.rssKiB ?? 0) - (r.rss[0]?.rssKiB ?? 0));
  }
  const single = raw.speedup.flatMap((r) => logRatios(r.singles, p(r.singles, 0.9)));
  const pair = raw.speedup.flatMap((r) => logRatios(r.aggs, p(r.aggs, 0.9)));
  const first = raw.starvation.flatMap((r) => r.firstMs.filter(Number.isFinite));
  const levels = new Map<number, number[]>();
  for (const r of raw.scaling)
    for (const c of r.curve)
      if (c.aggregateTps) levels.set(c.concurrency, [...(levels.get(c.concurrency) ?? []), c.aggregateTps]);
  const loops = [...raw.cyclesRuns.map((r) => r.loop?.p99Ms), ...raw.speedup.map((r) => r.loop?.p99Ms)].filter(
    (x): x is number => Number.isFinite(x),
  );
  return {
    source: `real runs: ${raw.cyclesRuns.length} × (cycles + parallel families, quick tier) against the reference server${burner ? ' with a CPU burner on the other core' : ' (no burner)'}${pooled.length ? `, pooled with the stored runs of ${pooled.join(', ')}` : ''}`,
    burner,
    runs: raw.cyclesRuns.length,
    nominal: {
      cycleTps: median(raw.cyclesRuns.map((r) => p(r.wallTps, 0.9)))!,
      ttftMs: median(raw.cyclesRuns.map((r) => p(r.ttftMs, 0.1)))!,
      gapMs: median(raw.cyclesRuns.map((r) => median(r.gaps) ?? NaN))!,
      rssBaseKiB: median(raw.cyclesRuns.map((r) => r.rss[0]?.rssKiB ?? NaN)) ?? 80_000,
      rssEarlyKiB: median(early) ?? 0,
      rssDriftKiBPerRequest: median(drifts) ?? 0,
      singleTps: median(raw.speedup.map((r) => p(r.singles, 0.9)))!,
      pairAggregateTps: median(raw.speedup.map((r) => p(r.aggs, 0.9)))!,
      scalingTps: Object.fromEntries([...levels].map(([c, xs]) => [String(c), p(xs, 0.9)])),
      starvationDurMs: median(raw.starvation.flatMap((r) => r.durMs.filter(Number.isFinite)))!,
      loopP99Ms: median(loops) ?? 0,
      cyclesTokens: cyclesWorkload('quick').tokens,
      speedupTokens: speedupWorkload('quick').tokens,
    },
    jitter: {
      cycleRequest: fitTail(cycleReq, "log slowdown of one cycles request against the run's clean (p90) speed"),
      // Fitted on the cycle medians themselves, so it also carries their within-cycle noise: counted twice, on purpose.
      cycleLevel: {
        type: 'regime',
        phi,
        tail: fitTail(cycleLevel, "log slowdown of a cycle median against the run's p90 cycle median"),
      },
      ttft: fitTail(ttft, "ms of TTFT above the run's 10th percentile"),
      gap: fitTail(gaps, "ms of a token gap above the run's median gap (catch-up gaps ignored: e2e noise overstated)"),
      rss: fitT(rssResiduals, 'full', 'KiB of RSS off the later-half trend'),
      single: fitTail(single, "log slowdown of a single request against the run's p90 speed"),
      pair: fitTail(pair, "log slowdown of a pair's aggregate against the run's p90"),
      firstToken: fitTail(first, "ms from the first stream's first token to each stream's first token (4 together)"),
    },
  };
}
