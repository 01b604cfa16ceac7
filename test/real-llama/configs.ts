// The three llama-server configurations of the real-llama self-tests, and the profile each runs under: the
// `llama.cpp` profile of servers.json (its knownIssues and forceLength) with a start command for a generated model.
// Nothing else is declared: model id, window and slots are discovered, as a user running it would get them.
import type { LlamaRecipe, LlamaServerOptions } from '../../lib/server/llama-server.ts';
import type { KnownIssue, Profile } from '../../lib/check/types.ts';

export type LlamaConfigName = 'tiny-4' | 'tiny-1' | 'bandwidth-4';

// Windows are small on purpose: the context family's prefills dominate the project's time (CI budget 10 minutes on
// 2 cores), and on one server thread the tiny model prefills ~600 tok/s, the bandwidth-bound one ~130 tok/s.
export interface LlamaConfig {
  name: LlamaConfigName;
  recipe: LlamaRecipe;
  /** Why this configuration is in the matrix. */
  purpose: string;
  server: Omit<LlamaServerOptions, 'bundle' | 'model'>;
  /** What the profile declares on top of the `llama.cpp` profile (only what the server cannot tell). */
  profile?: Partial<Profile>;
}

/**
 * The bundle's build (b4747, Feb 2025) predates llama-server's Anthropic Messages endpoint (/v1/messages, PR #17570,
 * Nov 2025: https://github.com/ggml-org/llama.cpp/pull/17570), which the `llama.cpp` profile lists for current builds.
 */
const B4747_APIS: Profile['apis'] = ['openai-chat', 'openai-completions'];

/**
 * Defects of the bundle's build that later llama.cpp releases fixed: known issues of b4747, added to the `llama.cpp`
 * profile's (which lists what current builds still do) so a fixed build is not reported as known-passing.
 */
export const B4747_KNOWN_ISSUES: KnownIssue[] = [
  {
    check: 'sse.role-first',
    reason: 'b4747 streams the first delta without role "assistant" (OpenAI SDKs build the message from it); fixed by PR #13634 (May 2025)',
    link: 'https://github.com/ggml-org/llama.cpp/pull/13634',
  },
  {
    check: 'clients.openai',
    reason: 'the OpenAI SDK throws "missing role for choice 0" on b4747\'s streams (first delta without role); PR #13634 fixed it for exactly this SDK',
    link: 'https://github.com/ggml-org/llama.cpp/pull/13634',
  },
  {
    check: 'clients.langchain',
    reason: 'LangChain reads streamed usage only from a choices:[] chunk; b4747 puts usage in the finish chunk, so LangChain reports none. PR #15444 (Aug 2025) sends the separate chunk',
    link: 'https://github.com/ggml-org/llama.cpp/pull/15444',
  },
  {
    check: 'structured.invalid-4xx',
    reason: 'b4747 answers an unknown response_format type with 500 (std::runtime_error "response_format type must be one of..."); later builds throw invalid_argument, answered 400 (PR #17572 began moving client errors to 400)',
    link: 'https://github.com/ggml-org/llama.cpp/pull/17572',
  },
  {
    check: 'tools.supported',
    reason: 'b4747 answers a request with tools 500 "tools param requires --jinja flag" unless started with --jinja (a client request it cannot serve is a 4xx); --jinja is the default since PR #17524 (Nov 2025)',
    link: 'https://github.com/ggml-org/llama.cpp/pull/17524',
  },
  {
    check: 'context.over-window-400',
    reason: 'b4747 answers an over-window stream with HTTP 200, the error as an SSE "error:" line (dropped by SSE parsers), then [DONE]; non-stream gets 400. Fixed by PR #16486 (Oct 2025: HTTP 400 before streaming)',
    link: 'https://github.com/ggml-org/llama.cpp/pull/16486',
  },
];

export const LLAMA_CONFIGS: Record<LlamaConfigName, LlamaConfig> = {
  'tiny-4': {
    name: 'tiny-4',
    recipe: 'tiny',
    purpose: '22 MB model, 4 slots: fast decode (hundreds of tok/s), per-token overhead dominates so batching gains little',
    server: { alias: 'tiny-random-llama', slots: 4, ctxPerSlot: 2048 },
    // The profile's hardware describes a 35B model on an M2 Max; a 22 MB model largely served from CPU cache has no
    // DRAM bound worth declaring, so metrics.gen-tps-physical skips.
    profile: { apis: B4747_APIS, hardware: undefined },
  },
  'tiny-1': {
    name: 'tiny-1',
    recipe: 'tiny',
    purpose: 'the same model with 1 slot: a second request queues (speedup ≈ 1.0x), multi-slot checks skip on the reported total_slots',
    server: { alias: 'tiny-random-llama', slots: 1, ctxPerSlot: 2048 },
    profile: { apis: B4747_APIS, hardware: undefined },
  },
  'bandwidth-4': {
    name: 'bandwidth-4',
    recipe: 'bandwidth-bound',
    purpose: '401 MB f32 model, 4 slots: decode reads every weight per step, so two streams really batch (~1.5x)',
    server: { alias: 'bw-random-llama', slots: 4, ctxPerSlot: 1024 },
    // Decode must read all 401 MB per token: a physical bound the phantom check can use. 40 GB/s is above what this
    // class of machine streams (29 GB/s measured at 72 tok/s), so the bound is generous, never tight.
    profile: { apis: B4747_APIS, hardware: { memoryBandwidthGBs: 40, activeBytesPerTokenGB: 0.401 } },
  },
};
