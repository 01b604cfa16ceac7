import { startReference } from '/work/main/test/support/reference.ts';
import { makeContext } from '/work/main/lib/check.ts';
import { chat, generationBody, uniquePrompt } from '/work/main/lib/api.ts';
import { checks } from '/work/main/suites/parallel.ts';
const ref = await startReference(process.argv.slice(2));
try {
  const ctx = makeContext(checks[0], { profile: ref.profile, server: ref.info, tier: 'quick' }, new AbortController().signal, () => ({ p99Ms: 0, maxMs: 0 }));
  for (let i = 0; i < 30; i++) {
    const x = await chat(ctx, generationBody(ctx, 'openai-chat', { prompt: uniquePrompt(ctx, 'hello there notes'), maxTokens: 32, stream: true, exactLength: true, extra: { stream_options: { include_usage: true } } }));
    const m = x.metrics!;
    const gaps = m.itlMs;
    const big = gaps.map((g, j) => [j, g]).filter(([, g]) => g > 15).map(([j, g]) => `${j}:${g.toFixed(0)}`);
    console.log(i, 'hdr', x.rec.tHeaders?.toFixed(1), 'ttft', m.ttftMs?.toFixed(1), 'e2e', m.e2eMs.toFixed(1), 'tps', m.wallTps?.toFixed(1), 'tokens', m.completionTokens, 'big', big.join(' '), 'tail', (m.e2eMs - x.events!.tokens.at(-1)!.t).toFixed(1));
    if (i % 3 == 2) await new Promise((r) => setTimeout(r, 300));
  }
} finally { await ref.stop(); }
