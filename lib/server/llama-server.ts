// A real llama.cpp `llama-server` for self-tests and comparison runs: find the bundle (binary, vocab GGUF,
// make-model.mjs, described by the bundle's own README.md), tell whether its binary can run here, write a
// random-weight model from a named recipe, and start the server with one thread per slot (on all cores but one),
// pinned with taskset where it exists. Plain functions, no Vitest: the real-llama self-tests and the matrix use it.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { ROOT } from '../config/profile.ts';
import type { Profile } from '../model/types.ts';
import { freePort, type RunningServer, spawnServer, waitReady } from './lifecycle.ts';

/** Environment variable naming the bundle folder (replaces the default place). */
export const LLAMA_DIR_ENV = 'CONFORMANCE_LLAMA_DIR';

/** Where the bundle is looked for without the env var: `llama.cpp/` beside the checkout, outside the repository. */
export const DEFAULT_LLAMA_DIR = resolve(ROOT, '..', 'llama.cpp');

export interface LlamaBundle {
  dir: string;
  binary: string;
  vocab: string;
  makeModel: string;
}

/** Where the bundle is looked for: the folder the env var names, else DEFAULT_LLAMA_DIR. */
export function llamaBundlePlaces(dir?: string): string[] {
  return [dir ? resolve(dir) : DEFAULT_LLAMA_DIR];
}

/** The complete bundle, or undefined with the place searched. */
export function findLlamaBundle(dir?: string): { bundle?: LlamaBundle; searched: string[] } {
  const searched = llamaBundlePlaces(dir);
  for (const dir of searched) {
    const b = {
      dir,
      binary: join(dir, 'bin', 'llama-server'),
      vocab: join(dir, 'vocab', 'ggml-vocab-phi-3.gguf'),
      makeModel: join(dir, 'make-model.mjs'),
    };
    if (existsSync(b.binary) && existsSync(b.vocab) && existsSync(b.makeModel)) return { bundle: b, searched };
  }
  return { searched };
}

function run(
  file: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number | null; out: string; error?: string }> {
  return new Promise((res) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: number | string }) | null;
      res({
        code: e ? (typeof e.code === 'number' ? e.code : -1) : 0,
        out: `${stdout}${stderr}`,
        error: e ? `${e.code ?? ''} ${e.message}` : undefined,
      });
    });
  });
}

/** CPU features the portable build needs (README "Binary"): AVX2, FMA, F16C on x86-64. */
const REQUIRED_CPU_FLAGS = ['avx2', 'fma', 'f16c'];

/** Why this machine cannot run the portable x86-64 binary, judged before running it; undefined when it may. */
function platformProblem(): string | undefined {
  if (process.platform !== 'linux')
    return `llama-server in the bundle is a Linux x86-64 build; this is ${process.platform}`;
  if (process.arch !== 'x64') return `llama-server in the bundle is an x86-64 build; this CPU is ${process.arch}`;
  let cpuinfo = '';
  try {
    cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return undefined; // cannot tell; running it will
  }
  const flags = new Set((/^flags\s*:(.*)$/m.exec(cpuinfo)?.[1] ?? '').trim().split(/\s+/));
  const missing = REQUIRED_CPU_FLAGS.filter((f) => !flags.has(f));
  return missing.length
    ? `this CPU lacks ${missing.map((f) => f.toUpperCase()).join(', ')}, which the portable llama-server build needs`
    : undefined;
}

/** Can the binary run here? `--version` must exit 0; the reason names a missing CPU feature or library (old glibc). */
export async function llamaRunnable(
  bundle: LlamaBundle,
): Promise<{ ok: true; version: string } | { ok: false; reason: string }> {
  const problem = platformProblem();
  if (problem) return { ok: false, reason: problem };
  const r = await run(bundle.binary, ['--version'], 15_000);
  if (r.code === 0) return { ok: true, version: (/version: (.*)/.exec(r.out)?.[1] ?? 'unknown').trim() };
  const glibc = /GLIBC_[\d.]+/.exec(r.out);
  if (glibc)
    return {
      ok: false,
      reason: `the C library is too old: llama-server needs ${glibc[0]} (glibc ≥ 2.36, README "Binary")`,
    };
  if (/illegal instruction/i.test(r.out) || r.code === 132)
    return {
      ok: false,
      reason: 'illegal instruction: this CPU lacks an instruction set the build needs (AVX2, FMA, F16C)',
    };
  return {
    ok: false,
    reason: `${bundle.binary} --version failed (${r.error ?? `exit ${r.code}`}): ${r.out.trim().split('\n').slice(-3).join(' | ')}`,
  };
}

/** Model recipes of the bundle README, with what they are for. */
const LLAMA_RECIPES = {
  /** 22 MB, 10.8 M parameters: fast (~660 tok/s on 2 cores); per-token overhead dominates, so batching gains little. */
  tiny: {
    args: ['--layers', '4', '--embd', '256', '--ff', '512', '--heads', '4', '--kv-heads', '4', '--tied'],
    bytes: 22.4e6,
  },
  /** 401 MB f32: decode reads every weight per step (memory-bandwidth bound, ~72 tok/s), so concurrent streams batch (~1.5x at 2). */
  'bandwidth-bound': {
    args: [
      '--layers',
      '8',
      '--embd',
      '768',
      '--ff',
      '3072',
      '--heads',
      '12',
      '--kv-heads',
      '12',
      '--tied',
      '--type',
      'f32',
    ],
    bytes: 401e6,
  },
} as const;
export type LlamaRecipe = keyof typeof LLAMA_RECIPES;

/** Write the recipe's model into `dir` (reused when already there: the output is deterministic for a seed). */
export async function makeLlamaModel(bundle: LlamaBundle, recipe: LlamaRecipe, dir: string): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const out = join(dir, `${recipe}.gguf`);
  if (existsSync(out) && statSync(out).size > 0.9 * LLAMA_RECIPES[recipe].bytes) return out;
  const tmp = `${out}.${process.pid}.tmp`;
  const r = await run(
    process.execPath,
    [bundle.makeModel, '--out', tmp, '--vocab', bundle.vocab, '--name', recipe, ...LLAMA_RECIPES[recipe].args],
    120_000,
  );
  if (r.code !== 0) throw new Error(`make-model.mjs (${recipe}) failed: ${r.error ?? ''} ${r.out.trim().slice(-400)}`);
  renameSync(tmp, out);
  return out;
}

export interface LlamaServerOptions {
  bundle: LlamaBundle;
  model: string;
  /** Model id in /v1/models and responses; without it llama-server lists the model path. */
  alias?: string;
  /** Parallel slots (-np); the KV cache is split evenly between them. */
  slots: number;
  /** Tokens per slot: --ctx-size is slots × this. */
  ctxPerSlot: number;
  /** Most tokens a request may generate (--n-predict). */
  nPredict?: number;
  /** Threads: default one per slot, at most one per core but one (llamaThreads). */
  threads?: number;
  /** Pin the threads to CPUs with taskset (default: where taskset exists). */
  pin?: boolean;
  /** --slots and --metrics (default true): the server's own view of busy slots. */
  monitoring?: boolean;
  extraArgs?: string[];
}

let tasksetPath: string | null | undefined;
/** taskset's path, or null where there is none (macOS, minimal containers). */
export function taskset(): string | null {
  if (tasksetPath === undefined)
    tasksetPath = ['/usr/bin/taskset', '/bin/taskset', '/usr/local/bin/taskset'].find((p) => existsSync(p)) ?? null;
  return tasksetPath;
}

/**
 * One thread per slot, on all cores but one (left to our client): ggml's threads spin in barriers, so a thread that
 * loses its core stalls the rest. Measured on 2 shared cores (load 9), bandwidth-bound recipe: 17 tok/s with 1
 * thread, 2 tok/s with 2.
 */
export function llamaThreads(o: Pick<LlamaServerOptions, 'slots' | 'threads'>): number {
  return o.threads ?? Math.max(1, Math.min(o.slots, availableParallelism() - 1));
}

/** The argv that starts llama-server on `port` (a number or the "{port}" placeholder of a profile). */
export function llamaServerArgv(o: LlamaServerOptions, port: number | '{port}'): string[] {
  const threads = llamaThreads(o);
  const args = [
    o.bundle.binary,
    '-m',
    o.model,
    ...(o.alias ? ['--alias', o.alias] : []),
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--ctx-size',
    String(o.slots * o.ctxPerSlot),
    '--parallel',
    String(o.slots),
    '--n-predict',
    String(o.nPredict ?? 2048),
    '--flash-attn',
    '--no-context-shift',
    '--threads',
    String(threads),
    '--threads-batch',
    String(threads),
    ...(o.monitoring === false ? [] : ['--slots', '--metrics']),
    ...(o.extraArgs ?? []),
  ];
  const ts = o.pin === false ? null : taskset();
  // Pin to the last cores: the first ones are where other processes (and our own client) start by default.
  const cores = availableParallelism();
  const cpus = `${Math.max(0, cores - threads)}-${cores - 1}`;
  return ts ? [ts, '-c', cpus, ...args] : args;
}

export interface LlamaServer {
  baseUrl: string;
  port: number;
  argv: string[];
  server: RunningServer;
  stop(): Promise<void>;
}

/** Start llama-server on a free loopback port and wait for /health 200 (503 while the model loads). */
export async function startLlamaServer(o: LlamaServerOptions, startTimeoutMs = 60_000): Promise<LlamaServer> {
  let lastError: unknown;
  // A free port can be taken between our probe and the server's bind: try another one, a bounded number of times.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const argv = llamaServerArgv(o, port);
    const server = spawnServer(argv, { logLines: 60 });
    const baseUrl = `http://127.0.0.1:${port}`;
    const profile = {
      id: `llama-server-${port}`,
      readiness: { kind: 'http', path: '/health', status: 200 },
      startTimeoutMs,
      model: o.alias ?? '',
    } as Profile;
    try {
      await waitReady(profile, baseUrl, {}, server);
      return { baseUrl, port, argv, server, stop: () => server.stop() };
    } catch (e) {
      lastError = e;
      await server.stop();
      if (!server.lastLines(60).some((l) => /bind|address already in use/i.test(l))) break;
    }
  }
  throw lastError;
}

/**
 * A profile for a llama-server this module starts: the `llama.cpp` profile of servers.json (its declarations and
 * knownIssues) with the start command, a {port} base URL, and only what the caller overrides.
 */
export function llamaServerProfile(base: Profile, o: LlamaServerOptions, overrides: Partial<Profile> = {}): Profile {
  return {
    ...base,
    baseUrl: 'http://127.0.0.1:{port}',
    start: { command: llamaServerArgv(o, '{port}') },
    readiness: { kind: 'http', path: '/health', status: 200 },
    startTimeoutMs: 60_000,
    ...overrides,
  };
}
