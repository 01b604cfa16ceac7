// Types at the boundaries of the harness. Everything in lib/ is plain functions over these;
// nothing here knows about Vitest or its reporters.

export type ApiFlavour = 'openai-chat' | 'openai-completions' | 'anthropic-messages' | 'ollama-native';

/** Adapters for context-window discovery; each knows one server's endpoint and field names. */
export type DiscoveryAdapter =
  | 'auto'
  | 'none'
  | 'reference'
  | 'llama.cpp'
  | 'vllm'
  | 'rapid-mlx'
  | 'omlx'
  | 'ollama'
  | 'mlx-vlm'
  | 'mlx-omni'
  | 'mlx-serve';

export type Readiness =
  | {
      kind: 'http';
      path: string;
      status?: number;
      bodyIncludes?: string;
      jsonField?: string;
      jsonEquals?: string | number | boolean;
    }
  | { kind: 'completion' };

export interface Deadlines {
  /** TCP connect. */
  connectMs: number;
  /** Request written -> response headers. */
  headersMs: number;
  /** Longest gap between two *token-bearing* events (comments/pings do not count). */
  tokenIdleMs: number;
  /** Whole request. */
  totalMs: number;
  /** Set when this run's evidence lowered a floor (lib/measure/deadline-evidence.ts): named in the cut's message. */
  sizedBy?: string;
  /** Bytes read before the response is cut (default: the transport's read cap), lowered only by such evidence. */
  readCapBytes?: number;
}

export interface KnownIssue {
  check: string;
  reason: string;
  link?: string;
}

export interface Profile {
  id: string;
  description?: string;
  baseUrl: string;
  model: string;
  apis: ApiFlavour[];
  /**
   * Probe the APIs `apis` does not name (lib/server/api-discovery.ts): the `env` profile does unless --apis names them;
   * a servers.json profile's list is complete unless it sets this.
   */
  discoverApis?: boolean;
  /** NAME of an environment variable holding the API key; never the key. */
  apiKeyEnv?: string;
  start?: { command: string[]; cwd?: string; env?: Record<string, string> };
  readiness: Readiness;
  startTimeoutMs: number;
  /** Requests served at once, when declared; otherwise discovered (ServerInfo.slots) or unknown. */
  slots?: number;
  deterministic: boolean;
  context: {
    /** Per-request window the user declares (tokens); wins over discovery. */
    declared?: number;
    /** The model's trained context, if the user knows it (e.g. 262144). */
    modelTrained?: number;
    /** `auto` (the default): identify the server and use its family's adapter, else the generic places. */
    discovery: DiscoveryAdapter;
  };
  hardware?: { memoryBandwidthGBs: number; activeBytesPerTokenGB: number; speculativeDecoding?: boolean };
  /** Extra request fields merged into every generation request (e.g. turning thinking off). */
  extraBody?: Record<string, unknown>;
  /** How to make the model produce exactly max_tokens tokens. */
  forceLength?: { ignoreEos?: boolean; minTokens?: boolean };
  deadlines?: Partial<Deadlines>;
  /** Per-check threshold overrides: { "parallel.speedup-2": { "failBelow": 0.8 } }. */
  thresholds?: Record<string, Record<string, number>>;
  knownIssues?: KnownIssue[];
  /** Optional request features, declared; when absent, one probe request discovers them (lib/server/feature-probe.ts). */
  capabilities?: Partial<Record<'tools' | 'structured-output', boolean>>;
  /** What in this profile is an assumption rather than a documented fact. */
  assumptions?: string[];
  /** Opt into the capacity family (concurrency sweep, request-rate runs): docs/capacity.md. */
  capacity?: CapacityProfile;
}

export type Level = 'MUST' | 'SHOULD' | 'INFO';
/** What a check's own run returns. Level and known issues are applied afterwards by grade(). */
export type RawOutcome = 'pass' | 'fail' | 'warn' | 'inconclusive' | 'skip';
/** The closed vocabulary of results (docs/grading.md "Outcomes"). */
/**
 * `inconclusive`: the evidence could not decide (too short, our own client starved, our budget ran out while the server
 * was still working). An outcome of its own: never folded into warn, never turned into a failure by strict mode.
 */
export type Outcome = 'pass' | 'fail' | 'warn' | 'inconclusive' | 'skip' | 'known' | 'known-passing' | 'error';

/** Capabilities a check may require; a profile lacking one skips the check with the reason. */
export type Capability =
  | ApiFlavour
  | 'deterministic' // profile declares deterministic output at temperature 0
  | 'started' // the suite started the server itself (process tree visible)
  | 'multi-slot' // profile declares more than one slot
  | 'hardware' // memory bandwidth + active bytes per token declared
  | 'context-window' // a per-request window is known (declared or discovered)
  | 'tools' // tool calls: skipped only when declared false, else discovered by the family's probe
  | 'structured-output'; // response_format: likewise

export interface Verdict {
  outcome: RawOutcome;
  /** Requirement, Expected, Actual, offending bytes (escaped) — see lib/model/verdict.ts. */
  message: string;
  /**
   * For a `warn`: the figures lean the check's way but no confidence bound is past its threshold (a point estimate
   * past it, a minority of samples, one timing sample). Strict mode fails only a warn on clear evidence — a
   * deterministic observation (bytes, a status code) or a bound past the threshold — so it leaves a borderline warn a
   * warn (docs/grading.md "Timing verdicts"). Absent: clear. Set with `borderline()` from lib/model/verdict.ts.
   */
  borderline?: boolean;
  metrics?: Record<string, unknown>;
  /** Per-request timestamps and wire excerpts, capped; what reports show behind a cell. */
  evidence?: Evidence[];
  /** The check's precondition failed (lib/check/blocked.ts): the runner decides who reports it. */
  precondition?: Precondition;
  /** Inconclusive because a precondition failed that this check reports (lib/check/blocked.ts resolveBlocked). */
  blockedBy?: string;
}

/** What a check needed and did not get: the kind of request and how it was answered. */
export interface Precondition {
  /** The kind of request and its answer, e.g. `streamed POST /v1/chat/completions → HTTP 500`: what identifies one cause. */
  key: string;
  /** One line: what this check's own request got (status, error text). */
  detail: string;
  /**
   * May this check report the failure itself when it meets it first (default: a MUST check may)? False for a check to
   * which the request is only a means (api.stop-sequence's streamed half): it stays inconclusive, naming the check it
   * depends on (its declared `dependsOn`).
   */
  mayReport?: boolean;
  /**
   * The failure is this check's own finding unless the run already reported it as a root cause (an over-long streamed
   * prompt answered 500 on a server that answers every stream 500): blocked then, else graded as it is, never claimed.
   */
  ownFinding?: boolean;
}

export interface Evidence {
  label: string;
  /** Escaped excerpt of raw bytes. */
  wire?: string;
  /** ms since request start of each body read. */
  readTimes?: number[];
  tokenTimes?: number[];
  ttftMs?: number;
  e2eMs?: number;
  status?: number;
  /** Completion tokens of the stream (usage, else estimated) and the generation rate its delivery is judged against. */
  completionTokens?: number;
  referenceTps?: number;
  referenceSource?: string;
}

export interface ServerInfo {
  /** The base URL actually used (with {port} filled in), credentials removed. */
  baseUrl: string;
  identity: {
    name?: string;
    version?: string;
    source?: string;
    raw?: Record<string, unknown>;
    /** Everything that answered about the server (/version, /props, owned_by, /slots, the Server header), in order. */
    signals?: IdentitySignal[];
  };
  contextWindow?: { value: number; source: string };
  trainedContext?: { value: number; source: string };
  /** Requests served at once: declared, or what the server reports (llama.cpp total_slots); absent = unknown. */
  slots?: { value: number; source: string };
  /** The model id requests name: declared, or the one model the server lists when the profile names none/"default". */
  model?: { value: string; source: string };
  /** Which adapter read the figures and why, what the server reported, and where it disagrees with the profile. */
  discovery?: DiscoveryRecord;
  startedPid?: number;
  /** How the wait for readiness went: how long, how many probes; when never ready, why and whether the bound passed. */
  readiness?: { ready: boolean; waitedMs: number; probes?: number; reason?: string; boundPassed?: boolean };
  /** What stopped every check, when something did (lib/server/setup-failure.ts): the reports say it, not a gate. */
  setupFailure?: SetupFailure;
  /** Restarts of a server the suite started that stopped answering mid-run (lib/server/supervisor.ts). */
  restarts?: Array<{ after: string; request: string; process: string; ok: boolean; detail: string }>;
}

/** One answer that says what the server is: where, and the name or version it gives. */
export interface IdentitySignal {
  source: string;
  name?: string;
  version?: string;
}

export interface DiscoveryRecord {
  /** Adapter used (`llama.cpp`, `generic`, …) and how it was chosen (declared, or the identified server). */
  adapter: string;
  why: string;
  /** What the server itself reported, before declarations were applied. */
  reported: {
    window?: { value: number; source: string };
    trained?: { value: number; source: string };
    slots?: { value: number; source: string };
    models?: string[];
    /** Every served-window figure the server states (a total beside a per-slot one): `window` is the smallest. */
    windows?: Array<{ value: number; source: string }>;
  };
  /** Declared values that disagree with reported ones (the declared value is used), and other notes. */
  disagreements: string[];
  /** Where the server's own answers disagree (two windows, two identities), and which one is used. */
  conflicts?: string[];
  notes: string[];
  /** Each API: declared (named in the profile's apis or --apis, not probed) or what one small request found. */
  apis?: ApiFinding[];
}

/** What setup knows about one API the server may offer, and how it knows it (lib/server/api-discovery.ts). */
export interface ApiFinding {
  api: ApiFlavour;
  /** `declared`: named by the profile (or --apis) and not probed; `probed`: decided from the server's answer. */
  source: 'declared' | 'probed';
  /** present: the route answered; absent: a clear "no such route" (404/405/501); unknown: no answer that decides. */
  found: 'declared' | 'present' | 'absent' | 'unknown';
  /** Whether the run tests it: declared, present or unknown (only a clear "no such route" leaves it out). */
  tested: boolean;
  /** The probe request, e.g. "POST /v1/completions" (probed only). */
  endpoint?: string;
  status?: number;
  /** How long the probe took (ms). */
  ms?: number;
  /** The answer's first bytes, escaped, or the failure (probed only). */
  evidence?: string;
  /** One line: why this verdict. */
  why: string;
}

/** One body read, timestamped before any parsing. */
export interface BodyRead {
  /** ms since t0 (just before the request was written). */
  t: number;
  bytes: Uint8Array;
}

export type RequestFailure =
  | 'connect' // nothing answered / refused / DNS
  | 'headers-timeout'
  | 'token-idle' // no token-bearing event within tokenIdleMs
  | 'total-timeout'
  | 'reset' // socket reset / closed by the server mid-response
  | 'overflow' // the server sent too much: past a read cap, a line cap, or far past max_tokens
  | 'not-json' // a non-streamed answer whose first bytes cannot begin the JSON object it must be (an SSE body, HTML)
  | 'aborted'; // aborted by the caller (e.g. cancel checks)

/** The raw recording of one HTTP exchange: what framing checks read. */
export interface Recording {
  method: string;
  url: string;
  /** Request body as sent (redacted, capped). */
  requestBody?: string;
  /** performance.now() at t0, so recordings of parallel requests can be put on one time axis. */
  t0Abs: number;
  status?: number;
  headers: Record<string, string>;
  /** ms since t0 when headers arrived. */
  tHeaders?: number;
  reads: BodyRead[];
  /** ms since t0 when the body ended (or the request failed). */
  tEnd: number;
  /** Concatenated body bytes (capped at maxBytes; `truncated` says so). */
  body: Uint8Array;
  truncated: boolean;
  failure?: { kind: RequestFailure; message: string };
  /** Bytes as they came over the wire (before content decoding). */
  wireBytes?: number;
  /** Whether the request went out on a keep-alive socket that had carried an earlier request. */
  socketReused?: boolean;
  /** Set when this is the one retry after a reset on a reused keep-alive socket (the first attempt's error). */
  retriedAfter?: string;
  /**
   * Not sent (lib/exchange/exchange.ts): the run had seen this kind of request (`kind`, e.g. "POST /v1/chat/completions
   * (stream)") stream past its max_tokens without end, in check `seenIn`.
   */
  notSent?: { kind: string; seenIn?: string };
}

/** One graded check as recorded: what a test attaches to its task and what results.json keeps. */
export interface CheckRecord {
  id: string;
  title: string;
  family: string;
  level: Level;
  outcome: Outcome;
  message: string;
  rationale: string;
  reference: string;
  durationMs?: number;
  /** Figures the check measured (ttft_p50, wall_tps_p50, speedup, curves …). */
  metrics?: Record<string, unknown>;
  /** Per-request timestamps and wire excerpts (capped). */
  evidence?: unknown[];
  /** Our own client's event-loop delay during the check (a starved client cannot grade timing). */
  loopDelay?: { p99Ms: number; maxMs: number };
  /** Inconclusive because a precondition failed: the check that reports the root cause (lib/check/blocked.ts). */
  blockedBy?: string;
  /** The headline figures its metrics carry, as the check declares them (CheckDef.provides; lib/model/figures.ts). */
  provides?: string[];
}

// Our own client's fidelity (lib/run/fidelity.ts measures it).

export interface LagSummary {
  /** Events measured. */
  n: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** What the preflight measured (results.json header `fidelity`; reports show it). */
export interface FidelityPreflight {
  /** Concurrent streams, all in phase (every stream gets an event at the same instant). */
  streams: number;
  /** Server token cadence (ms between events of one stream). */
  cadenceMs: number;
  /** Harness lag (arrival − send) of the events sent while every stream was streaming. */
  lag?: LagSummary;
  /**
   * Per step (the events all streams got at one instant), the smallest lag: what our client adds to an event that
   * waits behind no other stream's event — the lag a check timing one stream at a time meets.
   */
  stepLag?: LagSummary;
  /** Client CPU (user + system) per event received, µs: recording, decoding, metrics. */
  cpuUsPerEvent?: number;
  /** Wall time of the measurement itself (server start excluded), ms. */
  durationMs: number;
  /** Half-width of the clock-conversion bracket, ms. */
  clockUncertaintyMs?: number;
  /** Why there is no measurement (the checks then allow only for their own event-loop delay). */
  error?: string;
}

/** How late our own timestamps may be during a check: the allowance timing verdicts give our client. */
export interface ClientLag {
  /** The allowance (ms): the larger of the check's longest event-loop stall and the preflight's one-stream lag p99. */
  ms: number;
  /** Where it comes from, with the figures: for messages ("… could explain …"). */
  source: string;
}

export interface SetupFailure {
  /**
   * never-ready: the server did not pass its readiness probe within the wait bound, or exited first (exit 3);
   * config: the user's configuration cannot work with this server, e.g. a model it does not serve (exit 2);
   * error: setup itself went wrong (exit 4).
   */
  kind: 'never-ready' | 'config' | 'error';
  /** One line: what went wrong, in the user's terms. */
  summary: string;
  requirement: string;
  expected: string;
  actual: string;
  /** Further evidence, one line each: the lines a server we started printed last, a body excerpt. */
  evidence?: string[];
  /** What to change, when we know. */
  fix?: string;
}

/** The profile's `capacity` field (servers.schema.json): every key optional. */
export interface CapacityProfile {
  /** Highest concurrency of the sweep (default 64), or its levels, each measured (vLLM's --max-concurrency). */
  maxConcurrency?: number | number[];
  /** Requests each stream sends in turn at a level of the sweep (rounds; default 3, at least 2 for a noise band). */
  rounds?: number;
  /** Shortest level (ms, default 1000): on a fast server streams keep sending past `rounds` until it has lasted this long. */
  minLevelMs?: number;
  /** Synthetic prompts: prompt and output lengths in tokens (defaults 64 and 64). */
  inputTokens?: number;
  outputTokens?: number;
  /** A dataset file of prompts instead (JSONL of OpenAI messages arrays, or ShareGPT JSON). */
  dataset?: string;
  slo?: Slo;
  /** Request-rate runs, as fractions of the request rate the saturation level served (default [0.5, 0.9]). */
  rateFractions?: number[];
  /** Requests per request-rate run (default 24). */
  rateRequests?: number;
  /** Request-rate runs at these rates (req/s, "inf": all at once) instead of fractions of saturation (vLLM's --request-rate). */
  requestRates?: Array<number | 'inf'>;
  /** Requests per rate run and at least per sweep level (vLLM's --num-prompts). */
  numPrompts?: number;
  /** Shape of the gamma-distributed gaps of a rate run: 1 Poisson, "inf" constant (vLLM's --burstiness). */
  burstiness?: number | 'inf';
  /** Levels measured past the saturation point, to see overload (default 1). */
  overloadLevels?: number;
  /** KV cache bytes read per stream per decode step (GB), for the batched-decode bound (default 0: weights only). */
  kvBytesPerStreamGB?: number;
  /** Seed of the Poisson arrivals (default 1). */
  seed?: number;
}

export interface Slo {
  ttftP99Ms?: number;
  itlP99Ms?: number;
  e2eP99Ms?: number;
}

/**
 * The run's settings as data: what the command line, the Action or a checkout's `npx vitest` asks of a run
 * (lib/config/settings.ts reads them from the environment, once).
 */
export interface RunSettings {
  tier: 'quick' | 'full';
  /** SHOULD checks fail (CONFORMANCE_STRICT=1). */
  strict: boolean;
  /** Bound on the wait for readiness in s (CONFORMANCE_WAIT_S, --wait); absent: the profile's startTimeoutMs. */
  waitS?: number;
  /** Bound on the checks in s, counted from readiness (CONFORMANCE_DEADLINE_S, --deadline). */
  deadlineS?: number;
  /** The health sentinel runs (CONFORMANCE_HEALTH_SENTINEL=0 turns it off) … */
  sentinel: boolean;
  /** … and waits this long (ms) for a slowed server to recover (CONFORMANCE_HEALTH_WAIT_S). */
  healthWaitMs?: number;
  /** The fidelity preflight runs (CONFORMANCE_PREFLIGHT=0 turns it off). */
  preflight: boolean;
  /** A capacity run was asked for (CONFORMANCE_CAPACITY=1, --capacity), with an SLO and a dataset. */
  capacity: boolean;
  slo?: string;
  dataset?: string;
  /** The capacity flags given, by flag name (`max-concurrency`, …), as text (lib/capacity/config.ts parses them). */
  capacityFlags: Partial<Record<string, string>>;
  /** Machine label recorded in results (CONFORMANCE_MACHINE, --machine). */
  machine?: string;
  /** The llama.cpp bundle's folder (CONFORMANCE_LLAMA_DIR). */
  llamaDir?: string;
}
