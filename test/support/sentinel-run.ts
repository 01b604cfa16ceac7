// The health sentinel around one check, as suites/support/register.ts runs it in a conformance run, for the self-tests
// that run checks directly (test/proofs.test.ts, test/real-llama/harness.ts): a timing check on a degraded server is
// not run (its verdict: inconclusive naming the degradation); a disturbing check is followed by a probe.
import { runCheck } from '../../lib/check/check.ts';
import { TIMING_FAMILIES } from '../../lib/check/family-order.ts';
import { defaultSettings } from '../../lib/config/settings.ts';
import type { CheckDef } from '../../lib/model/check.ts';
import type { Verdict } from '../../lib/model/types.ts';
import { describeRequest, requestsSince } from '../../lib/server/health.ts';
import {
  disturbing,
  noteCheckEnded,
  readSentinel,
  type SentinelContext,
  sentinelAfter,
  sentinelBefore,
  timingCheck,
} from '../../lib/server/sentinel.ts';

export interface SentinelRun {
  verdict: Verdict;
  /** It times the server (probed before). */
  timing: boolean;
  /** The server was already degraded when it came up. */
  afterDegraded: boolean;
}

export async function runWithSentinel(
  sc: SentinelContext,
  check: CheckDef,
  options: Omit<Parameters<typeof runCheck>[1], 'memory'>,
): Promise<SentinelRun> {
  const timing = timingCheck(check, TIMING_FAMILIES);
  const degraded = timing ? await sentinelBefore(sc, check) : undefined;
  const afterDegraded = readSentinel(sc.memory).degraded !== undefined;
  if (degraded) return { timing, afterDegraded, verdict: { outcome: 'inconclusive', message: degraded } };
  const since = Date.now();
  // The health gate after a timing check (lib/check/check.ts) waits for a recovery as long as the run's sentinel.
  const settings = { ...defaultSettings(), healthWaitMs: sc.waitBoundMs };
  const { verdict } = await runCheck(check, { settings, ...options, memory: sc.memory });
  const last = requestsSince(since).at(-1);
  noteCheckEnded(sc.memory, check.id, last && describeRequest(last));
  if (disturbing(check)) await sentinelAfter(sc, check);
  return { timing, afterDegraded, verdict };
}
