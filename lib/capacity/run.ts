// The capacity run: a concurrency sweep (1, 2, 4, … streams kept in flight, each sending `rounds` requests in turn)
// up to the bound, or until aggregate output tok/s stops rising beyond its noise band or errors/timeouts appear, one
// or more levels past saturation to see overload; then request-rate runs (constant and seeded Poisson arrivals) at
// fractions of the request rate the saturation level served. Every request goes through chat() (lib/http/exchange.ts),
// recorded and decoded as every check's is; every level is certified on its own streams (lib/capacity/certify.ts)
// and measured for our own headroom (lib/capacity/client-meter.ts).
import { hostname } from 'node:os';
import { chat, type Exchange, generationBody } from '../exchange/exchange.ts';
import { promptOfTokens } from '../exchange/prompts.ts';
import type { Requester } from '../model/check.ts';
import type { Recording } from '../model/types.ts';
import { fmt } from '../model/verdict.ts';
import { arrivalOffsets } from './arrivals.ts';
import { batchedBoundTps, certifyLevel } from './certify.ts';
import { clientBoundReason, startClientMeter } from './client-meter.ts';
import type { CapacityConfig } from './config.ts';
import { type Dataset, loadDataset } from './dataset.ts';
import { type LevelRequest, levelFigures, noiseBand, peakInFlight } from './level.ts';
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
function bodies(ctx: Requester, cfg: CapacityConfig, dataset: Dataset | undefined): () => Promise<unknown> {
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

/**
 * `c` streams, each sending requests one after another: `rounds` of them, and more while the level is shorter than
 * `minLevelMs` (a level of a few ms on a fast server is one timer tick and one scheduling hiccup: no measurement).
 */
async function closedLoop(
  ctx: Requester,
  c: number,
  cfg: Pick<CapacityConfig, 'rounds' | 'minLevelMs'>,
  next: () => Promise<unknown>,
): Promise<LevelRequest[]> {
  const out: LevelRequest[] = [];
  const t0 = performance.now();
  const more = (round: number) =>
    round < MAX_ROUNDS && (round < cfg.rounds || performance.now() - t0 < cfg.minLevelMs) && !ctx.signal.aborted;
  await Promise.all(
    Array.from({ length: c }, async () => {
      for (let round = 0; more(round); round++) {
        const x = await chat(ctx, await next());
        out.push({ x, round });
      }
    }),
  );
  return out;
}

/** Requests started at the given offsets whatever is still in flight (an open loop, as a real user population). */
async function openLoop(ctx: Requester, offsets: number[], next: () => Promise<unknown>): Promise<LevelRequest[]> {
  const t0 = performance.now();
  const running: Promise<LevelRequest>[] = [];
  for (const off of offsets) {
    const wait = t0 + off - performance.now();
    if (wait >= 1) await sleep(wait);
    if (ctx.signal.aborted) break;
    const body = await next();
    running.push(chat(ctx, body).then((x) => ({ x })));
  }
  return Promise.all(running);
}

/** Events our client decoded over a level: what its CPU time is divided by. */
const eventsOf = (xs: readonly Exchange[]) =>
  xs.reduce((a, x) => a + (x.sse?.events.length ?? x.events?.tokens.length ?? 0), 0);

async function measure(
  ctx: Requester,
  cfg: CapacityConfig,
  meta: Pick<CapacityLevel, 'mode' | 'concurrency' | 'ratePerS' | 'arrival' | 'seed'>,
  send: () => Promise<LevelRequest[]>,
  machine: string,
): Promise<{ level: CapacityLevel; xs: Exchange[] }> {
  const meter = startClientMeter();
  const reqs = await send();
  const xs = reqs.map((r) => r.x);
  const m = meter.stop(eventsOf(xs));
  const fig = levelFigures(reqs, cfg.slo);
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
  const what = l.mode === 'concurrency' ? `${l.concurrency} streams` : `${fmt(l.ratePerS)} req/s ${l.arrival}`;
  const state = saturated === undefined ? '' : saturated ? ', saturated' : ', still rising';
  return `${what}: ${l.completed}/${l.sent} served, ${fmt(l.aggregateTps)} tok/s aggregate, TTFT p50/p99 ${fmt(l.ttftMs.p50 ?? undefined)}/${fmt(l.ttftMs.p99 ?? undefined)} ms, ITL p50 ${fmt(l.itlMs.p50 ?? undefined)} ms${state}${l.flags.length ? ` [${l.flags.length} flag(s)]` : ''}`;
}

/** Run the sweep and the rate runs within `budgetMs`; what was left out for time is named in the notes. */
export async function runCapacity(
  ctx: Requester & { progress(line: string): void },
  cfg: CapacityConfig,
  budgetMs: number,
): Promise<CapacityRun> {
  const t0 = performance.now();
  const left = () => budgetMs - (performance.now() - t0);
  const dataset = cfg.dataset ? loadDataset(cfg.dataset) : undefined;
  const next = bodies(ctx, cfg, dataset);
  const machine = process.env.CONFORMANCE_MACHINE || hostname();
  const levels: CapacityLevel[] = [];
  const recordings: Recording[] = [];
  const notes: string[] = [];
  const points: SweepPoint[] = [];
  await next(); // calibrates synthetic prompts (two short requests) before anything is timed
  let pastSaturation = 0;
  let lastMs = 0;
  for (
    let c = 1;
    c <= cfg.maxConcurrency;
    c = c * 2 > cfg.maxConcurrency && c < cfg.maxConcurrency ? cfg.maxConcurrency : c * 2
  ) {
    // Doubling the streams past saturation doubles a round's time: a level that would not fit is not started.
    if (lastMs > 0 && 2.2 * lastMs > left()) {
      notes.push(`sweep stopped before ${c} streams: it would not fit the time left (${fmt(left() / 1000, 1)} s)`);
      break;
    }
    const s = performance.now();
    const { level, xs } = await measure(
      ctx,
      cfg,
      { mode: 'concurrency', concurrency: c },
      () => closedLoop(ctx, c, cfg, next),
      machine,
    );
    lastMs = performance.now() - s;
    levels.push(level);
    recordings.push(...xs.map((x) => x.rec));
    points.push({
      concurrency: c,
      aggregateTps: level.aggregateTps,
      band: level.noiseBand ?? BAND_FLOOR.value,
      errored: level.errored,
      timedOut: level.timedOut,
      ttftP50Ms: level.ttftMs.p50,
    });
    const saturated = pastSaturation > 0 || stoppedRising(points);
    ctx.progress(describeLevel(level, saturated));
    if (ctx.signal.aborted) break;
    if (level.errored + level.timedOut > 0) {
      notes.push(`sweep stopped at ${c} streams: ${level.errored} errored, ${level.timedOut} timed out`);
      break;
    }
    if (saturated) pastSaturation++;
    if (pastSaturation >= Math.max(1, cfg.overloadLevels)) break;
    if (c === cfg.maxConcurrency) notes.push(`sweep reached its bound of ${c} streams`);
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
  // Request-rate runs at fractions of what the saturation level served (requests completed per second of it).
  const satLevel = sat ? levels[sat.index] : undefined;
  const satRate =
    satLevel && satLevel.endedAt > satLevel.startedAt
      ? satLevel.completed / ((satLevel.endedAt - satLevel.startedAt) / 1000)
      : 0;
  if (!(satRate > 0)) notes.push('no request-rate runs: the sweep found no saturation point to choose rates from');
  else
    for (const f of cfg.rateFractions)
      for (const arrival of ['constant', 'poisson'] as const) {
        const rate = f * satRate;
        const expect = (cfg.rateRequests / rate) * 1000 + (satLevel!.e2eMs.p99 ?? 0);
        if (expect * 1.5 > left() || ctx.signal.aborted) {
          notes.push(`rate run at ${fmt(rate)} req/s (${arrival}) left out: it would not fit the time left`);
          continue;
        }
        const offsets = arrivalOffsets(cfg.rateRequests, rate, arrival, cfg.seed);
        const { level, xs } = await measure(
          ctx,
          cfg,
          { mode: 'rate', ratePerS: rate, arrival, ...(arrival === 'poisson' ? { seed: cfg.seed } : {}) },
          () => openLoop(ctx, offsets, next),
          machine,
        );
        levels.push(level);
        recordings.push(...xs.map((x) => x.rec));
        ctx.progress(describeLevel(level));
      }
  if (notes.length) table.notes = notes;
  return { table, recordings, notes };
}
