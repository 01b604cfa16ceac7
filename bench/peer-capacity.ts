// Our capacity mode beside `vllm bench serve` (issue 31, BENCHMARKS.md "Capacity figures beside vLLM's"): on the same
// server in the same session, the same workload through the suite's CLI (`--capacity --max-concurrency L,L,…
// --request-rate R,… --num-prompts N --input-len I --output-len O`, read back from its capacity.json) and through
// vLLM's request function and metrics as bench/peer_vllm_like.py rewrites them (`--metrics`: its arrivals, its
// semaphore, its calculate_metrics with numpy), one run per sweep level (rate inf, max concurrency = the level) and per
// rate (Poisson, max concurrency = the largest level). Alternately, ours then the peer's, `--rounds` times: a figure's
// noise band is the larger of the two clients' own spreads between their rounds (at least 1 %). Not in CI.
//
//   node --import tsx bench/peer-capacity.ts [--targets reference,llama] [--levels 1,4,8] [--rates 2,4]
//        [--num-prompts 100] [--input-len 64] [--output-len 64] [--rounds 2] [--client-cpus 0]
//
// --client-cpus pins both clients (our CLI, the Python peer) to these CPUs with taskset: on a shared 2-core machine a
// client that spends more CPU per event otherwise takes it from the server (llama-server pins itself to the last core).
//
// Targets: `reference` (the reference server, 4 slots, its default 125 tok/s per stream), `llama` (the real
// llama-server of the llama.cpp bundle, tiny model, 4 slots; CONFORMANCE_LLAMA_DIR or ../llama.cpp).

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startReference } from '../fixtures/reference-server/spawn.ts';
import { ROOT } from '../lib/config/profile.ts';
import { findLlamaBundle, llamaRunnable, makeLlamaModel, startLlamaServer } from '../lib/server/llama-server.ts';

const PYTHON = '/usr/bin/python3';
const CLI = join(ROOT, 'bin', 'llm-server-conformance.mjs');

/** The figures compared, by their vLLM names. */
const FIGURES = [
  'request_throughput',
  'output_throughput',
  'mean_ttft_ms',
  'median_ttft_ms',
  'p99_ttft_ms',
  'mean_tpot_ms',
  'median_tpot_ms',
  'mean_itl_ms',
  'median_itl_ms',
  'p99_itl_ms',
  'mean_e2el_ms',
  'p99_e2el_ms',
] as const;

interface Target {
  name: string;
  /** The bundled profile the run copies (forceLength, discovery) with this server's URL and model. */
  profile: 'reference' | 'llama.cpp';
  baseUrl: string;
  model: string;
  stop(): Promise<void>;
}

type Figures = Record<string, number>;

/** taskset -c CPUS for the clients, when asked. */
let clientPin: string[] = [];

function run(cmd: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const argv = [...clientPin, cmd, ...args];
    const p = spawn(argv[0]!, argv.slice(1), { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    const t = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (code) => {
      clearTimeout(t);
      if (code === 0 || (cmd === process.execPath && code === 1)) resolve(out);
      else reject(new Error(`${cmd} ${args.slice(0, 3).join(' ')} exited ${code}: ${(err || out).slice(-800)}`));
    });
  });
}

interface Plan {
  levels: number[];
  rates: number[];
  numPrompts: number;
  inputLen: number;
  outputLen: number;
}

/** The run's keys: "c=4" for a sweep level (rate inf), "r=2" for a rate run. */
const configs = (p: Plan) => [...p.levels.map((c) => `c=${c}`), ...p.rates.map((r) => `r=${r}`)];

/** Our side: the CLI's capacity mode, its capacity.json read back. */
async function ours(t: Target, p: Plan): Promise<Map<string, Figures>> {
  const dir = mkdtempSync(join(tmpdir(), 'peer-capacity-'));
  const bundled = (JSON.parse(readFileSync(join(ROOT, 'servers.json'), 'utf8')) as { servers: Array<{ id: string }> })
    .servers;
  const base = bundled.find((s) => s.id === t.profile)!;
  // Not its start command (the server runs already), nor its hardware (a real model's, not the bench's tiny one).
  const { start: _start, hardware: _hardware, ...profile } = base as Record<string, unknown>;
  const servers = join(dir, 'servers.json');
  writeFileSync(
    servers,
    JSON.stringify({ servers: [{ ...profile, id: 'bench', baseUrl: t.baseUrl, model: t.model }] }),
  );
  const args = [
    CLI,
    '--servers',
    servers,
    '--server',
    'bench',
    '--capacity',
    '--only',
    'capacity',
    '--max-concurrency',
    p.levels.join(','),
    ...(p.rates.length ? ['--request-rate', p.rates.join(',')] : []),
    '--num-prompts',
    String(p.numPrompts),
    '--input-len',
    String(p.inputLen),
    '--output-len',
    String(p.outputLen),
    '--reports',
    join(dir, 'reports'),
    '--quiet',
  ];
  await run(process.execPath, args, 1_200_000);
  const doc = JSON.parse(readFileSync(join(dir, 'reports', 'bench', 'capacity.json'), 'utf8')) as {
    runs: Array<Record<string, unknown>>;
  };
  const out = new Map<string, Figures>();
  for (const r of doc.runs) {
    const key = r.mode === 'concurrency' ? `c=${r.max_concurrency}` : `r=${r.request_rate}`;
    out.set(key, Object.fromEntries(FIGURES.map((f) => [f, Number(r[f])])));
    const flags = String(r.flagged_columns ?? '');
    if (flags) console.error(`peer-capacity: ours ${key} flagged: ${flags} (${r.flag_reasons})`);
  }
  return out;
}

/** The peer: vLLM's request function and metrics, one run per configuration. */
async function peer(t: Target, p: Plan): Promise<Map<string, Figures>> {
  const out = new Map<string, Figures>();
  const cap = Math.max(...p.levels);
  for (const key of configs(p)) {
    const [kind, v] = key.split('=') as [string, string];
    const args = [
      'bench/peer_vllm_like.py',
      '--metrics',
      '--base-url',
      t.baseUrl,
      '--model',
      t.model,
      '--concurrency',
      kind === 'c' ? v : String(cap),
      '--request-rate',
      kind === 'c' ? 'inf' : v,
      '--burstiness',
      '1',
      '--requests',
      String(p.numPrompts),
      '--input-len',
      String(p.inputLen),
      '--max-tokens',
      String(p.outputLen),
      '--extra-body',
      JSON.stringify({ ignore_eos: true, temperature: 0 }),
    ];
    const j = JSON.parse(await run(PYTHON, args, 1_200_000)) as { result: Figures };
    out.set(key, j.result);
  }
  return out;
}

async function targets(names: string[]): Promise<Target[]> {
  const out: Target[] = [];
  for (const name of names) {
    if (name === 'reference') {
      const h = await startReference(['--slots', '4']);
      out.push({
        name: 'reference server, 4 slots',
        profile: 'reference',
        baseUrl: h.baseUrl,
        model: h.profile.model,
        stop: h.stop,
      });
    } else if (name === 'llama') {
      const { bundle, searched } = findLlamaBundle();
      if (!bundle) {
        console.error(`peer-capacity: no llama.cpp bundle in ${searched.join(', ')}: target llama left out`);
        continue;
      }
      const r = await llamaRunnable(bundle);
      if (!r.ok) {
        console.error(`peer-capacity: ${bundle.binary} cannot run: ${r.reason}`);
        continue;
      }
      const dir = join(tmpdir(), 'conformance-peer-models');
      mkdirSync(dir, { recursive: true });
      const model = await makeLlamaModel(bundle, 'tiny', dir);
      const s = await startLlamaServer({ bundle, model, alias: 'tiny-random-llama', slots: 4, ctxPerSlot: 2048 });
      out.push({
        name: `llama-server b4747, tiny model, 4 slots (${r.version})`,
        profile: 'llama.cpp',
        baseUrl: s.baseUrl,
        model: 'tiny-random-llama',
        stop: s.stop,
      });
    } else throw new Error(`unknown target "${name}" (reference, llama)`);
  }
  return out;
}

const f = (x: number | undefined) =>
  x === undefined || !Number.isFinite(x)
    ? 'n/a'
    : Math.abs(x) >= 100
      ? x.toFixed(0)
      : Math.abs(x) >= 10
        ? x.toFixed(1)
        : x.toFixed(2);
const avg = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;
/** Half the range over the mean: how far one client's own rounds moved. */
const spread = (xs: number[]) => (xs.length < 2 ? 0 : (Math.max(...xs) - Math.min(...xs)) / 2 / Math.abs(avg(xs) || 1));

async function main(): Promise<void> {
  const { values: v } = parseArgs({
    options: {
      targets: { type: 'string', default: 'reference,llama' },
      levels: { type: 'string', default: '1,4,8' },
      rates: { type: 'string', default: '2,4' },
      'num-prompts': { type: 'string', default: '100' },
      'input-len': { type: 'string', default: '64' },
      'output-len': { type: 'string', default: '64' },
      rounds: { type: 'string', default: '2' },
      'client-cpus': { type: 'string' },
    },
  });
  const nums = (s: string) => s.split(',').filter(Boolean).map(Number);
  const plan: Plan = {
    levels: nums(v.levels!),
    rates: nums(v.rates!),
    numPrompts: Number(v['num-prompts']),
    inputLen: Number(v['input-len']),
    outputLen: Number(v['output-len']),
  };
  await run(PYTHON, ['-c', 'import aiohttp, numpy'], 20_000).catch((e: Error) => {
    throw new Error(`${PYTHON} needs python3-aiohttp and python3-numpy (apt-get install them): ${e.message}`);
  });
  const ts = await targets(v.targets!.split(','));
  if (v['client-cpus']) clientPin = ['taskset', '-c', v['client-cpus']];
  const lines = [
    '| server | run | figure | ours (rounds) | vLLM-like (rounds) | difference | noise band | within |',
    '|---|---|---|---|---|---|---|---|',
  ];
  try {
    for (const t of ts) {
      const o: Array<Map<string, Figures>> = [];
      const q: Array<Map<string, Figures>> = [];
      for (let r = 0; r < Number(v.rounds); r++) {
        const s0 = performance.now();
        o.push(await ours(t, plan));
        const s1 = performance.now();
        q.push(await peer(t, plan));
        console.error(
          `peer-capacity: ${t.name} round ${r + 1}: ours ${((s1 - s0) / 1000).toFixed(0)} s, peer ${((performance.now() - s1) / 1000).toFixed(0)} s`,
        );
      }
      for (const key of configs(plan)) {
        // vLLM's TTFT is its first `choices` message (a role-only chunk included); the peer's first content is ours.
        const rows: Array<[string, string, string]> = [
          ...FIGURES.map((fig): [string, string, string] => [fig, fig, fig]),
          ...(['mean', 'median', 'p99'] as const).map((s): [string, string, string] => [
            `${s}_ttft_ms (vLLM-like: to the first content)`,
            `${s}_ttft_ms`,
            `${s}_first_content_ms`,
          ]),
        ];
        for (const [label, fo, fp] of rows) {
          const fig = label;
          const a = o.map((m) => m.get(key)?.[fo]).filter((x): x is number => x !== undefined && Number.isFinite(x));
          const b = q.map((m) => m.get(key)?.[fp]).filter((x): x is number => x !== undefined && Number.isFinite(x));
          if (!a.length || !b.length) continue;
          const diff = (avg(a) - avg(b)) / Math.abs(avg(b) || 1);
          // At least 1 %: a rate-bound figure can repeat to 0.1 % in two rounds, which says nothing of the noise.
          const band = Math.max(spread(a), spread(b), 0.01);
          const run_ = key.startsWith('c=')
            ? `${key.slice(2)} streams (rate inf)`
            : `${key.slice(2)} req/s Poisson, max ${Math.max(...plan.levels)}`;
          const line = `| ${t.name} | ${run_} | ${fig} | ${a.map(f).join(', ')} | ${b.map(f).join(', ')} | ${(diff * 100).toFixed(1)} % | ${(band * 100).toFixed(1)} % | ${Math.abs(diff) <= band ? 'yes' : 'no'} |`;
          lines.push(line);
        }
      }
    }
  } finally {
    for (const t of ts) await t.stop();
  }
  console.log(
    `${lines.join('\n')}\n\nworkload: ${plan.numPrompts} prompts of ${plan.inputLen} tokens, ${plan.outputLen} out (ignore_eos), ${v.rounds} rounds each`,
  );
}

main().catch((e) => {
  console.error(`peer-capacity: ${(e as Error).message}`);
  process.exitCode = 1;
});
