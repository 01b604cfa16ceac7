// Our side of bench/peer.ts, in its own process like the peer's: `requests` streamed chat requests, `concurrency` at a
// time, through the full chat() path the checks use (lib/http/exchange.ts), timed as the suite times them:
// TTFT = first token-bearing event (a role-only or empty delta is not a token), ITL = gaps between token-bearing
// events, e2e = end of the body, completion tokens from usage wherever it rides (else one per token-bearing event).
//   node --import tsx bench/peer-ours.ts <baseUrl> <model> <concurrency> <requests> <maxTokens> <prompt> [extraBodyJson]
// Prints one JSON object: { requests: [...], wall: { start, end } } with times in ms.

import { setMaxListeners } from 'node:events';
import { makeContext } from '../lib/check/check.ts';
import { chat, generationBody } from '../lib/exchange/exchange.ts';
import { monotonicOffset, sendTimeMs } from '../lib/measure/fidelity.ts';
import type { CheckDef } from '../lib/model/check.ts';
import { freshMemory } from '../lib/model/memory.ts';
import type { Profile } from '../lib/model/types.ts';

/** Content-bearing events' server send times (ms, monotonic) and every stamped event's arrival lag, when stamped. */
function stamps(events: ReadonlyArray<{ t: number; id?: string; data: string }>, t0Abs: number, offsetMs: number) {
  const contentSends: number[] = [];
  const lags: number[] = [];
  for (const ev of events) {
    const send = sendTimeMs(ev.id);
    if (send === undefined) continue;
    lags.push(t0Abs + ev.t + offsetMs - send);
    try {
      const j = JSON.parse(ev.data) as { choices?: Array<{ delta?: { content?: string } }> };
      if (j.choices?.[0]?.delta?.content) contentSends.push(send);
    } catch {
      // [DONE] and other non-JSON data carry no content
    }
  }
  return { contentSends, lags };
}

const [baseUrl, model, concurrencyArg, requestsArg, maxTokensArg, prompt, extraArg] = process.argv.slice(2);

const NOT_A_CHECK: CheckDef = {
  id: 'bench.peer',
  title: 'peer comparison',
  level: 'INFO',
  rationale: 'measures our client beside a peer',
  reference: 'issue 23',
  requires: [],
  run: async () => ({ outcome: 'skip', message: 'not a check' }),
};

async function main(): Promise<void> {
  const signal = new AbortController().signal;
  setMaxListeners(0, signal);
  const profile: Profile = {
    id: 'peer',
    baseUrl: baseUrl!,
    model: model!,
    apis: ['openai-chat'],
    readiness: { kind: 'http', path: '/health' },
    startTimeoutMs: 30_000,
    slots: 1024,
    deterministic: false,
    context: { discovery: 'none' },
  };
  const ctx = makeContext(
    NOT_A_CHECK,
    { memory: freshMemory(), profile, server: { baseUrl: baseUrl!, identity: {} }, log: () => undefined },
    signal,
    () => ({
      p99Ms: 0,
      maxMs: 0,
    }),
  );
  const body = generationBody(ctx, 'openai-chat', {
    prompt: prompt!,
    maxTokens: Number(maxTokensArg),
    stream: true,
    extra: { stream_options: { include_usage: true }, ...(JSON.parse(extraArg ?? '{}') as Record<string, unknown>) },
  });
  delete body.temperature; // the peer sends none either
  const total = Number(requestsArg);
  let next = 0;
  const out: unknown[] = [];
  const start = performance.now();
  const offset = monotonicOffset();
  const cpu0 = process.cpuUsage();
  const worker = async () => {
    while (next < total) {
      next++;
      const t0 = performance.now();
      const x = await chat(ctx, body);
      const m = x.metrics;
      const st = stamps(x.sse?.events ?? [], x.rec.t0Abs, offset.offsetMs);
      out.push({
        ok: x.rec.status === 200 && !x.rec.failure && m?.ttftMs !== undefined,
        start: t0 - start,
        ttftMs: m?.ttftMs ?? null,
        itlMs: m?.itlMs ?? [],
        e2eMs: m?.e2eMs ?? null,
        completionTokens: m?.completionTokens ?? null,
        tokenSource: m?.tokenSource ?? null,
        tokenEvents: m?.countedTokenEvents ?? 0,
        usage: x.events?.usage?.completion_tokens ?? null,
        // Server truth where the server stamps its sends: first content sent (ms after our send), gaps between sends.
        serverFirstContentMs: st.contentSends.length ? st.contentSends[0]! - (x.rec.t0Abs + offset.offsetMs) : null,
        serverItlMs: st.contentSends.slice(1).map((v, i) => v - st.contentSends[i]!),
        lagMs: st.lags,
        error: x.rec.failure?.message ?? (x.rec.status === 200 ? '' : `HTTP ${x.rec.status}`),
      });
    }
  };
  await Promise.all(Array.from({ length: Number(concurrencyArg) }, worker));
  const cpu = process.cpuUsage(cpu0);
  process.stdout.write(
    JSON.stringify({
      requests: out,
      wall: { start: 0, end: performance.now() - start },
      cpuS: (cpu.user + cpu.system) / 1e6,
    }),
  );
}

main().catch((e) => {
  console.error(`peer-ours: ${(e as Error).stack ?? e}`);
  process.exitCode = 1;
});
