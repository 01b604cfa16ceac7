// A worker thread of lib/measure/load-workers.ts: its share of the streams through the harness's own path
// (lib/http/exchange.ts `chat`), every time converted to the machine's monotonic clock before it is sent back.
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { monotonicOffset, sendTimeMs } from '../measure/fidelity.ts';
import { chat, type Exchange, generationBody, uniquePrompt } from './exchange.ts';
import type { LoadSpec, RequestTiming, WorkerMessage } from './load-workers.ts';
import { stampRequester } from './stamp-requester.ts';

const port = parentPort!;
const post = (m: WorkerMessage) => port.postMessage(m);

/** CPU time of this thread (ms, 10 ms ticks), or undefined off Linux. */
function threadCpuMs(): number | undefined {
  try {
    const s = readFileSync('/proc/thread-self/stat', 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return undefined;
  }
}

const monotonicNowMs = () => Number(process.hrtime.bigint()) / 1e6;

/** Until the monotonic clock reaches `atMs`: a timer for most of the wait, then a short spin. */
async function until(atMs: number): Promise<void> {
  const left = atMs - monotonicNowMs();
  if (left > 2) await new Promise((r) => setTimeout(r, left - 2));
  while (monotonicNowMs() < atMs) {
    /* spin the last ms: a timer is late by up to a tick */
  }
}

function streams(spec: LoadSpec, signal: AbortSignal, count: number, maxTokens: number): Promise<Exchange[]> {
  const ctx = stampRequester(spec.baseUrl, signal, spec.model);
  return Promise.all(
    Array.from({ length: count }, () =>
      chat(
        ctx,
        generationBody(ctx, 'openai-chat', {
          prompt: uniquePrompt(ctx, 'Load.'),
          maxTokens,
          stream: true,
          exactLength: true,
        }),
      ),
    ),
  );
}

function timing(x: Exchange, worker: number, stream: number, offsetMs: number): RequestTiming {
  const base = x.rec.t0Abs + offsetMs;
  const stamps: RequestTiming['stamps'] = [];
  for (const ev of x.sse?.events ?? []) {
    const sendMs = sendTimeMs(ev.id);
    if (sendMs !== undefined) stamps.push({ sendMs, arriveMs: base + ev.t });
  }
  const t: RequestTiming = {
    worker,
    stream,
    startMs: base,
    tokenMs: (x.events?.tokens ?? []).map((k) => base + k.t),
    endMs: base + x.rec.tEnd,
    events: x.sse?.events.length ?? 0,
    stamps,
  };
  if (x.rec.tHeaders !== undefined) t.headersMs = base + x.rec.tHeaders;
  if (x.rec.status !== undefined) t.status = x.rec.status;
  if (x.rec.failure) t.failure = `${x.rec.failure.kind}: ${x.rec.failure.message}`;
  return t;
}

async function load(spec: LoadSpec, worker: number, mine: number[]): Promise<void> {
  const signal = AbortSignal.timeout(spec.boundMs ?? 120_000);
  await streams(spec, signal, Math.min(spec.warmStreams ?? 8, mine.length), 60);
  const start = new Promise<number>((r) =>
    port.once('message', (m: { kind: string; startAtMs: number }) => r(m.startAtMs)),
  );
  post({ kind: 'ready' });
  const startAtMs = await start;
  const clock = monotonicOffset();
  await until(startAtMs);
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const cpu0 = threadCpuMs();
  const w0 = monotonicNowMs();
  const xs = await streams(spec, signal, mine.length, spec.maxTokens);
  const wallMs = monotonicNowMs() - w0;
  const cpu1 = threadCpuMs();
  delay.disable();
  const requests = xs.map((x, i) => timing(x, worker, mine[i]!, clock.offsetMs));
  post({
    kind: 'done',
    requests,
    cost: {
      worker,
      streams: mine.length,
      events: requests.reduce((n, r) => n + r.events, 0),
      threadCpuMs: cpu0 !== undefined && cpu1 !== undefined ? cpu1 - cpu0 : undefined,
      wallMs,
      loopDelayP99Ms: delay.percentile(99) / 1e6,
      loopDelayMaxMs: delay.max / 1e6,
      clockUncertaintyMs: clock.uncertaintyMs,
    },
  });
}

function skew(flag: Int32Array, reps: number): void {
  const clock = monotonicOffset();
  post({ kind: 'ready' });
  const stamps: number[] = [];
  const raw: number[] = [];
  for (let r = 1; r <= reps; r++) {
    Atomics.wait(flag, 0, r - 1);
    const now = performance.now();
    stamps.push(now + clock.offsetMs);
    raw.push(now);
  }
  post({ kind: 'skew', stamps, raw, uncertaintyMs: clock.uncertaintyMs });
}

const data = workerData as
  | { mode: 'load'; spec: LoadSpec; worker: number; streams: number[] }
  | { mode: 'skew'; worker: number; flag: Int32Array; reps: number };
try {
  if (data.mode === 'skew') skew(data.flag, data.reps);
  else await load(data.spec, data.worker, data.streams);
} catch (e) {
  post({ kind: 'error', message: e instanceof Error ? (e.stack ?? e.message) : String(e) });
}
