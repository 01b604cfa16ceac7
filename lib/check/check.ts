// Checks are declared data plus a run function; grading applies level, strict mode and known issues.
// Nothing here knows about Vitest: suites/support/ registers checks as tests, test/ runs them directly.

import { monitorEventLoopDelay } from 'node:perf_hooks';
import { API_FLAVOURS } from '../config/apis.ts';
import { effectiveProfile } from '../config/effective.ts';
import { redact } from '../config/secrets.ts';
import { defaultSettings } from '../config/settings.ts';
import { makeRequester } from '../exchange/requester.ts';
import { gateTimingVerdict } from '../grading/health-gate.ts';
import { endlessCauseKey } from '../grading/preconditions.ts';
import { describeEvidence, endlessSeenBy } from '../measure/deadline-evidence.ts';
import { budgetText } from '../measure/deadlines.ts';
import { clientLag } from '../measure/fidelity.ts';
import { observations, paceKey, paceOf } from '../measure/pace.ts';
import type { CheckContext, CheckDef, RunMemory, Tier } from '../model/check.ts';
import type {
  ApiFlavour,
  Capability,
  FidelityPreflight,
  Outcome,
  Profile,
  RunSettings,
  ServerInfo,
  Verdict,
} from '../model/types.ts';
import { inconclusive, NotMeasurable } from '../model/verdict.ts';
import { apiSkipReason } from '../server/api-discovery.ts';
import { describeRequest, requestsSince } from '../server/health.ts';
import { healthAfterTiming, readSentinel, timingCheck } from '../server/sentinel.ts';
import { type RootCauseStore, resolveBlocked, rootCauses } from './blocked.ts';
import { TIMING_FAMILIES } from './family-order.ts';

const isApi = (cap: Capability): cap is ApiFlavour => (API_FLAVOURS as readonly string[]).includes(cap);

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
  /** What the run remembers (lib/run/memory.ts): checks of one run share it. */
  memory: RunMemory;
  /** The run's settings (default: every default). */
  settings?: RunSettings;
  /** The run's root causes (lib/check/blocked.ts): default, the memory's. */
  causes?: RootCauseStore;
}

export function makeContext(
  check: CheckDef,
  o: ContextOptions,
  signal: AbortSignal,
  loopDelay: () => { p99Ms: number; maxMs: number },
): CheckContext {
  const req = makeRequester({ ...o, owner: check.id, signal });
  return {
    ...req,
    check,
    settings: o.settings ?? defaultSettings(),
    tier: o.tier ?? 'quick',
    strict: o.strict ?? false,
    threshold(name) {
      const override = o.profile.thresholds?.[check.id]?.[name];
      if (override !== undefined) return override;
      const d = check.thresholds?.[name];
      if (!d) throw new Error(`harness bug: check ${check.id} has no threshold named "${name}"`);
      return d.value;
    },
    progress: (m) => (o.progress ? o.progress(redact(`${check.id}: ${m}`, req.secrets)) : req.log(m)),
    loopDelay,
    // A shared recording's lateness, sampled at 1 ms while it was made (lib/exchange/recordings.ts), is the evidence for what it
    // recorded; the check's own monitor samples every 10 ms and so never reads below ~10 ms (lib/measure/client-lag.ts).
    clientLag: (recording) => clientLag(recording ?? loopDelay(), o.preflight),
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
  const since = Date.now();
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
                    paceOf(observations(ctx.memory, paceKey(ctx.baseUrl, ctx.profile.model))),
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
    const ms = performance.now() - t0;
    // No timing check passes on a server degraded right after it (lib/grading/health-gate.ts).
    const gated = gateTimingVerdict(check.id, verdict, await healthAfter(check, o, since, ctx.secrets));
    // One root cause, one failure: a failed precondition is reported by one check, the others are blocked by it.
    const causes = o.causes ?? rootCauses(o.memory);
    const resolved = resolveBlocked(check, gated, causes);
    // A check that failed on a stream that never ended reported that cause: a later check not sent such a request
    // is blocked by it, not a second report of the same finding.
    if (resolved.outcome === 'fail')
      for (const [kind, e] of endlessSeenBy(o.memory, check.id))
        causes.claim({ check: check.id, key: endlessCauseKey(kind), detail: describeEvidence(e) });
    return { verdict: resolved, loopDelay: loop(), ms };
  } finally {
    if (timer) clearTimeout(timer);
    h.disable();
  }
}

/**
 * The health probe right after a timing check, against the run's start-of-run baseline (lib/server/sentinel.ts):
 * only where the run measured one (the sentinel on), and not after a destructive check (its verdict is about its bad
 * input's answer; the sentinel's probe after it names it as the cause). One short request on a healthy server.
 */
async function healthAfter(check: CheckDef, o: ContextOptions, since: number, secrets: string[]) {
  if (check.destructive || !timingCheck(check, TIMING_FAMILIES)) return undefined;
  const s = readSentinel(o.memory);
  if (!s.baseline || s.off || s.degraded) return undefined;
  const last = requestsSince(since).at(-1);
  return healthAfterTiming(
    {
      profile: o.profile,
      server: o.server,
      memory: o.memory,
      runId: o.runId ?? 'run',
      deadlineAt: o.deadlineAt,
      waitBoundMs: o.settings?.healthWaitMs,
      log: o.log,
    },
    check,
    last && redact(describeRequest(last), secrets),
  );
}

/** How long a check whose bound ran out may take to grade what it measured before the runner answers for it. */
const BOUND_GRACE_MS = 3_000;
const fmtSeconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** The run's deadline (CONFORMANCE_DEADLINE_S) cut the check: our budget, never the server's failure. */
export class RunDeadlineReached extends Error {}
