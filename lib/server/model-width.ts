// The served model's embedding width, for context.prefill-scaling's attention physics (docs/grading.md "Prefill
// scaling"). llama.cpp's /v1/models carries `meta` with n_embd, n_params and n_vocab (no layer count anywhere);
// Ollama's /api/show has `<arch>.embedding_length`. A width declared in the profile (the check's modelWidth
// threshold) wins; a server that reports none leaves it unknown.
import type { ModelWidth } from '../grading/prefill-scaling.ts';
import { bodyJson, record } from '../http/recorder.ts';

type Json = Record<string, unknown>;
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined);

/** The width in a /v1/models answer for `model` (or its only model), from llama.cpp's `meta`. */
export function widthFromModels(list: unknown, model: string | undefined): ModelWidth | undefined {
  const data = (list as Json | undefined)?.data;
  if (!Array.isArray(data)) return undefined;
  const entry = (data.find((m) => (m as Json)?.id === model) ?? (data.length === 1 ? data[0] : undefined)) as
    | Json
    | undefined;
  const meta = entry?.meta as Json | undefined;
  const embd = num(meta?.n_embd);
  if (!embd) return undefined;
  return {
    value: embd,
    source: 'GET /v1/models meta.n_embd',
    params: num(meta?.n_params),
    vocab: num(meta?.n_vocab),
  };
}

/** The width in an Ollama /api/show answer (`model_info["<arch>.embedding_length"]`). */
export function widthFromOllamaShow(show: unknown): ModelWidth | undefined {
  const info = (show as Json | undefined)?.model_info as Json | undefined;
  const key = info ? Object.keys(info).find((k) => k.endsWith('.embedding_length')) : undefined;
  const embd = key ? num(info![key]) : undefined;
  return embd ? { value: embd, source: `POST /api/show model_info.${key}` } : undefined;
}

/** Ask the server (two bounded requests at most); undefined when it reports no width. */
export async function discoverModelWidth(
  baseUrl: string,
  headers: Record<string, string>,
  model: string | undefined,
): Promise<ModelWidth | undefined> {
  const deadlines = { connectMs: 2_000, headersMs: 5_000, tokenIdleMs: 5_000, totalMs: 8_000 };
  const models = await record({ url: `${baseUrl}/v1/models`, headers, deadlines }).catch(() => undefined);
  const fromModels = models?.status === 200 ? widthFromModels(bodyJson(models).json, model) : undefined;
  if (fromModels || !model) return fromModels;
  const show = await record({
    url: `${baseUrl}/api/show`,
    method: 'POST',
    headers,
    body: { model },
    deadlines,
  }).catch(() => undefined);
  return show?.status === 200 ? widthFromOllamaShow(bodyJson(show).json) : undefined;
}
