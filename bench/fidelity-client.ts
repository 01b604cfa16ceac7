// One client run of the fidelity benchmark, in its own process (bench/fidelity.ts pins it to a core):
//   node --import tsx bench/fidelity-client.ts <harness|floor> <baseUrl> <streams> <tokens>
// Prints one JSON line: lag (arrival − send) of the in-phase steady state, client CPU per event, event rate.

import { readFileSync } from 'node:fs';
import {
  lagSummary,
  monotonicOffset,
  type StampedArrival,
  stampedArrivalsInBytes,
  steadyWindow,
} from '../lib/measure/fidelity.ts';
import { harnessLag, harnessStreams, measuredHarnessRound } from '../lib/run/preflight.ts';
import { rawStream } from './floor-client.ts';

export interface ClientResult {
  mode: 'harness' | 'floor';
  streams: number;
  tokens: number;
  /** Events received in the measured round (all of them: CPU is per received event). */
  events: number;
  lag?: { n: number; p50Ms: number; p99Ms: number; maxMs: number };
  cpuUsPerEvent: number;
  /** The kernel's part of it (system time). */
  systemUsPerEvent: number;
  /**
   * CPU time of the main thread (the event loop) / wall time during the round: 1 = its core saturated. From
   * /proc/self/task (10 ms ticks); process CPU (GC and compiler threads too) where that is not there.
   */
  coreShare: number;
  wallMs: number;
  /** Events/s sent while every stream was live (steady state), from the stamps. */
  steadyRate?: number;
  clockUncertaintyMs: number;
  /**
   * Harness: CPU per event of building the decoded events, text and chunks when first read, after the round (a live
   * stream keeps only its raw reads; lib/decode/stream-decoder.ts `lazy`). Not in cpuUsPerEvent: it is not spent
   * while streams are live, so it cannot delay an arrival, but a check that reads everything pays it.
   */
  deferredUsPerEvent?: number;
  error?: string;
}

const [mode, baseUrl, streamsArg, tokensArg] = process.argv.slice(2);

const TICK_MS = 10; // USER_HZ = 100 on Linux
/** CPU time of this process's main thread (ms), or undefined off Linux. */
function mainThreadCpuMs(): number | undefined {
  try {
    const s = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_MS;
  } catch {
    return undefined;
  }
}

/** The main thread's share of its core over a round, from a start reading. */
function share(start: number | undefined, wallMs: number, fallbackCpuUs: number): number {
  const end = mainThreadCpuMs();
  return start !== undefined && end !== undefined ? (end - start) / wallMs : fallbackCpuUs / 1000 / wallMs;
}

const streams = Number(streamsArg);
const tokens = Number(tokensArg);
/**
 * Warm-up before the measured round, for both clients alike: connections opened and the hot paths compiled.
 * FIDELITY_WARM (bench/fidelity.ts --warm) = 'round' (the default): one unmeasured round the size of the measured
 * one, so the measured round is the steady state a long run lives in (JIT compilation of the larger client is a
 * one-time cost, and it fell inside a round after a small warm-up). 'small': 8 streams of 60 tokens, the method of
 * the figures before 2026-12-03. FIDELITY_WARM_STREAMS (--warm-streams N) sets the streams of the small one.
 */
const WARM_MODE = process.env.FIDELITY_WARM ?? 'round';
const WARM =
  WARM_MODE === 'round'
    ? { streams, tokens }
    : WARM_MODE.startsWith('events:')
      ? { streams, tokens: Math.max(tokens, Math.ceil(Number(WARM_MODE.slice(7)) / streams)) }
      : { streams: Math.min(streams, Number(process.env.FIDELITY_WARM_STREAMS ?? 8)), tokens: 60 };

function rate(steady: StampedArrival[]): number | undefined {
  if (steady.length < 2) return undefined;
  let lo = Infinity;
  let hi = -Infinity;
  for (const a of steady) {
    lo = Math.min(lo, a.sendMs);
    hi = Math.max(hi, a.sendMs);
  }
  const streams = new Set(steady.map((a) => a.stream)).size;
  return hi > lo ? ((steady.length - streams) / (hi - lo)) * 1000 : undefined; // the first step's events open the span
}

async function floorRound(): Promise<ClientResult> {
  const body = (i: number) => ({ ...generationBodyFor(i), stream: true });
  // Warm-up: connections and code paths, as for the harness.
  await Promise.all(
    Array.from({ length: WARM.streams }, (_, i) => rawStream(baseUrl!, { ...body(i), max_tokens: WARM.tokens })),
  );
  const offset = monotonicOffset();
  const m0 = mainThreadCpuMs();
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  const all = await Promise.all(Array.from({ length: streams }, (_, i) => rawStream(baseUrl!, body(i))));
  const wallMs = performance.now() - w0;
  const c = process.cpuUsage(c0);
  const arrivals = all.flatMap((reads, i) => stampedArrivalsInBytes(reads, i, offset.offsetMs));
  const steady = steadyWindow(arrivals);
  return {
    mode: 'floor',
    streams,
    tokens,
    events: arrivals.length,
    lag: lagSummary(steady),
    cpuUsPerEvent: (c.user + c.system) / arrivals.length,
    systemUsPerEvent: c.system / arrivals.length,
    coreShare: share(m0, wallMs, c.user + c.system),
    wallMs,
    steadyRate: rate(steady),
    clockUncertaintyMs: offset.uncertaintyMs,
  };
}

/** The body the harness builds with generationBody (lib/run/preflight.ts): same model, prompt shape, max_tokens, ignore_eos. */
function generationBodyFor(i: number): Record<string, unknown> {
  return {
    model: 'reference-model',
    messages: [{ role: 'user', content: `[request floor-${process.pid}-${i}] Fidelity.` }],
    max_tokens: tokens,
    temperature: 0,
    ignore_eos: true,
  };
}

async function harnessRound(): Promise<ClientResult> {
  await harnessStreams(baseUrl!, WARM.streams, WARM.tokens);
  const m0 = mainThreadCpuMs();
  const run = await measuredHarnessRound(baseUrl!, streams, tokens);
  const r = harnessLag(run);
  const base = {
    mode: 'harness' as const,
    streams,
    tokens,
    events: run.events,
    cpuUsPerEvent: run.cpuUs / run.events,
    systemUsPerEvent: run.systemUs / run.events,
    coreShare: share(m0, run.wallMs, run.cpuUs),
    wallMs: run.wallMs,
    clockUncertaintyMs: run.offset.uncertaintyMs,
    deferredUsPerEvent: run.deferredUs / run.events,
  };
  if ('error' in r) return { ...base, error: r.error };
  return { ...base, lag: r.lag, steadyRate: rate(r.steady) };
}

const result = await (mode === 'floor' ? floorRound() : harnessRound());
process.stdout.write(`${JSON.stringify(result)}\n`);
