// Family `parallel`: requests served together. Continuous batching makes two requests cost little more than one
// (mlx-openai-server 2.17x); a server that blocks its event loop per step is slower in parallel than alone
// (mlx-omni-server 0.85x); one that serialises makes stream B wait for stream A's last token; one that mixes
// batched sequences sends a user someone else's tokens. Seed 000 (run_double_batch) and seed 004 (32-parallel table).
//
// Timing verdicts are the pure functions of lib/grading/parallel.ts; scripts/simulate-false-failures.ts measures their
// false-failure and detection rates.

import { CpuMeter, knownSlots, recordBatching, usableSlots } from '../lib/exchange/batching.ts';
import {
  chat,
  describeExchange,
  type Exchange,
  generationBody,
  measurePace,
  paceFor,
  uniquePrompt,
} from '../lib/exchange/exchange.ts';
import { filler } from '../lib/exchange/prompts.ts';
import { served, textlessNote, textlessTokens } from '../lib/exchange/served.ts';
import { gradeIsolation, type IsolationStream } from '../lib/grading/isolation.ts';
import {
  batchingFromSpeedup,
  gradeNoStarvation,
  gradeScaling,
  gradeSpeedup,
  refusedParallel,
  type ScalingLevel,
  type ScalingRep,
  type StarvationStream,
  speedupUndecided,
} from '../lib/grading/parallel.ts';
import { releaseTogether } from '../lib/measure/barrier.ts';
import { budgetText, endedByUs } from '../lib/measure/deadlines.ts';
import { decodeMsPerToken, describePace, expectedMs, type Pace, sizedFrom, tokensAt } from '../lib/measure/pace.ts';
import { aggregateWallTps, type TimedRequest } from '../lib/measure/request-metrics.ts';
import { workloadFigures } from '../lib/measure/workload.ts';
import type { CheckContext, CheckDef, Threshold } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Evidence, Verdict } from '../lib/model/types.ts';
import { fail, fmt, inconclusive, skip } from '../lib/model/verdict.ts';
import { faultProof, type Proof, passProof, plainProof } from './support/proof.ts';
import { blockedIfUnserved } from './support/root-causes.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'parallel',
  order: 110,
  timing: true,
  headline: false,
  what: 'barrier-synchronised speedup with 2 requests, scaling curve, no starvation, stream isolation',
};

function streamBody(ctx: CheckContext, tokens: number, prompt?: string): Record<string, unknown> {
  return generationBody(ctx, 'openai-chat', {
    prompt:
      prompt ??
      uniquePrompt(ctx, `Continue these notes in the same style.\n${filler(40, Math.floor(Math.random() * 500))}`),
    maxTokens: tokens,
    stream: true,
    exactLength: true,
    extra: { stream_options: { include_usage: true } },
  });
}

/** Barrier arm delay: enough for every task to park (they are created synchronously). */
const ARM_MS = 20;

/** Repetitions of parallel.speedup-2: a first block, then pairs of extra ones while a slowdown is not yet clear. */
export function speedupWorkload(tier: 'quick' | 'full'): { reps: number; maxReps: number; tokens: number } {
  return tier === 'full' ? { reps: 9, maxReps: 31, tokens: 128 } : { reps: 5, maxReps: 21, tokens: 48 };
}

/**
 * Tokens per request of each parallel check, sized from the measured speed (lib/measure/pace.ts): a request decodes for about
 * `requestMs`, so timer jitter stays small beside it at 5000 tok/s and a 3 tok/s server fits the check's bound.
 */
const SIZING = {
  // wallCapMs: a request's share of the check's budget (speedup: 5 repetitions of 3 requests' time; the others fewer).
  speedup: {
    quick: { requestMs: 500, min: 12, max: 512, wallCapMs: 6_000 },
    full: { requestMs: 1000, min: 24, max: 1024, wallCapMs: 6_000 },
  },
  short: {
    quick: { requestMs: 250, min: 8, max: 256, wallCapMs: 8_000 },
    full: { requestMs: 500, min: 16, max: 512, wallCapMs: 8_000 },
  },
};

function sized(ctx: CheckContext, pace: Pace | undefined, which: keyof typeof SIZING, fallback: number): number {
  if (!pace) return fallback;
  const z = SIZING[which][ctx.tier];
  return tokensAt(pace, { targetMs: z.requestMs, min: z.min, max: z.max, wallCapMs: z.wallCapMs });
}

/** Share of a check's bound its measurements may spend (the rest: grading, grace, a slower server than measured). */
const BUDGET_SHARE = 0.6;
const budgetOf = (ctx: CheckContext) => BUDGET_SHARE * (ctx.check.timeoutMs ?? 60_000);

/** Served: tokens streamed as text, or counted by usage where they decode to no text (lib/measure/served.ts). */
const ok = served;
const rejected = (x: Exchange) => x.rec.status === 429 || x.rec.status === 503;
const timed = (x: Exchange): TimedRequest => ({
  startAbs: x.rec.t0Abs,
  endAbs: x.rec.t0Abs + x.rec.tEnd,
  completionTokens: x.metrics?.completionTokens,
});

/** Settled barrier results as exchanges (send() never rejects for server behaviour; a rejection is our bug). */
function exchanges(results: PromiseSettledResult<Exchange>[]): Exchange[] {
  return results.map((r) => {
    if (r.status === 'rejected') throw r.reason;
    return r.value;
  });
}

async function together(ctx: CheckContext, n: number, tokens: number): Promise<Exchange[]> {
  const { results } = await releaseTogether(
    Array.from({ length: n }, () => () => chat(ctx, streamBody(ctx, tokens))),
    { armDelayMs: ARM_MS },
  );
  return exchanges(results);
}

function evidenceOf(label: string, x: Exchange): Evidence {
  return {
    label,
    status: x.rec.status,
    ttftMs: x.metrics?.ttftMs,
    e2eMs: x.metrics?.e2eMs,
    tokenTimes: x.events?.tokens.slice(0, 200).map((t) => Math.round(t.t * 10) / 10),
  };
}

/** A request the check needed was not served: failed here, or blocked when the run already reported that cause. */
function failedRequest(requirement: string, xs: Array<{ label: string; x: Exchange }>): Verdict {
  const v = fail(
    {
      requirement,
      expected: "HTTP 200 with streamed tokens (429/503 with Retry-After only above the server's slots)",
      actual: `${xs.length} request(s) failed`,
      violations: xs.map(
        ({ label, x }) => `${label}: ${describeExchange(x)}, ${x.events?.tokens.length ?? 0} token event(s)`,
      ),
    },
    undefined,
    xs.map(({ label, x }) => evidenceOf(label, x)),
  );
  return blockedIfUnserved(
    v,
    xs.map(({ x }) => x.rec),
  );
}

/** parallel.speedup-2's thresholds, as lib/grading/parallel.ts gradeSpeedup reads them. */
function speedupThresholds(ctx: CheckContext) {
  return {
    failBelow: ctx.threshold('failBelow'),
    warnBelow: ctx.threshold('warnBelow'),
    alpha: ctx.threshold('alpha'),
    minReps: ctx.threshold('minReps'),
    starvedLoopP99Ms: ctx.threshold('starvedLoopP99Ms'),
  };
}
type SpeedupThresholds = ReturnType<typeof speedupThresholds>;

/** What gradeSpeedup and its sequential rule read of the repetitions so far. */
const speedupFigures = (singles: Exchange[], pairs: Exchange[][], thresholds: SpeedupThresholds) => ({
  singleTps: singles.map((x) => x.metrics?.wallTps),
  aggregateTps: pairs.map((p) => aggregateWallTps(p.map(timed))),
  thresholds,
});

/**
 * parallel.speedup-2's requests: a warm-up, then repetitions of a single request and a pair released together; past
 * the first block, more only while a slowdown is not yet clear, and none that would not fit the check's budget.
 */
async function speedupReps(
  ctx: CheckContext,
  w: ReturnType<typeof speedupWorkload> & { sizing: string; thresholds: SpeedupThresholds; t0: number },
): Promise<
  | {
      singles: Exchange[];
      pairs: Exchange[][];
      short?: string;
      clientCpu?: { single: number; pair: number; cores: number };
    }
  | { verdict: Verdict }
> {
  const { sizing, thresholds, t0 } = w;
  // One repetition: a single request, then a pair. Its cost is what the last one took (re-measured as it goes),
  // before the first one an estimate from the pace (about 3 single requests' time: a pair that does not batch).
  let lastRepMs: number | undefined;
  const repMs = () => {
    const p = paceFor(ctx);
    return lastRepMs ?? (p ? expectedMs(p, w.tokens, 3) : 0);
  };
  ctx.log(
    `warm-up, then ${w.reps} × (1 request alone, 2 released together) of ${w.tokens} tokens (${sizing}), up to ${w.maxReps} while a slowdown is not yet clear (≈ ${fmt((repMs() * w.reps) / 1000, 1)} s)`,
  );
  const warm = await chat(ctx, streamBody(ctx, w.tokens));
  if (endedByUs(warm.rec))
    return {
      verdict: inconclusive(budgetText('the warm-up request finished', paceFor(ctx), describeExchange(warm)), {
        tokens: w.tokens,
        sizing,
      }),
    };
  if (!ok(warm))
    return { verdict: failedRequest('A plain streamed request MUST be served.', [{ label: 'warm-up', x: warm }]) };
  const singles: Exchange[] = [];
  const pairs: Exchange[][] = [];
  // Our own CPU share while single and parallel requests run: on a small machine the client competes with the server.
  const cpuSingle = new CpuMeter();
  const cpuPair = new CpuMeter();
  let short: string | undefined;
  for (let r = 0; r < w.maxReps && !ctx.signal.aborted; r++) {
    // Sequential rule (pure, simulated): past the first block, go on only while a slowdown is not yet clear.
    if (r >= w.reps && (r - w.reps) % 2 === 0 && !speedupUndecided(speedupFigures(singles, pairs, thresholds))) break;
    // Our budget: a repetition that would not fit is not started (re-estimated from the pace just measured).
    const left = budgetOf(ctx) - (performance.now() - t0);
    if (r > 0 && repMs() > left) {
      short = `${r} repetition(s) measured: the next (~${Math.round(repMs())} ms at ${describePace(paceFor(ctx))}) would not fit the ${Math.round(Math.max(0, left))} ms left of the check's budget`;
      break;
    }
    const r0 = performance.now();
    cpuSingle.start();
    singles.push(await chat(ctx, streamBody(ctx, w.tokens)));
    cpuSingle.stop();
    cpuPair.start();
    pairs.push(await together(ctx, 2, w.tokens));
    cpuPair.stop();
    lastRepMs = performance.now() - r0;
    if (r === w.reps)
      ctx.log(`slowdown not yet clear after ${w.reps} repetitions: measuring more (up to ${w.maxReps})`);
  }
  const [cs, cp] = [cpuSingle.result(), cpuPair.result()];
  const clientCpu = cs && cp ? { single: cs.share, pair: cp.share, cores: cp.cores } : undefined;
  return { singles, pairs, short, clientCpu };
}

const starvedLoop: Threshold = {
  value: 100,
  why: 'a client event loop that stalls for 100 ms or more at p99 mis-times requests of a few hundred ms: inconclusive, never a failure',
};
const REF_SEED =
  'Seed study 000 (run_double_batch: mlx-openai-server 2.17x, mlx-omni-server 0.85x); docs/grading.md "Measuring" (speedup)';

export const checks: CheckDef[] = [
  {
    id: 'parallel.speedup-2',
    title: 'two requests released together are served at least as fast in aggregate as one alone',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    provides: ['speedup_2'],
    rationale:
      'Parallel requests that are slower in aggregate than serial ones (mlx-omni-server 0.85x) punish every multi-user or agent workload.',
    reference: REF_SEED,
    requires: ['openai-chat'],
    // 5 repetitions of 12-token requests at 3 tok/s with a server that does not batch (~70 s) fit 60 % of it.
    timeoutMs: 180_000,
    thresholds: {
      failBelow: {
        value: 0.9,
        why: 'fail only when the CI upper bound is below 0.9x: parallel clearly slower than serial (0.85x seen), never on noise around 1.0x',
      },
      warnBelow: {
        value: 1.3,
        why: 'below 1.3x there is no effective batching (a serial server scores 1.0x by docs/grading.md "Measuring"; real batching 1.8-2.2x)',
      },
      alpha: { value: 0.05, why: '95 % percentile-bootstrap interval of the ratio of medians' },
      minReps: {
        value: 5,
        why: 'a bootstrap interval of a median needs at least 5 repetitions of each to stay off a single delayed run',
      },
      starvedLoopP99Ms: starvedLoop,
    },
    async run(ctx) {
      const w = speedupWorkload(ctx.tier);
      const t0 = performance.now();
      const pace = await measurePace(ctx);
      w.tokens = sized(ctx, pace, 'speedup', w.tokens);
      const sizing = `${sizedFrom(pace)}: ${w.tokens} tokens per request`;
      const thresholds = speedupThresholds(ctx);
      const m = await speedupReps(ctx, { ...w, sizing, thresholds, t0 });
      if ('verdict' in m) return m.verdict;
      const { singles, pairs, short } = m;
      const loop = ctx.loopDelay();
      const ours = [...singles, ...pairs.flat()].find((x) => endedByUs(x.rec));
      if (ours)
        return inconclusive(budgetText('the repetitions finished', paceFor(ctx), describeExchange(ours)), {
          tokens: w.tokens,
          sizing,
        });
      const badSingles = singles.map((x, i) => ({ label: `single ${i + 1}`, x })).filter(({ x }) => !ok(x));
      if (badSingles.length) return failedRequest('A plain streamed request MUST be served.', badSingles);
      const pairItems = pairs.flatMap((p, i) => p.map((x, j) => ({ label: `pair ${i + 1}, request ${j + 1}`, x })));
      const refused = pairItems.filter(({ x }) => rejected(x));
      if (refused.length) {
        const named = refused.map(({ label, x }) => ({
          label,
          status: x.rec.status,
          retryAfter: x.rec.headers['retry-after'],
        }));
        return refusedParallel(named, pairItems.length);
      }
      const badPairs = pairItems.filter(({ x }) => !ok(x));
      if (badPairs.length) return failedRequest('Two concurrent streamed requests MUST both be served.', badPairs);
      if (singles.length < ctx.threshold('minReps') && short)
        return inconclusive(`${short}; the speedup needs ${ctx.threshold('minReps')} (${sizing})`, {
          tokens: w.tokens,
          sizing,
        });
      // Slots declared, reported, or measured earlier in the run (stream.cancel-frees-slot: requests served at once).
      const slots = knownSlots(ctx);
      const v = gradeSpeedup({
        ...speedupFigures(singles, pairs, thresholds),
        slots: slots?.value,
        ...(slots?.measured ? { slotsMeasured: true } : {}),
        loop,
        clientCpu: m.clientCpu,
      });
      // Slots unknown: clear batching (a pass at ≥ warnBelow) enables the multi-slot checks at 2 concurrent.
      if (slots === undefined && (v.outcome === 'pass' || v.outcome === 'fail'))
        recordBatching(ctx, batchingFromSpeedup(v, thresholds.warnBelow));
      const note = `${textlessNote([...singles, ...pairs.flat()])} (${sizing}${short ? `; ${short}` : ''})`;
      // The two workloads the speedup compares, as every report shows a workload (lib/measure/workload.ts): without
      // them a report made a row of the bare speedup, named by the check and empty but for the ratio.
      const metricsOf = (xs: Exchange[]) => xs.flatMap((x) => (x.metrics ? [x.metrics] : []));
      const estimate = (v.metrics as { speedup?: { estimate?: number } } | undefined)?.speedup?.estimate;
      const workloads = [
        workloadFigures(`1 stream alone, ${w.tokens} tokens`, metricsOf(singles), { concurrency: 1 }),
        workloadFigures(`2 released together, ${w.tokens} tokens each`, metricsOf(pairs.flat()), {
          concurrency: 2,
          ...(estimate !== undefined ? { speedup: estimate } : {}),
        }),
      ];
      return {
        ...v,
        message: v.message + note,
        metrics: { ...v.metrics, tokens: w.tokens, sizing, workloads },
        evidence: [
          evidenceOf('single 1', singles[0]),
          ...pairs[0].map((x, j) => evidenceOf(`pair 1, request ${j + 1}`, x)),
        ],
      };
    },
  },
  {
    id: 'parallel.scaling',
    title: 'aggregate throughput, TTFT and per-stream speed at 1, 2, 4, … concurrent streams',
    level: 'INFO',
    dependsOn: ['sse.content-type'],
    provides: ['best_scaling', 'scaling_curve'],
    rationale:
      'Where batching saturates and what it costs each user (seed 004: vllm-mlx 1150, llama.cpp 890, Ollama 720 tok/s at 32 parallel) is what a user choosing a server compares.',
    reference: 'Seed study 004 (32-parallel table: aggregate throughput and TTFT per server)',
    requires: ['openai-chat'],
    timeoutMs: 120_000,
    thresholds: {
      warnBelow: {
        value: 1.3,
        why: 'with several slots (declared or reported), a best aggregate under 1.3x the single stream means no effective batching',
      },
      saturationGain: {
        value: 1.15,
        why: 'doubling the streams for less than 15 % more aggregate throughput is saturation',
      },
      starvedLoopP99Ms: starvedLoop,
    },
    async run(ctx) {
      const full = ctx.tier === 'full';
      // Slots unknown: probe up to the tier's cap, the curve itself shows where batching stops.
      const slots = knownSlots(ctx)?.value;
      const cap = Math.min(full ? 32 : 4, Math.max(2, slots ?? (full ? 32 : 4)));
      const concurrency: number[] = [];
      for (let c = 1; c <= cap; c *= 2) concurrency.push(c);
      if (concurrency[concurrency.length - 1] !== cap) concurrency.push(cap);
      const reps = full ? 3 : 2;
      const pace = await measurePace(ctx);
      const tokens = sized(ctx, pace, 'short', full ? 64 : 24);
      const sizing = `${sizedFrom(pace)}: ${tokens} tokens per stream`;
      ctx.log(`concurrency ${concurrency.join(', ')} × ${reps} repetitions of ${tokens} tokens (${sizing})`);
      const levels: ScalingLevel[] = [];
      const errors: string[] = [];
      const all: Exchange[] = [];
      const ev: Evidence[] = [];
      for (const c of concurrency) {
        const repsOf: ScalingRep[] = [];
        for (let r = 0; r < reps && !ctx.signal.aborted; r++) {
          const xs = await together(ctx, c, tokens);
          all.push(...xs);
          const good = xs.filter(ok);
          for (const [i, x] of xs.entries())
            if (!ok(x)) errors.push(`${c} concurrent, repetition ${r + 1}, stream ${i + 1}: ${describeExchange(x)}`);
          repsOf.push({
            aggregateTps: good.length === xs.length ? aggregateWallTps(xs.map(timed)) : undefined,
            ttftMs: good.map((x) => x.metrics?.ttftMs),
            perStreamTps: good.map((x) => x.metrics?.wallTps),
          });
          if (r === 0) ev.push(...xs.slice(0, 4).map((x, i) => evidenceOf(`${c} concurrent, stream ${i + 1}`, x)));
        }
        levels.push({ concurrency: c, reps: repsOf });
        ctx.log(`${c} concurrent: aggregate ${repsOf.map((x) => fmt(x.aggregateTps, 1)).join(', ')} tok/s`);
      }
      const v = gradeScaling({
        levels,
        slots,
        loop: ctx.loopDelay(),
        thresholds: {
          warnBelow: ctx.threshold('warnBelow'),
          saturationGain: ctx.threshold('saturationGain'),
          starvedLoopP99Ms: ctx.threshold('starvedLoopP99Ms'),
        },
      });
      const note = `${textlessNote(all)}${errors.length ? ` (${errors.length} stream(s) not served: ${errors.slice(0, 3).join('; ')}${errors.length > 3 ? '; …' : ''})` : ''} (${sizing})`;
      const out = { ...v, message: v.message + note, metrics: { ...v.metrics, errors, tokens, sizing }, evidence: ev };
      // No stream served at all: nothing to measure, for want of the streams sse.content-type reports.
      return out.outcome === 'pass'
        ? out
        : blockedIfUnserved(
            out,
            all.map((x) => x.rec),
          );
    },
  },
  {
    id: 'parallel.no-starvation',
    title: "concurrent streams within the server's slots all make progress together",
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'A server that declares N slots but serialises makes the second user wait for the whole of the first answer before seeing a token.',
    reference:
      'Seed study 000 (mlx-omni-server blocks its event loop per step); docs/servers.md "vllm-mlx" (SimpleEngine serialises; 503 + Retry-After when busy)',
    requires: ['openai-chat', 'multi-slot'],
    timeoutMs: 90_000,
    thresholds: {
      maxStreams: {
        value: 4,
        why: 'quick tier: up to 4 streams (full tier 8), never more than the slots (declared, reported, or the concurrency batching was measured at)',
      },
      minReps: { value: 2, why: 'serialisation must show in every one of at least 2 repetitions to fail' },
      starvedLoopP99Ms: starvedLoop,
    },
    async run(ctx) {
      const full = ctx.tier === 'full';
      const slots = usableSlots(ctx);
      if (slots.value === undefined) return skip(slots.why);
      if (slots.value < 2) return skip(`1 slot (${slots.source}): no concurrent streams to test`);
      const n = Math.min(slots.value, full ? 2 * ctx.threshold('maxStreams') : ctx.threshold('maxStreams'));
      const reps = full ? 3 : 2;
      const pace = await measurePace(ctx);
      const tokens = sized(ctx, pace, 'short', full ? 48 : 24);
      const sizing = `${sizedFrom(pace)}: ${tokens} tokens per stream`;
      ctx.log(`${reps} × ${n} streams of ${tokens} tokens released together (${sizing})`);
      const recs: Exchange[][] = [];
      // Up to 2 extra repetitions replace ones with a textless stream (below), so a rare one does not cost the verdict.
      // A repetition with a stream served as tokens without text has no token times to order (unless another of its
      // streams was not served at all: that is judged, and fails).
      const unjudgeable = (xs: Exchange[]) => xs.some((x) => textlessTokens(x) !== undefined) && xs.every(ok);
      const judgeable = () => recs.filter((xs) => !unjudgeable(xs)).length;
      for (let r = 0; r < reps + 2 && judgeable() < reps && !ctx.signal.aborted; r++)
        recs.push(await together(ctx, n, tokens));
      const toStream = (x: Exchange): StarvationStream => {
        const toks = x.events?.tokens ?? [];
        return {
          status: x.rec.status,
          retryAfter: x.rec.headers['retry-after'],
          failure: x.rec.failure ? `${x.rec.failure.kind}: ${x.rec.failure.message}` : undefined,
          firstTokenAbs: toks.length ? x.rec.t0Abs + toks[0].t : undefined,
          lastTokenAbs: toks.length ? x.rec.t0Abs + toks[toks.length - 1].t : undefined,
          tokens: toks.length,
          textless: textlessTokens(x) !== undefined,
        };
      };
      const ours = recs.flat().find((x) => endedByUs(x.rec));
      if (ours)
        return inconclusive(budgetText('the concurrent streams finished', paceFor(ctx), describeExchange(ours)), {
          tokens,
          sizing,
        });
      // Bursts are judged against this server's own single-stream decode rate (lib/measure/pace.ts), not a fixed gap.
      const p = paceFor(ctx);
      const referenceTps = p ? 1000 / decodeMsPerToken(p) : undefined;
      const judged = recs.filter((xs) => !unjudgeable(xs));
      const dropped = recs.length - judged.length;
      const droppedNote = dropped
        ? `; ${dropped} of ${recs.length} repetition(s) not judged for order${textlessNote(recs.flat())}`
        : '';
      const v = gradeNoStarvation({
        reps: judged.map((xs) => xs.map(toStream)),
        slots: slots.value,
        slotsSource: slots.source,
        loop: ctx.loopDelay(),
        referenceTps,
        thresholds: { minReps: ctx.threshold('minReps'), starvedLoopP99Ms: ctx.threshold('starvedLoopP99Ms') },
      });
      const out = {
        ...v,
        message: `${v.message} (${sizing}${droppedNote})`,
        metrics: { ...v.metrics, tokens, sizing, referenceTps, dropped },
        evidence: recs[0]?.map((x, i) => evidenceOf(`repetition 1, stream ${i + 1}`, x)),
      };
      // Not one stream served, even alone in a repetition: the cause is not concurrency (it is reported once).
      return out.outcome === 'pass'
        ? out
        : blockedIfUnserved(
            out,
            recs.flat().map((x) => x.rec),
          );
    },
  },
  {
    id: 'parallel.isolation',
    title: 'concurrent streams never mix ids, models or text',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      "A batching bug that moves tokens between sequences sends one user another user's text; nothing downstream can detect it.",
    reference:
      'OpenAI API reference, Chat Completions streaming (every chunk of one completion shares its id); batched kernels are not batch-invariant, so equality is demanded only of deterministic profiles',
    requires: ['openai-chat'],
    timeoutMs: 60_000,
    thresholds: {
      maxStreams: { value: 4, why: 'up to 4 concurrent streams (at least 2, at most the slots when known)' },
    },
    async run(ctx) {
      const n = Math.max(2, Math.min(knownSlots(ctx)?.value ?? 2, ctx.threshold('maxStreams')));
      const tokens = 24;
      const specs = Array.from({ length: n }, () => {
        const nonce = ctx.nonce();
        return {
          nonce,
          prompt: `ECHO: ${nonce}\n[request ${ctx.nonce()}] Repeat the text after "ECHO:" exactly, then stop.`,
        };
      });
      ctx.log(`${n} requests alone, then the same ${n} together`);
      const solo: Exchange[] = [];
      for (const s of specs) solo.push(await chat(ctx, streamBody(ctx, tokens, s.prompt)));
      const badSolo = solo.map((x, i) => ({ label: `stream ${i + 1} alone`, x })).filter(({ x }) => !ok(x));
      if (badSolo.length) return failedRequest('A plain streamed request MUST be served.', badSolo);
      const { results } = await releaseTogether(
        specs.map((s) => () => chat(ctx, streamBody(ctx, tokens, s.prompt))),
        { armDelayMs: ARM_MS },
      );
      const xs = exchanges(results);
      const refused = xs.filter(rejected);
      if (refused.length)
        return inconclusive(
          `the server refused ${refused.length} of ${n} concurrent stream(s) (HTTP ${refused.map((x) => x.rec.status).join(', ')}${refused[0].rec.headers['retry-after'] ? `, Retry-After ${refused[0].rec.headers['retry-after']}` : ''}): nothing ran together to mix`,
        );
      const streams: IsolationStream[] = xs.map((x, i) => {
        const chunks = (x.events?.chunks ?? []).map((c) => c.json as { id?: unknown; model?: unknown });
        return {
          label: `stream ${i + 1}`,
          nonce: specs[i].nonce,
          status: x.rec.status,
          failure: x.rec.failure ? `${x.rec.failure.kind}: ${x.rec.failure.message}` : undefined,
          ids: [...new Set(chunks.map((c) => c?.id).filter((v): v is string => typeof v === 'string'))],
          models: [...new Set(chunks.map((c) => c?.model).filter((v): v is string => typeof v === 'string'))],
          text: x.events?.text ?? '',
          // Tokens without text on either side (lib/measure/served.ts) leave nothing to compare.
          soloText:
            textlessTokens(solo[i]) !== undefined || textlessTokens(x) !== undefined ? undefined : solo[i].events?.text,
        };
      });
      const soloEchoes = solo.every((x, i) => (x.events?.text ?? '').includes(specs[i].nonce));
      const v = gradeIsolation({
        streams,
        deterministic: ctx.profile.deterministic,
        model: ctx.profile.model,
        soloEchoes,
      });
      return {
        ...v,
        message: v.message + textlessNote([...solo, ...xs]),
        evidence: xs.map((x, i) => ({
          ...evidenceOf(`stream ${i + 1} (together)`, x),
          wire: JSON.stringify((x.events?.text ?? '').slice(0, 200)),
        })),
      };
    },
  },
];

export const proofs: Proof[] = [
  passProof('parallel.speedup-2', { messageIncludes: ['batching works: speedup'] }),
  // 0.85x sits 5 % under the 0.9x fail band; at the default 8 ms step a loaded machine's timer lateness (one-sided,
  // hitting the shorter single requests harder) biases the estimate toward 1.0x, so the proof uses 20 ms steps, where
  // the same lateness weighs 2.5x less. Detection at 8 ms is measured by scripts/simulate-false-failures.ts.
  faultProof('parallel.speedup-2', 'perf-parallel-slowdown', ['parallel slowdown', 'CI upper bound'], {
    serverArgs: ['--decode-step-ms', '20'],
  }),
  // A serialising server scores ~1.0x: between the bands, so a warning (no effective batching), not a failure.
  // The interval lies wholly below 1.3x (e.g. 0.89 … 1.04): clear evidence, so strict mode fails it.
  faultProof('parallel.speedup-2', 'perf-serialise', ['no effective batching', 'serialised'], {
    expect: 'warn',
    raw: 'warn',
  }),
  // With one declared slot the same ~1.0x is expected behaviour: informational pass.
  {
    check: 'parallel.speedup-2',
    faults: ['perf-serialise'],
    profile: { slots: 1 },
    expect: 'pass',
    raw: 'pass',
    messageIncludes: ['informational', '1 slot'],
    note: 'one declared slot: INFO-style pass',
  },
  // Slots unknown (a plain server, nothing declared): batching is reported, serialising is INFO, a 0.86x slowdown fails.
  plainProof('parallel.speedup-2', undefined, ['batching observed at 2 concurrent', 'slots unknown']),
  plainProof('parallel.speedup-2', 'perf-serialise', ['informational: serialised', 'slots unknown'], {
    expect: 'pass',
  }),
  plainProof('parallel.speedup-2', 'perf-parallel-slowdown', ['parallel slowdown (slots unknown)', 'our client took'], {
    serverArgs: ['--decode-step-ms', '20', '--fault-arg', 'factor=1.163'],
    note: '0.86x',
  }),
  passProof('parallel.scaling', { messageIncludes: [/best \d+\.\d+x at \d+ concurrent/] }),
  faultProof('parallel.scaling', 'perf-serialise', ['no scaling', 'served one at a time'], { expect: 'warn' }),
  passProof('parallel.no-starvation', { messageIncludes: ['streams progressed together in'] }),
  faultProof('parallel.no-starvation', 'perf-serialise', ['serialises', 'first token', 'after stream']),
  passProof('parallel.isolation', { messageIncludes: ['concurrent streams stayed apart'] }),
  faultProof('parallel.isolation', 'perf-cross-stream', ['streams mix', 'differs from its solo answer']),
];
