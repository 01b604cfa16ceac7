// The results file (reports/<project>/results.json): what every report, badge and comparison is built from.
// Its JSON Schema is fixtures/schemas/results.schema.json; keep the two in step.
import type { CapacityTable } from '../lib/capacity/types.ts';
import type { CheckRecord, FidelityPreflight } from '../lib/model/types.ts';

export interface ResultsHeader {
  suite: { name: string; version: string };
  /** ISO date of the run start. */
  date: string;
  project: string;
  /** The profile as run, secrets removed (apiKeyEnv is a variable NAME, kept). */
  profile: Record<string, unknown>;
  /** What answered, as discovered (identity, version, context window and its source). */
  server: Record<string, unknown>;
  machine: {
    hostname?: string;
    label: string;
    platform: string;
    arch: string;
    cpus: number;
    /** CPU model as the OS names it ("Apple M2 Max", "AMD EPYC 7B13"): results of several machines are told apart by it. */
    chip?: string;
    memGiB: number;
    node: string;
  };
  tier: 'quick' | 'full';
  strict: boolean;
  shard?: string;
  /** The run's fidelity preflight: our client's own lag on this machine at the start of the run. */
  fidelity?: FidelityPreflight;
  /** Set when a signal stopped the run: the checks are those that finished before it, and no gate is judged. */
  interrupted?: Interruption;
}

export interface Interruption {
  signal: 'SIGINT' | 'SIGTERM';
  /** ISO date of the signal. */
  date: string;
  /** The check that was running (it did not finish, so it is not among the checks). */
  running?: string;
  /** How many checks the run would have run. */
  planned?: number;
}

export interface CheckResult extends CheckRecord {
  /** Test file the check ran in (relative to the suite root), e.g. suites/metrics.test.ts. */
  file?: string;
}

/** A problem outside any check: a test file that failed to load, an unhandled error, a reporter that failed. */
export interface RunError {
  where: string;
  message: string;
}

export interface ResultsFile {
  header: ResultsHeader;
  checks: CheckResult[];
  /** Set when the run finished (absent in a file from an interrupted run: see header.interrupted). */
  finished?: { date: string; reason: string };
  /** Problems outside the checks (load errors, unhandled errors, reporter errors). */
  errors?: RunError[];
  /** The capacity table, when the run had the capacity family (lifted from capacity.sweep; docs/capacity.md). */
  capacity?: CapacityTable;
}
