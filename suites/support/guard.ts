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

import { redact } from '../../lib/config/secrets.ts';
import { recentRequests } from '../../lib/http/transport.ts';
import type { RunMemory, SharedSlice } from '../../lib/model/check.ts';
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
  /**
   * The last restart found the process alive but silent (not a crash), and whether the server has answered a request
   * since: a restart after which nothing was answered did not help, and the next silence is not restarted again.
   */
  silentRestart?: { after: string; answered: boolean };
}

/** The breaker's state, shared by the run's workers (lib/run/memory.ts). */
const BREAKER: SharedSlice<BreakerState> = { name: 'breaker', initial: { hangStreak: 0 } };
/** What the run has reported once already, and whether a check met the run deadline. */
const RUN_FLAGS: SharedSlice<{ reported: string[]; deadlineHit: boolean }> = {
  name: 'run-flags',
  initial: { reported: [], deadlineHit: false },
};

/** True the first time it is asked for `what` in this run (files run in separate workers: the run's shared state). */
export function firstTime(memory: RunMemory, what: string): boolean {
  const flags = memory.shared(RUN_FLAGS);
  if (flags.read().reported.includes(what)) return false;
  flags.update((f) => ({ ...f, reported: [...f.reported, what] }));
  return true;
}

/** The run deadline has been met by some check: no later check starts. */
export const deadlineHit = (memory: RunMemory) => memory.shared(RUN_FLAGS).read().deadlineHit;
export const markDeadlineHit = (memory: RunMemory) =>
  memory.shared(RUN_FLAGS).update((f) => ({ ...f, deadlineHit: true }));

export const readBreaker = (memory: RunMemory): BreakerState => memory.shared(BREAKER).read();

function writeBreaker(memory: RunMemory, s: BreakerState): void {
  memory.shared(BREAKER).update(() => s);
}

export interface GuardContext {
  profile: Profile;
  server: ServerInfo;
  headers: Record<string, string>;
  secrets: string[];
  /** The run's memory: the breaker's state, and what the run has seen of its requests. */
  memory: RunMemory;
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
  const sent = requestsSince(since).length;
  let state = readBreaker(g.memory);
  // A request of this check was answered: a silent restart before it helped.
  if (sent > unanswered.length && state.silentRestart && !state.silentRestart.answered) {
    state = { ...state, silentRestart: { ...state.silentRestart, answered: true } };
    writeBreaker(g.memory, state);
  }
  if (!threw && unanswered.length === 0) {
    // Answered requests end a streak; a check that sent none (it read a shared recording) leaves it as it is.
    if (state.hangStreak && sent) writeBreaker(g.memory, { ...state, hangStreak: 0 });
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
    g.memory,
  );
  if (health.answering) {
    const streak = unanswered.length && !destructive ? state.hangStreak + 1 : state.hangStreak;
    if (streak >= HANG_STREAK) {
      const message =
        `stopped answering after ${checkId}: ${streak} checks in a row ended on requests that got no answer (in this one: ${request}); ` +
        `a 1-token probe still answers, so the server hangs on real work — circuit breaker open, the remaining checks are not run`;
      writeBreaker(g.memory, { open: { after: checkId, message }, hangStreak: streak });
      return `(${message})`;
    }
    // The probe was answered: the server answers again, whatever a silent restart before did.
    const silentRestart = state.silentRestart && { ...state.silentRestart, answered: true };
    writeBreaker(g.memory, { ...state, hangStreak: streak, ...(silentRestart ? { silentRestart } : {}) });
    return undefined;
  }
  let processNote = '';
  if (g.supervisor) {
    const unhelped = state.silentRestart && !state.silentRestart.answered ? state.silentRestart.after : undefined;
    const answer = await requestRestart(
      g.supervisor,
      checkId,
      request,
      Math.min(g.profile.startTimeoutMs + 15_000, Math.max(1_000, (g.deadlineAt ?? Infinity) - Date.now())),
      unhelped &&
        `the restart after ${unhelped} did not help (no request answered since, and the process is alive but silent again)`,
    );
    if (answer.restarted) {
      const silent = !/^exited/.test(answer.process ?? '');
      writeBreaker(g.memory, {
        hangStreak: 0,
        ...(silent ? { silentRestart: { after: checkId, answered: false } } : {}),
      });
      return `(the server stopped answering during this check — ${answer.process} — after ${request}. The suite restarted it: restart ${answer.count} of at most ${MAX_RESTARTS})`;
    }
    processNote = answer.process ? `; the process ${answer.process}` : '';
    if (answer.reason) processNote += `; not restarted: ${answer.reason}`;
  }
  const died = /^exited/.test(processNote.replace(/^; the process /, ''));
  const message = died
    ? `server died during ${checkId}${processNote}; the first request without an answer: ${request}`
    : `stopped answering after ${checkId}: ${health.detail}; the first request without an answer: ${request}${processNote}`;
  writeBreaker(g.memory, {
    open: { after: checkId, message: redact(message, g.secrets) },
    hangStreak: state.hangStreak,
  });
  return `(${redact(message, g.secrets)})`;
}
