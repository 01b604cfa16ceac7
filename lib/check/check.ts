// Checks are declared data plus a run function; grading applies level, strict mode and known issues.
// Nothing here knows about Vitest: suites/support/ registers checks as tests, test/ runs them directly.

import { randomBytes } from 'node:crypto';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { capacityRequested } from '../capacity/config.ts';
import { API_FLAVOURS } from '../config/apis.ts';
import { requestAuth } from '../config/request-auth.ts';
import { redact, stripUrlCredentials } from '../config/secrets.ts';
import { DEFAULT_DEADLINES } from '../http/recorder.ts';
import { budgetText } from '../measure/deadlines.ts';
import { observations, paceKey, paceOf } from '../measure/pace.ts';
import { type ClientLag, clientLag, type FidelityPreflight } from '../run/fidelity.ts';
import { apiSkipReason } from '../server/api-discovery.ts';
import { effectiveProfile } from '../server/discovery.ts';
import { memoryStore, type RootCauseStore, resolveBlocked } from './blocked.ts';
import { inconclusive } from './messages.ts';
import type { ApiFlavour, Capability, Deadlines, Level, Outcome, Profile, ServerInfo, Verdict } from './types.ts';

const isApi = (cap: Capability): cap is ApiFlavour => (API_FLAVOURS as readonly string[]).includes(cap);

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
  run(ctx: CheckContext): Promise<Verdict>;
}

export interface CheckContext {
  check: CheckDef;
  profile: Profile;
  server: ServerInfo;
  /** Base URL without credentials and without a trailing slash or /v1. */
  baseUrl: string;
  /** Headers for every request (Authorization when the profile names a key). */
  headers: Record<string, string>;
  /** Secret values to scrub from anything recorded. */
  secrets: string[];
  deadlines: Deadlines;
  tier: Tier;
  strict: boolean;
  /** Unique per run: every prompt starts with text unique to the request and the run. */
  runId: string;
  /** A fresh nonce for one request. */
  nonce(): string;
  /** Threshold by name: profile override, else the check's default. */
  threshold(name: string): number;
  /** Progress and estimates for long checks (one line each, prefixed with the check id): the live line's note. */
  log(message: string): void;
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
  signal: AbortSignal;
  /** The run's state directory (cross-file state: the health sentinel's), when the check runs in a conformance run. */
  stateDir?: string;
}

interface ContextOptions {
  profile: Profile;
  server: ServerInfo;
  tier?: Tier;
  strict?: boolean;
  runId?: string;
  log?: (line: string) => void;
  /** Where ctx.progress lines go (suites/support/register.ts: a Vitest annotation the CLI prints); default: log. */
  progress?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /** The run's fidelity preflight, when it ran. */
  preflight?: FidelityPreflight;
  /** Epoch ms of the run deadline: the check is cut there (RunDeadlineReached). */
  deadlineAt?: number;
  /** The run's state directory (suites/support/register.ts). */
  stateDir?: string;
  /** The run's root causes (lib/check/blocked.ts): default, one in memory per runId. */
  causes?: RootCauseStore;
}

let nonceCounter = 0;

export function makeContext(
  check: CheckDef,
  o: ContextOptions,
  signal: AbortSignal,
  loopDelay: () => { p99Ms: number; maxMs: number },
): CheckContext {
  const env = o.env ?? process.env;
  // Credentials come from the profile's base URL; the URL we talk to is the one setup resolved (credentials stripped).
  const url = stripUrlCredentials(o.server.baseUrl).url;
  const { headers, secrets } = requestAuth(o.profile, env);
  const runId = o.runId ?? randomBytes(4).toString('hex');
  return {
    check,
    // The resolved model id and the declared or discovered slots (lib/server/discovery.ts): what the checks request and judge.
    profile: effectiveProfile(o.profile, o.server),
    server: o.server,
    baseUrl: url.replace(/\/+$/, ''),
    headers,
    secrets,
    deadlines: { ...DEFAULT_DEADLINES, ...o.profile.deadlines },
    tier: o.tier ?? 'quick',
    strict: o.strict ?? false,
    runId,
    nonce: () => `${runId}-${(++nonceCounter).toString(36)}-${randomBytes(3).toString('hex')}`,
    threshold(name) {
      const override = o.profile.thresholds?.[check.id]?.[name];
      if (override !== undefined) return override;
      const d = check.thresholds?.[name];
      if (!d) throw new Error(`harness bug: check ${check.id} has no threshold named "${name}"`);
      return d.value;
    },
    log: (m) => (o.log ?? console.log)(redact(`[${check.id}] ${m}`, secrets)),
    progress: (m) =>
      o.progress
        ? o.progress(redact(`${check.id}: ${m}`, secrets))
        : (o.log ?? console.log)(redact(`[${check.id}] ${m}`, secrets)),
    loopDelay,
    // A shared recording's lateness, sampled at 1 ms while it was made (lib/http/recordings.ts), is the evidence for what it
    // recorded; the check's own monitor samples every 10 ms and so never reads below ~10 ms (lib/measure/client-lag.ts).
    clientLag: (recording) => clientLag(recording ?? loopDelay(), o.preflight),
    signal,
    stateDir: o.stateDir,
  };
}

/** Why a check cannot run on this profile (capability or tier), or undefined. */
export function skipReason(check: CheckDef, profile: Profile, server: ServerInfo, tier: Tier): string | undefined {
  if (check.tier === 'full' && tier !== 'full') return `full tier only (CONFORMANCE_TIER=full)`;
  const effective = effectiveProfile(profile, server);
  const slots = effective.slots;
  for (const cap of check.requires) {
    if ((cap === 'tools' || cap === 'structured-output') && profile.capabilities?.[cap] === false)
      return `profile "${profile.id}" declares capability "${cap}" false ("capabilities")`;
    const missing =
      (cap === 'deterministic' && !profile.deterministic) ||
      (cap === 'started' && server.startedPid === undefined) ||
      // Unknown slots do not skip: the check runs on the batching parallel.speedup-2 measured (lib/measure/batching.ts).
      (cap === 'multi-slot' && slots !== undefined && slots < 2) ||
      (cap === 'hardware' && !profile.hardware) ||
      (cap === 'capacity' && !capacityRequested(profile)) ||
      (cap === 'context-window' && !server.contextWindow);
    // An API: declared, or not ruled out by setup's probe (lib/server/api-discovery.ts).
    if (isApi(cap) && !effective.apis.includes(cap)) return apiSkipReason(profile, server, cap);
    if (missing) return `profile "${profile.id}" does not declare capability "${cap}"${hint(cap)}`;
  }
  return undefined;
}

function hint(cap: Capability): string {
  switch (cap) {
    case 'deterministic':
      return ' (set "deterministic": true if the server is deterministic at temperature 0)';
    case 'started':
      return ' (needs a "start" command so the suite can watch the process)';
    case 'multi-slot':
      return ' (1 slot, declared or reported by the server)';
    case 'hardware':
      return ' (set "hardware": memory bandwidth and active bytes per token)';
    case 'context-window':
      return ' (no window discovered: set context.declared)';
    case 'capacity':
      return ' (a capacity run is asked for with --capacity, or "capacity" in the profile: docs/capacity.md)';
    default:
      return '';
  }
}

interface Graded {
  outcome: Outcome;
  message: string;
  raw: Verdict['outcome'];
}

/**
 * Level is only the default severity: MUST fails, SHOULD warns (fails under strict), INFO never fails. A raw warn
 * fails under strict unless the verdict marks its evidence `borderline`; `inconclusive` stays inconclusive.
 * A check listed as a known issue is `known` when it fails and `known-passing` (loudly) when it passes.
 */
export function grade(check: CheckDef, v: Verdict, profile: Profile, strict: boolean): Graded {
  let outcome: Outcome = v.outcome;
  let message = v.message;
  if (v.outcome === 'fail' && check.level === 'SHOULD' && !strict) {
    outcome = 'warn';
    message = `SHOULD not met (fails under CONFORMANCE_STRICT=1): ${message}`;
  }
  if (v.outcome === 'fail' && check.level === 'INFO') outcome = 'warn';
  // Strict mode fails a warn only on clear evidence (docs/grading.md "Levels and strict mode"): a borderline one stays a
  // warn and says why. It never touches `inconclusive`: that is no evidence against the server.
  if (v.outcome === 'warn' && strict && check.level !== 'INFO') {
    if (v.borderline)
      message = `borderline evidence, not failed under CONFORMANCE_STRICT=1 (no confidence bound past the threshold): ${message}`;
    else outcome = 'fail';
  }
  const known = profile.knownIssues?.find((k) => k.check === check.id);
  if (known) {
    if (outcome === 'fail' || outcome === 'warn') {
      outcome = 'known';
      message = `known issue (${known.reason}${known.link ? `, ${known.link}` : ''}): ${message}`;
    } else if (outcome === 'pass') {
      outcome = 'known-passing';
      message = `KNOWN ISSUE NOW PASSES — remove it from servers.json knownIssues of "${profile.id}" (${known.reason}). ${message}`;
    }
  }
  return { outcome, message, raw: v.outcome };
}

/** Run one check with its timeout and an event-loop delay monitor. Harness exceptions propagate. */
export async function runCheck(
  check: CheckDef,
  o: ContextOptions,
): Promise<{ verdict: Verdict; loopDelay: { p99Ms: number; maxMs: number }; ms: number }> {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  // An empty histogram (a check shorter than one 10 ms sample, e.g. reading a shared recording) reports 0, not noise.
  const loop = () => (h.count === 0 ? { p99Ms: 0, maxMs: 0 } : { p99Ms: h.percentile(99) / 1e6, maxMs: h.max / 1e6 });
  const ac = new AbortController();
  const own = check.timeoutMs ?? 60_000;
  const left = o.deadlineAt === undefined ? Infinity : Math.max(0, o.deadlineAt - Date.now());
  const limit = Math.min(own, left);
  const t0 = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const ctx = makeContext(check, o, ac.signal, loop);
    // A check the server's answers make impossible to measure is inconclusive, never a harness error.
    const running = check.run(ctx).catch((e: unknown) => {
      if (e instanceof NotMeasurable) return inconclusive(e.message);
      throw e;
    });
    const verdict = await Promise.race([
      running,
      new Promise<Verdict>((resolve, reject) => {
        timer = setTimeout(() => {
          if (limit < own) {
            ac.abort();
            reject(
              new RunDeadlineReached(`check ${check.id} cut by the run deadline after ${Math.round(limit / 1000)} s`),
            );
            return;
          }
          // The check's own bound running out is ours too (lib/measure/deadlines.ts): the check is told (its requests end
          // `aborted`) and gets a moment to grade what it has; if it cannot, the verdict is inconclusive, naming the
          // server's measured speed — never a fail, never an error.
          ac.abort(new Error(`the check's ${limit} ms bound ran out`));
          timer = setTimeout(
            () =>
              resolve(
                inconclusive(
                  budgetText(
                    `${check.id} finished`,
                    paceOf(observations(paceKey(ctx.baseUrl, ctx.profile.model))),
                    `its bound of ${fmtSeconds(limit)}`,
                  ),
                ),
              ),
            BOUND_GRACE_MS,
          );
        }, limit);
      }),
    ]);
    running.catch(() => undefined); // a check still running after its grace must not surface as an unhandled rejection
    // One root cause, one failure: a failed precondition is reported by one check, the others are blocked by it.
    const causes = o.causes ?? memoryStore(ctx.runId);
    return { verdict: resolveBlocked(check, verdict, causes), loopDelay: loop(), ms: performance.now() - t0 };
  } finally {
    if (timer) clearTimeout(timer);
    h.disable();
  }
}

/** How long a check whose bound ran out may take to grade what it measured before the runner answers for it. */
const BOUND_GRACE_MS = 3_000;
const fmtSeconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** Thrown where the server's answers leave nothing to measure (no usage to calibrate prompts with, …). */
export class NotMeasurable extends Error {}
/** The run's deadline (CONFORMANCE_DEADLINE_S) cut the check: our budget, never the server's failure. */
export class RunDeadlineReached extends Error {}
