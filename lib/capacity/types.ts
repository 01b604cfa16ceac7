// The capacity table: what a concurrency sweep or a request-rate run measured, level by level, and which of its
// figures the conformance checks certify on that level's own streams. Shared by the runner (lib/capacity/), the
// `capacity` family, results.json (optional top-level `capacity`), the console table, the HTML plots and the merge of
// several load generators' tables (docs/capacity.md).
import type { Slo } from '../model/types.ts';

/**
 * One figure over a level's requests (or inter-token gaps): percentiles by linear interpolation (numpy's default, as
 * vLLM's np.percentile), null when there were none; with the sample count, mean, population std (numpy's np.std) and
 * maximum (absent in tables written before them).
 */
export interface Percentiles {
  p50: number | null;
  p90: number | null;
  p99: number | null;
  n?: number;
  mean?: number | null;
  std?: number | null;
  max?: number | null;
  /** Percentiles from too few samples to have one above them — a p99 from fewer than 100, a p90 from fewer than 10:
   *  each lies between the two largest samples, so it is the maximum, not a percentile (level.ts). */
  maxOnly?: Array<'p90' | 'p99'>;
}

/** What a flag says (certify.ts): the columns of the CSV and JSON export name it (lib/capacity/peer-columns.ts). */
export type FlagKind = 'burst' | 'not-judged' | 'usage' | 'timings' | 'hardware' | 'unserved' | 'merge';

/** A figure shown with a reason it cannot be trusted as the server's: never dropped, never silent. */
export interface FlaggedFigure {
  /** Which figure: 'itl', 'tpot', 'ttft', 'e2e', 'aggregateTps', 'tpsPerStream', 'usage', 'level' (all of it). */
  figure: string;
  /** Which certification flagged it (absent in tables written before kinds). */
  kind?: FlagKind;
  /** Why, with the figure: "ITL p50 0.02 ms: burst delivery, not a decode rate". */
  reason: string;
}

export interface CapacityLevel {
  mode: 'concurrency' | 'rate';
  /** Concurrency sweep: streams kept in flight. */
  concurrency?: number;
  /** Request-rate run: requests started per second (absent when all started at once: vLLM's rate inf), how arrivals
   *  were spaced (seeded unless constant) and the gamma shape of the gaps (1: Poisson; absent when constant). */
  ratePerS?: number;
  arrival?: 'constant' | 'poisson' | 'gamma' | 'at-once';
  burstiness?: number;
  seed?: number;
  /** Rate run: the most requests it kept in flight at once (vLLM's --max-concurrency); a request waits for a free one
   *  before it is sent, and its times start when it is sent. */
  maxConcurrency?: number;
  /** Which load generator measured it (docs/capacity.md: several machines against one server). */
  machine?: string;
  /** Epoch ms of the level's first start and last end, on `machine`'s clock. */
  startedAt: number;
  endedAt: number;
  sent: number;
  completed: number;
  errored: number;
  timedOut: number;
  /** Times in ms: time to first token, inter-token latency (over all gaps of all streams), end to end. */
  ttftMs: Percentiles;
  itlMs: Percentiles;
  e2eMs: Percentiles;
  /** Time per output token after the first, per request: (e2e − TTFT) / (output tokens − 1), requests of 2+ tokens. */
  tpotMs?: Percentiles;
  /** vLLM's `duration` (s): from the level's start (a rate run's schedule, a sweep level's first send) to the last end. */
  durationS?: number;
  /** Output tokens of the completed requests as the throughputs count them: usage where sent, else the stream's. */
  totalOutputTokens?: number;
  /** Per second of durationS: completed requests, input tokens (null without usage), output tokens, both. */
  requestThroughput?: number;
  inputThroughput?: number | null;
  outputThroughput?: number;
  totalTokenThroughput?: number | null;
  /** Output tokens per second of one stream (first token to last), over the level's streams. */
  tpsPerStream: Percentiles;
  /** Output tokens of all completed requests divided by the level's wall time. */
  aggregateTps: number;
  /** Token counts summed over completed requests: from usage, and counted from the stream beside it. */
  inputTokens: number | null;
  outputTokens: number | null;
  streamedTokens: number;
  /** Requests that met the SLO, per second of the level, and as a fraction of those sent. */
  goodput?: { ratePerS: number; fraction: number };
  /** Our own headroom during the level: client CPU per received event, event-loop lag; `clientBound` when exceeded. */
  client: {
    cpuUsPerEvent: number | null;
    loopLagP99Ms: number | null;
    clientBound: boolean;
    reason?: string;
    /** Share of one core our process used over the level (0.35 = 35 %). */
    cpuShare?: number;
  };
  /** The physical bound of batched decode where the profile gives bandwidth and active bytes (tok/s). */
  physicalBoundTps?: number;
  /** Sweep: each round's aggregate tok/s (a stream's n-th request is in round n): the level's interval. */
  roundTps?: number[];
  /** Relative noise band of aggregateTps (half the rounds' range over their median, floored; lib/capacity/level.ts). */
  noiseBand?: number;
  /** Most requests in flight at once during the level. */
  inFlight?: number;
  /** Figures that failed a certifying check on this level's streams; empty when every figure is certified. */
  flags: FlaggedFigure[];
}

export interface CapacityTable {
  /** Prompt source: synthetic lengths, or a dataset file (its name only, never its content). */
  workload:
    | { kind: 'synthetic'; inputTokens: number; outputTokens: number }
    | { kind: 'dataset'; file: string; format: 'jsonl-messages' | 'sharegpt'; prompts: number };
  slo?: Slo;
  levels: CapacityLevel[];
  /** The sweep's saturation point: the level after which aggregate tok/s stopped rising beyond its noise band. */
  saturation?: { concurrency: number; aggregateTps: number; noiseBand: number; why: string };
  /** Why the sweep or the rate runs stopped where they did, and what was left out (e.g. for time). */
  notes?: string[];
  /** Machines whose levels are merged here (one entry when a single generator measured it). */
  machines?: string[];
}
