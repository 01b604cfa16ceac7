// The fidelity preflight of every run (and the harness side of bench/fidelity.ts): our real recording path —
// undici, SSE decoding, JSON, metrics, exactly what the checks call (lib/http/exchange.ts `chat`) — against the reference
// server in --stamp-send mode, N streams in phase at a fixed cadence; arrival − send per event (lib/run/fidelity.ts).
import { setMaxListeners } from 'node:events';
import { join } from 'node:path';
import { ROOT } from '../config/profile.ts';
import { chat, type Exchange, generationBody, uniquePrompt } from '../exchange/exchange.ts';
import { stampRequester } from '../exchange/stamp-requester.ts';
import { lagSummary, monotonicOffset, stampedArrivals, steadyWindow, stepMinima } from '../measure/fidelity.ts';
import type { FidelityPreflight } from '../model/types.ts';
import { type RunningServer, spawnServer, TSX_LOADER, waitForListening } from '../server/lifecycle.ts';

interface StampServerOptions {
  /** Slots (≥ the streams it will serve, so all of them decode in the same steps). */
  slots: number;
  /** ms between the events of one stream; every live stream gets its event in the same step. */
  cadenceMs: number;
  /** Prefix of argv, e.g. ['taskset', '-c', '0'] to pin the server to a core. */
  wrap?: string[];
  /** Bound on start (ms). */
  startTimeoutMs?: number;
}

export interface StampServer {
  url: string;
  pid: number;
  process: RunningServer;
  stop(): Promise<void>;
}

/** The reference server stamping every event with its send time, at a fixed cadence, all streams in phase. */
export async function startStampServer(o: StampServerOptions): Promise<StampServer> {
  const argv = [
    ...(o.wrap ?? []),
    process.execPath,
    '--import',
    TSX_LOADER,
    join(ROOT, 'fixtures/reference-server/main.ts'),
    '--port',
    '0',
    '--stamp-send',
    '--slots',
    String(o.slots),
    '--decode-step-ms',
    String(o.cadenceMs),
    '--batch-step-cost',
    '0',
    // No prefill cost and a window that fits any stream length the benchmarks ask for.
    '--prefill-ms-per-token',
    '0',
    '--prefill-quadratic-ms',
    '0',
    '--context-window',
    '1000000',
  ];
  const server = spawnServer(argv, { cwd: ROOT });
  const url = await waitForListening(server, o.startTimeoutMs ?? 30_000, 'the stamping reference server');
  return { url, pid: server.pid, process: server, stop: () => server.stop() };
}

/** `streams` concurrent streams of exactly `tokens` tokens through the harness's real recording path. */
export async function harnessStreams(
  baseUrl: string,
  streams: number,
  tokens: number,
  signal = new AbortController().signal,
): Promise<Exchange[]> {
  setMaxListeners(0, signal); // every request listens on the one signal: hundreds of streams are not a leak
  const ctx = stampRequester(baseUrl, signal);
  return Promise.all(
    Array.from({ length: streams }, () =>
      chat(
        ctx,
        generationBody(ctx, 'openai-chat', {
          prompt: uniquePrompt(ctx, 'Fidelity.'),
          maxTokens: tokens,
          stream: true,
          exactLength: true,
        }),
      ),
    ),
  );
}

interface HarnessRun {
  exchanges: Exchange[];
  /** Every event received (stamped or not). */
  events: number;
  cpuUs: number;
  /** The part of cpuUs spent in the kernel (socket reads, epoll). */
  systemUs: number;
  wallMs: number;
  offset: { offsetMs: number; uncertaintyMs: number };
  /** CPU of building the streams' decoded events, text and chunks after the round, when first read. */
  deferredUs: number;
}

/** One measured round: CPU of this process and wall time around the streams. */
export async function measuredHarnessRound(
  baseUrl: string,
  streams: number,
  tokens: number,
  signal?: AbortSignal,
): Promise<HarnessRun> {
  const offset = monotonicOffset();
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  const exchanges = await harnessStreams(baseUrl, streams, tokens, signal);
  const wallMs = performance.now() - w0;
  const c = process.cpuUsage(c0);
  // A live stream keeps only its raw reads: events, text and chunks are built here, on first read (deferredUs).
  const d0 = process.cpuUsage();
  let events = 0;
  for (const x of exchanges) {
    events += x.sse?.events.length ?? 0;
    void x.events?.chunks;
  }
  const d = process.cpuUsage(d0);
  return {
    exchanges,
    events,
    cpuUs: c.user + c.system,
    systemUs: c.system,
    wallMs,
    offset,
    deferredUs: d.user + d.system,
  };
}

/** Arrival − send of the in-phase steady state of a harness round, or why there is none. */
export function harnessLag(run: HarnessRun) {
  const bad = run.exchanges.find((x) => x.rec.status !== 200 || x.rec.failure || !x.sse);
  if (bad) return { error: `a stream failed: ${bad.rec.failure?.message ?? `HTTP ${bad.rec.status}`}` };
  const arrivals = stampedArrivals(
    run.exchanges.map((x) => ({ t0Abs: x.rec.t0Abs, events: x.sse!.events })),
    run.offset.offsetMs,
  );
  const steady = steadyWindow(arrivals);
  const lag = lagSummary(steady);
  return lag ? { lag, steady } : { error: 'no stamped events (is the server in --stamp-send mode?)' };
}

interface PreflightOptions {
  streams?: number;
  cadenceMs?: number;
  /** Steps measured with every stream live (the ramp-up, one stream per step, comes on top). */
  steadySteps?: number;
  /** A stamping server already starting (global setup starts it early, beside the server under test). */
  server?: Promise<StampServer>;
  /** Bound on the measurement (ms). */
  boundMs?: number;
}

export const PREFLIGHT_DEFAULTS = { streams: 32, cadenceMs: 10, steadySteps: 50 };
/** Bound on the measurement (the server's start has its own). */
const PREFLIGHT_BOUND_MS = 20_000;

/**
 * The short preflight: `streams` streams in phase (32, the most the catalogue drives at once) for ~1 s. Never
 * throws: a preflight that cannot run says why in `error`, and checks then allow only for their own loop delay.
 */
export async function runPreflight(o: PreflightOptions = {}): Promise<FidelityPreflight> {
  const { streams, cadenceMs, steadySteps } = { ...PREFLIGHT_DEFAULTS, ...o };
  const t0 = performance.now();
  let server: StampServer | undefined;
  try {
    server = await (o.server ?? startStampServer({ slots: streams, cadenceMs }));
    const started = performance.now();
    // Bounded: a stamping server that stops answering costs the run seconds, not the requests' own deadlines.
    const signal = AbortSignal.timeout(o.boundMs ?? PREFLIGHT_BOUND_MS);
    // One short round first: connections opened, code paths compiled, as they are by the time checks run.
    await harnessStreams(server.url, Math.min(streams, 4), 5, signal);
    const run = await measuredHarnessRound(server.url, streams, streams + steadySteps, signal);
    const r = harnessLag(run);
    const base = {
      streams,
      cadenceMs,
      durationMs: Math.round(performance.now() - started),
      clockUncertaintyMs: run.offset.uncertaintyMs,
    };
    if ('error' in r) return { ...base, error: r.error };
    const stepLag = lagSummary(stepMinima(r.steady, cadenceMs));
    return {
      ...base,
      lag: r.lag,
      ...(stepLag ? { stepLag } : {}),
      cpuUsPerEvent: run.events > 0 ? run.cpuUs / run.events : undefined,
    };
  } catch (e) {
    return { streams, cadenceMs, durationMs: Math.round(performance.now() - t0), error: (e as Error).message };
  } finally {
    await server?.stop();
  }
}
