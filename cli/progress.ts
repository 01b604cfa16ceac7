// What the progress line says, as pure functions of what the run has seen: how many checks of how many, the check in
// flight and its own time, and an estimate of the time left once there is evidence for one.
//
// The estimate (ETA): each suite file has a typical wall time, measured on the bundled reference server (its checks'
// durations plus a worker start and imports, TYPICAL_FILE_MS; the few checks that take most of a file's time have
// their own, HEAVY_MS). The run's own pace is the time the finished checks took against their typical shares, and
// what is left is the typical time of the rest at that pace. Nothing is estimated before the finished checks cover 10 % of the typical total, at
// least 3 checks and 3 s: a slow server shows no ETA for its first checks rather than a confident wrong one. The
// time left goes down while the check in flight runs, but not below what the checks after it need: a check that
// runs past its typical share holds the ETA there until it ends. Check timeouts are bounds, not estimates, and are
// never used for it.
import stringWidth from 'string-width';

/** m:ss (h:mm:ss past an hour). */
export function clock(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const mm = String(Math.floor((s % 3600) / 60));
  const ss = String(s % 60).padStart(2, '0');
  return h ? `${h}:${mm.padStart(2, '0')}:${ss}` : `${mm}:${ss}`;
}

/**
 * Typical wall time of each suite file on the reference server (2-core machine, quick tier, every API served): the sum
 * of its checks' durations in fixtures/results/reference.json plus 1.5 s for the worker start and imports. Only the
 * proportions matter: the run's own pace scales them.
 */
const TYPICAL_FILE_MS: Readonly<Record<string, number>> = {
  setup: 1_500,
  api: 1_900,
  sse: 2_600,
  completions: 1_700,
  anthropic: 1_600,
  ollama: 1_700,
  clients: 4_400,
  tools: 4_000,
  structured: 2_500,
  stream: 7_400,
  metrics: 4_100,
  parallel: 11_000,
  // Every check skipped unless a capacity run is asked for (CAPACITY_RUN_MS then).
  capacity: 1_500,
  cycles: 7_200,
  context: 9_100,
  errors: 2_200,
  'api-last': 1_500,
  health: 1_500,
};
/** The default capacity run on the reference server: the sweep (1 to 8 streams there, 3 rounds each) and 4 rate runs. */
const CAPACITY_RUN_MS = 40_000;
const UNKNOWN_FILE_MS = 2_500;

/**
 * The checks that take most of their file's time (same source): each has its own share, the rest of the file's time
 * is shared by its other checks. Without them the capacity sweep counted as a fifth of its file and the ETA jumped.
 */
const HEAVY_MS: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  stream: { 'stream.ttft-before-end': 5_300 },
  metrics: { 'metrics.gen-tps-plausible': 2_600 },
  parallel: { 'parallel.speedup-2': 6_000, 'parallel.scaling': 1_800 },
  cycles: { 'cycles.no-slowdown': 5_700 },
  context: { 'context.prefill-scaling': 3_400, 'context.healthy-after': 3_300 },
};

export interface FileProgress {
  /** Suite file name without suites/ and .test.ts (a family, or api-last). */
  file: string;
  /** Checks it registers (CHECKS_PER_FILE, then the collected count). */
  planned: number;
  /** Ids of its checks that finished (skips too). */
  done: string[];
  typicalMs: number;
  /** Checks with a share of their own (HEAVY_MS; the capacity sweep in a capacity run). */
  heavy: Readonly<Record<string, number>>;
}

/** A suite file as the estimate sees it before any of its checks ran. */
export function fileProgress(file: string, planned: number, capacityRun: boolean): FileProgress {
  if (file === 'capacity' && capacityRun)
    return { file, planned, done: [], typicalMs: CAPACITY_RUN_MS, heavy: { 'capacity.sweep': CAPACITY_RUN_MS - 500 } };
  return { file, planned, done: [], typicalMs: TYPICAL_FILE_MS[file] ?? UNKNOWN_FILE_MS, heavy: HEAVY_MS[file] ?? {} };
}

/** A check's typical share of its file's time. */
function shareOf(f: FileProgress, id: string): number {
  const own = f.heavy[id];
  if (own !== undefined) return own;
  const heavy = Object.values(f.heavy);
  const rest = f.planned - heavy.length;
  return rest > 0 ? Math.max(0, f.typicalMs - heavy.reduce((s, x) => s + x, 0)) / rest : 0;
}

interface Pace {
  /** ms since the first check started, at the last check's end. */
  atLastDoneMs: number;
  /** ms since the last check ended (the check in flight has run about this long). */
  sinceLastDoneMs: number;
  /** The check in flight, when one is. */
  current?: string;
}

/** The estimate of the time left (ms), or undefined while there is not enough evidence for one. */
export function eta(files: readonly FileProgress[], pace: Pace): number | undefined {
  const total = files.reduce((s, f) => s + f.typicalMs, 0);
  const done = files.reduce((s, f) => s + f.done.reduce((t, id) => t + shareOf(f, id), 0), 0);
  const checksDone = files.reduce((s, f) => s + f.done.length, 0);
  if (total <= 0 || done < 0.1 * total || checksDone < 3 || pace.atLastDoneMs < 3_000) return undefined;
  const rate = pace.atLastDoneMs / done;
  const left = Math.max(0, total - done) * rate;
  const inFlight = pace.current ? files.find((f) => f.done.length < f.planned) : undefined;
  const currentMs = inFlight && pace.current ? shareOf(inFlight, pace.current) * rate : 0;
  // The time left goes down as the check in flight runs, but never below what the checks after it need.
  return Math.max(left - pace.sinceLastDoneMs, left - currentMs);
}

export interface Status {
  done: number;
  planned: number;
  /** The check in flight and how long it has run. */
  current?: { id: string; ms: number; note?: string };
  elapsedMs: number;
  /** Estimated time left (ms). */
  eta?: number;
  deadlineS?: number;
}

const etaText = (e: Status['eta']) => (e === undefined ? undefined : `ETA ~${clock(e)}`);

/** The live line on a terminal: `▶ 42/91 checks · parallel.speedup-2 0:04 · 0:38 elapsed · ETA ~0:30 · <note>`. */
export function liveLine(s: Status): string {
  return [
    `▶ ${s.done}/${s.planned} checks`,
    s.current ? `${s.current.id} ${clock(s.current.ms)}` : undefined,
    `${clock(s.elapsedMs)} elapsed`,
    etaText(s.eta),
    s.deadlineS ? `deadline ${clock(s.deadlineS * 1000)} from ready` : undefined,
    s.current?.note,
  ]
    .filter(Boolean)
    .join(' · ');
}

/** A check running this long is named first on a plain heartbeat line. */
const LONG_CHECK_MS = 10_000;

/** A plain heartbeat line (CI logs): `… still running capacity.sweep (0:35) · 62/91 checks · 1:02 elapsed · ETA ~0:40`. */
export function heartbeatLine(s: Status): string {
  const long = s.current && s.current.ms >= LONG_CHECK_MS;
  return [
    long ? `… still running ${s.current!.id} (${clock(s.current!.ms)})` : `… ${s.done}/${s.planned} checks`,
    long ? `${s.done}/${s.planned} checks` : s.current ? `${s.current.id} (${clock(s.current.ms)})` : undefined,
    `${clock(s.elapsedMs)} elapsed`,
    etaText(s.eta),
  ]
    .filter(Boolean)
    .join(' · ');
}

/**
 * How long a plain heartbeat waits after the last line printed: 10 s, and 60 s once the check in flight has run two
 * minutes (a 10-minute capacity run adds about 20 lines to a CI log, not 60).
 */
export function heartbeatEveryMs(checkMs: number): number {
  return checkMs < 120_000 ? 10_000 : 60_000;
}

/**
 * The text cut to `columns` terminal cells (one less: the cursor's), by grapheme, wide characters counting two
 * (string-width): a live line that wrapped could not be rewritten in place.
 */
export function fitWidth(text: string, columns: number): string {
  const max = Math.max(10, columns - 1);
  if (stringWidth(text) <= max) return text;
  let out = '';
  let width = 0;
  for (const { segment } of new Intl.Segmenter().segment(text)) {
    const w = stringWidth(segment);
    if (width + w > max - 1) break;
    out += segment;
    width += w;
  }
  return `${out}…`;
}
