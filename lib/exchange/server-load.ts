// A server's own view of its load: how many requests hold a slot right now. Read from /slots (llama.cpp, the
// reference server: `is_processing` per slot) or from a Prometheus gauge on /metrics (llama.cpp --metrics,
// vLLM, SGLang, TGI, the reference server). `stream.cancel-frees-slot` uses it as evidence that a disconnected
// request stopped holding a slot; a server with neither gets a timing-only verdict.

import { bodyText, record } from '../http/recorder.ts';
import type { Requester } from '../model/check.ts';

/** Gauges counting requests that hold a slot (decoding or prefilling), by server. */
const BUSY_GAUGES: readonly string[] = [
  'llamacpp:requests_processing',
  'vllm:num_requests_running',
  'sglang:num_running_reqs',
  'tgi_batch_current_size',
  'reference_requests_processing',
];

/** Busy slots from a /slots body: an array of slots with `is_processing` (boolean) or `state` (0 idle, 1 busy). */
export function busyFromSlots(json: unknown): number | undefined {
  if (!Array.isArray(json) || json.length === 0) return undefined;
  let busy = 0;
  for (const s of json) {
    if (typeof s !== 'object' || s === null) return undefined;
    const o = s as Record<string, unknown>;
    if (typeof o.is_processing === 'boolean') busy += o.is_processing ? 1 : 0;
    else if (typeof o.state === 'number') busy += o.state !== 0 ? 1 : 0;
    else return undefined;
  }
  return busy;
}

/**
 * Sum of one gauge over all its label sets in Prometheus text exposition format, or undefined when absent.
 * `name{a="b"} 3` and `name 3` both count; comments and other metrics are ignored.
 */
export function promGauge(text: string, name: string): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== ' ' && rest[0] !== '{' && rest[0] !== '\t') continue;
    const afterLabels = rest[0] === '{' ? rest.slice(rest.indexOf('}') + 1) : rest;
    const v = Number(afterLabels.trim().split(/\s+/)[0]);
    if (Number.isFinite(v)) sum = (sum ?? 0) + v;
  }
  return sum;
}

export interface BusyReader {
  /** Where the figure comes from, for messages: "/slots is_processing" or "/metrics vllm:num_requests_running". */
  source: string;
  /** Busy slots now; undefined if the endpoint stopped answering. */
  read(): Promise<number | undefined>;
}

async function getText(ctx: Requester, path: string): Promise<{ status?: number; text: string }> {
  const rec = await record({
    url: `${ctx.baseUrl}${path}`,
    headers: ctx.headers,
    deadlines: { ...ctx.deadlines, headersMs: 2_000, totalMs: 3_000 },
    signal: ctx.signal,
    secrets: ctx.secrets,
  });
  return { status: rec.status, text: rec.status === 200 ? bodyText(rec) : '' };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The first counter source this server has (/slots, then /metrics gauges), or undefined. */
export async function findBusyReader(ctx: Requester): Promise<BusyReader | undefined> {
  const slots = await getText(ctx, '/slots');
  if (busyFromSlots(parseJson(slots.text)) !== undefined) {
    return {
      source: '/slots is_processing',
      read: async () => busyFromSlots(parseJson((await getText(ctx, '/slots')).text)),
    };
  }
  const metrics = await getText(ctx, '/metrics');
  for (const name of BUSY_GAUGES) {
    if (promGauge(metrics.text, name) !== undefined) {
      return { source: `/metrics ${name}`, read: async () => promGauge((await getText(ctx, '/metrics')).text, name) };
    }
  }
  return undefined;
}
