// What a capacity run measures and how far it goes: the profile's `capacity` field, with the command line's
// --capacity, --slo, --dataset and vLLM's benchmark flags (--max-concurrency, --request-rate, --num-prompts,
// --burstiness, --input-len, --output-len; passed to the checks as CONFORMANCE_* variables, CAPACITY_FLAGS) on top:
// profile values are the defaults, flags win. Without either, the `capacity` family skips: it never runs in the quick
// PR gate by default.
import type { Profile } from '../check/types.ts';
import type { Slo } from './types.ts';

/** The profile's `capacity` field (servers.schema.json): every key optional. */
export interface CapacityProfile {
  /** Highest concurrency of the sweep (default 64), or its levels, each measured (vLLM's --max-concurrency). */
  maxConcurrency?: number | number[];
  /** Requests each stream sends in turn at a level of the sweep (rounds; default 3, at least 2 for a noise band). */
  rounds?: number;
  /** Shortest level (ms, default 1000): on a fast server streams keep sending past `rounds` until it has lasted this long. */
  minLevelMs?: number;
  /** Synthetic prompts: prompt and output lengths in tokens (defaults 64 and 64). */
  inputTokens?: number;
  outputTokens?: number;
  /** A dataset file of prompts instead (JSONL of OpenAI messages arrays, or ShareGPT JSON). */
  dataset?: string;
  slo?: Slo;
  /** Request-rate runs, as fractions of the request rate the saturation level served (default [0.5, 0.9]). */
  rateFractions?: number[];
  /** Requests per request-rate run (default 24). */
  rateRequests?: number;
  /** Request-rate runs at these rates (req/s, "inf": all at once) instead of fractions of saturation (vLLM's --request-rate). */
  requestRates?: Array<number | 'inf'>;
  /** Requests per rate run and at least per sweep level (vLLM's --num-prompts). */
  numPrompts?: number;
  /** Shape of the gamma-distributed gaps of a rate run: 1 Poisson, "inf" constant (vLLM's --burstiness). */
  burstiness?: number | 'inf';
  /** Levels measured past the saturation point, to see overload (default 1). */
  overloadLevels?: number;
  /** KV cache bytes read per stream per decode step (GB), for the batched-decode bound (default 0: weights only). */
  kvBytesPerStreamGB?: number;
  /** Seed of the Poisson arrivals (default 1). */
  seed?: number;
}

export interface CapacityConfig {
  /** The sweep's bound, and the most requests a rate run keeps in flight (vLLM's --max-concurrency). */
  maxConcurrency: number;
  /** The sweep's levels when given as a list: each is measured (no stop at saturation); else 1, 2, 4, … maxConcurrency. */
  levels?: number[];
  /** Rates of the rate runs (req/s; Infinity: all at once) instead of rateFractions of the saturation rate. */
  requestRates?: number[];
  /** Requests of each rate run, and the least each sweep level sends (undefined: `rounds` and `minLevelMs` decide). */
  numPrompts?: number;
  /** Gamma shape of the rate runs' gaps (Infinity: constant); undefined: constant and Poisson runs at each fraction,
   *  Poisson at each given rate (vLLM's default). */
  burstiness?: number;
  rounds: number;
  minLevelMs: number;
  inputTokens: number;
  outputTokens: number;
  dataset?: string;
  slo?: Slo;
  rateFractions: number[];
  rateRequests: number;
  overloadLevels: number;
  kvBytesPerStreamGB: number;
  seed: number;
}

export class SloError extends Error {}

const SLO_KEYS: Record<string, keyof Slo> = { 'ttft-p99': 'ttftP99Ms', 'itl-p99': 'itlP99Ms', 'e2e-p99': 'e2eP99Ms' };

/** `ttft-p99=500,itl-p99=50` (ms; a value may end in `ms` or `s`) → an Slo. Throws SloError naming the bad part. */
export function parseSlo(text: string): Slo {
  const out: Slo = {};
  for (const part of text.split(',').map((s) => s.trim())) {
    if (!part) continue;
    const m = /^([a-z0-9-]+)=([0-9]*\.?[0-9]+)(ms|s)?$/.exec(part);
    const key = m ? SLO_KEYS[m[1]!] : undefined;
    if (!m || !key)
      throw new SloError(
        `--slo: "${part}" is not KEY=MILLISECONDS with KEY one of ${Object.keys(SLO_KEYS).join(', ')} (e.g. ttft-p99=500,itl-p99=50)`,
      );
    const v = Number(m[2]) * (m[3] === 's' ? 1000 : 1);
    if (!(v > 0)) throw new SloError(`--slo: ${m[1]} must be above 0 ms, not ${m[2]}`);
    out[key] = v;
  }
  if (Object.keys(out).length === 0) throw new SloError('--slo: give at least one of ttft-p99, itl-p99, e2e-p99');
  return out;
}

/** A capacity flag (or its environment variable, or the programmatic option) that cannot be read: names the flag. */
export class CapacityFlagError extends Error {}

const listOf = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

const isInf = (s: string) => /^\+?inf(inity)?$/i.test(s);

/** `8` or `1,4,8`: concurrencies (integers 1–4096), ascending, each once. */
export function parseConcurrencies(text: string, flag = '--max-concurrency'): number[] {
  const out = listOf(text).map((s) => {
    const n = Number(s);
    if (!/^\d+$/.test(s) || n < 1 || n > 4096)
      throw new CapacityFlagError(`${flag}: "${s}" is not a number of concurrent requests (1-4096), e.g. 8 or 1,4,8`);
    return n;
  });
  if (!out.length) throw new CapacityFlagError(`${flag} needs a number of concurrent requests, e.g. 8 or 1,4,8`);
  return [...new Set(out)].sort((a, b) => a - b);
}

/** `2,4,inf`: request rates in req/s (above 0; `inf` sends every request at once), in the order given. */
export function parseRates(text: string, flag = '--request-rate'): number[] {
  const out = listOf(text).map((s) => {
    if (isInf(s)) return Number.POSITIVE_INFINITY;
    const n = Number(s);
    if (!/^[0-9]*\.?[0-9]+(e[+-]?\d+)?$/i.test(s) || !(n > 0))
      throw new CapacityFlagError(`${flag}: "${s}" is not a request rate (req/s above 0, or inf), e.g. 2,4,inf`);
    return n;
  });
  if (!out.length) throw new CapacityFlagError(`${flag} needs one or more request rates, e.g. 2,4,inf`);
  return out;
}

/** The gamma shape of the arrivals: above 0, or `inf` (constant spacing). */
export function parseBurstiness(text: string, flag = '--burstiness'): number {
  const s = text.trim();
  if (isInf(s)) return Number.POSITIVE_INFINITY;
  const n = Number(s);
  if (!s || !Number.isFinite(n) || !(n > 0))
    throw new CapacityFlagError(
      `${flag}: "${text}" is not a burstiness (above 0: 1 is Poisson, below 1 burstier, inf constant spacing)`,
    );
  return n;
}

/** A whole number of at least `min` (at most 1,000,000). */
export function parseCount(text: string, flag: string, min: number): number {
  const s = text.trim();
  const n = Number(s);
  if (!/^\d+$/.test(s) || n < min || n > 1_000_000)
    throw new CapacityFlagError(`${flag} needs a whole number of at least ${min}, not "${text}"`);
  return n;
}

/**
 * The capacity flags named as `vllm bench serve` names them, each with the variable that carries it to the checks and
 * its parser (the CLI, the programmatic API and the Action validate with these before anything runs).
 */
export const CAPACITY_FLAGS = {
  'max-concurrency': { env: 'CONFORMANCE_MAX_CONCURRENCY', parse: (t: string) => parseConcurrencies(t) },
  'request-rate': { env: 'CONFORMANCE_REQUEST_RATE', parse: (t: string) => parseRates(t) },
  'num-prompts': { env: 'CONFORMANCE_NUM_PROMPTS', parse: (t: string) => parseCount(t, '--num-prompts', 1) },
  burstiness: { env: 'CONFORMANCE_BURSTINESS', parse: (t: string) => parseBurstiness(t) },
  // One output token has no TPOT and no inter-token gap: at least 2.
  'input-len': { env: 'CONFORMANCE_INPUT_LEN', parse: (t: string) => parseCount(t, '--input-len', 1) },
  'output-len': { env: 'CONFORMANCE_OUTPUT_LEN', parse: (t: string) => parseCount(t, '--output-len', 2) },
} as const;
export type CapacityFlag = keyof typeof CAPACITY_FLAGS;

/** Whether the capacity family runs: the profile opts in, or the run asked (--capacity). */
export function capacityRequested(profile: Profile, env: NodeJS.ProcessEnv = process.env): boolean {
  return profile.capacity !== undefined || env.CONFORMANCE_CAPACITY === '1';
}

/** A flag's value from the environment, parsed; undefined when not set. */
function fromEnv<F extends CapacityFlag>(
  env: NodeJS.ProcessEnv,
  f: F,
): ReturnType<(typeof CAPACITY_FLAGS)[F]['parse']> | undefined {
  const v = env[CAPACITY_FLAGS[f].env];
  return v ? (CAPACITY_FLAGS[f].parse(v) as ReturnType<(typeof CAPACITY_FLAGS)[F]['parse']>) : undefined;
}

const rateOf = (r: number | 'inf') => (r === 'inf' ? Number.POSITIVE_INFINITY : r);

/** The profile's capacity settings with the run's overrides (flags win) and the defaults. */
export function capacityConfig(profile: Profile, env: NodeJS.ProcessEnv = process.env): CapacityConfig {
  const p = profile.capacity ?? {};
  const slo = env.CONFORMANCE_SLO ? parseSlo(env.CONFORMANCE_SLO) : p.slo;
  const dataset = env.CONFORMANCE_DATASET || p.dataset;
  const given =
    fromEnv(env, 'max-concurrency') ?? (p.maxConcurrency === undefined ? undefined : [p.maxConcurrency].flat());
  const levels =
    given && given.length > 1
      ? [...new Set(given.map((c) => Math.max(1, Math.floor(c))))].sort((a, b) => a - b)
      : undefined;
  const maxConcurrency = Math.max(1, Math.floor(given ? Math.max(...given) : 64));
  const requestRates = fromEnv(env, 'request-rate') ?? p.requestRates?.map(rateOf).filter((r) => r > 0);
  const numPrompts =
    fromEnv(env, 'num-prompts') ?? (p.numPrompts !== undefined ? Math.max(1, Math.floor(p.numPrompts)) : undefined);
  const burstiness = fromEnv(env, 'burstiness') ?? (p.burstiness === undefined ? undefined : rateOf(p.burstiness));
  return {
    maxConcurrency,
    ...(levels ? { levels } : {}),
    rounds: Math.max(2, Math.floor(p.rounds ?? 3)),
    minLevelMs: Math.max(0, p.minLevelMs ?? 1000),
    inputTokens: Math.max(1, Math.floor(fromEnv(env, 'input-len') ?? p.inputTokens ?? 64)),
    outputTokens: Math.max(2, Math.floor(fromEnv(env, 'output-len') ?? p.outputTokens ?? 64)),
    ...(dataset ? { dataset } : {}),
    ...(slo ? { slo } : {}),
    rateFractions: (p.rateFractions ?? [0.5, 0.9]).filter((f) => f > 0),
    rateRequests: numPrompts ?? Math.max(4, Math.floor(p.rateRequests ?? 24)),
    ...(requestRates?.length ? { requestRates } : {}),
    ...(numPrompts !== undefined ? { numPrompts } : {}),
    ...(burstiness !== undefined && burstiness > 0 ? { burstiness } : {}),
    overloadLevels: Math.max(0, Math.floor(p.overloadLevels ?? 1)),
    kvBytesPerStreamGB: Math.max(0, p.kvBytesPerStreamGB ?? 0),
    seed: Math.floor(p.seed ?? 1),
  };
}
