// `npm run bench` (after the vitest benchmarks): the instrument's own fidelity, measured in one run.
//
// 1. Throughput in memory (bench/throughput.ts) and memory per recorded stream (bench/memory.ts), each in its own
//    process pinned to the client core.
// 2. Fidelity: one reference server in --stamp-send mode (every event carries its send time on the monotonic clock),
//    a 10 ms cadence with all streams in phase, pinned to core 0. Against it, in turn (floor, harness, floor, …), each
//    in a fresh process pinned to core 1: the harness's real recording path (lib/run/preflight.ts → lib/http/exchange.ts `chat`) and
//    a raw node:net floor (bench/floor-client.ts). Per client: arrival − send p50/p99/max of the events sent while
//    every stream was live, client CPU per event. At 1, 32, 128 and 256 streams.
// 3. A rate sweep (256 streams, shorter cadence) until the harness's core saturates (or the server's, which is said).
// 4. The preflight as every run does it (duration, figures).
// Prints the tables (Markdown) and writes reports/bench/fidelity.json. Run it under `flock /tmp/heavy.lock`.
//   node --import tsx bench/fidelity.ts [--quick]
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../lib/config/profile.ts';
import { median } from '../lib/measure/stats.ts';
import type { FidelityPreflight } from '../lib/model/types.ts';
import { runPreflight, type StampServer, startStampServer } from '../lib/run/preflight.ts';
import type { ClientResult } from './fidelity-client.ts';
import { TARGET_EVENTS_PER_S, type ThroughputRow } from './throughput.ts';

const QUICK = process.argv.includes('--quick');
/** --smoke: tiny sizes, to check the script itself (figures meaningless). */
const SMOKE = process.argv.includes('--smoke');
/** --levels 32,128 and --reps N: the fidelity table only, at those levels, N floor/harness pairs each (A/B runs). */
const argValue = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? undefined : process.argv[i + 1];
};
const LEVELS_ARG = argValue('levels')?.split(',').map(Number);
const FIDELITY_ONLY = LEVELS_ARG !== undefined;
/**
 * --warm round|small: each client process's warm-up before its measured round (bench/fidelity-client.ts): 'round'
 * (default) one unmeasured round of the measured size; 'small' 8 streams of 60 tokens (the figures before 2026-12-03;
 * --warm-streams N sets its streams).
 */
if (argValue('warm')) process.env.FIDELITY_WARM = argValue('warm');
if (argValue('warm-streams')) process.env.FIDELITY_WARM_STREAMS = argValue('warm-streams');
const REPS = Number(argValue('reps') ?? (QUICK || SMOKE ? 1 : 3));
const LEVELS = LEVELS_ARG ?? (SMOKE ? [1, 4] : [1, 32, 128, 256]);
const CADENCE_MS = 10;
/** Steps measured with every stream live; the ramp-up (one stream admitted per step) comes on top. */
const steadySteps = (n: number) => (SMOKE ? 20 : n === 1 ? (QUICK ? 200 : 300) : QUICK ? 100 : 200);
const TARGETS = {
  excessP99Ms: { 32: 0.3, 128: 0.5 } as Record<number, number>,
  cpuUsPerEvent: 10,
  eventsPerSecond: TARGET_EVENTS_PER_S,
};
/** vLLM's serving benchmark request function (aiohttp), as the issue measured it on this kind of machine. */
const PEER = {
  excessP99Ms: { 32: 0.55, 128: 0.31 } as Record<number, number>,
  cpuUsPerEvent: 30,
  saturationEventsPerS: 35_000,
};

// ------------------------------------------------------------------------------------------------------------
// Machine: pinning, load, other processes' CPU

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const TASKSET = hasTaskset() && cpus().length >= 2;
const SERVER_PIN = TASKSET ? ['taskset', '-c', '0'] : [];
const CLIENT_PIN = TASKSET ? ['taskset', '-c', '1'] : [];

/** Busy jiffies of the whole machine (all CPUs) and clock ticks per second. */
function machineBusy(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = f;
  return user! + nice! + system! + irq! + softirq! + steal!;
}
function procCpu(pid: number): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]); // utime + stime, jiffies
  } catch {
    return 0;
  }
}
const HZ = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();
const hasProc = (() => {
  try {
    readFileSync('/proc/stat');
    return true;
  } catch {
    return false;
  }
})();

interface Shared {
  /** CPU other processes used during the run, in cores (0..cpus), from /proc/stat minus ours. */
  othersCores?: number;
}

// ------------------------------------------------------------------------------------------------------------

function node(
  args: string[],
  pin: string[] = CLIENT_PIN,
  execArgv: string[] = [],
): Promise<{ out: string; cpuJiffies: number; wallMs: number }> {
  return new Promise((resolve, reject) => {
    const argv = [...pin, process.execPath, ...execArgv, '--import', 'tsx', ...args];
    const child = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let last = 0;
    const poll = setInterval(() => {
      if (child.pid) last = Math.max(last, procCpu(child.pid));
    }, 50);
    const t0 = performance.now();
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.on('exit', (code) => {
      clearInterval(poll);
      if (code === 0) resolve({ out, cpuJiffies: last, wallMs: performance.now() - t0 });
      else reject(new Error(`${args.join(' ')} exited ${code}: ${err.slice(-2000)}`));
    });
  });
}

async function clientRun(
  server: StampServer,
  mode: 'harness' | 'floor',
  streams: number,
  tokens: number,
): Promise<ClientResult & Shared> {
  const b0 = hasProc ? machineBusy() : 0;
  const s0 = procCpu(server.pid);
  const r = await node(['bench/fidelity-client.ts', mode, server.url, String(streams), String(tokens)]);
  const res = JSON.parse(r.out.trim().split('\n').pop()!) as ClientResult;
  if (!hasProc) return res;
  const others = machineBusy() - b0 - (procCpu(server.pid) - s0) - r.cpuJiffies;
  return { ...res, othersCores: Math.max(0, others / HZ / (r.wallMs / 1000)) };
}

interface Level {
  streams: number;
  tokens: number;
  floor: (ClientResult & Shared)[];
  harness: (ClientResult & Shared)[];
}

const med = (xs: (number | undefined)[]) => median(xs.filter((x): x is number => x !== undefined));

async function fidelityLevels(server: StampServer): Promise<Level[]> {
  const out: Level[] = [];
  for (const n of LEVELS) {
    const tokens = n + steadySteps(n);
    const lvl: Level = { streams: n, tokens, floor: [], harness: [] };
    for (let i = 0; i < REPS; i++) {
      // In turn, floor first then harness, so both meet the same server under the same load in every pair.
      lvl.floor.push(await clientRun(server, 'floor', n, tokens));
      lvl.harness.push(await clientRun(server, 'harness', n, tokens));
      process.stderr.write(
        `  ${n} streams, rep ${i + 1}: floor p99 ${lvl.floor.at(-1)!.lag?.p99Ms.toFixed(3)} ms, harness p99 ${lvl.harness.at(-1)!.lag?.p99Ms.toFixed(3)} ms\n`,
      );
    }
    out.push(lvl);
  }
  return out;
}

interface SweepPoint {
  cadenceMs: number;
  streams: number;
  nominalRate: number;
  harness: ClientResult & Shared;
  floor: ClientResult & Shared;
  serverCoreShare: number;
}

/** Faster cadence at 256 streams until the harness's core saturates, its lag runs away, or the server cannot keep up. */
async function sweep(): Promise<{ points: SweepPoint[]; stop: string }> {
  const points: SweepPoint[] = [];
  const streams = SMOKE ? 8 : 256;
  for (const cadenceMs of SMOKE ? [10, 5] : [5, 2.5, 1.5, 1, 0.7, 0.5]) {
    // 10 ms at 256 streams: the fidelity table
    const s = await startStampServer({ slots: streams, cadenceMs, wrap: SERVER_PIN });
    try {
      const tokens = streams + Math.round((SMOKE ? 200 : 1000) / cadenceMs); // ~1 s with every stream live
      const s0 = procCpu(s.pid);
      const w0 = performance.now();
      const floor = await clientRun(s, 'floor', streams, tokens);
      const harness = await clientRun(s, 'harness', streams, tokens);
      const serverCoreShare = (procCpu(s.pid) - s0) / HZ / ((performance.now() - w0) / 1000);
      const p: SweepPoint = {
        cadenceMs,
        streams,
        nominalRate: (streams * 1000) / cadenceMs,
        harness,
        floor,
        serverCoreShare,
      };
      points.push(p);
      process.stderr.write(
        `  sweep ${cadenceMs} ms: harness ${Math.round(harness.steadyRate ?? 0)} ev/s core ${harness.coreShare.toFixed(2)} p99 ${harness.lag?.p99Ms.toFixed(1)} ms; server core ${serverCoreShare.toFixed(2)}\n`,
      );
      if (harness.coreShare >= 0.9)
        return {
          points,
          stop: `the harness's core saturated (${Math.round(harness.coreShare * 100)} % busy) at ${Math.round(harness.steadyRate ?? 0)} events/s`,
        };
      if ((harness.lag?.p50Ms ?? 0) > 5 * cadenceMs)
        return { points, stop: `the harness's median lag (${harness.lag!.p50Ms.toFixed(1)} ms) ran past 5 cadences` };
      if ((harness.steadyRate ?? 0) < 0.8 * p.nominalRate)
        return {
          points,
          stop: `the server could not keep the cadence (${Math.round(harness.steadyRate ?? 0)} of ${Math.round(p.nominalRate)} events/s sent; its core ${Math.round(serverCoreShare * 100)} % busy)`,
        };
    } finally {
      await s.stop();
    }
  }
  return { points, stop: 'the fastest cadence tried' };
}

// ------------------------------------------------------------------------------------------------------------
// Tables

const f2 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(2));
const f3 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(3));
const f1 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(1));
const int = (x: number | undefined) =>
  x === undefined || !Number.isFinite(x) ? 'n/a' : Math.round(x).toLocaleString('en');
const verdict = (ok: boolean | undefined) => (ok === undefined ? '' : ok ? ' ✓' : ' ✗');

function table(head: string[], rows: string[][]): string {
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
}

function levelTable(levels: Level[]): string {
  const rows = levels.map((l) => {
    const fl = (k: 'p50Ms' | 'p99Ms' | 'maxMs') => med(l.floor.map((r) => r.lag?.[k]));
    const hl = (k: 'p50Ms' | 'p99Ms' | 'maxMs') => med(l.harness.map((r) => r.lag?.[k]));
    // Excess in each floor/harness pair (same server, same minute), then the median over pairs.
    const ex = (k: 'p50Ms' | 'p99Ms') =>
      med(l.harness.map((h, i) => (h.lag && l.floor[i]?.lag ? h.lag[k] - l.floor[i]!.lag![k] : undefined)));
    const target = TARGETS.excessP99Ms[l.streams];
    const peer = PEER.excessP99Ms[l.streams];
    const e99 = ex('p99Ms');
    const cpuH = med(l.harness.map((r) => r.cpuUsPerEvent));
    return [
      String(l.streams),
      int(med(l.harness.map((r) => r.lag?.n))),
      `${f3(fl('p50Ms'))} / ${f3(fl('p99Ms'))} / ${f2(fl('maxMs'))}`,
      `${f3(hl('p50Ms'))} / ${f3(hl('p99Ms'))} / ${f2(hl('maxMs'))}`,
      `${f3(ex('p50Ms'))} / **${f3(e99)}**${target !== undefined && e99 !== undefined ? verdict(e99 <= target) : ''}`,
      target === undefined ? '-' : `≤ ${target}`,
      peer === undefined ? '-' : `+${peer}`,
      f1(med(l.floor.map((r) => r.cpuUsPerEvent))),
      `**${f1(cpuH)}**${verdict(cpuH !== undefined ? cpuH <= TARGETS.cpuUsPerEvent : undefined)}`,
      f2(med(l.harness.map((r) => r.othersCores))),
    ];
  });
  return table(
    [
      'streams',
      'events measured (per rep)',
      'floor lag p50 / p99 / max (ms)',
      'harness lag p50 / p99 / max (ms)',
      'excess p50 / p99 (ms)',
      'target p99',
      'peer p99',
      'floor CPU µs/event',
      'harness CPU µs/event (target ≤ 10, peer 30)',
      "others' CPU (cores)",
    ],
    rows,
  );
}

/** The CPU target: harness ≤ 2x the floor per event, judged pair by pair (same server, same minute). */
function ratioTable(levels: Level[]): string {
  return table(
    [
      'streams',
      'harness / floor CPU per event (median of pairs)',
      'pairs within 2x',
      'per-pair ratios',
      'deferred decode on first read (µs/event, median)',
    ],
    levels.map((l) => {
      const ratios = l.harness.map((h, i) => h.cpuUsPerEvent / l.floor[i]!.cpuUsPerEvent);
      return [
        String(l.streams),
        `**${f2(med(ratios))}**`,
        `${ratios.filter((r) => r <= 2).length} of ${ratios.length}`,
        ratios.map((r) => r.toFixed(2)).join(', '),
        f1(med(l.harness.map((h) => h.deferredUsPerEvent))),
      ];
    }),
  );
}

function sweepTable(points: SweepPoint[]): string {
  return table(
    [
      'cadence (ms)',
      'streams',
      'nominal events/s',
      'sent events/s',
      'harness core busy',
      'harness lag p50 / p99 (ms)',
      'harness CPU µs/event',
      'floor lag p50 / p99 (ms)',
      'floor core busy',
      'server core busy',
    ],
    points.map((p) => [
      String(p.cadenceMs),
      String(p.streams),
      int(p.nominalRate),
      int(p.harness.steadyRate),
      `${Math.round(p.harness.coreShare * 100)} %`,
      `${f2(p.harness.lag?.p50Ms)} / ${f2(p.harness.lag?.p99Ms)}`,
      f1(p.harness.cpuUsPerEvent),
      `${f2(p.floor.lag?.p50Ms)} / ${f2(p.floor.lag?.p99Ms)}`,
      `${Math.round(p.floor.coreShare * 100)} %`,
      `${Math.round(p.serverCoreShare * 100)} %`,
    ]),
  );
}

// ------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const model = cpus()[0]?.model ?? 'unknown CPU';
  const machine = {
    cpus: cpus().length,
    model,
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    taskset: TASKSET,
    hz: HZ,
  };
  const load: Record<string, number[]> = { start: loadavg() };
  const md: string[] = [];
  md.push(
    `machine: ${machine.cpus} × ${model}, ${machine.memGiB} GiB, node ${machine.node}; ` +
      (TASKSET
        ? 'server pinned to CPU 0 (taskset -c 0), each client process to CPU 1 (taskset -c 1): floor and harness take turns on the same core'
        : 'taskset not available: nothing pinned'),
  );
  md.push(`load average at start: ${load.start!.map((x) => x.toFixed(2)).join(' ')}`);
  md.push(
    (process.env.FIDELITY_WARM ?? 'round') === 'round'
      ? 'warm-up: each client process runs one unmeasured round of the measured size first (--warm round)'
      : `warm-up: ${process.env.FIDELITY_WARM_STREAMS ?? 8} streams of 60 tokens before the measured round (--warm small)`,
  );

  if (FIDELITY_ONLY) {
    process.stderr.write('fidelity: floor and harness against the stamping server…\n');
    const server = await startStampServer({ slots: Math.max(...LEVELS), cadenceMs: CADENCE_MS, wrap: SERVER_PIN });
    let levels: Level[];
    try {
      levels = await fidelityLevels(server);
    } finally {
      await server.stop();
    }
    load.end = loadavg();
    md.push('', `### Fidelity at a ${CADENCE_MS} ms cadence (medians over ${REPS} floor/harness pairs)`, '');
    md.push(levelTable(levels), '', ratioTable(levels));
    md.push(
      '',
      `load average (1/5/15 min): start ${load.start!.map((x) => x.toFixed(2)).join(' ')}; end ${load.end.map((x) => x.toFixed(2)).join(' ')}`,
    );
    process.stdout.write(`${md.join('\n')}\n`);
    return;
  }
  process.stderr.write('throughput in memory…\n');
  const throughput = JSON.parse((await node(['bench/throughput.ts', '--json'])).out.trim()) as ThroughputRow[];
  process.stderr.write('memory per recorded stream…\n');
  const memArgs = SMOKE ? ['2', '3000'] : QUICK ? ['8', '50000'] : ['32', '50000'];
  const memory = JSON.parse(
    (await node(['bench/memory.ts', ...memArgs], CLIENT_PIN, ['--expose-gc'])).out.trim(),
  ) as Record<string, number>;
  const memorySmall = JSON.parse(
    (await node(['bench/memory.ts', '32', '2000'], CLIENT_PIN, ['--expose-gc'])).out.trim(),
  ) as Record<string, number>;
  load.afterMemory = loadavg();

  process.stderr.write('fidelity: floor and harness against the stamping server…\n');
  const server = await startStampServer({ slots: Math.max(...LEVELS), cadenceMs: CADENCE_MS, wrap: SERVER_PIN });
  let levels: Level[];
  try {
    levels = await fidelityLevels(server);
  } finally {
    await server.stop();
  }
  load.afterFidelity = loadavg();
  process.stderr.write('rate sweep…\n');
  const sw = await sweep();
  load.afterSweep = loadavg();
  process.stderr.write('preflight (as each run does it)…\n');
  const preflights: FidelityPreflight[] = [];
  for (let i = 0; i < (SMOKE ? 1 : REPS); i++) {
    const t0 = performance.now();
    const p = await runPreflight();
    preflights.push({
      ...p,
      durationMs: p.durationMs,
      wallWithStartMs: Math.round(performance.now() - t0),
    } as FidelityPreflight);
  }
  load.end = loadavg();

  md.push('', '### Throughput in memory (one core, CPU time)', '');
  md.push(
    table(
      ['case', 'bytes/event', 'events/s', 'µs/event', 'target'],
      throughput.map((r) => {
        const ref = r.name.startsWith('reference');
        return [
          r.name,
          String(r.bytesPerEvent),
          ref
            ? int(r.eventsPerSecond)
            : `**${int(r.eventsPerSecond)}**${verdict(r.eventsPerSecond >= TARGETS.eventsPerSecond)}`,
          f2(r.usPerEvent),
          ref ? '-' : `≥ ${int(TARGETS.eventsPerSecond)}`,
        ];
      }),
    ),
  );
  md.push('', '### Memory per recorded stream', '');
  md.push(
    table(
      [
        'streams × token events',
        'wire bytes per stream',
        'memory per stream',
        'per event',
        'events kept raw (1 MiB cap)',
        'token events decoded',
      ],
      [memorySmall, memory].map((m) => [
        `${m.streams} × ${int(m.tokens)}`,
        `${f1(m.wireBytesPerStream! / 2 ** 20)} MiB`,
        `${f1(m.bytesPerStream! / 2 ** 20)} MiB`,
        `${int(m.bytesPerEvent)} B`,
        int(m.retainedEvents),
        int(m.tokenEvents),
      ]),
    ),
  );
  md.push(
    '',
    `### Fidelity at a ${CADENCE_MS} ms cadence, all streams in phase (medians over ${REPS} floor/harness pairs)`,
    '',
  );
  md.push(levelTable(levels), '', ratioTable(levels));
  md.push('', '### Rate sweep (256 streams, shorter cadence)', '');
  md.push(sweepTable(sw.points));
  md.push(
    '',
    `stopped: ${sw.stop}. Peer: one core saturates near ${int(PEER.saturationEventsPerS)} events/s (30 µs/event).`,
  );
  md.push('', '### Preflight (as every run does it: 32 streams in phase, 10 ms cadence)', '');
  md.push(
    table(
      ['run', 'lag p50 / p99 / max (ms)', 'CPU µs/event', 'measurement (ms)', 'with server start (ms)'],
      preflights.map((p, i) => [
        String(i + 1),
        p.lag ? `${f3(p.lag.p50Ms)} / ${f3(p.lag.p99Ms)} / ${f2(p.lag.maxMs)}` : `error: ${p.error}`,
        f1(p.cpuUsPerEvent),
        int(p.durationMs),
        int((p as { wallWithStartMs?: number }).wallWithStartMs),
      ]),
    ),
  );
  md.push(
    '',
    `load average (1/5/15 min): ${Object.entries(load)
      .map(([k, v]) => `${k} ${v.map((x) => x.toFixed(2)).join(' ')}`)
      .join('; ')}`,
  );

  const text = md.join('\n');
  process.stdout.write(`${text}\n`);
  const dir = join(ROOT, 'reports', 'bench');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'fidelity.json'),
    `${JSON.stringify({ date: new Date().toISOString(), machine, load, throughput, memory: [memorySmall, memory], levels, sweep: sw, preflights, targets: TARGETS, peer: PEER }, null, 2)}\n`,
  );
  writeFileSync(join(dir, 'fidelity.md'), `${text}\n`);
}

await main();
