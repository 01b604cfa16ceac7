// Which APIs the server offers: what the profile (or --apis) names is declared and never probed; each other API gets
// one 1-token request at setup, all at once, bounded in time. Only a clear "no such route" (404, 405, 501, or a body
// that says so in words) leaves an API out: a 200 with garbage, a 4xx about the request, a 5xx or no answer at all keep it in, so its checks judge it
// rather than discovery hiding a broken API. A 404 that names the model is about the model, not the route.

import { API_FLAVOURS } from '../config/apis.ts';
import { escapeBytes } from '../decode/stream-decoder.ts';
import { GENERATION_PATH } from '../exchange/exchange.ts';
import { bodyText, record } from '../http/recorder.ts';
import type { ApiFinding, ApiFlavour, Profile, RequestFailure, ServerInfo } from '../model/types.ts';
import { probeBody } from './health.ts';

/** Each probe's bound; the probes run at once, so this bounds them all. A slower answer leaves the API tested. */
const PROBE_BUDGET_MS = 5_000;

/** What one probe got back: the status (when headers came), the body's first bytes, the failure. */
interface ProbeAnswer {
  status?: number;
  body?: string;
  failure?: { kind: RequestFailure; message: string };
}

/** A body that says in words that the route does not exist, whatever the status. */
const NO_ROUTE_WORDS =
  /unexpected endpoint|unknown (endpoint|route)|no such (route|endpoint)|(route|endpoint) not found/i;

/**
 * A 200 in OpenAI's chat shape where another API was asked: the route is an alias of the OpenAI handler (llama-server
 * routes /api/chat to its chat completions), not the API the route is named after.
 */
function openAiShapeFor(api: ApiFlavour | undefined, body: string | undefined): boolean {
  if (api !== 'ollama-native' && api !== 'anthropic-messages') return false;
  try {
    const j = JSON.parse(body ?? '') as Record<string, unknown>;
    const own = api === 'ollama-native' ? 'message' in j || 'done' in j : j.type === 'message' || 'content' in j;
    return Array.isArray(j.choices) && !own;
  } catch {
    return false;
  }
}

/** The verdict on one API from its probe's answer (pure). */
export function decideApi(a: ProbeAnswer, api?: ApiFlavour): Pick<ApiFinding, 'found' | 'why'> {
  const s = a.status;
  if (s === undefined) {
    const f = a.failure ? `${a.failure.kind}: ${a.failure.message}` : 'no answer';
    return { found: 'unknown', why: `no answer to decide by (${f}); not ruled out, so tested` };
  }
  // LM Studio answers a route it does not have with 200 {"error":"Unexpected endpoint or method. (POST …)"}.
  if (NO_ROUTE_WORDS.test(a.body ?? '') && (a.body ?? '').length <= 512)
    return { found: 'absent', why: `HTTP ${s}, but the body says no such route` };
  if (s >= 200 && s < 300 && openAiShapeFor(api, a.body))
    return {
      found: 'absent',
      why: `HTTP ${s} in OpenAI's chat shape ("choices"): an alias of the OpenAI route, not ${api === 'ollama-native' ? "Ollama's" : "Anthropic's"} API`,
    };
  if (s === 404 && /model/i.test(a.body ?? ''))
    return { found: 'present', why: "HTTP 404 about the model: the route exists (the model is setup's business)" };
  if (s === 404 || s === 405 || s === 501) return { found: 'absent', why: `HTTP ${s}: no such route` };
  if (s === 401 || s === 403)
    return {
      found: 'unknown',
      why: `HTTP ${s}: the key was refused before the route showed; not ruled out, so tested`,
    };
  if (s >= 200 && s < 300) return { found: 'present', why: `HTTP ${s}: the route answers (its checks judge what)` };
  if (s >= 400 && s < 500)
    return { found: 'present', why: `HTTP ${s}: the route exists and refused the probe (its checks judge it)` };
  if (s >= 500)
    return { found: 'present', why: `HTTP ${s}: the route exists and failed the probe (its checks judge it)` };
  return { found: 'unknown', why: `HTTP ${s}: neither an answer nor "no such route"; not ruled out, so tested` };
}

const DECLARED_WHY = 'declared (the profile\'s "apis", or --apis): not probed';
const UNLISTED_WHY =
  'not in the profile\'s "apis" (a list the user wrote is complete; "discoverApis": true probes the others)';

async function probe(
  api: ApiFlavour,
  baseUrl: string,
  headers: Record<string, string>,
  profile: Profile,
  model: string,
  budgetMs: number,
): Promise<ApiFinding> {
  const path = GENERATION_PATH[api];
  const rec = await record({
    url: `${baseUrl}${path}`,
    headers: { ...headers, ...(api === 'anthropic-messages' ? { 'anthropic-version': '2023-06-01' } : {}) },
    body: probeBody(api, model, api === 'openai-chat' ? profile.extraBody : undefined, 'api probe'),
    deadlines: { connectMs: 2_000, headersMs: budgetMs, tokenIdleMs: budgetMs, totalMs: budgetMs },
    maxBytes: 4_096,
  });
  const body = rec.status !== undefined ? bodyText(rec) : undefined;
  const answer: ProbeAnswer = { status: rec.status, body, failure: rec.failure };
  const finding: ApiFinding = {
    api,
    source: 'probed',
    ...decideApi(answer, api),
    tested: true,
    endpoint: `POST ${path}`,
    ...(rec.status !== undefined ? { status: rec.status } : {}),
    ms: Math.round(rec.tEnd),
    evidence: body !== undefined ? escapeBytes(body, 160) : `${rec.failure?.kind}: ${rec.failure?.message}`,
  };
  finding.tested = finding.found !== 'absent';
  return finding;
}

/**
 * Every API: declared ones as declared; the others probed at once (bounded by PROBE_BUDGET_MS) when the profile asks for
 * discovery (--base-url without --apis, or "discoverApis": true), else left out as the user's list says.
 */
export async function discoverApis(
  profile: Profile,
  baseUrl: string,
  headers: Record<string, string>,
  model: string,
  budgetMs = PROBE_BUDGET_MS,
): Promise<ApiFinding[]> {
  return Promise.all(
    API_FLAVOURS.map((api) =>
      profile.apis.includes(api)
        ? ({ api, source: 'declared', found: 'declared', tested: true, why: DECLARED_WHY } satisfies ApiFinding)
        : profile.discoverApis
          ? probe(api, baseUrl, headers, profile, model, budgetMs)
          : ({ api, source: 'declared', found: 'absent', tested: false, why: UNLISTED_WHY } satisfies ApiFinding),
    ),
  );
}

/** Why a check that needs `api` is skipped: the probe's clear "no such route", or nothing declared it. */
export function apiSkipReason(profile: Profile, server: ServerInfo, api: ApiFlavour): string {
  const f = server.discovery?.apis?.find((x) => x.api === api);
  if (f?.found === 'absent' && f.source === 'probed')
    return `the server does not offer capability "${api}": ${f.endpoint} answered ${f.why} (${f.evidence}); name it in --apis (or the profile's "apis") to test it anyway`;
  return `profile "${profile.id}" does not declare capability "${api}" (add it to "apis")`;
}

/** One clause per API, e.g. "openai-chat declared, ollama-native not declared, openai-completions found (POST /v1/completions → HTTP 200, 78 ms)". */
export function describeApis(apis: readonly ApiFinding[]): string {
  return apis
    .map((f) => {
      if (f.source === 'declared') return `${f.api} ${f.found === 'absent' ? 'not declared' : 'declared'}`;
      const answer =
        f.found === 'present' ? `HTTP ${f.status}` : f.found === 'absent' ? `HTTP ${f.status}, no such route` : f.why;
      return `${f.api} ${f.found === 'unknown' ? 'tested' : f.found} (${f.endpoint} → ${answer}, ${f.ms} ms)`;
    })
    .join(', ');
}
