// A model the server does not serve is the user's configuration, not the server's failure: setup stops with one
// configuration error naming the ids the server lists, instead of five MUST failures charged to the server. Both must
// hold: GET /v1/models lists ids without it, and a minimal request naming it is refused (404, or 400/422 about the
// model). A server that serves a name it does not list (llama.cpp's llama-server answers any name) goes on; the
// api.models-lists-model check grades the listing.

import { redact } from '../config/secrets.ts';
import { bodyText, record } from '../http/recorder.ts';
import type { Profile, SetupFailure } from '../model/types.ts';

/** A body excerpt for a message: one line, bounded. */
function excerpt(body: string, max = 300): string {
  const one = body.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one || '(empty body)';
}

/** Whether an answer to a request naming `model` refuses that model (rather than failing for another reason). */
export function refusesModel(status: number | undefined, body: string): boolean {
  if (status === 404) return true;
  return (status === 400 || status === 422) && /model/i.test(body);
}

/** The answer to a 1-token request naming `model`: status and body, or undefined when nothing came back. */
async function tryModel(
  baseUrl: string,
  headers: Record<string, string>,
  model: string,
): Promise<{ status: number; body: string } | undefined> {
  const rec = await record({
    url: `${baseUrl}/v1/chat/completions`,
    headers,
    body: { model, messages: [{ role: 'user', content: 'Say OK.' }], max_tokens: 1, stream: false },
    deadlines: { connectMs: 5_000, headersMs: 30_000, tokenIdleMs: 30_000, totalMs: 30_000 },
  });
  if (rec.failure || rec.status === undefined) return undefined;
  return { status: rec.status, body: bodyText(rec) };
}

/** The ids GET /v1/models lists (OpenAI data[].id, Ollama-style models[].name); undefined when unreadable. */
export async function listModelIds(baseUrl: string, headers: Record<string, string>): Promise<string[] | undefined> {
  const rec = await record({
    url: `${baseUrl}/v1/models`,
    headers,
    deadlines: { connectMs: 5_000, headersMs: 10_000, tokenIdleMs: 10_000, totalMs: 10_000 },
  });
  if (rec.failure || rec.status !== 200) return undefined;
  let json: { data?: unknown; models?: unknown } | undefined;
  try {
    json = JSON.parse(bodyText(rec)) as typeof json;
  } catch {
    return undefined;
  }
  const list = json?.data ?? json?.models;
  if (!Array.isArray(list)) return undefined;
  return list
    .map((m) => (m as { id?: unknown; name?: unknown } | null)?.id ?? (m as { name?: unknown } | null)?.name)
    .filter((x): x is string => typeof x === 'string');
}

/**
 * undefined when the configured model is served (or we cannot tell), else the configuration error. `listed` is what
 * GET /v1/models listed (undefined: unreadable). Only a model the user named is checked: a discovered one is listed.
 */
export async function modelNotServed(
  profile: Profile,
  baseUrl: string,
  headers: Record<string, string>,
  listed: readonly string[] | undefined,
  onNote: (note: string) => void = () => undefined,
): Promise<SetupFailure | undefined> {
  const model = profile.model;
  if (!listed?.length || listed.includes(model) || !profile.apis.includes('openai-chat')) return undefined;
  const answer = await tryModel(baseUrl, headers, model);
  if (!answer) return undefined;
  if (!refusesModel(answer.status, answer.body)) {
    onNote(
      `a request naming "${model}" was answered HTTP ${answer.status} although GET /v1/models does not list it: the server serves a name it does not list`,
    );
    return undefined;
  }
  const ids = `${JSON.stringify(listed.slice(0, 10))}${listed.length > 10 ? ` (+${listed.length - 10} more)` : ''}`;
  const flag = profile.id === 'env' ? '--model' : `the profile's "model" (servers file, "${profile.id}")`;
  return {
    kind: 'config',
    summary: `the model "${model}" is not served at ${redact(baseUrl)}; it serves ${ids}`,
    requirement: `requests name a model the server serves (${flag})`,
    expected: `"${model}" among the ids GET /v1/models lists, or a request naming it answered`,
    actual: `GET /v1/models lists ${ids}; POST /v1/chat/completions naming "${model}" → HTTP ${answer.status}: ${redact(excerpt(answer.body))}`,
    fix:
      listed.length === 1
        ? `${profile.id === 'env' ? '--model' : '"model":'} ${listed[0]}${profile.id === 'env' ? ' (or leave --model out: the one model listed is used)' : ''}`
        : `name one of the listed ids in ${flag}`,
  };
}
