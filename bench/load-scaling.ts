// Load generation over 1 and 2 worker threads (lib/measure/load-workers.ts) against one stamping server: per-worker
// cost, the events/s delivered and the lag, in alternating pairs (1 worker, 2 workers, 1, 2, …). The last step of
// `npm run bench`; run it under `flock /tmp/heavy.lock`.
//   node --import tsx bench/load-scaling.ts [--streams 256] [--cadence 5] [--pairs 3] [--smoke]
// The server is pinned to CPU 0 and the client process to CPU 1 (with 2 workers both share that core: on a 2-core
// machine the server needs the other, and it saturates first, ~21,700 events/s). What carries over is the cost per
// event of each worker's thread and of the whole process; beyond this machine it is a projection (see BENCHMARKS.md).
import { execFileSync, spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { ROOT } from '../lib/config/profile.ts';
import { type LoadResult, runLoad } from '../lib/exchange/load-workers.ts';
import { lagSummary, type StampedArrival, steadyWindow } from '../lib/measure/fidelity.ts';
import { median } from '../lib/measure/stats.ts';
import { startStampServer } from '../lib/run/preflight.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? dflt : Number(process.argv[i + 1]);
};
const SMOKE = process.argv.includes('--smoke');

export interface ScalingRun {
  workers: number;
  streams: number;
  cadenceMs: number;
  events: number;
  /** Events/s the server sent while every stream was live (from the stamps). */
  steadyRate?: number;
  lag?: { n: number; p50Ms: number; p99Ms: number; maxMs: number };
  /** Whole client process (all threads: workers, main, GC, compiler), µs per event. */
  processCpuUsPerEvent: number;
  /** Each worker's own thread, µs per event it received (10 ms ticks). */
  workerCpuUsPerEvent: number[];
  /** Each worker's thread CPU / wall time: 1 = its core saturated. */
  workerBusy: number[];
  workerLoopDelayP99Ms: number[];
  failures: number;
}

function summarise(r: LoadResult, workers: number, streams: number, cadenceMs: number): ScalingRun {
  const arrivals: StampedArrival[] = r.requests.flatMap((q) => q.stamps.map((s) => ({ stream: q.stream, ...s })));
  const steady = steadyWindow(arrivals);
  let lo = Infinity;
  let hi = -Infinity;
  for (const a of steady) {
    lo = Math.min(lo, a.sendMs);
    hi = Math.max(hi, a.sendMs);
  }
  const events = r.requests.reduce((n, q) => n + q.events, 0);
  return {
    workers,
    streams,
    cadenceMs,
    events,
    steadyRate: hi > lo ? ((steady.length - streams) / (hi - lo)) * 1000 : undefined,
    lag: lagSummary(steady),
    processCpuUsPerEvent: r.processCpuUs / events,
    workerCpuUsPerEvent: r.workers.map((w) => ((w.threadCpuMs ?? Number.NaN) * 1000) / w.events),
    workerBusy: r.workers.map((w) => (w.threadCpuMs ?? Number.NaN) / w.wallMs),
    workerLoopDelayP99Ms: r.workers.map((w) => w.loopDelayP99Ms),
    failures: r.requests.filter((q) => q.failure || q.status !== 200).length,
  };
}

/** One client run in this process (the parent starts it pinned): prints one JSON line. */
async function client(url: string, workers: number, streams: number, tokens: number, cadenceMs: number) {
  const r = await runLoad({ baseUrl: url, model: 'reference-model', streams, workers, maxTokens: tokens });
  process.stdout.write(`${JSON.stringify(summarise(r, workers, streams, cadenceMs))}\n`);
}

function pin(core: number): string[] {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return cpus().length >= 2 ? ['taskset', '-c', String(core)] : [];
  } catch {
    return [];
  }
}

function run(url: string, workers: number, streams: number, tokens: number, cadenceMs: number): Promise<ScalingRun> {
  return new Promise((resolve, reject) => {
    const argv = [
      ...pin(1),
      process.execPath,
      '--import',
      'tsx',
      'bench/load-scaling.ts',
      '--client',
      url,
      ...[workers, streams, tokens, cadenceMs].map(String),
    ];
    const child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out.trim().split('\n').pop()!) as ScalingRun)
        : reject(new Error(`client exited ${code}: ${err.slice(-2000)}`)),
    );
  });
}

async function main(): Promise<void> {
  const streams = SMOKE ? 8 : arg('streams', 256);
  const cadenceMs = arg('cadence', 5);
  const pairs = SMOKE ? 1 : arg('pairs', 3);
  const tokens = streams + Math.round((SMOKE ? 100 : 1500) / cadenceMs);
  const load0 = loadavg();
  const server = await startStampServer({ slots: streams, cadenceMs, wrap: pin(0) });
  const runs: ScalingRun[] = [];
  try {
    for (let p = 0; p < pairs; p++)
      for (const w of [1, 2]) {
        const r = await run(server.url, w, streams, tokens, cadenceMs);
        runs.push(r);
        process.stderr.write(
          `  pair ${p + 1}, ${w} worker(s): ${Math.round(r.steadyRate ?? 0)} ev/s, process ${r.processCpuUsPerEvent.toFixed(1)} µs/ev, workers ${r.workerCpuUsPerEvent.map((x) => x.toFixed(1)).join('/')} µs/ev, busy ${r.workerBusy.map((x) => `${Math.round(x * 100)} %`).join('/')}, lag p99 ${r.lag?.p99Ms.toFixed(1)} ms\n`,
        );
      }
  } finally {
    await server.stop();
  }
  const by = (w: number) => runs.filter((r) => r.workers === w);
  const med = (xs: (number | undefined)[]) =>
    median(xs.filter((x): x is number => x !== undefined && Number.isFinite(x)));
  const rows = [1, 2].map((w) => {
    const rs = by(w);
    return {
      workers: w,
      rate: med(rs.map((r) => r.steadyRate)),
      processUs: med(rs.map((r) => r.processCpuUsPerEvent)),
      workerUs: med(rs.flatMap((r) => r.workerCpuUsPerEvent)),
      busy: med(rs.flatMap((r) => r.workerBusy)),
      p50: med(rs.map((r) => r.lag?.p50Ms)),
      p99: med(rs.map((r) => r.lag?.p99Ms)),
      loop: med(rs.flatMap((r) => r.workerLoopDelayP99Ms)),
      failures: rs.reduce((n, r) => n + r.failures, 0),
    };
  });
  // Pairs in which 2 workers cost less process CPU per event than 1 (the sign of the difference, pair by pair).
  const cheaper = by(2).filter((r, i) => r.processCpuUsPerEvent < by(1)[i]!.processCpuUsPerEvent).length;
  const f1 = (x: number | undefined) => (x === undefined ? 'n/a' : x.toFixed(1));
  const lines = [
    `${streams} streams in phase, ${cadenceMs} ms cadence (nominal ${Math.round((streams * 1000) / cadenceMs)} events/s), ${pairs} pairs; load average at start ${load0.map((x) => x.toFixed(2)).join(' ')}, at end ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
    '',
    '| workers | events/s delivered (server-bound) | process CPU µs/event | worker thread CPU µs/event | worker thread busy | lag p50 / p99 (ms) | worker loop delay p99 (ms) | failed requests |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.workers} | ${Math.round(r.rate ?? 0).toLocaleString('en')} | ${f1(r.processUs)} | ${f1(r.workerUs)} | ${Math.round((r.busy ?? 0) * 100)} % | ${r.p50?.toFixed(2)} / ${r.p99?.toFixed(2)} | ${f1(r.loop)} | ${r.failures} |`,
    ),
    '',
    `2 workers cost less process CPU per event than 1 in ${cheaper} of ${pairs} pairs.`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

if (process.argv[2] === '--client') {
  const [url, w, s, t, c] = process.argv.slice(3);
  await client(url!, Number(w), Number(s), Number(t), Number(c));
} else await main();
