// What a capacity run measures and how far it goes: the profile's `capacity` field, with the command line's
// --capacity, --slo, --dataset and vLLM's benchmark flags (--max-concurrency, --request-rate, --num-prompts,
// --burstiness, --input-len, --output-len; passed to the checks as CONFORMANCE_* variables, CAPACITY_FLAGS) on top:
// profile values are the defaults, flags win. Without either, the run has no capacity mode (vitest.config.ts leaves its
// file out): it never runs in the quick PR gate by default.
import { hostname } from 'node:os';
import { CAPACITY_FLAG_ENV } from '../config/settings.ts';
import type { Profile, RunSettings, Slo } from '../model/types.ts';

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
  /** The load generator's label in the table (--machine, else the host name). */
  machine: string;
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
  'max-concurrency': { env: CAPACITY_FLAG_ENV['max-concurrency'], parse: (t: string) => parseConcurrencies(t) },
  'request-rate': { env: CAPACITY_FLAG_ENV['request-rate'], parse: (t: string) => parseRates(t) },
  'num-prompts': { env: CAPACITY_FLAG_ENV['num-prompts'], parse: (t: string) => parseCount(t, '--num-prompts', 1) },
  burstiness: { env: CAPACITY_FLAG_ENV.burstiness, parse: (t: string) => parseBurstiness(t) },
  // One output token has no TPOT and no inter-token gap: at least 2.
  'input-len': { env: CAPACITY_FLAG_ENV['input-len'], parse: (t: string) => parseCount(t, '--input-len', 1) },
  'output-len': { env: CAPACITY_FLAG_ENV['output-len'], parse: (t: string) => parseCount(t, '--output-len', 2) },
} as const;
export type CapacityFlag = keyof typeof CAPACITY_FLAGS;

/** Whether the run has its capacity mode: the profile opts in, or the run asked (--capacity). */
export function capacityRequested(profile: Profile, settings: Pick<RunSettings, 'capacity'>): boolean {
  return profile.capacity !== undefined || settings.capacity;
}

/** What of the run's settings shapes a capacity run: the flags given, the SLO, the dataset, the machine. */
type CapacitySettings = Pick<RunSettings, 'slo' | 'dataset' | 'capacityFlags' | 'machine'>;

/** A flag's value as the run was given it, parsed; undefined when not given. */
function flagValue<F extends CapacityFlag>(
  settings: CapacitySettings,
  f: F,
): ReturnType<(typeof CAPACITY_FLAGS)[F]['parse']> | undefined {
  const v = settings.capacityFlags[f];
  return v ? (CAPACITY_FLAGS[f].parse(v) as ReturnType<(typeof CAPACITY_FLAGS)[F]['parse']>) : undefined;
}

const rateOf = (r: number | 'inf') => (r === 'inf' ? Number.POSITIVE_INFINITY : r);

/** The profile's capacity settings with the run's overrides (flags win) and the defaults. */
export function capacityConfig(profile: Profile, settings: CapacitySettings): CapacityConfig {
  const p = profile.capacity ?? {};
  const slo = settings.slo ? parseSlo(settings.slo) : p.slo;
  const dataset = settings.dataset || p.dataset;
  const given =
    flagValue(settings, 'max-concurrency') ?? (p.maxConcurrency === undefined ? undefined : [p.maxConcurrency].flat());
  const levels =
    given && given.length > 1
      ? [...new Set(given.map((c) => Math.max(1, Math.floor(c))))].sort((a, b) => a - b)
      : undefined;
  const maxConcurrency = Math.max(1, Math.floor(given ? Math.max(...given) : 64));
  const requestRates = flagValue(settings, 'request-rate') ?? p.requestRates?.map(rateOf).filter((r) => r > 0);
  const numPrompts =
    flagValue(settings, 'num-prompts') ??
    (p.numPrompts !== undefined ? Math.max(1, Math.floor(p.numPrompts)) : undefined);
  const burstiness =
    flagValue(settings, 'burstiness') ?? (p.burstiness === undefined ? undefined : rateOf(p.burstiness));
  return {
    machine: settings.machine || hostname(),
    maxConcurrency,
    ...(levels ? { levels } : {}),
    rounds: Math.max(2, Math.floor(p.rounds ?? 3)),
    minLevelMs: Math.max(0, p.minLevelMs ?? 1000),
    inputTokens: Math.max(1, Math.floor(flagValue(settings, 'input-len') ?? p.inputTokens ?? 64)),
    outputTokens: Math.max(2, Math.floor(flagValue(settings, 'output-len') ?? p.outputTokens ?? 64)),
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
