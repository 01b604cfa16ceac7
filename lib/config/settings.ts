// The run's settings as data: what the command line, the Action or a checkout's `npx vitest` asks of a run. The
// environment (CONFORMANCE_* variables, how the CLI hands options to the Vitest run it drives) is read here and
// nowhere else in lib/; everything below takes these values as parameters.

/**
 * The capacity flags of `vllm bench serve` (--max-concurrency, …) and the variables the CLI hands them over in; their
 * values are parsed by lib/capacity/config.ts.
 */
export const CAPACITY_FLAG_ENV = {
  'max-concurrency': 'CONFORMANCE_MAX_CONCURRENCY',
  'request-rate': 'CONFORMANCE_REQUEST_RATE',
  'num-prompts': 'CONFORMANCE_NUM_PROMPTS',
  burstiness: 'CONFORMANCE_BURSTINESS',
  'input-len': 'CONFORMANCE_INPUT_LEN',
  'output-len': 'CONFORMANCE_OUTPUT_LEN',
} as const;

import type { RunSettings } from '../model/types.ts';

/** A variable that does not say what it must: named, with what it takes. */
class SettingsError extends Error {
  constructor(
    readonly variable: string,
    readonly raw: string,
    readonly wants: string,
  ) {
    super(`${variable} must be ${wants}, not "${raw}"`);
  }
}

function number(env: NodeJS.ProcessEnv, name: string, min: number, wants: string): number | undefined {
  const raw = env[name]?.trim();
  if (!raw) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new SettingsError(name, raw, wants);
  return n;
}

/** The settings the environment gives (this process's unless another is passed); throws SettingsError. */
export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): RunSettings {
  const tier = env.CONFORMANCE_TIER?.trim() || 'quick';
  if (tier !== 'quick' && tier !== 'full') throw new SettingsError('CONFORMANCE_TIER', tier, '"quick" or "full"');
  const healthWaitS = number(env, 'CONFORMANCE_HEALTH_WAIT_S', 0, 'a number of seconds ≥ 0');
  const optional = (name: string) => (env[name]?.trim() ? env[name]!.trim() : undefined);
  return {
    tier,
    strict: env.CONFORMANCE_STRICT === '1',
    waitS: number(env, 'CONFORMANCE_WAIT_S', 0, 'a number of seconds ≥ 0 (--wait SECONDS sets it)'),
    deadlineS: number(env, 'CONFORMANCE_DEADLINE_S', 10, 'a number of seconds ≥ 10'),
    sentinel: env.CONFORMANCE_HEALTH_SENTINEL !== '0',
    ...(healthWaitS !== undefined ? { healthWaitMs: healthWaitS * 1000 } : {}),
    preflight: env.CONFORMANCE_PREFLIGHT !== '0',
    capacity: env.CONFORMANCE_CAPACITY === '1',
    slo: optional('CONFORMANCE_SLO'),
    dataset: optional('CONFORMANCE_DATASET'),
    capacityFlags: Object.fromEntries(
      Object.entries(CAPACITY_FLAG_ENV).flatMap(([flag, name]) => (optional(name) ? [[flag, optional(name)]] : [])),
    ),
    machine: optional('CONFORMANCE_MACHINE'),
    llamaDir: optional('CONFORMANCE_LLAMA_DIR'),
  };
}

/** The settings of a run that was asked nothing: every default (self-tests, scripts). */
export const defaultSettings = (): RunSettings => settingsFromEnv({});

/** The environment a child process the run starts inherits (a server, a worker), with `extra` on top. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, ...extra };
}
