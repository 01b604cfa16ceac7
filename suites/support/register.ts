// Registers declared checks as Vitest tests: one describe per profile id (so JUnit/JSON output tell
// servers apart), one test per check whose name starts with the check id.

import { format } from 'node:util';
import { describe, inject, test } from 'vitest';
import { grade, RunDeadlineReached, runCheck, skipReason } from '../../lib/check/check.ts';
import { FAMILY_ORDER, TIMING_FAMILIES } from '../../lib/check/family-order.ts';
import { requestAuth } from '../../lib/config/request-auth.ts';
import { redact, redactDeep } from '../../lib/config/secrets.ts';
import type { CheckDef, RunMemory } from '../../lib/model/check.ts';
import type { RunSettings } from '../../lib/model/types.ts';
import { runMemory } from '../../lib/run/memory.ts';
import type { RunSnapshot } from '../../lib/run/run.ts';
import { describeRequest, probeBudgetMs, requestsSince } from '../../lib/server/health.ts';
import {
  disturbing,
  noteCheckEnded,
  SENTINEL,
  type SentinelContext,
  sentinelAfter,
  sentinelBefore,
  timingCheck,
} from '../../lib/server/sentinel.ts';
import { afterCheck, deadlineHit, firstTime, type GuardContext, markDeadlineHit, readBreaker } from './guard.ts';
import type { ConformanceMeta } from './provided.d.ts';

/**
 * Whatever a check (or a client library it drives: ollama-js prints the bodies it cannot parse) writes to the console
 * is redacted: a server that echoes the request headers must not put the key into the log or JUnit's system-out.
 */
for (const level of ['log', 'info', 'warn', 'error', 'debug'] as const) {
  const write = console[level].bind(console);
  console[level] = (...args: unknown[]) => write(redact(format(...args)));
}

/**
 * What the run remembers in this worker: its local slices, and the run's shared state in the run's state file
 * (lib/run/memory.ts), which every test file's worker reads and writes in turn.
 */
let workerMemory: RunMemory | undefined;
const memory = (): RunMemory => {
  workerMemory ??= runMemory(run().stateFile);
  return workerMemory;
};

/** The run as its global setup built it (lib/run/run.ts): one snapshot for the whole worker. */
const run = (): RunSnapshot => inject('run');
/** The run's settings (lib/config/settings.ts), read once by the global setup. */
const settings = (): RunSettings => run().settings;

/** When this module was evaluated: the family's own imports follow, and their cost sizes the deadline's reserve. */
const moduleLoadedAt = Date.now();

/** Raised for our side's problems (setup, dead server, harness bug): reported as `error`, never `fail`. */
class ConformanceError extends Error {
  override name = 'ConformanceError';
}
class ConformanceFailure extends Error {
  override name = 'ConformanceFailure';
}

/** Observing checks first, destructive ones (fuzzing, absurd values, over-long prompts) after them. */
export function runOrder(checks: CheckDef[]): CheckDef[] {
  return [...checks.filter((c) => !c.destructive), ...checks.filter((c) => c.destructive)];
}

function guardContext(deadlineAt: number): GuardContext {
  const profile = run().profile;
  const { headers, secrets } = requestAuth(profile);
  return {
    profile,
    server: run().server,
    headers,
    secrets,
    memory: memory(),
    supervisor: run().supervisor,
    deadlineAt: deadlineAt || undefined,
  };
}

function sentinelContext(deadlineAt: number): SentinelContext {
  return {
    profile: run().profile,
    server: run().server,
    memory: memory(),
    runId: run().runId,
    deadlineAt: deadlineAt || undefined,
    waitBoundMs: healthWaitMs(),
    log: (line) => console.log(`[${run().profile.id}] ${line}`),
  };
}

/** The sentinel's worst case around one check: its wait for a recovery and a few probes at their longest bound. */
const sentinelMs = () => healthWaitMs() + 6 * SENTINEL.maxBoundMs;
/** The sentinel's wait for a slowed server to recover (the run's settings, else its default). */
const healthWaitMs = () => settings().healthWaitMs ?? SENTINEL.waitBoundMs;

/**
 * When checks of this file must stop so the run still ends by its deadline: every file after this one costs a worker
 * start and its imports even when its checks are not run (measured here as this file's own import time, at least
 * 2 s a file), and the reporters need the reserve lib/run/run-deadline.ts keeps.
 */
function fileDeadline(fileFamily: string, importMs: number): number {
  const deadline = run().deadlineAt;
  if (!deadline) return 0;
  const order = FAMILY_ORDER;
  const at = order.indexOf(fileFamily);
  const after = at === -1 ? order.length : order.length - 1 - at;
  return deadline - after * Math.max(2_000, 3 * importMs);
}

export function registerChecks(family: string, checks: CheckDef[], fileFamily = family): void {
  const importMs = Date.now() - moduleLoadedAt;
  const profile = run().profile;
  const server = run().server;
  const setupError = run().setupError;
  const { tier, strict } = settings();

  describe(profile.id, () => {
    for (const check of runOrder(checks)) {
      if (!check.id.startsWith(`${family}.`)) throw new Error(`check ${check.id} registered under family ${family}`);
      const reason = setupError ? undefined : skipReason(check, profile, server, tier);
      // Room for the check, then the health probe and a restart of the server (suites/support/guard.ts).
      const guardMs = 10_000 + probeBudgetMs(profile) + profile.startTimeoutMs + 15_000 + sentinelMs();
      test(`${check.id} — ${check.title}`, { timeout: (check.timeoutMs ?? 60_000) + 15_000 + guardMs }, async (t) => {
        const meta: ConformanceMeta = {
          id: check.id,
          title: check.title,
          family,
          level: check.level,
          outcome: 'error',
          message: '',
          rationale: check.rationale,
          reference: check.reference,
          ...(check.provides?.length ? { provides: [...check.provides] } : {}),
          profileId: profile.id,
        };
        t.task.meta.conformance = meta;
        const finish = (outcome: ConformanceMeta['outcome'], message: string) => {
          meta.outcome = outcome;
          meta.message = redact(message);
        };
        // Our side's problems are reported once (setup.server-ready, or the check in flight when the server
        // died); every other check records `error` in its meta and is skipped in Vitest, not a wall of failures.
        if (setupError) {
          finish('error', `setup error: ${setupError}`);
          t.skip('setup error (see setup.server-ready)');
          return;
        }
        // Circuit breaker open (the server stopped answering): not run, at once. The first such check fails in
        // Vitest (so the exit status and JUnit say so even when the check in flight did not fail); the rest skip.
        const breaker = readBreaker(memory()).open;
        if (breaker) {
          finish('error', breaker.message);
          if (firstTime(memory(), 'breaker')) throw new ConformanceError(meta.message);
          t.skip(meta.message);
          return;
        }
        const deadline = fileDeadline(fileFamily, importMs);
        // Once one check met the deadline, no later one starts (later files' own bounds are later, not looser).
        if (deadline && (Date.now() >= deadline || deadlineHit(memory()))) {
          markDeadlineHit(memory());
          finish(
            'error',
            `not run: the run deadline passed (CONFORMANCE_DEADLINE_S=${settings().deadlineS ?? 0}; checks stop a reserve before it so every report is written)`,
          );
          if (firstTime(memory(), 'deadline')) throw new ConformanceError(meta.message);
          t.skip(meta.message);
          return;
        }
        if (reason) {
          finish('skip', reason);
          t.skip(reason);
          return;
        }
        // The health sentinel (lib/server/sentinel.ts): a timing check on a server degraded since an earlier check is
        // not graded, and a check that may leave the server slower is followed by a probe.
        const sentinel = settings().sentinel ? sentinelContext(deadline) : undefined;
        if (sentinel && timingCheck(check, TIMING_FAMILIES)) {
          const degraded = await sentinelBefore(sentinel, check);
          if (degraded) {
            finish('inconclusive', degraded);
            t.skip(`INCONCLUSIVE: ${meta.message}`);
            return;
          }
        }
        let result;
        const since = Date.now();
        try {
          result = await runCheck(check, {
            profile,
            server,
            tier,
            strict,
            runId: run().runId,
            // The run's settings: the health gate after a timing check waits CONFORMANCE_HEALTH_WAIT_S for a recovery.
            settings: settings(),
            deadlineAt: deadline || undefined,
            preflight: run().fidelity,
            // One root cause, one failure, across the run's test files (lib/check/blocked.ts), and everything
            // else the run remembers: its memory, shared with the other files' workers (lib/run/memory.ts).
            memory: memory(),
            // A check's progress lines reach the reporters in the main process as annotations, as they happen
            // (cli/progress-reporter.ts prints them); one that fails to send must not fail the check.
            progress: (line) => {
              t.annotate(line, 'progress').catch(() => {});
            },
          });
        } catch (e) {
          // Our budget ran out while the server was still working: no evidence either way (docs/grading.md "Who owns a deadline").
          if (e instanceof RunDeadlineReached) {
            markDeadlineHit(memory());
            finish(
              'inconclusive',
              `${(e as Error).message} (CONFORMANCE_DEADLINE_S=${settings().deadlineS ?? 0}): our budget, not the server's failure`,
            );
            t.skip(`INCONCLUSIVE: ${meta.message}`);
            return;
          }
          const note = await afterCheck(guardContext(deadline), check.id, !!check.destructive, since, true);
          finish(
            'error',
            note
              ? `${note.replace(/^\(|\)$/g, '')} — the check ended with: ${(e as Error).message}`
              : `harness error in ${check.id}: ${(e as Error).stack ?? e}`,
          );
          throw new ConformanceError(meta.message);
        }
        const graded = grade(check, result.verdict, profile, strict);
        // The check's own last request (before the guard's probe adds its own): what preceded a degradation.
        const last = requestsSince(since).at(-1);
        const note = await afterCheck(guardContext(deadline), check.id, !!check.destructive, since, false);
        noteCheckEnded(memory(), check.id, last && redact(describeRequest(last), requestAuth(profile).secrets));
        const sick =
          sentinel && disturbing(check) && !readBreaker(memory()).open
            ? await sentinelAfter(sentinel, check)
            : undefined;
        const notes = [note, sick].filter(Boolean).join('\n');
        finish(graded.outcome, notes ? `${graded.message}\n${notes}` : graded.message);
        meta.durationMs = result.ms;
        meta.loopDelay = result.loopDelay;
        if (result.verdict.blockedBy) meta.blockedBy = result.verdict.blockedBy;
        meta.metrics = redactDeep(result.verdict.metrics);
        meta.evidence = redactDeep(result.verdict.evidence);
        if (graded.outcome === 'fail') throw new ConformanceFailure(`${check.id} [${check.level}] ${meta.message}`);
        if (graded.outcome === 'skip') {
          t.skip(meta.message);
          return;
        }
        // No verdict either way: Vitest (and so JUnit) shows it as skipped, with the reason.
        if (graded.outcome === 'inconclusive') {
          t.skip(`INCONCLUSIVE: ${meta.message}`);
          return;
        }
        if (graded.outcome !== 'pass')
          await t.annotate(
            `${graded.outcome.toUpperCase()}: ${meta.message}`,
            graded.outcome === 'warn' ? 'warning' : 'notice',
          );
      });
    }
  });
}
