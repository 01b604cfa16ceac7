// Is the server still answering? Asked after a check that ended on requests without an answer, so a server that
// stopped answering (crashed, wedged, or alive but silent) is told apart from a check that failed, and the rest of
// the run ends fast (the circuit breaker in suites/support/register.ts) instead of every check waiting out its
// deadlines. Plain functions, no Vitest.

import { GENERATION_PATH } from '../exchange/exchange.ts';
import { DEFAULT_DEADLINES, record } from '../http/recorder.ts';
import { describeRequest, type JournalEntry, recentRequests } from '../http/transport.ts';
import { describeEvidence, evidenceFor, requestKind } from '../measure/deadline-evidence.ts';
import type { RunMemory } from '../model/check.ts';
import type { ApiFlavour, Profile } from '../model/types.ts';

interface Health {
  answering: boolean;
  /** What the probe saw, one line. */
  detail: string;
  /** GET /v1/models answered (a server that lists models but never generates is alive but silent). */
  listsModels: boolean;
}

/**
 * A 1-token generation in one API (the health probe's, and API discovery's). Ollama reads options.num_predict; the
 * max_tokens beside it bounds a server whose /api/chat is an alias of its OpenAI chat route (llama-server).
 */
export function probeBody(
  flavour: ApiFlavour,
  model: string,
  extra: Record<string, unknown> | undefined,
  label = 'health probe',
): Record<string, unknown> {
  const prompt = `[${label} ${Date.now().toString(36)}] Say OK.`;
  switch (flavour) {
    case 'openai-chat':
      return { model, messages: [{ role: 'user', content: prompt }], max_tokens: 1, stream: false, ...(extra ?? {}) };
    case 'openai-completions':
      return { model, prompt, max_tokens: 1, stream: false };
    case 'anthropic-messages':
      return { model, messages: [{ role: 'user', content: prompt }], max_tokens: 1, stream: false };
    case 'ollama-native':
      return {
        model,
        messages: [{ role: 'user', content: prompt }],
        stream: false,
        options: { num_predict: 1 },
        max_tokens: 1,
      };
  }
}

/**
 * One bounded probe: GET /v1/models, then a 1-token generation in the profile's first API. Any complete HTTP answer
 * counts as answering (a 4xx or 5xx is the checks' business); no answer within `budgetMs` does not.
 */
export async function probeHealth(
  profile: Profile,
  baseUrl: string,
  headers: Record<string, string>,
  budgetMs: number,
  secrets: string[],
  /** The run's memory: what it has seen of such requests (lib/measure/deadline-evidence.ts). */
  memory: RunMemory,
): Promise<Health> {
  const models = await record({
    url: `${baseUrl}/v1/models`,
    headers,
    secrets,
    deadlines: { connectMs: 2_000, headersMs: 5_000, tokenIdleMs: 5_000, totalMs: 6_000 },
  });
  const listsModels = models.status !== undefined && !models.failure;
  if (
    models.failure?.kind === 'connect' ||
    (models.failure &&
      models.status === undefined &&
      models.failure.kind !== 'headers-timeout' &&
      models.failure.kind !== 'total-timeout')
  )
    return {
      answering: false,
      listsModels: false,
      detail: `nothing answers at ${baseUrl} (GET /v1/models: ${models.failure.message})`,
    };
  const flavour = profile.apis[0] ?? 'openai-chat';
  const url = `${baseUrl}${GENERATION_PATH[flavour]}`;
  const body = probeBody(flavour, profile.model, flavour === 'openai-chat' ? profile.extraBody : undefined);
  // This run has seen requests of this very kind get no answer for the profile's whole floor: the probe waits the
  // silence the profile counts as a stall, not its full budget again (lib/measure/deadline-evidence.ts).
  const seen = evidenceFor(memory, requestKind('POST', url, body));
  const stall = Math.max(5_000, profile.deadlines?.tokenIdleMs ?? DEFAULT_DEADLINES.tokenIdleMs);
  const sized = seen && seen.kind !== 'endless' && stall < budgetMs;
  if (sized) budgetMs = stall;
  const gen = await record({
    url,
    headers: { ...headers, ...(flavour === 'anthropic-messages' ? { 'anthropic-version': '2023-06-01' } : {}) },
    body,
    secrets,
    // tokenIdleMs bounds the body once begun (wholeJson): half the budget, so a body that never ends is told from
    // silence (it is an answer, `overflow`) before the total deadline cuts it.
    deadlines: { connectMs: 2_000, headersMs: budgetMs, tokenIdleMs: budgetMs / 2, totalMs: budgetMs },
    wholeJson: true,
  });
  // A server that answers too much (past a read cap), or answers what cannot be JSON (an SSE body to this whole
  // request: cut at its first byte), is answering: its checks judge what it sent.
  if (gen.status !== undefined && (!gen.failure || gen.failure.kind === 'overflow' || gen.failure.kind === 'not-json'))
    return {
      answering: true,
      listsModels,
      detail: `a 1-token generation answered HTTP ${gen.status} in ${Math.round(gen.tEnd)} ms`,
    };
  const what = gen.failure ? `${gen.failure.kind}: ${gen.failure.message}` : 'no answer';
  return {
    answering: false,
    listsModels,
    detail:
      `a 1-token generation (POST ${GENERATION_PATH[flavour]}) got no complete answer within ${budgetMs} ms` +
      (sized ? ` (sized from this run's evidence: ${describeEvidence(seen)})` : '') +
      ` (${what})` +
      (listsModels
        ? '; GET /v1/models still answers (the process is alive but does not generate)'
        : models.failure
          ? `; GET /v1/models: ${models.failure.message}`
          : ''),
  };
}

/** Probe budget: generous for a slow server (a 1-token answer), bounded so a silent one costs little. */
export function probeBudgetMs(profile: Profile): number {
  const headers = profile.deadlines?.headersMs ?? 60_000;
  return Math.max(5_000, Math.min(headers, 30_000));
}

/** Failure kinds that mean "no answer" (not "a wrong answer" or our own abort). */
const SILENT = new Set(['connect', 'reset', 'headers-timeout', 'token-idle', 'total-timeout']);

/** The requests this process started since `since` (Date.now() ms), answered or not. */
export function requestsSince(since: number): JournalEntry[] {
  return recentRequests().filter((e) => e.tStart >= since);
}

/** The requests since `since` (Date.now() ms) that got no answer: the evidence that a server stopped answering. */
export function unansweredSince(since: number): JournalEntry[] {
  return recentRequests().filter((e) => {
    const kind = e.failure?.split(':')[0] ?? '';
    return e.tStart >= since && SILENT.has(kind) && (kind !== 'reset' || e.status === undefined);
  });
}

export { describeRequest };
