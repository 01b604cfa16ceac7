// What each check must grade on a real llama-server (b4747), per configuration. Protocol checks expect one
// outcome; timing checks a set (the machine is shared, so speed varies 10x while a run goes on). Every expected
// non-pass carries its reason: llama.cpp's documented behaviour with a link, or the suite's reason for skipping.
// A check not listed must pass everywhere.

import type { LlamaConfigName } from '../../fixtures/llama-configs.ts';
import type { Outcome } from '../../lib/model/types.ts';

export interface Expectation {
  outcomes: Outcome[];
  /** Why anything other than pass: llama.cpp's documented behaviour, or the capability the configuration lacks. */
  why?: string;
  link?: string;
  /** A warn is also accepted when the verdict marks it borderline (no confidence bound past the threshold). */
  borderlineWarn?: boolean;
}

type PerConfig = Expectation & { configs?: Partial<Record<LlamaConfigName, Expectation>> };

const PROFILE_KNOWN = 'a known issue of the llama.cpp profile (servers.json knownIssues, reason and link there)';
const B4747_KNOWN =
  'a known issue of build b4747, fixed later (fixtures/llama-configs.ts B4747_KNOWN_ISSUES, reason and link there)';
const LOADED = 'timing on a shared 2-core machine: a starved client is inconclusive, never a verdict on the server';
/** Timing checks whose grading under changing or extreme speed is issue 8 item 3 (`speed`): a fail here is theirs. */
const SPEED = `${LOADED}; speed-sized budgets and phantom/cadence grading are issue 8 item 3`;
/** The cycles family on a shared machine: a neighbour's load is a step the slope cannot tell from a server's. */
const CYCLES = `${SPEED}; a neighbour that takes the server's CPU mid-run is inconclusive (lib/measure/machine-load.ts), but one that shares its caches and memory bandwidth slows it without taking CPU: a warn (short of the fail criterion), never a fail`;

export const EXPECTATIONS: Record<string, PerConfig> = {
  // --- protocol checks: one outcome each
  'api.unknown-model': { outcomes: ['known'], why: PROFILE_KNOWN },
  'sse.role-first': { outcomes: ['known'], why: B4747_KNOWN },
  'sse.usage-form': { outcomes: ['known'], why: PROFILE_KNOWN },
  'errors.malformed-json': { outcomes: ['known'], why: PROFILE_KNOWN },
  'errors.required-shape': { outcomes: ['known'], why: PROFILE_KNOWN },
  'errors.no-server-error': { outcomes: ['known'], why: PROFILE_KNOWN },
  'errors.optional-types': {
    outcomes: ['warn'],
    why: 'lenient parsing, the SHOULD this check grades: llama-server reads every optional parameter through json_value(), which on a wrong type logs "Wrong type supplied for parameter" and uses the default, so max_tokens "ten", temperature "hot" and stream "maybe" are served with 200',
    link: 'https://github.com/ggml-org/llama.cpp/blob/b4747/examples/server/utils.hpp',
  },
  'context.over-window-400': { outcomes: ['known'], why: B4747_KNOWN },
  'anthropic.event-lines': {
    outcomes: ['skip'],
    why: "b4747 predates llama-server's /v1/messages, so the configuration does not list anthropic-messages",
    link: 'https://github.com/ggml-org/llama.cpp/pull/17570',
  },
  'anthropic.event-sequence': {
    outcomes: ['skip'],
    why: "b4747 predates llama-server's /v1/messages, so the configuration does not list anthropic-messages",
    link: 'https://github.com/ggml-org/llama.cpp/pull/17570',
  },
  'ollama.ndjson-framing': {
    outcomes: ['skip'],
    why: 'llama-server has no Ollama-native /api/chat; the llama.cpp profile does not list ollama-native',
  },
  'ollama.done-line': {
    outcomes: ['skip'],
    why: 'llama-server has no Ollama-native /api/chat; the llama.cpp profile does not list ollama-native',
  },
  'context.max-accepted': {
    outcomes: ['skip'],
    why: 'full tier only (bisection); the real-llama project runs the quick tier',
  },
  'context.served-window': {
    outcomes: ['warn'],
    why: 'the configuration serves a small window per slot (--ctx-size slots × 2048 or × 1024, for CI time) of a model whose GGUF declares 131072 (make-model.mjs --ctx default): the SHOULD check is right to warn',
  },
  // Content checks on a random-weight model: it never echoes what it is asked to, so these cannot decide.
  'sse.utf8-intact': {
    outcomes: ['inconclusive', 'pass'],
    why: 'random weights do not echo the multibyte string asked for; a pass needs multibyte text to come back by chance',
  },
  'parallel.isolation': {
    outcomes: ['inconclusive'],
    why: "random weights do not echo the nonce, and llama-server is not declared deterministic (batched kernels are not batch-invariant), so mixed text cannot be told from the model's own",
  },
  'metrics.gen-tps-physical': {
    outcomes: ['skip'],
    why: 'no hardware bound declared for the 22 MB model (it largely fits in CPU cache)',
    configs: { 'bandwidth-4': { outcomes: ['pass', 'inconclusive'], why: SPEED } },
  },
  'parallel.no-starvation': {
    outcomes: ['pass', 'inconclusive'],
    why: LOADED,
    configs: {
      'tiny-1': { outcomes: ['skip'], why: 'one slot, reported by GET /props total_slots: nothing runs in parallel' },
      'bandwidth-4': {
        outcomes: ['pass', 'inconclusive'],
        borderlineWarn: true,
        why:
          "on one pinned thread llama-server b4747 now and then serves one stream's 8 tokens before it starts the other streams (CI 2026-12-05: in 1 of 2 repetitions, three streams' first tokens 0.4-470 ms after stream 3's last): split evidence is a borderline warn by the check's rule, a fail needs every repetition serialised; " +
          LOADED,
      },
    },
  },
  // --- timing checks: a set; never fail
  // Where the check runs (slots > 1), the harness replaces this with what a plain fetch client measured just before
  // (plain-speedup.ts): the reasons below are why the figure moves, the verdict must follow it.
  'parallel.speedup-2': {
    outcomes: ['pass', 'inconclusive'],
    why: SPEED,
    configs: {
      'bandwidth-4': {
        outcomes: ['pass', 'inconclusive'],
        borderlineWarn: true,
        why:
          'two streams batch 1.55x on a quiet machine, 1.24-1.34x with a neighbour on the other core (memory bandwidth is shared): an interval that straddles 1.3x is a borderline warn by docs/grading.md "Timing verdicts", never a clear one; ' +
          SPEED,
      },
      'tiny-4': {
        outcomes: ['pass', 'warn', 'inconclusive'],
        why:
          'the 22 MB model is bound by per-token overhead, not memory: two streams gain ~1.1x (bundle README: 660 → 730 tok/s), which the check reads as "no effective batching" with 4 slots; ' +
          SPEED,
      },
    },
  },
  'parallel.scaling': {
    outcomes: ['pass', 'inconclusive'],
    why: SPEED,
    configs: {
      'tiny-4': {
        outcomes: ['pass', 'warn', 'inconclusive'],
        why:
          'INFO: the 22 MB model on one server thread gains little from more streams (per-token overhead, not memory, bounds it), which the check reports as no scaling; ' +
          SPEED,
      },
      'bandwidth-4': {
        outcomes: ['pass', 'warn', 'inconclusive'],
        why:
          'INFO (never fails, strict or not): the quick tier sizes 8-token streams at ~16 tok/s, so the prefill of the concurrent prompts on one server thread (~0.3 s each, TTFT p50 0.9 s at 4) is most of each request and the aggregate gain reads 1.2-1.6x with a neighbour on the other core; parallel.speedup-2 is the verdict on batching; ' +
          SPEED,
      },
    },
  },
  'stream.ttft-before-end': { outcomes: ['pass', 'inconclusive'], why: SPEED },
  'stream.spread': { outcomes: ['pass', 'inconclusive'], why: SPEED },
  'stream.headers-early': { outcomes: ['pass', 'inconclusive'], why: SPEED },
  'stream.cancel-frees-slot': {
    outcomes: ['pass'],
    why: '/slots is_processing (--slots) shows the slot freed: a counter, not timing',
  },
  'metrics.gen-tps-plausible': { outcomes: ['pass', 'inconclusive'], why: SPEED },
  'metrics.server-timings-agree': { outcomes: ['pass', 'inconclusive'], why: SPEED },
  'api.stop-sequence': {
    outcomes: ['pass', 'inconclusive'],
    why: 'random text: a stop string may not come up before max_tokens',
  },
  // A neighbour that starts mid-run steps throughput down for the rest of the cycles (CI, tiny-1: 436 → 343 tok/s at
  // cycle 5, slope interval -19.2 … +0.05; another CI run 368 → 271 tok/s, interval -16.2 … -1.5, a 17 % drop): a
  // leak's shape without a leak. Where the neighbour took the server's CPU the verdict is inconclusive with the
  // figures; the rest is at most a warn here (a fail needs a drop past 20 % that never recovers).
  'cycles.no-slowdown': { outcomes: ['pass', 'inconclusive', 'warn'], why: CYCLES },
  'cycles.no-stalls': { outcomes: ['pass', 'inconclusive'], borderlineWarn: true, why: CYCLES },
  'cycles.ttft-stable': { outcomes: ['pass', 'inconclusive', 'warn'], why: CYCLES },
  // Real attention cost on a small model (log-log slope 1.3-1.7 here) is judged by the served window's extrapolated
  // prefill against the server's own short-prompt rate (issue 8 item 3), so it passes: a warn would be a regression.
  'context.prefill-scaling': { outcomes: ['pass', 'inconclusive'], why: LOADED },
  'context.healthy-after': { outcomes: ['pass', 'inconclusive'], why: SPEED },

  // --- client libraries, structured output, tools
  'clients.openai': { outcomes: ['known'], why: B4747_KNOWN },
  'clients.langchain': { outcomes: ['known'], why: B4747_KNOWN },
  'clients.anthropic': {
    outcomes: ['skip'],
    why: 'b4747 predates /v1/messages (anthropic-messages not listed)',
    link: 'https://github.com/ggml-org/llama.cpp/pull/17570',
  },
  'clients.ollama': { outcomes: ['skip'], why: 'llama-server has no Ollama-native API' },
  'structured.json-schema': { outcomes: ['known'], why: PROFILE_KNOWN },
  'structured.json-schema-stream': { outcomes: ['known'], why: PROFILE_KNOWN },
  'structured.invalid-4xx': { outcomes: ['known'], why: B4747_KNOWN },
  'structured.json-object': {
    outcomes: ['pass', 'inconclusive'],
    why: 'JSON mode bounds no length: random weights may keep a valid JSON prefix going until max_tokens',
  },
  'structured.json-object-stream': {
    outcomes: ['pass', 'inconclusive'],
    why: 'JSON mode bounds no length: random weights may keep a valid JSON prefix going until max_tokens',
  },
  'tools.supported': { outcomes: ['known'], why: B4747_KNOWN },
  'tools.anthropic-tool-use': {
    outcomes: ['skip'],
    why: 'b4747 predates /v1/messages (anthropic-messages not listed)',
    link: 'https://github.com/ggml-org/llama.cpp/pull/17570',
  },
  'tools.anthropic-stream': {
    outcomes: ['skip'],
    why: 'b4747 predates /v1/messages (anthropic-messages not listed)',
    link: 'https://github.com/ggml-org/llama.cpp/pull/17570',
  },
  'tools.*': {
    outcomes: ['skip'],
    why: 'b4747 without --jinja answers every request with tools 500 ("tools param requires --jinja flag", a known issue graded once in tools.supported), so tool calling is not testable; --jinja is the default since PR #17524',
    link: 'https://github.com/ggml-org/llama.cpp/pull/17524',
  },
};

/** The check's own entry, else its family's `family.*` entry, else pass. */
export function expectationFor(id: string, config: LlamaConfigName): Expectation {
  const e = EXPECTATIONS[id] ?? EXPECTATIONS[`${id.split('.')[0]}.*`];
  if (!e) return { outcomes: ['pass'] };
  return e.configs?.[config] ?? e;
}
