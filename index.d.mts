// Types of the package's root export (index.mjs). Kept in step with cli/run.ts and reporters/results-types.ts by
// test/package-types.ts (tsc fails when they drift).

export type Outcome = 'pass' | 'fail' | 'warn' | 'inconclusive' | 'skip' | 'known' | 'known-passing' | 'error';
export type Level = 'MUST' | 'SHOULD' | 'INFO';
export type ApiFlavour = 'openai-chat' | 'openai-completions' | 'anthropic-messages' | 'ollama-native';

export interface RunOptions {
  /** An OpenAI-compatible server's root (project id "env"); may hold {port} when `start` is given. */
  baseUrl?: string;
  model?: string;
  /** NAME of the environment variable holding the API key (default OPENAI_API_KEY). */
  apiKeyEnv?: string;
  /** APIs the server offers (with baseUrl): named ones are declared, the others probed at setup (default openai-chat). */
  apis?: ApiFlavour[];
  /** Shell command that starts the server (with baseUrl). */
  start?: string;
  /** Folder `start` runs in (default: the current folder). */
  cwd?: string;
  /** A profile id (instead of baseUrl), in serversFile or else in the bundled servers.json. */
  serversFile?: string;
  server?: string;
  /** Bound on the wait for readiness (default: the profile's startTimeoutMs). */
  waitSeconds?: number;
  tier?: 'quick' | 'full';
  strict?: boolean;
  /** Families to run, or to leave out (setup always runs). */
  only?: string[];
  skip?: string[];
  /** Bound on the checks, counted from readiness. */
  deadlineSeconds?: number;
  /** Default ./conformance-reports in the current folder. */
  reportsDir?: string;
  /** A results.json to compare with; failOnRegression makes a regression fail the gate. */
  baseline?: string;
  failOnRegression?: boolean;
  machine?: string;
  /** Run the capacity family (docs/capacity.md): a concurrency sweep and request-rate runs. */
  capacity?: boolean;
  /** Goodput's SLO, `ttft-p99=500,itl-p99=50` (ms). */
  slo?: string;
  /** Capacity prompts from a file: JSONL of OpenAI messages arrays, or ShareGPT JSON. */
  dataset?: string;
  /** Capacity, as `vllm bench serve` names them (docs/capacity.md): the sweep's bound or its levels, and the most a
   *  rate run keeps in flight (--max-concurrency); rate runs at these req/s, 'inf' all at once (--request-rate);
   *  requests per rate run and at least per sweep level (--num-prompts); gamma shape of the gaps, 1 Poisson
   *  (--burstiness); synthetic prompt and answer lengths (--input-len, --output-len). */
  maxConcurrency?: number | number[];
  requestRate?: number | 'inf' | Array<number | 'inf'>;
  numPrompts?: number;
  burstiness?: number | 'inf';
  inputLen?: number;
  outputLen?: number;
  /** Progress on the console: a live line on a TTY, plain lines otherwise, or none. */
  progress?: 'tty' | 'lines' | 'none';
  /** Every check on the console (as it ends and in the final table), not only what did not pass. */
  verbose?: boolean;
}

export interface CheckResult {
  id: string;
  title: string;
  family: string;
  level: Level;
  outcome: Outcome;
  message: string;
  rationale: string;
  reference: string;
  durationMs?: number;
  metrics?: Record<string, unknown>;
  evidence?: unknown[];
  loopDelay?: { p99Ms: number; maxMs: number };
  file?: string;
  /** Inconclusive because the request it needed was not served: the check that reports that root cause once. */
  blockedBy?: string;
}

export interface RunError {
  where: string;
  message: string;
}

export interface ResultsHeader {
  suite: { name: string; version: string };
  date: string;
  project: string;
  profile: Record<string, unknown>;
  server: Record<string, unknown>;
  machine: {
    hostname?: string;
    label: string;
    platform: string;
    arch: string;
    cpus: number;
    chip?: string;
    memGiB: number;
    node: string;
  };
  tier: 'quick' | 'full';
  strict: boolean;
  shard?: string;
  fidelity?: unknown;
  /** Set when a signal stopped the run: the checks are those that finished before it, and no gate is judged. */
  interrupted?: { signal: 'SIGINT' | 'SIGTERM'; date: string; running?: string; planned?: number };
}

export interface ResultsFile {
  header: ResultsHeader;
  checks: CheckResult[];
  finished?: { date: string; reason: string };
  errors?: RunError[];
}

export declare const EXIT: {
  readonly passed: 0;
  readonly failed: 1;
  readonly usage: 2;
  readonly neverReady: 3;
  readonly internal: 4;
  /** Stopped by Ctrl-C (SIGINT); SIGTERM gives 143. */
  readonly interrupted: 130;
  readonly interruptedByTerm: 143;
};

/** never-ready (exit 3) and config-error (exit 2): the run stopped before its checks; results.json says why. */
export type Gate = 'passed' | 'failed' | 'never-ready' | 'config-error' | 'error' | 'interrupted';

export interface RunResult {
  exitCode: 0 | 1 | 2 | 3 | 4 | 130 | 143;
  gate: Gate;
  reason: string;
  project: string;
  reportsDir: string;
  resultsPath: string;
  results?: ResultsFile;
  counts: Record<Outcome, number>;
  score: { passed: number; graded: number };
  regressions?: number;
}

/** Bad options: the message names the problem; nothing was run. */
export declare class UsageError extends Error {}

/** Run the catalogue against one server; resolves with the gate, the exit code and the results. */
export declare function runConformance(
  options: RunOptions,
  io?: { cwd?: string; log?: (line: string) => void },
): Promise<RunResult>;
