// Registers declared checks as Vitest tests: one describe per profile id (so JUnit/JSON output tell
// servers apart), one test per check whose name starts with the check id.
import { describe, test, inject } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { grade, runCheck, skipReason, type CheckDef, type Tier } from '../../lib/check.ts';
import { isAlive } from '../../lib/lifecycle.ts';
import { redact, redactDeep } from '../../lib/secrets.ts';
import type { ConformanceMeta } from './provided.d.ts';

export function tierFromEnv(): Tier {
  const t = process.env.CONFORMANCE_TIER ?? 'quick';
  if (t !== 'quick' && t !== 'full') throw new Error(`CONFORMANCE_TIER must be "quick" or "full", not "${t}"`);
  return t;
}
export const strictFromEnv = () => process.env.CONFORMANCE_STRICT === '1';

/** Raised for our side's problems (setup, dead server, harness bug): reported as `error`, never `fail`. */
class ConformanceError extends Error {
  override name = 'ConformanceError';
}
class ConformanceFailure extends Error {
  override name = 'ConformanceFailure';
}

function diedMarker(): string {
  return join(inject('stateDir'), 'server-died.json');
}

export function registerChecks(family: string, checks: CheckDef[]): void {
  const profile = inject('profile');
  const server = inject('server');
  const setupError = inject('setupError');
  const tier = tierFromEnv();
  const strict = strictFromEnv();

  describe(profile.id, () => {
    for (const check of checks) {
      if (!check.id.startsWith(`${family}.`)) throw new Error(`check ${check.id} registered under family ${family}`);
      const reason = setupError ? undefined : skipReason(check, profile, server, tier);
      test(`${check.id} — ${check.title}`, { timeout: (check.timeoutMs ?? 60_000) + 15_000 }, async (t) => {
        const meta: ConformanceMeta = {
          id: check.id,
          title: check.title,
          family,
          level: check.level,
          outcome: 'error',
          message: '',
          rationale: check.rationale,
          reference: check.reference,
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
        if (existsSync(diedMarker())) {
          const died = JSON.parse(readFileSync(diedMarker(), 'utf8')) as { during: string };
          finish('error', `server died during ${died.during}`);
          t.skip(meta.message);
          return;
        }
        if (reason) {
          finish('skip', reason);
          t.skip(reason);
          return;
        }
        let result;
        try {
          result = await runCheck(check, { profile, server, tier, strict, runId: inject('runId') });
        } catch (e) {
          const alive = await isAlive(server.baseUrl, {}).catch(() => false);
          if (!alive) writeFileSync(diedMarker(), JSON.stringify({ during: check.id }));
          finish('error', alive ? `harness error in ${check.id}: ${(e as Error).stack ?? e}` : `server died during ${check.id}: ${(e as Error).message}`);
          throw new ConformanceError(meta.message);
        }
        const graded = grade(check, result.verdict, profile, strict);
        finish(graded.outcome, graded.message);
        meta.durationMs = result.ms;
        meta.loopDelay = result.loopDelay;
        meta.metrics = redactDeep(result.verdict.metrics);
        meta.evidence = redactDeep(result.verdict.evidence);
        if (graded.outcome === 'fail') {
          const alive = await isAlive(server.baseUrl, {}).catch(() => false);
          if (!alive) {
            writeFileSync(diedMarker(), JSON.stringify({ during: check.id }));
            meta.message += `\n(the server stopped answering during this check)`;
          }
          throw new ConformanceFailure(`${check.id} [${check.level}] ${meta.message}`);
        }
        if (graded.outcome === 'skip') {
          t.skip(meta.message);
          return;
        }
        // No verdict either way: Vitest (and so JUnit) shows it as skipped, with the reason.
        if (graded.outcome === 'inconclusive') {
          t.skip(`INCONCLUSIVE: ${meta.message}`);
          return;
        }
        if (graded.outcome !== 'pass') await t.annotate(`${graded.outcome.toUpperCase()}: ${meta.message}`, graded.outcome === 'warn' ? 'warning' : 'notice');
      });
    }
  });
}
