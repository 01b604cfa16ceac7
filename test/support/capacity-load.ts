// A small load generator for the merge's self-test: one "machine" (a process with its own --machine label) runs a
// concurrency schedule against a server and writes a results file with a capacity table. Not the capacity runner
// (lib/capacity/, with its certifying checks): only what the merge needs, each level started at the agreed time on
// this process's own clock, its window and token counts measured on that clock alone.
//
//   node --import tsx test/support/capacity-load.ts --base-url URL --machine a --levels 1,2 --start-at EPOCH_MS
//        --spacing-ms 3000 --max-tokens 24 --out a.json

import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { CapacityLevel, CapacityTable, Percentiles } from '../../lib/capacity/types.ts';
import { quantile } from '../../lib/measure/stats.ts';

interface Stream {
  ok: boolean;
  start: number;
  end: number;
  ttft?: number;
  gaps: number[];
  tokens: number;
  usage?: { prompt: number; completion: number };
}

async function oneStream(baseUrl: string, model: string, maxTokens: number): Promise<Stream> {
  const start = performance.now();
  const out: Stream = { ok: false, start, end: start, gaps: [], tokens: 0 };
  const res = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      stream: true,
      max_tokens: maxTokens,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Count slowly from one upwards.' }],
    }),
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok || !res.body) return { ...out, end: performance.now() };
  const decoder = new TextDecoder();
  let buf = '';
  let last: number | undefined;
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk as Uint8Array, { stream: true });
    let i = buf.indexOf('\n\n');
    while (i >= 0) {
      const event = buf.slice(0, i);
      buf = buf.slice(i + 2);
      i = buf.indexOf('\n\n');
      const data = event
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trim())
        .join('\n');
      if (!data || data === '[DONE]') continue;
      const j = JSON.parse(data) as {
        choices?: Array<{ delta?: { content?: string } }>;
        usage?: { prompt_tokens: number; completion_tokens: number };
      };
      if (j.usage) out.usage = { prompt: j.usage.prompt_tokens, completion: j.usage.completion_tokens };
      if (j.choices?.[0]?.delta?.content) {
        const now = performance.now();
        if (last === undefined) out.ttft = now - start;
        else out.gaps.push(now - last);
        last = now;
        out.tokens++;
      }
    }
  }
  return { ...out, ok: true, end: performance.now() };
}

const pcts = (xs: number[]): Percentiles => ({
  p50: quantile(xs, 0.5) ?? null,
  p90: quantile(xs, 0.9) ?? null,
  p99: quantile(xs, 0.99) ?? null,
});

async function main(): Promise<void> {
  const { values: v } = parseArgs({
    options: {
      'base-url': { type: 'string' },
      model: { type: 'string', default: 'reference-model' },
      machine: { type: 'string' },
      levels: { type: 'string', default: '1,2' },
      'start-at': { type: 'string' },
      'spacing-ms': { type: 'string', default: '3000' },
      'max-tokens': { type: 'string', default: '24' },
      out: { type: 'string' },
    },
  });
  if (!v['base-url'] || !v.machine || !v['start-at'] || !v.out)
    throw new Error('capacity-load needs --base-url, --machine, --start-at and --out');
  const levels = v.levels!.split(',').map(Number);
  const startAt = Number(v['start-at']);
  const spacing = Number(v['spacing-ms']);
  const maxTokens = Number(v['max-tokens']);
  // performance.now() for durations, mapped to this machine's epoch clock once (levels report epoch ms).
  const epoch0 = Date.now() - performance.now();
  const table: CapacityTable = {
    workload: { kind: 'synthetic', inputTokens: 8, outputTokens: maxTokens },
    levels: [],
    machines: [v.machine],
  };
  for (const [k, c] of levels.entries()) {
    const due = startAt + k * spacing;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const streams = await Promise.all(
      Array.from({ length: c }, () =>
        oneStream(v['base-url']!, v.model!, maxTokens).catch(
          (): Stream => ({ ok: false, start: performance.now(), end: performance.now(), gaps: [], tokens: 0 }),
        ),
      ),
    );
    const ok = streams.filter((s) => s.ok);
    const t0 = Math.min(...streams.map((s) => s.start));
    const t1 = Math.max(...streams.map((s) => s.end));
    const usage = ok.every((s) => s.usage);
    const level: CapacityLevel = {
      mode: 'concurrency',
      concurrency: c,
      machine: v.machine,
      startedAt: epoch0 + t0,
      endedAt: epoch0 + t1,
      sent: c,
      completed: ok.length,
      errored: c - ok.length,
      timedOut: 0,
      ttftMs: pcts(ok.flatMap((s) => (s.ttft === undefined ? [] : [s.ttft]))),
      itlMs: pcts(ok.flatMap((s) => s.gaps)),
      e2eMs: pcts(ok.map((s) => s.end - s.start)),
      tpsPerStream: pcts(
        ok.map((s) => (s.tokens > 1 ? ((s.tokens - 1) * 1000) / s.gaps.reduce((a, g) => a + g, 0) : 0)),
      ),
      aggregateTps: (ok.reduce((a, s) => a + (s.usage?.completion ?? s.tokens), 0) * 1000) / (t1 - t0),
      inputTokens: usage ? ok.reduce((a, s) => a + s.usage!.prompt, 0) : null,
      outputTokens: usage ? ok.reduce((a, s) => a + s.usage!.completion, 0) : null,
      streamedTokens: ok.reduce((a, s) => a + s.tokens, 0),
      client: { cpuUsPerEvent: null, loopLagP99Ms: null, clientBound: false },
      flags: [],
    };
    table.levels.push(level);
  }
  const results = {
    header: {
      suite: { name: 'llm-server-conformance', version: 'test' },
      date: new Date().toISOString(),
      project: 'reference',
      profile: { id: 'reference' },
      server: {},
      machine: {
        label: v.machine,
        platform: process.platform,
        arch: process.arch,
        cpus: 0,
        memGiB: 0,
        node: process.version,
      },
      tier: 'quick',
      strict: false,
    },
    checks: [],
    finished: { date: new Date().toISOString(), reason: 'capacity-load' },
    capacity: table,
  };
  writeFileSync(v.out, `${JSON.stringify(results, null, 2)}\n`);
}

main().catch((e) => {
  console.error(`capacity-load: ${(e as Error).message}`);
  process.exitCode = 1;
});
