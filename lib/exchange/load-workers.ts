// Load generation spread over worker threads, for when one core is not enough to drive (and time) every stream:
// `runLoad` runs N streams split over W workers, each stream through the harness's own path (lib/http/exchange.ts
// `chat`, what the checks call), and returns every request's timestamps on one clock.
//
// One clock for all workers: every time a worker reports is on the machine's monotonic clock (process.hrtime,
// CLOCK_MONOTONIC: one clock for every thread and every process on the machine, the one the stamping server writes its
// send times in). Each worker converts its performance.now() readings with its own monotonicOffset()
// (lib/run/fidelity.ts: performance.now() bracketed between two hrtime reads, the tightest of 64 brackets kept; the
// half-width is the conversion error, reported per worker, 0.1 µs here). Node gives the threads of one process one
// time origin, so their raw performance.now() readings already agree; the conversion is what makes them comparable
// with the server's stamps and with load generators in other processes. performance.timeOrigin + performance.now()
// is not used: timeOrigin comes from the wall clock, which can step. `workerSkew` verifies the clocks against a
// common event (test/load-workers.test.ts).
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { monotonicOffset } from '../measure/fidelity.ts';

/** What every worker sends: the same request shape, its share of the streams. */
export interface LoadSpec {
  baseUrl: string;
  model: string;
  /** Streams in all, split as evenly as possible over the workers (stream i goes to worker i mod W). */
  streams: number;
  workers: number;
  /** max_tokens of every request (forced with ignore_eos). */
  maxTokens: number;
  /** Warm-up streams per worker before the measured round (connections opened, hot paths compiled); default 8. */
  warmStreams?: number;
  /** Bound on the whole run (ms); default 120 s. */
  boundMs?: number;
}

/** One request, its times in ms on the machine's monotonic clock (comparable across workers and with server stamps). */
export interface RequestTiming {
  worker: number;
  /** Index of the stream over all workers (0 … streams − 1). */
  stream: number;
  startMs: number;
  headersMs?: number;
  /** Time of each token-bearing event (the read that completed it). */
  tokenMs: number[];
  endMs: number;
  status?: number;
  failure?: string;
  /** SSE events received (role, content, finish and [DONE] alike). */
  events: number;
  /** Events that carry the stamping server's send time (`id: <hrtime ns>`): send and arrival, ms. */
  stamps: { sendMs: number; arriveMs: number }[];
}

/** What one worker measured about itself during the measured round. */
export interface WorkerCost {
  worker: number;
  streams: number;
  events: number;
  /** CPU of the worker's own thread (its event loop: recording, decoding), ms; undefined off Linux. */
  threadCpuMs?: number;
  wallMs: number;
  /** Event-loop delay of the worker during the round (p99, max), ms. */
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  /** Half-width of the worker's clock-conversion bracket, ms. */
  clockUncertaintyMs: number;
}

export interface LoadResult {
  requests: RequestTiming[];
  workers: WorkerCost[];
  /** Common start of the measured round (monotonic ms): every worker began its streams at it. */
  startAtMs: number;
  /** CPU of the whole process (all threads, GC and compiler threads too) over the measured round, µs. */
  processCpuUs: number;
  wallMs: number;
}

export type WorkerMessage =
  | { kind: 'ready' }
  | { kind: 'done'; requests: RequestTiming[]; cost: WorkerCost }
  | { kind: 'skew'; stamps: number[]; raw: number[]; uncertaintyMs: number }
  | { kind: 'error'; message: string };

/** tsx's ESM API (its package exports it as index.cjs for require and index.mjs beside it for import). */
const TSX_API = pathToFileURL(
  createRequire(import.meta.url)
    .resolve('tsx/esm/api')
    .replace(/\.cjs$/, '.mjs'),
).href;
const WORKER_URL = new URL('./load-worker.ts', import.meta.url).href;

/** Now on the machine's monotonic clock, ms. */
const monotonicNowMs = (): number => Number(process.hrtime.bigint()) / 1e6;

function spawn(workerData: unknown): Worker {
  // The worker runs TypeScript, loaded with tsx's tsImport: a worker inherits neither the parent's module hooks nor,
  // on Node 20, hooks from an --import in its execArgv, and tsx's register() fails in a worker there.
  const boot = `import(${JSON.stringify(TSX_API)}).then((t) => t.tsImport(${JSON.stringify(WORKER_URL)}, ${JSON.stringify(WORKER_URL)}))`;
  return new Worker(boot, { eval: true, workerData });
}

/** Wait for one message of a kind from a worker, or its error, bounded. */
function next<K extends WorkerMessage['kind']>(
  w: Worker,
  kind: K,
  boundMs: number,
): Promise<Extract<WorkerMessage, { kind: K }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`load worker: no "${kind}" within ${boundMs} ms`)), boundMs);
    const onMessage = (m: WorkerMessage) => {
      if (m.kind === kind) done(undefined, m as Extract<WorkerMessage, { kind: K }>);
      else if (m.kind === 'error') done(new Error(`load worker failed: ${m.message}`));
    };
    const onError = (e: Error) => done(e);
    const onExit = (code: number) => done(new Error(`load worker exited (${code}) before "${kind}"`));
    function done(err?: Error, m?: Extract<WorkerMessage, { kind: K }>) {
      clearTimeout(timer);
      w.off('message', onMessage);
      w.off('error', onError);
      w.off('exit', onExit);
      if (err) reject(err);
      else resolve(m!);
    }
    w.on('message', onMessage);
    w.on('error', onError);
    w.on('exit', onExit);
  });
}

/**
 * Run `spec.streams` streams split over `spec.workers` worker threads, all starting at one instant: each worker warms
 * up, says it is ready, and begins its streams at the common start time (monotonic clock). Returns every request's
 * times on that clock and each worker's own cost.
 */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  if (!(spec.workers >= 1 && spec.streams >= spec.workers))
    throw new Error(`runLoad: need 1 ≤ workers ≤ streams (got ${spec.workers} workers, ${spec.streams} streams)`);
  const boundMs = spec.boundMs ?? 120_000;
  const workers = Array.from({ length: spec.workers }, (_, w) =>
    spawn({ mode: 'load', spec, worker: w, streams: share(spec.streams, spec.workers, w) }),
  );
  try {
    await Promise.all(workers.map((w) => next(w, 'ready', boundMs)));
    const startAtMs = monotonicNowMs() + 50; // time for the message to reach every worker
    const c0 = process.cpuUsage();
    const dones = workers.map((w) => next(w, 'done', boundMs));
    for (const w of workers) w.postMessage({ kind: 'start', startAtMs });
    const results = await Promise.all(dones);
    const wallMs = monotonicNowMs() - startAtMs;
    const c = process.cpuUsage(c0);
    return {
      requests: results.flatMap((r) => r.requests).sort((a, b) => a.stream - b.stream),
      workers: results.map((r) => r.cost),
      startAtMs,
      processCpuUs: c.user + c.system,
      wallMs,
    };
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

/** Stream indexes of worker w: i ≡ w (mod W). */
export function share(streams: number, workers: number, w: number): number[] {
  const out: number[] = [];
  for (let i = w; i < streams; i += workers) out.push(i);
  return out;
}

interface SkewReport {
  /** Per worker: (worker's time of the event) − (main thread's time of it), ms, one per repetition. */
  delaysMs: number[][];
  /** Per worker: the smallest delay (the event's wake-up latency at its least, plus the clocks' disagreement). */
  minDelayMs: number[];
  /** Per worker: its clock-conversion uncertainty, ms. */
  uncertaintyMs: number[];
  /** The main thread's own conversion uncertainty, ms. */
  mainUncertaintyMs: number;
  /** Per worker: the smallest delay between raw performance.now() readings (no conversion; one origin per process). */
  rawMinDelayMs: number[];
}

/**
 * The clocks of W workers against a common event: the main thread notes the time (its performance.now() converted
 * as the workers convert theirs) and flips a shared flag; each worker, blocked on it (Atomics.wait), notes when it
 * woke. An event cannot be seen before it happens, so with clocks that agree every delay is ≥ 0 (within the conversion
 * uncertainty) and the smallest is the wake-up latency at its least; clocks that disagree show as a negative or a
 * large smallest delay.
 */
export async function workerSkew(workers: number, reps = 20, boundMs = 30_000): Promise<SkewReport> {
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const ws = Array.from({ length: workers }, (_, w) => spawn({ mode: 'skew', worker: w, flag, reps }));
  try {
    await Promise.all(ws.map((w) => next(w, 'ready', boundMs)));
    const clock = monotonicOffset();
    const reports = ws.map((w) => next(w, 'skew', boundMs));
    const mainStamps: number[] = [];
    const mainRaw: number[] = [];
    for (let r = 1; r <= reps; r++) {
      await new Promise((res) => setTimeout(res, 5)); // every worker back in Atomics.wait
      const now = performance.now();
      mainStamps.push(now + clock.offsetMs);
      mainRaw.push(now);
      Atomics.store(flag, 0, r);
      Atomics.notify(flag, 0);
    }
    const got = await Promise.all(reports);
    const delaysMs = got.map((g) => g.stamps.map((s, i) => s - mainStamps[i]!));
    return {
      delaysMs,
      minDelayMs: delaysMs.map((d) => Math.min(...d)),
      uncertaintyMs: got.map((g) => g.uncertaintyMs),
      mainUncertaintyMs: clock.uncertaintyMs,
      rawMinDelayMs: got.map((g) => Math.min(...g.raw.map((s, i) => s - mainRaw[i]!))),
    };
  } finally {
    await Promise.all(ws.map((w) => w.terminate()));
  }
}

/**
 * When a level's figures are the client's, not the server's. A worker's thread busy most of the wall time cannot
 * read its sockets when the bytes arrive (its timestamps are late by its queue), and a loop that stalls longer than
 * the gap between a stream's events adds that stall to every gap it spans. Bounds: thread busy ≥ 80 % (10 ms ticks
 * over seconds: a saturated loop reads ~100 %, and the last 20 % is where queueing delay grows without bound), or an
 * event-loop delay p99 over `maxLoopDelayMs` (default 5 ms: ten times what the harness adds at 32 streams in phase,
 * BENCHMARKS.md).
 */
export function clientBound(
  workers: readonly WorkerCost[],
  o: { maxBusy?: number; maxLoopDelayMs?: number } = {},
): { bound: boolean; reasons: string[] } {
  const maxBusy = o.maxBusy ?? 0.8;
  const maxDelay = o.maxLoopDelayMs ?? 5;
  const reasons: string[] = [];
  for (const w of workers) {
    const busy = w.threadCpuMs !== undefined && w.wallMs > 0 ? w.threadCpuMs / w.wallMs : undefined;
    if (busy !== undefined && busy >= maxBusy)
      reasons.push(`worker ${w.worker}: its thread was ${Math.round(busy * 100)} % busy (bound ${maxBusy * 100} %)`);
    if (w.loopDelayP99Ms > maxDelay)
      reasons.push(`worker ${w.worker}: event-loop delay p99 ${w.loopDelayP99Ms.toFixed(1)} ms (bound ${maxDelay} ms)`);
  }
  return { bound: reasons.length > 0, reasons };
}
