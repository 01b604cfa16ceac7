// Side by side with a peer (issue 23, docs/benchmarks.md "Side by side with vLLM's request function"): on the same
// server in the same session, our client (bench/peer-ours.ts, the chat() path of the checks) and vLLM's benchmark
// request function as rewritten from its published behaviour (bench/peer_vllm_like.py, Debian's /usr/bin/python3 with
// python3-aiohttp; `--vllm-file PATH` loads vLLM's own module from a file you have instead) run the same requests at
// the same concurrency, alternately (ours, peer, ours, peer), each in its own process. Both are summarised by the same
// code here, so a difference in the table is a difference in what each client timed. Not in CI.
//
//   npm run bench:peer [-- --targets reference,burst,llama --concurrency 16 --requests 64 --tokens 64 --rounds 2]
//
// Targets: `reference` at a high event rate (500 tok/s per stream, 64 slots), `burst` (the same with its content held
// and flushed at the end after an immediate role chunk, as the seed's vllm-mlx did), `llama` (the real llama-server
// of the llama.cpp bundle, tiny model, 4 slots; CONFORMANCE_LLAMA_DIR or ../llama.cpp).

import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startReference } from '../fixtures/reference-server/spawn.ts';
import { ROOT } from '../lib/config/profile.ts';
import { settingsFromEnv } from '../lib/config/settings.ts';
import { quantile } from '../lib/measure/stats.ts';
import { findLlamaBundle, llamaRunnable, makeLlamaModel, startLlamaServer } from '../lib/server/llama-server.ts';

const PYTHON = '/usr/bin/python3';
const PROMPT = 'Write a long story about a lighthouse keeper.';

interface Target {
  name: string;
  baseUrl: string;
  model: string;
  concurrency: number;
  extra: Record<string, unknown>;
  stop(): Promise<void>;
}

/** One request as either client saw it, in ms and tokens. */
interface Seen {
  ok: boolean;
  ttftMs: number | null;
  /** When the first non-empty content arrived (the same as ttftMs for our client). */
  firstContentMs: number | null;
  itlMs: number[];
  e2eMs: number | null;
  tokens: number | null;
  tokenSource: string;
  messages: number;
  /** Where the server stamps its sends: when it sent the first content (ms after the request), gaps between its sends,
   *  and each stamped message's arrival − send on this client (its lag). */
  serverFirstContentMs: number | null;
  serverItlMs: number[];
  lagMs: number[];
}

interface Summary {
  client: string;
  ok: number;
  ttftP50: number | null;
  ttftP99: number | null;
  contentP50: number | null;
  itlP50: number | null;
  itlP99: number | null;
  tpotP50: number | null;
  e2eP50: number | null;
  aggregateTps: number;
  tokensPerRequest: number | null;
  messagesPerRequest: number;
  tokenSource: string;
  /** The client process's CPU time (whole run, start-up included) per token event received. */
  cpuUsPerMessage: number;
  serverContentP50: number | null;
  serverItlP50: number | null;
  serverItlP99: number | null;
  lagP50: number | null;
  lagP99: number | null;
}

function run(cmd: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (code) => {
      clearTimeout(t);
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.slice(0, 3).join(' ')} exited ${code}: ${err.slice(-800)}`));
    });
  });
}

const q = (xs: number[], p: number) => quantile(xs, p) ?? null;

function summarise(client: string, reqs: Seen[], wallMs: number, cpuS: number): Summary {
  const ok = reqs.filter((r) => r.ok);
  const tokens = ok.map((r) => r.tokens).filter((t): t is number => t !== null);
  // TPOT as vLLM defines it, from each client's own e2e and token count: (e2e − TTFT) / (tokens − 1).
  const tpot = ok.flatMap((r) =>
    r.tokens && r.tokens > 1 && r.e2eMs !== null && r.ttftMs !== null ? [(r.e2eMs - r.ttftMs) / (r.tokens - 1)] : [],
  );
  const sources = [...new Set(ok.map((r) => r.tokenSource))].join('+');
  return {
    client,
    ok: ok.length,
    ttftP50: q(
      ok.map((r) => r.ttftMs!),
      0.5,
    ),
    ttftP99: q(
      ok.map((r) => r.ttftMs!),
      0.99,
    ),
    contentP50: q(
      ok.flatMap((r) => (r.firstContentMs === null ? [] : [r.firstContentMs])),
      0.5,
    ),
    itlP50: q(
      ok.flatMap((r) => r.itlMs),
      0.5,
    ),
    itlP99: q(
      ok.flatMap((r) => r.itlMs),
      0.99,
    ),
    tpotP50: q(tpot, 0.5),
    e2eP50: q(
      ok.flatMap((r) => (r.e2eMs === null ? [] : [r.e2eMs])),
      0.5,
    ),
    aggregateTps: (tokens.reduce((a, t) => a + t, 0) * 1000) / wallMs,
    tokensPerRequest: tokens.length ? tokens.reduce((a, t) => a + t, 0) / tokens.length : null,
    messagesPerRequest: ok.reduce((a, r) => a + r.messages, 0) / Math.max(1, ok.length),
    tokenSource: sources,
    serverContentP50: q(
      ok.flatMap((r) => (r.serverFirstContentMs === null ? [] : [r.serverFirstContentMs])),
      0.5,
    ),
    serverItlP50: q(
      ok.flatMap((r) => r.serverItlMs),
      0.5,
    ),
    serverItlP99: q(
      ok.flatMap((r) => r.serverItlMs),
      0.99,
    ),
    lagP50: q(
      ok.flatMap((r) => r.lagMs),
      0.5,
    ),
    lagP99: q(
      ok.flatMap((r) => r.lagMs),
      0.99,
    ),
    cpuUsPerMessage:
      (cpuS * 1e6) /
      Math.max(
        1,
        ok.reduce((a, r) => a + r.messages, 0),
      ),
  };
}

async function ours(t: Target, requests: number, tokens: number): Promise<Summary> {
  const out = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      'bench/peer-ours.ts',
      t.baseUrl,
      t.model,
      String(t.concurrency),
      String(requests),
      String(tokens),
      PROMPT,
      JSON.stringify(t.extra),
    ],
    300_000,
  );
  const j = JSON.parse(out) as {
    requests: Array<{
      ok: boolean;
      ttftMs: number | null;
      itlMs: number[];
      e2eMs: number | null;
      completionTokens: number | null;
      tokenSource: string | null;
      tokenEvents: number;
      serverFirstContentMs: number | null;
      serverItlMs: number[];
      lagMs: number[];
    }>;
    wall: { start: number; end: number };
    cpuS: number;
  };
  const seen: Seen[] = j.requests.map((r) => ({
    ok: r.ok,
    ttftMs: r.ttftMs,
    firstContentMs: r.ttftMs,
    itlMs: r.itlMs,
    e2eMs: r.e2eMs,
    tokens: r.completionTokens,
    tokenSource: r.tokenSource ?? 'none',
    messages: r.tokenEvents,
    serverFirstContentMs: r.serverFirstContentMs,
    serverItlMs: r.serverItlMs,
    lagMs: r.lagMs,
  }));
  return summarise('ours (chat())', seen, j.wall.end - j.wall.start, j.cpuS);
}

async function peer(t: Target, requests: number, tokens: number, vllmFile?: string): Promise<Summary> {
  const out = await run(
    PYTHON,
    [
      'bench/peer_vllm_like.py',
      '--base-url',
      t.baseUrl,
      '--model',
      t.model,
      '--concurrency',
      String(t.concurrency),
      '--requests',
      String(requests),
      '--max-tokens',
      String(tokens),
      '--prompt',
      PROMPT,
      '--extra-body',
      JSON.stringify(t.extra),
      ...(vllmFile ? ['--vllm-file', vllmFile] : []),
    ],
    300_000,
  );
  const j = JSON.parse(out) as {
    requests: Array<{
      ok: boolean;
      ttft: number | null;
      itl: number[];
      latency: number | null;
      output_tokens: number | null;
      messages: number;
      first_content?: number | null;
      server_content_sends?: number[];
      lags?: number[];
    }>;
    wall: { start: number; end: number };
    cpuS: number;
  };
  const seen: Seen[] = j.requests.map((r) => ({
    ok: r.ok,
    ttftMs: r.ttft === null ? null : r.ttft * 1000,
    firstContentMs: r.first_content == null ? null : r.first_content * 1000,
    itlMs: r.itl.map((x) => x * 1000),
    e2eMs: r.latency === null ? null : r.latency * 1000,
    // No usage seen: vLLM would count the text with the model's tokenizer; here one token per `choices` message.
    tokens: r.output_tokens ?? r.messages,
    tokenSource: r.output_tokens !== null ? 'usage' : 'messages',
    messages: r.messages,
    serverFirstContentMs: r.server_content_sends?.length ? r.server_content_sends[0]! * 1000 : null,
    serverItlMs: (r.server_content_sends ?? []).slice(1).map((v, i) => (v - r.server_content_sends![i]!) * 1000),
    lagMs: (r.lags ?? []).map((x) => x * 1000),
  }));
  return summarise(vllmFile ? 'vLLM (its file)' : 'vLLM-like', seen, (j.wall.end - j.wall.start) * 1000, j.cpuS);
}

async function targets(names: string[], concurrency: number, stamp: boolean): Promise<Target[]> {
  const out: Target[] = [];
  for (const name of names) {
    if (name === 'reference' || name === 'burst') {
      const fault = name === 'burst' ? ['--fault', 'stream-role-now-content-at-end'] : [];
      // Stamped sends give the truth both clients are judged by (vLLM's own file cannot read an `id:` line).
      const h = await startReference([
        '--slots',
        '64',
        '--decode-tps',
        '500',
        ...(stamp ? ['--stamp-send'] : []),
        ...fault,
      ]);
      out.push({
        name: name === 'burst' ? 'reference, burst (role now, content at end)' : 'reference @ 500 tok/s per stream',
        baseUrl: h.baseUrl,
        model: h.profile.model,
        concurrency,
        extra: { ignore_eos: true },
        stop: h.stop,
      });
    } else if (name === 'llama') {
      const { bundle, searched } = findLlamaBundle(settingsFromEnv().llamaDir);
      if (!bundle) {
        console.error(`peer: no llama.cpp bundle in ${searched.join(', ')}: target llama left out`);
        continue;
      }
      const r = await llamaRunnable(bundle);
      if (!r.ok) {
        console.error(`peer: ${bundle.binary} cannot run: ${r.reason}`);
        continue;
      }
      const dir = join(tmpdir(), 'conformance-peer-models');
      mkdirSync(dir, { recursive: true });
      const model = await makeLlamaModel(bundle, 'tiny', dir);
      const s = await startLlamaServer({ bundle, model, alias: 'tiny-random-llama', slots: 4, ctxPerSlot: 2048 });
      out.push({
        name: `llama-server b4747, tiny model, 4 slots (${r.version})`,
        baseUrl: s.baseUrl,
        model: 'tiny-random-llama',
        concurrency: Math.min(concurrency, 4),
        extra: { ignore_eos: true },
        stop: s.stop,
      });
    } else throw new Error(`unknown target "${name}" (reference, burst, llama)`);
  }
  return out;
}

const f = (x: number | null, d = 1) => (x === null ? 'n/a' : x.toFixed(d));

function row(t: Target, s: Summary): string {
  return `| ${t.name} | ${t.concurrency} | ${s.client} | ${s.ok} | ${f(s.ttftP50)} / ${f(s.ttftP99)} | ${f(s.contentP50)} | ${f(s.itlP50, 2)} / ${f(s.itlP99, 2)} | ${f(s.tpotP50, 2)} | ${f(s.e2eP50)} | ${f(s.aggregateTps, 0)} | ${f(s.tokensPerRequest)} (${s.tokenSource}) | ${f(s.messagesPerRequest)} | ${f(s.cpuUsPerMessage, 0)} | ${f(s.lagP50, 2)} / ${f(s.lagP99, 2)} | ${f(s.serverContentP50)} | ${f(s.serverItlP50, 2)} / ${f(s.serverItlP99, 2)} |`;
}

async function main(): Promise<void> {
  const { values: v } = parseArgs({
    options: {
      targets: { type: 'string', default: 'reference,burst,llama' },
      concurrency: { type: 'string', default: '16' },
      requests: { type: 'string', default: '64' },
      tokens: { type: 'string', default: '64' },
      rounds: { type: 'string', default: '2' },
      'vllm-file': { type: 'string' },
    },
  });
  const probe = await run(PYTHON, ['-c', 'import aiohttp; print(aiohttp.__version__)'], 20_000).catch((e: Error) => {
    throw new Error(
      `${PYTHON} cannot import aiohttp (install Debian's python3-aiohttp: apt-get install python3-aiohttp): ${e.message}`,
    );
  });
  console.error(`peer: ${PYTHON} with aiohttp ${probe.trim()}`);
  const ts = await targets(v.targets!.split(','), Number(v.concurrency), !v['vllm-file']);
  const lines = [
    '| server | concurrency | client | ok | TTFT p50 / p99 (ms) | first content p50 (ms) | ITL p50 / p99 (ms) | TPOT p50 (ms) | e2e p50 (ms) | aggregate tok/s | tokens per request (source) | messages per request | client CPU µs per message | arrival lag p50 / p99 (ms) | server: first content sent p50 (ms) | server: ITL p50 / p99 (ms) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  try {
    for (const t of ts) {
      for (let r = 0; r < Number(v.rounds); r++) {
        for (const side of [ours, (x: Target, n: number, k: number) => peer(x, n, k, v['vllm-file'])]) {
          const s = await side(t, Number(v.requests), Number(v.tokens));
          const line = row(t, s);
          lines.push(line);
          console.error(line);
        }
      }
    }
  } finally {
    for (const t of ts) await t.stop();
  }
  console.log(lines.join('\n'));
}

main().catch((e) => {
  console.error(`peer: ${(e as Error).message}`);
  process.exitCode = 1;
});
