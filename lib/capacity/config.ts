// What a capacity run measures and how far it goes: the profile's `capacity` field, with the command line's
// --capacity, --slo and --dataset (passed to the checks as CONFORMANCE_CAPACITY, CONFORMANCE_SLO, CONFORMANCE_DATASET)
// on top. Without either, the `capacity` family skips: it never runs in the quick PR gate by default.
import type { Profile } from '../model/types.ts';
import type { Slo } from './types.ts';

/** The profile's `capacity` field (servers.schema.json): every key optional. */
export interface CapacityProfile {
  /** Highest concurrency of the sweep (default 64). */
  maxConcurrency?: number;
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
  /** Levels measured past the saturation point, to see overload (default 1). */
  overloadLevels?: number;
  /** KV cache bytes read per stream per decode step (GB), for the batched-decode bound (default 0: weights only). */
  kvBytesPerStreamGB?: number;
  /** Seed of the Poisson arrivals (default 1). */
  seed?: number;
}

export interface CapacityConfig {
  maxConcurrency: number;
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

/** Whether the capacity family runs: the profile opts in, or the run asked (--capacity). */
export function capacityRequested(profile: Profile, env: NodeJS.ProcessEnv = process.env): boolean {
  return profile.capacity !== undefined || env.CONFORMANCE_CAPACITY === '1';
}

/** The profile's capacity settings with the run's overrides and the defaults. */
export function capacityConfig(profile: Profile, env: NodeJS.ProcessEnv = process.env): CapacityConfig {
  const p = profile.capacity ?? {};
  const slo = env.CONFORMANCE_SLO ? parseSlo(env.CONFORMANCE_SLO) : p.slo;
  const dataset = env.CONFORMANCE_DATASET || p.dataset;
  return {
    maxConcurrency: Math.max(1, Math.floor(p.maxConcurrency ?? 64)),
    rounds: Math.max(2, Math.floor(p.rounds ?? 3)),
    minLevelMs: Math.max(0, p.minLevelMs ?? 1000),
    inputTokens: Math.max(1, Math.floor(p.inputTokens ?? 64)),
    outputTokens: Math.max(2, Math.floor(p.outputTokens ?? 64)),
    ...(dataset ? { dataset } : {}),
    ...(slo ? { slo } : {}),
    rateFractions: (p.rateFractions ?? [0.5, 0.9]).filter((f) => f > 0),
    rateRequests: Math.max(4, Math.floor(p.rateRequests ?? 24)),
    overloadLevels: Math.max(0, Math.floor(p.overloadLevels ?? 1)),
    kvBytesPerStreamGB: Math.max(0, p.kvBytesPerStreamGB ?? 0),
    seed: Math.floor(p.seed ?? 1),
  };
}
