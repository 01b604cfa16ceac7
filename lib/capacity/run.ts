import { chat, type Exchange, generationBody } from '../exchange/exchange.ts';
import { promptOfTokens } from '../exchange/prompts.ts';
import type { CheckContext } from '../model/check.ts';
import type { Recording } from '../model/types.ts';
import { fmt } from '../model/verdict.ts';
import { arrivalOf, arrivalOffsets } from './arrivals.ts';
import { batchedBoundTps, certifyLevel, judgedByLength } from './certify.ts';
import { clientBoundReason, startClientMeter } from './client-meter.ts';
import type { CapacityConfig } from './config.ts';
import { type Dataset, loadDataset } from './dataset.ts';
import { deliveryByLength } from './delivery-probe.ts';
import { type LevelRequest, levelFigures, noiseBand, peakInFlight } from './level.ts';
import { levelName } from './peer-columns.ts';
import { BAND_FLOOR, type SweepPoint, saturationOf, stoppedRising } from './saturation.ts';
import type { CapacityLevel, CapacityTable } from './types.ts';

export interface CapacityRun {
  table: CapacityTable;
  /** Every request's recording (the shared-recording policy tells a recording our side cut short from them). */
  recordings: Recording[];
  /** Why the sweep or the rate runs stopped where they did, and what was left out. */
  notes: string[];
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A request body per call: synthetic prompts of the configured length, or the dataset's prompts in turn. */
function bodies(ctx: CheckContext, cfg: CapacityConfig, dataset: Dataset | undefined): () => Promise<unknown> {
  let i = 0;
  return async () => {
    const n = i++;
    const extra = { stream_options: { include_usage: true } };
    const o = { maxTokens: cfg.outputTokens, stream: true, exactLength: true, extra };
    if (!dataset) {
      const { prompt } = await promptOfTokens(ctx, cfg.inputTokens, n * 37);
      return generationBody(ctx, 'openai-chat', { prompt, ...o });
    }
    const msgs = dataset.prompts[n % dataset.prompts.length]!;
    // Text unique to the request and the run first, so no prefix cache serves a repeated dataset prompt.
    const messages = msgs.map((m, j) => (j === 0 ? { ...m, content: `[request ${ctx.nonce()}] ${m.content}` } : m));
    return { ...generationBody(ctx, 'openai-chat', { prompt: '', ...o }), messages };
  };
}

/** Most requests one stream sends at a level, however fast the server (bounds a level on a very fast server). */
const MAX_ROUNDS = 100;

/** What bounds a level besides its own plan: the time left to the whole run (performance.now() ms). */
interface LevelBound {
  deadline: number;
  /** Set when the deadline stopped the level before its plan was done. */
  cut?: boolean;
}

/**
 * `c` streams, each sending requests one after another: `rounds` of them, and more while the level is shorter than
 * `minLevelMs` (a level of a few ms on a fast server is one timer tick and one scheduling hiccup: no measurement) or
 * fewer than `numPrompts` were sent in all (vLLM's --num-prompts through --max-concurrency streams).
 */
async function closedLoop(
  ctx: CheckContext,
  c: number,
  cfg: Pick<CapacityConfig, 'rounds' | 'minLevelMs' | 'numPrompts'>,
  next: () => Promise<unknown>,
  bound: LevelBound,
): Promise<LevelRequest[]> {
  const out: LevelRequest[] = [];
  const t0 = performance.now();
  const target = cfg.numPrompts ?? 0;
  const maxRounds = Math.max(MAX_ROUNDS, Math.ceil(target / c) + 1);
  let taken = 0;
  const more = (round: number) => {
    if (ctx.signal.aborted || round >= maxRounds) return false;
    if (!(round < cfg.rounds || performance.now() - t0 < cfg.minLevelMs || taken < target)) return false;
    if (performance.now() < bound.deadline) return true;
    bound.cut = true;
    return false;
  };
  await Promise.all(
    Array.from({ length: c }, async () => {
      for (let round = 0; more(round); round++) {
        taken++;
        const x = await chat(ctx, await next());
        out.push({ x, round });
      }
    }),
  );
  return out;
}

/**
 * Requests arriving at the given offsets whatever is still in flight (an open loop, as a real user population), at
 * most `cap` of them in flight: one that arrives with every slot taken waits for the next free one (vLLM's semaphore),
 * and its times start when it is sent.
 */
async function openLoop(
  ctx: CheckContext,
  offsets: number[],
  next: () => Promise<unknown>,
  cap: number,
  t0: number,
  bound: LevelBound,
): Promise<LevelRequest[]> {
  const running: Promise<LevelRequest>[] = [];
  const waiting: Array<() => void> = [];
  let inFlight = 0;
  const acquire = (): Promise<void> => {
    if (inFlight < cap) {
      inFlight++;
      return Promise.resolve();
    }
    return new Promise<void>((r) => waiting.push(r));
  };
  const release = () => {
    const w = waiting.shift();
    if (w) w();
    else inFlight--;
  };
  for (const off of offsets) {
    const wait = t0 + off - performance.now();
    if (wait >= 1) await sleep(wait);
    if (ctx.signal.aborted) break;
    if (performance.now() >= bound.deadline) {
      bound.cut = true;
      break;
    }
    running.push(
      acquire().then(async () => {
        try {
          return { x: await chat(ctx, await next()) };
        } finally {
          release();
        }
      }),
    );
  }
  return Promise.all(running);
}

/** Events our client decoded over a level: what its CPU time is divided by. */
const eventsOf = (xs: readonly Exchange[]) =>
  xs.reduce((a, x) => a + (x.sse?.events.length ?? x.events?.tokens.length ?? 0), 0);

type LevelMeta = Pick<
  CapacityLevel,
  'mode' | 'concurrency' | 'ratePerS' | 'arrival' | 'burstiness' | 'seed' | 'maxConcurrency'
>;

async function measure(
  ctx: CheckContext,
  cfg: CapacityConfig,
  meta: LevelMeta,
  send: (t0: number) => Promise<LevelRequest[]>,
  machine: string,
): Promise<{ level: CapacityLevel; xs: Exchange[] }> {
  const meter = startClientMeter();
  const t0 = performance.now();
  const reqs = await send(t0);
  const xs = reqs.map((r) => r.x);
  const m = meter.stop(eventsOf(xs));
  const fig = levelFigures(reqs, cfg.slo, t0);
  const inFlight = peakInFlight(xs);
  const streams = meta.concurrency ?? inFlight;
  const bound = batchedBoundTps(ctx.profile.hardware, streams, cfg.kvBytesPerStreamGB);
  const flags = certifyLevel(xs, fig, { stallMs: m.loopLagMaxMs + 1, boundTps: bound, streams });
  const bound_ = clientBoundReason(m, fig.itlMs.p50);
  if (bound_) flags.push({ figure: 'level', reason: bound_ });
  const level: CapacityLevel = {
    ...meta,
    machine,
    ...fig,
    ...(meta.mode === 'concurrency' ? { noiseBand: noiseBand(fig.roundTps, BAND_FLOOR.value) } : {}),
    inFlight,
    client: {
      cpuUsPerEvent: m.cpuUsPerEvent,
      loopLagP99Ms: m.loopLagP99Ms,
      clientBound: bound_ !== undefined,
      ...(bound_ ? { reason: bound_ } : {}),
      cpuShare: m.cpuShare,
    },
    ...(bound !== undefined ? { physicalBoundTps: bound } : {}),
    flags,
  };
  return { level, xs };
}

/** One level as it ends, for the console (ctx.progress); `saturated` for a sweep level: has the aggregate stopped rising? */
function describeLevel(l: CapacityLevel, saturated?: boolean): string {
  const what = levelName(l);
  const state = saturated === undefined ? '' : saturated ? ', saturated' : ', still rising';
  return `${what}: ${l.completed}/${l.sent} served, ${fmt(l.aggregateTps)} tok/s aggregate, TTFT p50/p99 ${fmt(l.ttftMs.p50 ?? undefined)}/${fmt(l.ttftMs.p99 ?? undefined)} ms, ITL p50 ${fmt(l.itlMs.p50 ?? undefined)} ms${state}${l.flags.length ? ` [${l.flags.length} flag(s)]` : ''}`;
}

/** The sweep's levels: the list given, else 1, 2, 4, … and the bound itself. */
export function sweepLevels(cfg: Pick<CapacityConfig, 'levels' | 'maxConcurrency'>): number[] {
  if (cfg.levels) return cfg.levels;
  const out: number[] = [];
  for (let c = 1; c < cfg.maxConcurrency; c *= 2) out.push(c);
  return [...out, cfg.maxConcurrency];
}

/** A rate run: its rate (Infinity: all at once) and the gamma shape of its gaps (Infinity: constant). */
interface RatePlan {
  ratePerS: number;
  burstiness: number;
}

/**
 * The rate runs: at the rates given (--request-rate), with the burstiness given or Poisson (vLLM's default); else at
 * fractions of the saturation level's served rate, with the burstiness given or both constant and Poisson.
 */
export function ratePlans(cfg: CapacityConfig, satRate: number): RatePlan[] {
  const rates = cfg.requestRates ?? (satRate > 0 ? cfg.rateFractions.map((f) => f * satRate) : []);
  const shapes =
    cfg.burstiness !== undefined ? [cfg.burstiness] : cfg.requestRates ? [1] : [Number.POSITIVE_INFINITY, 1];
  return rates.flatMap((ratePerS) =>
    ratePerS === Number.POSITIVE_INFINITY
      ? [{ ratePerS, burstiness: 1 }]
      : shapes.map((burstiness) => ({ ratePerS, burstiness })),
  );
}

/** Run the sweep and the rate runs within `budgetMs`; what was left out for time is named in the notes. */
export async function runCapacity(ctx: CheckContext, cfg: CapacityConfig, budgetMs: number): Promise<CapacityRun> {
  const t0 = performance.now();
  const deadline = t0 + budgetMs;
  const left = () => deadline - performance.now();
  const dataset = cfg.dataset ? loadDataset(cfg.dataset) : undefined;
  const next = bodies(ctx, cfg, dataset);
  const machine = cfg.machine;
  const levels: CapacityLevel[] = [];
  const recordings: Recording[] = [];
  const notes: string[] = [];
  const points: SweepPoint[] = [];
  const keep = (level: CapacityLevel, xs: Exchange[], bound: LevelBound) => {
    levels.push(level);
    recordings.push(...xs.map((x) => x.rec));
    if (bound.cut) notes.push(`${levelName(level)} cut short at ${level.sent} requests: the time budget ran out`);
  };
  await next(); // calibrates synthetic prompts (two short requests) before anything is timed
  let pastSaturation = 0;
  let last: { ms: number; sent: number } | undefined;
  for (const c of sweepLevels(cfg)) {
    // A level that would not fit is not started: its requests (at least c × rounds, or numPrompts) at no more
    // throughput than the last level's, with a margin.
    const planned = Math.max(c * cfg.rounds, cfg.numPrompts ?? 0);
    if (last && 1.1 * last.ms * Math.max(1, planned / Math.max(1, last.sent)) > left()) {
      notes.push(`sweep stopped before ${c} streams: it would not fit the time left (${fmt(left() / 1000, 1)} s)`);
      break;
    }
    const bound: LevelBound = { deadline };
    const s = performance.now();
    const { level, xs } = await measure(
      ctx,
      cfg,
      { mode: 'concurrency', concurrency: c },
      () => closedLoop(ctx, c, cfg, next, bound),
      machine,
    );
    last = { ms: performance.now() - s, sent: level.sent };
    keep(level, xs, bound);
    points.push({
      concurrency: c,
      aggregateTps: level.aggregateTps,
      band: level.noiseBand ?? BAND_FLOOR.value,
      errored: level.errored,
      timedOut: level.timedOut,
      ttftP50Ms: level.ttftMs.p50,
    });
    const saturated = pastSaturation > 0 || stoppedRising(points);
    ctx.progress(describeLevel(level, cfg.levels ? undefined : saturated));
    if (ctx.signal.aborted || bound.cut) break;
    if (level.errored + level.timedOut > 0) {
      notes.push(`sweep stopped at ${c} streams: ${level.errored} errored, ${level.timedOut} timed out`);
      break;
    }
    // Levels given as a list are each measured; a doubling sweep stops past saturation.
    if (!cfg.levels) {
      if (saturated) pastSaturation++;
      if (pastSaturation >= Math.max(1, cfg.overloadLevels)) break;
      if (c === cfg.maxConcurrency) notes.push(`sweep reached its bound of ${c} streams`);
    }
  }
  const sat = saturationOf(points);
  const table: CapacityTable = {
    workload: dataset
      ? { kind: 'dataset', file: dataset.file, format: dataset.format, prompts: dataset.prompts.length }
      : { kind: 'synthetic', inputTokens: cfg.inputTokens, outputTokens: cfg.outputTokens },
    ...(cfg.slo ? { slo: cfg.slo } : {}),
    levels,
    ...(sat
      ? {
          saturation: {
            concurrency: sat.concurrency,
            aggregateTps: sat.aggregateTps,
            noiseBand: sat.noiseBand,
            why: sat.why,
          },
        }
      : {}),
    machines: [machine],
  };
  // Request-rate runs at the rates given, or at fractions of what the saturation level served (requests completed
  // per second of it).
  const satLevel = sat ? levels[sat.index] : undefined;
  const satRate =
    satLevel && satLevel.endedAt > satLevel.startedAt
      ? satLevel.completed / ((satLevel.endedAt - satLevel.startedAt) / 1000)
      : 0;
  if (!cfg.requestRates && !(satRate > 0))
    notes.push('no request-rate runs: the sweep found no saturation point to choose rates from');
  // The last sweep level's time per request at the bound: how long an all-at-once run of n requests takes.
  const lastLevel = levels.at(-1);
  const msPerRequest = lastLevel?.durationS && lastLevel.sent ? (lastLevel.durationS * 1000) / lastLevel.sent : 0;
  const tail = satLevel?.e2eMs.p99 ?? lastLevel?.e2eMs.max ?? 0;
  for (const plan of ratePlans(cfg, satRate)) {
    const n = cfg.rateRequests;
    const arrival = arrivalOf(plan.ratePerS, plan.burstiness);
    const meta: LevelMeta = {
      mode: 'rate',
      ...(arrival === 'at-once' ? {} : { ratePerS: plan.ratePerS }),
      arrival,
      ...(arrival === 'poisson' || arrival === 'gamma' ? { burstiness: plan.burstiness, seed: cfg.seed } : {}),
      maxConcurrency: cfg.maxConcurrency,
    };
    const expect = arrival === 'at-once' ? n * msPerRequest + tail : (n / plan.ratePerS) * 1000 + tail;
    if (expect * 1.5 > left() || ctx.signal.aborted) {
      notes.push(`rate run ${levelName(meta)} left out: it would not fit the time left`);
      continue;
    }
    const offsets = arrivalOffsets(n, plan.ratePerS, plan.burstiness, cfg.seed);
    const bound: LevelBound = { deadline };
    const { level, xs } = await measure(
      ctx,
      cfg,
      meta,
      (start) => openLoop(ctx, offsets, next, cfg.maxConcurrency, start, bound),
      machine,
    );
    keep(level, xs, bound);
    ctx.progress(describeLevel(level));
  }
  await judgeUnjudged(ctx, cfg, levels, { deadline, notes, recordings });
  if (notes.length) table.notes = notes;
  return { table, recordings, notes };
}

/**
 * Levels whose streams' delivery could not be judged (lib/capacity/certify.ts) judged again by answers of two lengths
 * at one stream (lib/capacity/delivery-probe.ts): sent only then, named in the notes.
 */
async function judgeUnjudged(
  ctx: CheckContext,
  cfg: CapacityConfig,
  levels: CapacityLevel[],
  o: { deadline: number; notes: string[]; recordings: Recording[] },
): Promise<void> {
  const unjudged = levels.filter((l) => l.flags.some((f) => f.kind === 'not-judged'));
  if (!unjudged.length || ctx.signal.aborted) return;
  const e2eMs = levels[0]?.e2eMs.p50 ?? 0;
  const { judgement, recordings } = await deliveryByLength(ctx, {
    inputTokens: cfg.inputTokens,
    outputTokens: cfg.outputTokens,
    e2eMs,
    deadline: o.deadline,
  });
  o.recordings.push(...recordings);
  for (const l of unjudged) l.flags = judgedByLength(l, judgement);
  o.notes.push(
    `delivery of ${unjudged.length} level(s) whose streams came within our client's lag, told by answers of two lengths at one stream: ${judgement.kind} (${judgement.detail})`,
  );
}
