// What a check is (declared data and a run function) and what it is given to run: the model's check types. The check
// core (lib/check/check.ts) builds contexts and runs checks; everything below it takes a Requester, never a context.
import type { HeadlineFigure } from './figures.ts';
import type { Capability, ClientLag, Deadlines, Level, Profile, RunSettings, ServerInfo, Verdict } from './types.ts';

export type Tier = 'quick' | 'full';

export interface Threshold {
  value: number;
  /** Why this default: shown in docs and failure messages. */
  why: string;
}

export interface CheckDef {
  /** Stable id `family.slug`; starts the test name, keys expectations, results and badges. */
  id: string;
  title: string;
  level: Level;
  /** One line: why a client needs this. */
  rationale: string;
  /** Spec clause or documented server behaviour (with a link where there is one). */
  reference: string;
  requires: Capability[];
  /** Heavy checks run only in the full tier. */
  tier?: Tier;
  /** Named tolerances with their reasons; profiles override them per check (servers.json thresholds). */
  thresholds?: Record<string, Threshold>;
  /** Upper bound for the whole check (the runner enforces it). */
  timeoutMs?: number;
  /**
   * Sends what may break a server (fuzzed or absurd requests, over-long prompts, requests that evict the model):
   * runs after every check that only observes (suites/support/register.ts runOrder, lint in test/registry.test.ts).
   */
  destructive?: boolean;
  /**
   * Observing, but sends long or abandoned requests (long prompts, streams cut by the client) that may leave a server
   * slower: the health sentinel probes after it, as after every destructive check (docs/grading.md "Health sentinel").
   */
  disturbs?: boolean;
  /**
   * Times the server (default: its family's `timing`): the sentinel probes before it, and on a server degraded since
   * an earlier check it is inconclusive naming that check instead of graded.
   */
  timing?: boolean;
  /** Sends nothing: reports what the run measured (health.sentinel), so it may run after destructive checks. */
  readsRun?: boolean;
  /**
   * The headline figures and curves its metrics carry (lib/model/figures.ts): reports read a figure from the checks
   * that provide it, never by check id. results.json records it with the check; for older files the same from
   * the declarations (lib/check/family-order.ts FIGURE_SOURCES, written by npm run families).
   */
  provides?: readonly HeadlineFigure[];
  /**
   * The checks whose failure this check's precondition rests on: ['sse.content-type'] for a check that needs a
   * streamed chat request served. A verdict marked blocked on a failed request (lib/grading/preconditions.ts) names
   * the first of them as the check that reports it (lib/check/blocked.ts); a check that declares none reports it
   * itself. Each names a MUST check that runs before this one (test/registry.test.ts).
   */
  dependsOn?: readonly string[];
  run(ctx: CheckContext): Promise<Verdict>;
}

/**
 * What sending requests to the server needs, and nothing more: where, with which credentials and bounds, for whom.
 * lib/exchange/ (and the measurements that send their own requests) take this; a check's context is one.
 */
export interface Requester {
  profile: Profile;
  /** What the run remembers: the server's pace, shared recordings, calibrations, deadline evidence … (lib/run/memory.ts). */
  memory: RunMemory;
  server: ServerInfo;
  /** Base URL without credentials and without a trailing slash or /v1. */
  baseUrl: string;
  /** Headers for every request (Authorization when the profile names a key). */
  headers: Record<string, string>;
  /** Secret values to scrub from anything recorded. */
  secrets: string[];
  deadlines: Deadlines;
  /** Unique per run: every prompt starts with text unique to the request and the run. */
  runId: string;
  /** Who sends (a check id, `sentinel`, `preflight`): named in what the requests record. */
  owner: string;
  /** A fresh nonce for one request. */
  nonce(): string;
  /** Progress and estimates (one line each): the live line's note. */
  log(message: string): void;
  signal: AbortSignal;
}

export interface CheckContext extends Requester {
  check: CheckDef;
  /** The run's settings (what the command line asked: capacity flags, SLO, dataset …). */
  settings: RunSettings;
  tier: Tier;
  strict: boolean;
  /** Threshold by name: profile override, else the check's default. */
  threshold(name: string): number;
  /**
   * A line worth keeping on the console while the check runs (a capacity level as it ends): the CLI prints it at
   * once, in every mode. One line each; say what was measured, not what is about to be.
   */
  progress(message: string): void;
  /** Event-loop delay seen so far in this check (ms): a starved client cannot grade timing. */
  loopDelay(): { p99Ms: number; maxMs: number };
  /**
   * How late our own timestamps may be so far in this check: the larger of its event-loop delay and the lag the run's
   * fidelity preflight measured (lib/run/fidelity.ts clientLag). A timing verdict this lag could explain is inconclusive.
   * `recording`: our lateness while a shared recording this check reads was made (lib/http/recordings.ts, 1 ms sampling):
   * used instead of the check's own coarse monitor.
   */
  clientLag(recording?: { p99Ms: number; maxMs: number }): ClientLag;
}

/**
 * A part of what a run remembers within one process (a worker), declared by the module that owns it: the server's
 * pace, shared recordings, calibrations. Created on first use; gone when the worker ends.
 */
export interface LocalSlice<T> {
  readonly name: string;
  create(): T;
}

/**
 * A part of the run's state that every worker of the run shares (root causes, deadline evidence, the health
 * sentinel's, the circuit breaker's), declared by the module that owns it. JSON only: it crosses processes.
 */
export interface SharedSlice<T> {
  readonly name: string;
  readonly initial: T;
}

export interface StateSlot<T> {
  read(): T;
  /** Replace the value with what `f` makes of it; returns the new value. */
  update(f: (value: T) => T): T;
}

/** What one run remembers: this process's slices, and the state the run's workers share (lib/run/memory.ts). */
export interface RunMemory {
  /**
   * A conformance run's memory (its workers share the state), not a self-test's or a script's: what only a run keeps
   * (deadline evidence, which would let one proof's server shorten another's deadlines) is kept only then.
   */
  readonly ofRun: boolean;
  local<T>(slice: LocalSlice<T>): T;
  shared<T>(slice: SharedSlice<T>): StateSlot<T>;
}
