// Family `cycles`: the same workload, cycle after cycle. A server that slows down, stalls, delays its first token or
// grows its memory as it keeps serving (mlx-vlm: 790 -> 3.5 tok/s from garbage piling up, seed 000) fails here.
//
// One recorded run is shared by the four checks (memoized per run id): a warm-up cycle (dropped: model load and
// kernel compilation make it slow), then K cycles of R streamed requests of T tokens each, every prompt fresh text.
// Quick tier: K = 6, R = 3, T = 24 (about 5 s on the reference server); full tier: K = 8, R = 4, T = 64.
// The verdicts are the pure functions of lib/grading/cycles.ts (their false-failure rates are simulated by
// scripts/simulate-false-failures.ts).

import {
  chat,
  describeExchange,
  type Exchange,
  generationBody,
  measurePace,
  uniquePrompt,
} from '../lib/exchange/exchange.ts';
import { filler } from '../lib/exchange/prompts.ts';
import { incompleteVerdict, type SharedRecording, shared } from '../lib/exchange/recordings.ts';
import { served, textlessNote } from '../lib/exchange/served.ts';
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
  type TrendThresholds,
} from '../lib/grading/cycles.ts';
import { type CpuUse, cpuSnapshot, cpuUse } from '../lib/measure/machine-load.ts';
import { expectedMs, type Pace, sizedFrom, tokensAt } from '../lib/measure/pace.ts';
import type { CheckContext, CheckDef, Threshold, Tier } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Evidence, Verdict } from '../lib/model/types.ts';
import { fail, fmt, inconclusive } from '../lib/model/verdict.ts';
import { processTreeRssKiB } from '../lib/server/lifecycle.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';
import { blockedIfUnserved } from './support/root-causes.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'cycles',
  order: 120,
  timing: true,
  headline: false,
  what: "no slowdown, no recurring stalls, stable TTFT and memory over repeated cycles; on Linux, where the suite started the server, each cycle also records who used the CPUs (the server's process tree, our client, everything else, from `/proc`): a slowdown or TTFT growth that a neighbour explains — other load up by ≥ 0.25 cores, a CPU-bound server (≥ 0.5 cores) whose own CPU fell about as much as its speed — is `inconclusive` with those figures, never blamed on the server, while a decay of 15 % per cycle or more beside such a neighbour still fails (`test/machine-load.test.ts` holds the rule against generated neighbours)",
};

interface CyclesWorkload {
  /** How the token count was chosen (set when the run sizes it from the measured speed). */
  sizing?: string;
  /** K: cycles measured before the sequential rule may add more. */
  cycles: number;
  /** Upper bound of cycles when the trend is not yet clear (cyclesUndecided), two at a time. */
  maxCycles: number;
  requestsPerCycle: number;
  tokens: number;
}

/** Workload per tier; `cycles` can be overridden per profile via thresholds["cycles.no-slowdown"].cycles. */
export function cyclesWorkload(tier: Tier, profileCycles?: number): CyclesWorkload {
  const w =
    tier === 'full'
      ? { cycles: 8, maxCycles: 14, requestsPerCycle: 4, tokens: 64 }
      : { cycles: 6, maxCycles: 10, requestsPerCycle: 3, tokens: 24 };
  if (profileCycles !== undefined && profileCycles >= 3) {
    w.cycles = Math.min(50, Math.floor(profileCycles));
    w.maxCycles = Math.min(80, Math.ceil(w.cycles * 1.75));
  }
  return w;
}

/** A threshold of any check of this family: the profile's override, else the check's default. */
function familyThreshold(ctx: CheckContext, id: string, name: string): number {
  const override = ctx.profile.thresholds?.[id]?.[name];
  if (override !== undefined) return override;
  const d = checks.find((c) => c.id === id)?.thresholds?.[name];
  if (!d) throw new Error(`harness bug: check ${id} has no threshold named "${name}"`);
  return d.value;
}

/** Trend thresholds of cycles.no-slowdown and cycles.ttft-stable, as the sequential rule and the verdicts read them. */
export function trendThresholds(get: (id: string, name: string) => number): {
  slowdown: TrendThresholds;
  ttft: TrendThresholds;
} {
  const common = (id: string) => ({
    alpha: get(id, 'alpha'),
    minCycles: get(id, 'minCycles'),
    starvedLoopP99Ms: get(id, 'starvedLoopP99Ms'),
  });
  return {
    slowdown: { relative: get('cycles.no-slowdown', 'delta'), absolute: 0, ...common('cycles.no-slowdown') },
    ttft: {
      relative: get('cycles.ttft-stable', 'gamma'),
      absolute: get('cycles.ttft-stable', 'floorMs'),
      ...common('cycles.ttft-stable'),
    },
  };
}

interface CycleRequest {
  cycle: number;
  /** Requests served before this one (0 = first warm-up request). */
  index: number;
  x: Exchange;
}

interface CyclesRun {
  workload: CyclesWorkload;
  requests: CycleRequest[];
  /** RSS of the server's process tree after each request (only where the suite started the server). */
  rss: RssSample[];
  rssUnavailable?: string;
  loop: LoopDelay;
  /** CPU use per cycle (index = cycle; the warm-up's is not kept): the server's tree, our client, everything else. */
  cpu: (CpuUse | undefined)[];
  ms: number;
  /** Cycles completed (the run stops starting cycles when its time budget is spent). */
  completedCycles: number;
  stoppedEarly?: string;
}

/** The shared run: recorded once per run id and server (lib/http/recordings.ts), read by every check of the family. */
export function cyclesRun(ctx: CheckContext): Promise<SharedRecording<CyclesRun>> {
  return shared(
    ctx,
    'cycles',
    () => recordCycles(ctx),
    (r) => r.requests.map((q) => q.x.rec),
  );
}

/**
 * Tokens per request sized from the measured speed (lib/measure/pace.ts): each request decodes for about `requestMs`, so
 * timer jitter is small beside it at 5000 tok/s and a 3 tok/s server finishes the run within its bound.
 */
const CYCLE_SIZING = {
  quick: { requestMs: 250, min: 8, max: 512 },
  full: { requestMs: 500, min: 16, max: 1024 },
};

function cycleTokens(tier: Tier, pace: Pace | undefined, fallback: number): number {
  if (!pace) return fallback;
  const z = CYCLE_SIZING[tier];
  // A request's share of the run's budget (60 % of the bound over warm-up + K cycles of R requests) caps it.
  return tokensAt(pace, { targetMs: z.requestMs, min: z.min, max: z.max, wallCapMs: (0.6 * TIMEOUT) / 21 });
}

async function recordCycles(ctx: CheckContext): Promise<CyclesRun> {
  const w = cyclesWorkload(ctx.tier, ctx.profile.thresholds?.['cycles.no-slowdown']?.cycles);
  const pace = await measurePace(ctx);
  w.tokens = cycleTokens(ctx.tier, pace, w.tokens);
  w.sizing = `${sizedFrom(pace)}: ${w.tokens} tokens per request`;
  const estimate = pace ? expectedMs(pace, w.tokens, (w.cycles + 1) * w.requestsPerCycle) / 1000 : undefined;
  ctx.log(
    `warm-up + ${w.cycles} cycles × ${w.requestsPerCycle} requests × ${w.tokens} tokens (${w.sizing}; ≈ ${fmt(estimate, 1)} s)`,
  );
  const t0 = performance.now();
  // Stop starting new cycles when 60 % of the check's bound is spent: a decaying server must not hang the suite.
  const budgetMs = 0.6 * (ctx.check.timeoutMs ?? 60_000);
  const requests: CycleRequest[] = [];
  const rss: RssSample[] = [];
  const pid = ctx.server.startedPid;
  let rssUnavailable: string | undefined = pid === undefined ? 'the suite did not start the server' : undefined;
  const sampleRss = async (request: number) => {
    if (pid === undefined || rssUnavailable) return;
    const kib = await processTreeRssKiB(pid);
    if (kib === undefined) rssUnavailable = `ps shows no process ${pid}`;
    else rss.push({ request, rssKiB: kib });
  };
  let completedCycles = 0;
  let stoppedEarly: string | undefined;
  let index = 0;
  const trend = trendThresholds((id, name) => familyThreshold(ctx, id, name));
  let measuring = w.cycles;
  const cpu: (CpuUse | undefined)[] = [];
  for (let cycle = 0; cycle <= measuring && !ctx.signal.aborted; cycle++) {
    if (cycle > 0 && performance.now() - t0 > budgetMs) {
      stoppedEarly = `time budget of ${fmt(budgetMs / 1000, 1)} s spent after ${completedCycles} of ${measuring} cycles`;
      ctx.log(stoppedEarly);
      break;
    }
    const cpuStart = cpuSnapshot(pid);
    for (let r = 0; r < w.requestsPerCycle; r++) {
      const body = generationBody(ctx, 'openai-chat', {
        prompt: uniquePrompt(
          ctx,
          `Continue these notes in the same style.\n${filler(40, (cycle * 97 + r * 31) % 500)}`,
        ),
        maxTokens: w.tokens,
        stream: true,
        exactLength: true,
        extra: { stream_options: { include_usage: true } },
      });
      const x = await chat(ctx, body);
      requests.push({ cycle, index: index++, x });
      await sampleRss(index);
      if (ctx.signal.aborted) break;
    }
    if (cycle > 0) {
      completedCycles++;
      const cpuEnd = cpuSnapshot(pid);
      const use = cpuStart && cpuEnd ? cpuUse(cpuStart, cpuEnd) : undefined;
      cpu[cycle] = use;
      const done = requests.filter((q) => q.cycle === cycle);
      const load = use
        ? `; CPU cores: server ${fmt(use.serverCores, 2)}, client ${fmt(use.clientCores, 2)}, other ${fmt(use.otherCores, 2)} of ${use.cores}`
        : '';
      ctx.log(
        `cycle ${cycle}/${measuring}: wall_tps ${done.map((q) => fmt(q.x.metrics?.wallTps, 1)).join(', ')} tok/s${load}`,
      );
      // Sequential rule (pure, simulated): past K cycles, two more at a time while the trend is not yet clear.
      if (
        cycle === measuring &&
        measuring < w.maxCycles &&
        cyclesUndecided({ cycles: samplesOf(requests, cycle, cpu), ...trend })
      ) {
        measuring = Math.min(w.maxCycles, measuring + 2);
        ctx.log(`trend not yet clear after ${cycle} cycles: measuring up to ${measuring}`);
      }
    }
  }
  return {
    workload: w,
    requests,
    rss,
    rssUnavailable,
    loop: ctx.loopDelay(),
    cpu,
    ms: performance.now() - t0,
    completedCycles,
    stoppedEarly,
  };
}

function samplesOf(requests: CycleRequest[], cycles: number, cpu: (CpuUse | undefined)[]): CycleSample[] {
  return Array.from({ length: cycles }, (_, i) => {
    const reqs = requests.filter((q) => q.cycle === i + 1);
    const use = cpu[i + 1];
    return {
      cycle: i + 1,
      wallTps: reqs.map((q) => q.x.metrics?.wallTps),
      ttftMs: reqs.map((q) => q.x.metrics?.ttftMs),
      ...(use ? { cpu: use } : {}),
    };
  });
}

/** Measured cycles (warm-up dropped) in the shape the grading functions read. */
function cycleSamples(run: CyclesRun): CycleSample[] {
  const out: CycleSample[] = [];
  for (let c = 1; c <= run.completedCycles; c++) {
    const reqs = run.requests.filter((q) => q.cycle === c);
    const last = reqs[reqs.length - 1];
    const rss = last ? run.rss.find((s) => s.request === last.index + 1)?.rssKiB : undefined;
    const use = run.cpu[c];
    out.push({
      cycle: c,
      wallTps: reqs.map((q) => q.x.metrics?.wallTps),
      ttftMs: reqs.map((q) => q.x.metrics?.ttftMs),
      ...(rss !== undefined ? { rssKiB: rss } : {}),
      ...(use ? { cpu: use } : {}),
    });
  }
  return out;
}

/**
 * Requests that did not complete: a server that errors mid-run fails the timing checks outright — one of them, once,
 * when the requests were not served at all: cycles.no-slowdown, which the others declare they depend on (they are
 * blocked by it: lib/check/blocked.ts).
 */
function brokenRequests(run: CyclesRun): Verdict | undefined {
  const bad = run.requests.filter((q) => !served(q.x));
  if (bad.length === 0) return undefined;
  const v = fail(
    {
      requirement: 'Every request of a steady, modest workload MUST be served, cycle after cycle.',
      expected: `HTTP 200 with ${run.workload.tokens} streamed tokens for each of ${run.requests.length} requests`,
      actual: `${bad.length} request(s) failed`,
      violations: bad.map(
        (q) =>
          `cycle ${q.cycle}, request ${q.index + 1}: ${describeExchange(q.x)}; ${q.x.events?.tokens.length ?? 0} token event(s)`,
      ),
    },
    { failed: bad.length, requests: run.requests.length },
    evidence(run, bad),
  );
  return blockedIfUnserved(
    v,
    bad.map((q) => q.x.rec),
  );
}

function evidence(run: CyclesRun, pick?: CycleRequest[]): Evidence[] {
  return (pick ?? run.requests).slice(0, 40).map((q) => ({
    label: `cycle ${q.cycle}${q.cycle === 0 ? ' (warm-up)' : ''}, request ${q.index + 1}`,
    status: q.x.rec.status,
    ttftMs: q.x.metrics?.ttftMs,
    e2eMs: q.x.metrics?.e2eMs,
    tokenTimes: q.x.events?.tokens.map((t) => Math.round(t.t * 10) / 10),
  }));
}

function withRun(v: Verdict, run: CyclesRun): Verdict {
  const note = `${textlessNote(run.requests.map((q) => q.x))}${run.workload.sizing ? ` (${run.workload.sizing})` : ''}${run.stoppedEarly ? ` (${run.stoppedEarly})` : ''}`;
  return {
    ...v,
    message: v.message + note,
    metrics: { ...v.metrics, workload: run.workload, runMs: Math.round(run.ms) },
    evidence: v.evidence ?? evidence(run),
  };
}

/**
 * What the four checks share: the shared run graded by `grade`, with the run's notes. A run our side cut short is
 * no verdict on the server; requests that failed fail the check before any grading.
 */
async function graded(ctx: CheckContext, grade: (run: CyclesRun) => Verdict): Promise<Verdict> {
  const r = await cyclesRun(ctx);
  if (r.incomplete) return incompleteVerdict(r, 'the cycles run was recorded');
  const run = r.value;
  return brokenRequests(run) ?? withRun(grade(run), run);
}

const REFERENCE =
  'Seed study 000 (mlx-vlm: cyclic slowdown 790 -> 3.5 tok/s from GC trouble); vllm-mlx #442 (memory growth over hours); llama.cpp #22360 (slowdown over long uptime)';
const TIMEOUT = 120_000;

const starvedLoop: Threshold = {
  value: 100,
  why: 'a client event loop that stalls for 100 ms or more at p99 mis-times requests of a few hundred ms: inconclusive, never a failure',
};
const alpha: Threshold = {
  value: 0.05,
  why: "Sen's slope interval at 95 %: with the drop condition on top, the simulated false-failure rate stays under 1 in 10,000",
};
const minCycles: Threshold = { value: 5, why: "Sen's 95 % interval needs at least 5 points to exist" };

export const checks: CheckDef[] = [
  {
    id: 'cycles.no-slowdown',
    title: 'throughput does not decay over repeated cycles of the same workload',
    level: 'MUST',
    provides: ['cycles_slope', 'cycle_curve'],
    rationale:
      'A server that gets slower the longer it runs (mlx-vlm: 790 -> 3.5 tok/s) is unusable for long sessions whatever its first figure says.',
    reference: REFERENCE,
    requires: ['openai-chat'],
    timeoutMs: TIMEOUT,
    thresholds: {
      delta: {
        value: 0.2,
        why: 'a drop of 20 % between the first and last cycles is well past run-to-run noise (a few %) and one a user notices',
      },
      alpha,
      minCycles,
      starvedLoopP99Ms: starvedLoop,
    },
    run: (ctx) =>
      graded(ctx, (run) =>
        gradeNoSlowdown({
          cycles: cycleSamples(run),
          loop: run.loop,
          thresholds: trendThresholds((id, name) => familyThreshold(ctx, id, name)).slowdown,
        }),
      ),
  },
  {
    id: 'cycles.no-stalls',
    title: 'no recurring stalls (a pause every n requests) while serving a steady workload',
    level: 'SHOULD',
    dependsOn: ['cycles.no-slowdown'],
    rationale:
      'A periodic GC pause freezes every stream for its length; a slope of medians cannot see it, the largest token gap can.',
    reference: `${REFERENCE}; mlx-vlm #1400 (GC and cache clearing in finalizers)`,
    requires: ['openai-chat'],
    timeoutMs: TIMEOUT,
    thresholds: {
      stallMinMs: {
        value: 200,
        why: 'a pause users notice (GC pauses are hundreds of ms); token gaps on a loaded 2-core machine reach ~60 ms, and the fitted tail puts 200 ms at < 1e-4 per gap (simulated)',
      },
      stallFactor: {
        value: 8,
        why: 'and at least 8x the median token gap, so a slow server with long steps is not called stalled',
      },
      minRecurrences: {
        value: 4,
        why: 'four pauses in at least two cycles are a pattern; up to three happen by chance on a loaded 2-core machine often enough (simulated: ~1e-4 at three) to be called inconclusive',
      },
      starvedLoopP99Ms: starvedLoop,
    },
    run: (ctx) =>
      graded(ctx, (run) => {
        const requests: StallRequest[] = run.requests
          .filter((q) => q.cycle > 0 && q.cycle <= run.completedCycles)
          .map((q) => ({
            cycle: q.cycle,
            e2eMs: q.x.metrics?.e2eMs,
            ttftMs: q.x.metrics?.ttftMs,
            itlMs: q.x.metrics?.itlMs ?? [],
          }));
        return gradeNoStalls({
          requests,
          loop: run.loop,
          thresholds: {
            stallMinMs: ctx.threshold('stallMinMs'),
            stallFactor: ctx.threshold('stallFactor'),
            minRecurrences: ctx.threshold('minRecurrences'),
            starvedLoopP99Ms: ctx.threshold('starvedLoopP99Ms'),
          },
        });
      }),
  },
  {
    id: 'cycles.ttft-stable',
    title: 'time to first token does not grow over repeated cycles',
    level: 'MUST',
    dependsOn: ['cycles.no-slowdown'],
    rationale:
      'A first token that arrives later every cycle (growing caches, queues, fragmentation) makes an interactive client feel broken over time.',
    reference: REFERENCE,
    requires: ['openai-chat'],
    timeoutMs: TIMEOUT,
    thresholds: {
      gamma: { value: 0.5, why: 'TTFT of short prompts is small and jittery: growth of half its value and …' },
      floorMs: {
        value: 30,
        why: '… at least 30 ms, more than scheduler jitter on a loaded 2-core machine (simulated), must both be exceeded',
      },
      alpha,
      minCycles,
      starvedLoopP99Ms: starvedLoop,
    },
    run: (ctx) =>
      graded(ctx, (run) =>
        gradeTtftStable({
          cycles: cycleSamples(run),
          loop: run.loop,
          thresholds: trendThresholds((id, name) => familyThreshold(ctx, id, name)).ttft,
        }),
      ),
  },
  {
    id: 'cycles.memory',
    title: "the server's memory plateaus under a steady workload",
    level: 'SHOULD',
    dependsOn: ['cycles.no-slowdown'],
    rationale:
      'Memory that keeps growing after caches reached their cap ends in an out-of-memory abort (vllm-mlx #442, Rapid-MLX Metal leak).',
    reference: `${REFERENCE}; RSS of the process tree via ps (works on Linux and macOS)`,
    requires: ['openai-chat', 'started'],
    timeoutMs: TIMEOUT,
    thresholds: {
      minGrowthKiB: {
        value: 16 * 1024,
        why: 'over the later half of the run: a node/python heap breathes by a few MiB; 16 MiB more in a dozen requests is not breathing',
      },
      minLeakKiBPerRequest: {
        value: 512,
        why: 'half a MiB retained per request: at that rate a day of traffic exhausts any machine',
      },
      alpha,
      minSamples: { value: 8, why: 'the later half needs at least 4 samples for a slope interval' },
    },
    run: (ctx) =>
      graded(ctx, (run) => {
        if (run.rssUnavailable) return inconclusive(`no RSS samples (${run.rssUnavailable})`);
        return gradeMemory({
          samples: run.rss,
          thresholds: {
            minGrowthKiB: ctx.threshold('minGrowthKiB'),
            minLeakKiBPerRequest: ctx.threshold('minLeakKiBPerRequest'),
            alpha: ctx.threshold('alpha'),
            minSamples: ctx.threshold('minSamples'),
          },
        });
      }),
  },
];

export const proofs: Proof[] = [
  passProof('cycles.no-slowdown', { messageIncludes: ['no slowdown over', 'Sen slope'] }),
  faultProof('cycles.no-slowdown', 'perf-cycle-decay', ['slowdown over cycles', 'wall_tps'], {
    serverArgs: ['--fault-arg', 'every=4'],
  }),
  passProof('cycles.no-stalls', { messageIncludes: ['no recurring stalls in'] }),
  faultProof('cycles.no-stalls', 'perf-periodic-stall', ['recurring stalls', 'token gap'], { expect: 'warn' }),
  passProof('cycles.ttft-stable', { messageIncludes: ['TTFT stable over'] }),
  faultProof('cycles.ttft-stable', 'perf-ttft-decay', ['TTFT growing over cycles']),
  passProof('cycles.memory', { messageIncludes: ['memory plateaus'] }),
  faultProof('cycles.memory', 'perf-leak', ['memory growing without a plateau', 'KiB per request'], { expect: 'warn' }),
];
