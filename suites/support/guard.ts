// After each check: did the server stop answering? The circuit breaker of a project's run, shared by the test files
// (each runs in its own worker) through a small state file in the run's state directory.
//
// - A check that ended on requests without an answer (or threw) is followed by one bounded health probe.
// - Not answering, and the suite started the server: ask the supervisor (main process) to restart it, note the
//   request after which it stopped answering, and go on.
// - Not answering otherwise (or restarts used up): the breaker opens; every later check is `error`, at once, naming
//   the check and the request ("stopped answering after …"; "server died during …" only when the process exited).
// - Still answering, but several observing checks in a row ended on hung requests: the breaker opens too (each such
//   check would otherwise wait out its own deadlines). Destructive checks do not count toward that streak: a hang on
//   invalid input is their finding, and the probe decides for them.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { redact } from '../../lib/config/secrets.ts';
import { recentRequests } from '../../lib/http/transport.ts';
import type { Profile, ServerInfo } from '../../lib/model/types.ts';
import {
  describeRequest,
  probeBudgetMs,
  probeHealth,
  requestsSince,
  unansweredSince,
} from '../../lib/server/health.ts';
import { MAX_RESTARTS, requestRestart } from '../../lib/server/supervisor.ts';

/** Observing checks in a row that ended on requests without an answer before the breaker opens. */
const HANG_STREAK = 3;

interface BreakerState {
  /** Set once the breaker is open: every later check is `error` with this message. */
  open?: { after: string; message: string };
  hangStreak: number;
}

function statePath(stateDir: string): string {
  return join(stateDir, 'breaker.json');
}

/** True the first time it is asked for `what` in this run (files run in separate workers: a marker file). */
export function firstTime(stateDir: string, what: string): boolean {
  const p = join(stateDir, `reported-${what}`);
  if (existsSync(p)) return false;
  writeFileSync(p, '');
  return true;
}

/** The run deadline has been met by some check: no later check starts. */
export const deadlineHit = (stateDir: string) => existsSync(join(stateDir, 'deadline-hit'));
export const markDeadlineHit = (stateDir: string) => writeFileSync(join(stateDir, 'deadline-hit'), '');

export function readBreaker(stateDir: string): BreakerState {
  const p = statePath(stateDir);
  if (!existsSync(p)) return { hangStreak: 0 };
  try {
    return JSON.parse(readFileSync(p, 'utf8')) as BreakerState;
  } catch {
    return { hangStreak: 0 };
  }
}

function writeBreaker(stateDir: string, s: BreakerState): void {
  writeFileSync(statePath(stateDir), JSON.stringify(s));
}

export interface GuardContext {
  profile: Profile;
  server: ServerInfo;
  headers: Record<string, string>;
  secrets: string[];
  stateDir: string;
  supervisor: string;
  /** Epoch ms after which no check runs (the run deadline): the probe and a restart must end before it. */
  deadlineAt?: number;
}

/**
 * Called after a check (`since`: Date.now() when it started). Returns a note for the check's own message when the
 * server stopped answering during it; opens the breaker when the run cannot go on.
 */
export async function afterCheck(
  g: GuardContext,
  checkId: string,
  destructive: boolean,
  since: number,
  threw: boolean,
): Promise<string | undefined> {
  const unanswered = unansweredSince(since);
  const state = readBreaker(g.stateDir);
  if (!threw && unanswered.length === 0) {
    // Answered requests end a streak; a check that sent none (it read a shared recording) leaves it as it is.
    if (state.hangStreak && requestsSince(since).length) writeBreaker(g.stateDir, { ...state, hangStreak: 0 });
    return undefined;
  }
  // The first request without an answer is the one after which the server stopped answering (the one that killed it).
  const first = unanswered[0] ?? recentRequests().at(-1);
  const request = redact(describeRequest(first), g.secrets);
  const left = g.deadlineAt ? g.deadlineAt - Date.now() : Infinity;
  if (left < 3_000) return undefined; // the run deadline is here: no time to tell, and no check follows anyway
  const health = await probeHealth(
    g.profile,
    g.server.baseUrl,
    g.headers,
    Math.min(probeBudgetMs(g.profile), left - 2_000),
    g.secrets,
  );
  if (health.answering) {
    const streak = unanswered.length && !destructive ? state.hangStreak + 1 : state.hangStreak;
    if (streak >= HANG_STREAK) {
      const message =
        `stopped answering after ${checkId}: ${streak} checks in a row ended on requests that got no answer (in this one: ${request}); ` +
        `a 1-token probe still answers, so the server hangs on real work — circuit breaker open, the remaining checks are not run`;
      writeBreaker(g.stateDir, { open: { after: checkId, message }, hangStreak: streak });
      return `(${message})`;
    }
    writeBreaker(g.stateDir, { ...state, hangStreak: streak });
    return undefined;
  }
  let processNote = '';
  if (g.supervisor) {
    const answer = await requestRestart(
      g.supervisor,
      checkId,
      request,
      Math.min(g.profile.startTimeoutMs + 15_000, Math.max(1_000, (g.deadlineAt ?? Infinity) - Date.now())),
    );
    if (answer.restarted) {
      writeBreaker(g.stateDir, { hangStreak: 0 });
      return `(the server stopped answering during this check — ${answer.process} — after ${request}. The suite restarted it: restart ${answer.count} of at most ${MAX_RESTARTS})`;
    }
    processNote = answer.process ? `; the process ${answer.process}` : '';
    if (answer.reason) processNote += `; not restarted: ${answer.reason}`;
  }
  const died = /^exited/.test(processNote.replace(/^; the process /, ''));
  const message = died
    ? `server died during ${checkId}${processNote}; the first request without an answer: ${request}`
    : `stopped answering after ${checkId}: ${health.detail}; the first request without an answer: ${request}${processNote}`;
  writeBreaker(g.stateDir, {
    open: { after: checkId, message: redact(message, g.secrets) },
    hangStreak: state.hangStreak,
  });
  return `(${redact(message, g.secrets)})`;
}
