// Scenarios of the false-failure simulation: each timing check's quick-tier workload built from the fitted nominal
// figures plus sampled jitter, graded by exactly the pure functions the checks use; the correct server (false
// failures) and each fault of the reference server, modelled from its definition (detections).

import { FAULTS } from '../../fixtures/reference-server/faults.ts';
import type { PrefillContext } from '../../fixtures/reference-server/scheduler.ts';
import { DEFAULTS } from '../../fixtures/reference-server/server.ts';
import {
  type CycleSample,
  cyclesUndecided,
  gradeMemory,
  gradeNoSlowdown,
  gradeNoStalls,
  gradeTtftStable,
  type LoopDelay,
  type RssSample,
  type StallRequest,
} from '../../lib/grading/cycles.ts';
import {
  gradeNoStarvation,
  gradeScaling,
  gradeSpeedup,
  type ScalingLevel,
  type StarvationStream,
  speedupUndecided,
} from '../../lib/grading/parallel.ts';
import { gradePrefillScaling, scalingLengths } from '../../lib/grading/prefill-scaling.ts';
import type { CheckDef } from '../../lib/model/check.ts';
import type { Verdict } from '../../lib/model/types.ts';
import { checks as contextChecks } from '../../suites/context.ts';
import { checks as cycleChecks, cyclesWorkload, trendThresholds } from '../../suites/cycles.ts';
import { checks as parallelChecks, speedupWorkload } from '../../suites/parallel.ts';
import type { Fit } from './calibrate.ts';
import { inflate, Rng } from './fit.ts';

interface Scenario {
  name: string;
  /** 'correct' scenarios count false failures; fault scenarios count detections. */
  kind: 'correct' | 'fault';
  /** Outcome(s) that count as detection for a fault scenario. */
  detects?: Array<'fail' | 'warn'>;
  trial(rng: Rng): Verdict;
}

function th(c: CheckDef, name: string): number {
  const t = c.thresholds?.[name];
  if (!t) throw new Error(`${c.id} has no threshold ${name}`);
  return t.value;
}
const byId = (id: string) => [...cycleChecks, ...parallelChecks].find((c) => c.id === id)!;

interface CycleFault {
  name: string;
  e2eMs?: (n: number, base: number) => number;
  ttftMs?: (n: number, base: number) => number;
}

/**
 * The quick cycles workload: warm-up (R requests), K cycles of R requests, then two more cycles at a time while
 * cyclesUndecided says so (the same rule the suite applies), up to maxCycles. Request n = requests served before it.
 */
function simCycles(
  rng: Rng,
  f: Fit,
  stress: number,
  fault: CycleFault | undefined,
  trend: ReturnType<typeof trendThresholds>,
): CycleSample[] {
  const w = cyclesWorkload('quick');
  const T = w.tokens;
  const e2eClean = (T / f.nominal.cycleTps) * 1000;
  const levels = rng.levels(f.jitter.cycleLevel, w.maxCycles, stress);
  const cycles: CycleSample[] = [];
  let n = w.requestsPerCycle;
  let measuring = w.cycles;
  for (let c = 1; c <= measuring; c++) {
    const wallTps: number[] = [];
    const ttftMs: number[] = [];
    for (let r = 0; r < w.requestsPerCycle; r++, n++) {
      const ttft0 = fault?.ttftMs ? fault.ttftMs(n, f.nominal.ttftMs) : f.nominal.ttftMs;
      const e2e0 = fault?.e2eMs ? fault.e2eMs(n, e2eClean) : e2eClean + (ttft0 - f.nominal.ttftMs);
      wallTps.push(T / ((e2e0 * inflate(rng.tail(f.jitter.cycleRequest, stress) + levels[c - 1])) / 1000));
      ttftMs.push(ttft0 + rng.tail(f.jitter.ttft, stress));
    }
    cycles.push({ cycle: c, wallTps, ttftMs });
    if (c === measuring && measuring < w.maxCycles && cyclesUndecided({ cycles, ...trend }))
      measuring = Math.min(w.maxCycles, measuring + 2);
  }
  return cycles;
}

function cyclesStep(f: Fit): { stepMs: number; T: number; e2eClean: number } {
  const T = cyclesWorkload('quick').tokens;
  const e2eClean = (T / f.nominal.cycleTps) * 1000;
  return { T, e2eClean, stepMs: Math.max(1, (e2eClean - f.nominal.ttftMs) / (T - 1)) };
}

interface PrefillModel {
  prefillMsPerToken?: number;
  prefillQuadraticMs?: number;
  stepMs?: number;
  window?: number;
  /** The model's width the server reports (n_embd), if any. */
  width?: number;
  fault?: string;
  faultArgs?: Record<string, string>;
}
const TINY_LLAMA: PrefillModel = {
  prefillMsPerToken: 0.063,
  prefillQuadraticMs: 1.33e-4,
  stepMs: 1.5,
  window: 16_384,
  width: 256,
};
const QUADRATIC_PROOF: PrefillModel = {
  prefillMsPerToken: 0.005,
  stepMs: 0.5,
  window: 1_048_576,
  width: 2048,
  fault: 'context-quadratic-prefill',
  faultArgs: { factor: '15' },
};
const prefillCheck = contextChecks.find((c) => c.id === 'context.prefill-scaling')!;

/** Prefill of an n-token prompt as the reference scheduler spends it: chunk by chunk, each through the fault's hook. */
function referencePrefillMs(n: number, o: PrefillModel): number {
  const perToken = o.prefillMsPerToken ?? DEFAULTS.prefillMsPerToken;
  const quad = o.prefillQuadraticMs ?? DEFAULTS.prefillQuadraticMs;
  const def = o.fault ? FAULTS.get(o.fault) : undefined;
  const args = {
    num: (k: string) => Number(o.faultArgs?.[k] ?? def?.args?.[k]),
    str: (k: string) => String(o.faultArgs?.[k] ?? def?.args?.[k]),
  };
  const hook = def?.create(args).prefillMs;
  let total = 0;
  for (let position = 0; position < n; ) {
    const tokens = Math.min(DEFAULTS.prefillChunk, n - position);
    const ctx: PrefillContext = {
      tokens,
      position,
      total: n,
      linearMs: perToken * tokens,
      quadraticMs: quad * ((position + tokens) ** 2 - position ** 2),
    };
    total += hook ? hook(ctx.linearMs + ctx.quadraticMs, ctx) : ctx.linearMs + ctx.quadraticMs;
    position += tokens;
  }
  return total;
}

/** A TimingGrade of lib/grading/timing-grade.ts as the verdict the check returns (outcome and reason). */
function gradeVerdict(g: { outcome: string; reason: string }): Verdict {
  return { outcome: g.outcome as Verdict['outcome'], message: g.reason };
}

export function scenarios(f: Fit): Record<string, Scenario[]> {
  const loop: LoopDelay = { p99Ms: f.nominal.loopP99Ms, maxMs: f.nominal.loopP99Ms };
  const { stepMs, T } = cyclesStep(f);
  // perf-cycle-decay: every decode step × (1 + 0.25 · served / every); TTFT includes one step.
  const decay = (every: number): CycleFault => ({
    name: `perf-cycle-decay${every === 1 ? '' : ` (every=${every})`}`,
    e2eMs: (n) => f.nominal.ttftMs + (T - 1) * stepMs * (1 + (0.25 * n) / every) + stepMs * ((0.25 * n) / every),
    ttftMs: (n, base) => base + stepMs * ((0.25 * n) / every),
  });
  // perf-ttft-decay: each prompt's prefill costs 12 ms more per request accepted before it.
  const ttftDecay: CycleFault = { name: 'perf-ttft-decay', ttftMs: (n, base) => base + 12 * n };

  const noSlowdown = byId('cycles.no-slowdown');
  const ttftStable = byId('cycles.ttft-stable');
  const trend = trendThresholds((id, name) => th(byId(id), name));
  const cyc =
    (c: CheckDef, grade: typeof gradeNoSlowdown, fault?: CycleFault, stress = 1) =>
    (rng: Rng) =>
      grade({
        cycles: simCycles(rng, f, stress, fault, trend),
        loop,
        thresholds: c.id === 'cycles.no-slowdown' ? trend.slowdown : trend.ttft,
      });

  const stalls = byId('cycles.no-stalls');
  const stallTh = {
    stallMinMs: th(stalls, 'stallMinMs'),
    stallFactor: th(stalls, 'stallFactor'),
    minRecurrences: th(stalls, 'minRecurrences'),
    starvedLoopP99Ms: th(stalls, 'starvedLoopP99Ms'),
  };
  const simStalls = (rng: Rng, stress: number, stall?: { every: number; ms: number }): Verdict => {
    const w = cyclesWorkload('quick');
    const offset = rng.int(1000); // requests other checks sent before this family
    const requests: StallRequest[] = [];
    for (let i = 0; i < w.cycles * w.requestsPerCycle; i++) {
      const requestNumber = offset + w.requestsPerCycle + i + 1;
      const itl = Array.from({ length: w.tokens - 1 }, () => f.nominal.gapMs + rng.tail(f.jitter.gap, stress));
      if (stall && requestNumber % stall.every === 0) itl[Math.floor(w.tokens / 2) - 1] += stall.ms;
      const ttft = f.nominal.ttftMs + rng.tail(f.jitter.ttft, stress);
      requests.push({
        cycle: Math.floor(i / w.requestsPerCycle) + 1,
        ttftMs: ttft,
        e2eMs: ttft + itl.reduce((a, b) => a + b, 0),
        itlMs: itl,
      });
    }
    return gradeNoStalls({ requests, loop, thresholds: stallTh });
  };

  const memory = byId('cycles.memory');
  const memTh = {
    minGrowthKiB: th(memory, 'minGrowthKiB'),
    minLeakKiBPerRequest: th(memory, 'minLeakKiBPerRequest'),
    alpha: th(memory, 'alpha'),
    minSamples: th(memory, 'minSamples'),
  };
  const simMemory = (rng: Rng, stress: number, leakKiB: number): Verdict => {
    const w = cyclesWorkload('quick');
    const n = (w.cycles + 1) * w.requestsPerCycle;
    const samples: RssSample[] = [];
    for (let i = 1; i <= n; i++) {
      const plateau = f.nominal.rssEarlyKiB * (1 - Math.exp(-i / 3));
      samples.push({
        request: i,
        rssKiB:
          f.nominal.rssBaseKiB +
          plateau +
          Math.max(0, f.nominal.rssDriftKiBPerRequest) * stress * i +
          leakKiB * i +
          rng.t(f.jitter.rss, stress),
      });
    }
    return gradeMemory({ samples, thresholds: memTh });
  };

  const sp = byId('parallel.speedup-2');
  const spTh = {
    failBelow: th(sp, 'failBelow'),
    warnBelow: th(sp, 'warnBelow'),
    alpha: th(sp, 'alpha'),
    minReps: th(sp, 'minReps'),
    starvedLoopP99Ms: th(sp, 'starvedLoopP99Ms'),
  };
  const spW = speedupWorkload('quick');
  const simSpeedup = (rng: Rng, stress: number, pairClean: number, slots = 4): Verdict => {
    const singles: number[] = [];
    const aggs: number[] = [];
    for (let r = 0; r < spW.maxReps; r++) {
      if (
        r >= spW.reps &&
        (r - spW.reps) % 2 === 0 &&
        !speedupUndecided({ singleTps: singles, aggregateTps: aggs, thresholds: spTh })
      )
        break;
      singles.push(f.nominal.singleTps / inflate(rng.tail(f.jitter.single, stress)));
      aggs.push(pairClean / inflate(rng.tail(f.jitter.pair, stress)));
    }
    return gradeSpeedup({ singleTps: singles, aggregateTps: aggs, slots, loop, thresholds: spTh });
  };
  // Pair figures of the faults from the timing model: single e2e = TTFT + (T-1) steps; perf-parallel-slowdown makes a
  // step with 2 active cost 2 × 1.18 base steps; perf-serialise runs the second request after the first.
  const sT = spW.tokens;
  const singleE2e = (sT / f.nominal.singleTps) * 1000;
  const spStep = Math.max(1, (singleE2e - f.nominal.ttftMs) / (sT - 1));
  const slowPair = (2 * sT) / ((f.nominal.ttftMs + (sT - 1) * spStep * 2 * 1.18) / 1000);
  const serialPair = (2 * sT) / ((2 * singleE2e) / 1000);

  const sc = byId('parallel.scaling');
  const scTh = {
    warnBelow: th(sc, 'warnBelow'),
    saturationGain: th(sc, 'saturationGain'),
    starvedLoopP99Ms: th(sc, 'starvedLoopP99Ms'),
  };
  const simScaling = (rng: Rng, stress: number, serial: boolean): Verdict => {
    const levels: ScalingLevel[] = [1, 2, 4].map((c) => {
      const clean = serial
        ? f.nominal.scalingTps['1']
        : (f.nominal.scalingTps[String(c)] ?? f.nominal.scalingTps['1'] * c);
      return {
        concurrency: c,
        reps: [0, 1].map(() => {
          const agg = clean / inflate(rng.tail(c === 1 ? f.jitter.single : f.jitter.pair, stress));
          return {
            aggregateTps: agg,
            ttftMs: Array.from({ length: c }, () => f.nominal.ttftMs + rng.tail(f.jitter.ttft, stress)),
            perStreamTps: Array(c).fill(agg / c),
          };
        }),
      };
    });
    return gradeScaling({ levels, slots: 4, loop, thresholds: scTh });
  };

  const ns = byId('parallel.no-starvation');
  const nsTh = { minReps: th(ns, 'minReps'), starvedLoopP99Ms: th(ns, 'starvedLoopP99Ms') };
  const simStarvation = (rng: Rng, stress: number, serial: boolean): Verdict => {
    const reps = [0, 1].map(() => {
      const streams: StarvationStream[] = [];
      let start = 0;
      for (let i = 0; i < 4; i++) {
        const first = (serial ? start : 0) + rng.tail(f.jitter.firstToken, stress);
        const dur =
          (serial ? f.nominal.starvationDurMs / 1.15 : f.nominal.starvationDurMs) *
          inflate(rng.tail(f.jitter.pair, stress));
        streams.push({ status: 200, firstTokenAbs: first, lastTokenAbs: first + dur, tokens: 24 });
        start = first + dur + stepMs; // serialised: the next starts after this one's last token
      }
      return streams;
    });
    return gradeNoStarvation({ reps, slots: 4, loop, thresholds: nsTh });
  };

  const correct = (name: string, stress: number, trial: (rng: Rng, stress: number) => Verdict): Scenario => ({
    name,
    kind: 'correct',
    trial: (r) => trial(r, stress),
  });
  const all3 = (trial: (rng: Rng, stress: number) => Verdict) => [
    correct('correct server (fitted jitter)', 1, trial),
    correct('correct server (jitter scale x2)', 2, trial),
    correct('correct server (jitter scale x4)', 4, trial),
  ];
  const fault = (name: string, trial: (rng: Rng) => Verdict, detects: Array<'fail' | 'warn'> = ['fail']): Scenario => ({
    name,
    kind: 'fault',
    detects,
    trial,
  });

  return {
    'cycles.no-slowdown': [
      ...all3((r, s) => cyc(noSlowdown, gradeNoSlowdown, undefined, s)(r)),
      fault('perf-cycle-decay', cyc(noSlowdown, gradeNoSlowdown, decay(1))),
      fault('perf-cycle-decay (every=4)', cyc(noSlowdown, gradeNoSlowdown, decay(4))),
      fault('perf-cycle-decay (every=16, mild)', cyc(noSlowdown, gradeNoSlowdown, decay(16))),
    ],
    'cycles.ttft-stable': [
      ...all3((r, s) => cyc(ttftStable, gradeTtftStable, undefined, s)(r)),
      fault('perf-ttft-decay', cyc(ttftStable, gradeTtftStable, ttftDecay)),
      fault('perf-cycle-decay', cyc(ttftStable, gradeTtftStable, decay(1))),
    ],
    'cycles.no-stalls': [
      ...all3((r, s) => simStalls(r, s)),
      fault('perf-periodic-stall', (r) => simStalls(r, 1, { every: 4, ms: 400 })),
      fault('perf-periodic-stall (ms=250)', (r) => simStalls(r, 1, { every: 4, ms: 250 })),
    ],
    'cycles.memory': [
      ...all3((r, s) => simMemory(r, s, 0)),
      fault('perf-leak', (r) => simMemory(r, 1, 4096)),
      fault('perf-leak (mib=1)', (r) => simMemory(r, 1, 1024)),
    ],
    'parallel.speedup-2': [
      ...all3((r, s) => simSpeedup(r, s, f.nominal.pairAggregateTps)),
      fault('perf-parallel-slowdown', (r) => simSpeedup(r, 1, slowPair)),
      fault('perf-serialise (warn band)', (r) => simSpeedup(r, 1, serialPair), ['warn', 'fail']),
      correct('perf-serialise with slots 1 (informational: must not fail)', 1, (r) => simSpeedup(r, 1, serialPair, 1)),
    ],
    'parallel.scaling': [
      ...all3((r, s) => simScaling(r, s, false)),
      fault('perf-serialise', (r) => simScaling(r, 1, true)),
    ],
    'parallel.no-starvation': [
      ...all3((r, s) => simStarvation(r, s, false)),
      fault('perf-serialise', (r) => simStarvation(r, 1, true)),
    ],
    'context.prefill-scaling': [
      ...all3((r, s) => simPrefill(r, s, {})),
      correct("real attention cost: llama.cpp tiny model's curve, 16384-token window (must not fail)", 1, (r) =>
        simPrefill(r, 1, TINY_LLAMA),
      ),
      correct('real attention cost, jitter scale x4', 4, (r) => simPrefill(r, 4, TINY_LLAMA)),
      fault('context-quadratic-prefill as its proof runs it (x15, 1048576-token window)', (r) =>
        simPrefill(r, 1, QUADRATIC_PROOF),
      ),
      fault('context-quadratic-prefill default (x250) on a 65536-token window, model 2048 wide', (r) =>
        simPrefill(r, 1, { fault: 'context-quadratic-prefill', window: 65_536, width: 2048 }),
      ),
    ],
  };
  // The prefill-scaling workload of the quick tier, timed by the reference server's own chunked-prefill formula and,
  // for the fault, the fault's own prefillMs hook (fixtures/reference-server/faults), so the two cannot drift.
  function simPrefill(rng: Rng, stress: number, o: PrefillModel): Verdict {
    const window = o.window ?? DEFAULTS.contextWindow;
    const top = Math.min(
      4096,
      Math.max(1, Math.min(Math.round(window * 0.9), window - 1 - Math.max(8, Math.round(window * 0.02)))),
    );
    const upper = scalingLengths(top, th(prefillCheck, 'upperPointsQuick'), 4);
    const lengths = [Math.round(top / 16), Math.round(top / 8), ...upper];
    const reps = th(prefillCheck, 'repetitionsQuick');
    const points = lengths.map((tokens) => ({
      tokens,
      ttftMs: Array.from({ length: reps }, () => {
        const clean = f.nominal.ttftMs + referencePrefillMs(tokens, o) + (o.stepMs ?? DEFAULTS.decodeStepMs);
        // TTFT noise as measured: ms above the run's 10th percentile (the fitted heavy tail), scaled by the stress.
        return clean + rng.tail(f.jitter.ttft, stress);
      }),
    }));
    return gradeVerdict(
      gradePrefillScaling(points, {
        fitPoints: upper.length,
        minPoints: th(prefillCheck, 'minPoints'),
        minSpreadMs: th(prefillCheck, 'minSpreadMs'),
        windowTokens: window,
        excessFactor: th(prefillCheck, 'excessFactor'),
        attentionCostFactor: th(prefillCheck, 'attentionCostFactor'),
        unexplainedFactor: th(prefillCheck, 'unexplainedFactor'),
        narrowestWidth: th(prefillCheck, 'narrowestWidth'),
        width: o.width ? { value: o.width, source: 'simulated' } : undefined,
      }),
    );
  }
}

interface Tally {
  pass: number;
  warn: number;
  inconclusive: number;
  fail: number;
}

/** Upper 95 % bound of a Poisson rate for x events in n trials (exact for small x, the rule of three at x = 0). */
function upper95(x: number, n: number): number {
  let lo = x;
  let hi = x + 10 * Math.sqrt(x + 1) + 10;
  const cdf = (lam: number) => {
    let term = Math.exp(-lam);
    let s = term;
    for (let k = 1; k <= x; k++) {
      term *= lam / k;
      s += term;
    }
    return s;
  };
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (cdf(mid) > 0.05) lo = mid;
    else hi = mid;
  }
  return hi / n;
}

export function runScenario(s: Scenario, trials: number, seed: number): Tally & { rate: number; upper95?: number } {
  const rng = new Rng(seed);
  const t: Tally = { pass: 0, warn: 0, inconclusive: 0, fail: 0 };
  for (let i = 0; i < trials; i++) {
    const v = s.trial(rng);
    if (v.outcome === 'fail') t.fail++;
    else if (v.outcome === 'inconclusive') t.inconclusive++;
    else if (v.outcome === 'warn') t.warn++;
    else t.pass++;
  }
  if (s.kind === 'correct') return { ...t, rate: t.fail / trials, upper95: upper95(t.fail, trials) };
  const d = (s.detects ?? ['fail']).reduce((a, o) => a + t[o], 0);
  return { ...t, rate: d / trials };
}
