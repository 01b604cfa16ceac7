// Hand-made results files for reporter self-tests: the seed's servers on two machines, with curves, a phantom
// gen_tps, failures with wire excerpts, and hostile strings in every free-text field a reporter prints.

import type { Level, Outcome } from '../../lib/model/types.ts';
import type { CheckResult, ResultsFile } from '../../reporters/results-types.ts';

export const HOSTILE = {
  script: '</script><script>window.__pwned = 1</script>',
  img: '<img src=x onerror="window.__pwned = 2">',
  attr: '" onmouseover="window.__pwned=3" x="',
  amp: 'a & b &lt; c',
};

function check(id: string, outcome: Outcome, extra: Partial<CheckResult> = {}): CheckResult {
  const family = id.split('.')[0]!;
  const level: Level = extra.level ?? (id.includes('scaling') || id.includes('prefill') ? 'INFO' : 'MUST');
  return {
    id,
    title: `title of ${id}`,
    family,
    level,
    outcome,
    message: outcome === 'pass' ? `${id} ok` : `${id}: requirement\n  Expected: x\n  Actual:   y`,
    rationale: `why ${id} matters`,
    reference: 'WHATWG HTML §9.2 server-sent events (https://html.spec.whatwg.org/multipage/server-sent-events.html)',
    durationMs: 120,
    ...extra,
  };
}

function header(project: string, machine: string, server: string, version: string): ResultsFile['header'] {
  return {
    suite: { name: 'llm-server-conformance', version: '0.1.0' },
    date: '2026-11-29T10:00:00.000Z',
    project,
    profile: { id: project, model: 'qwen3.5-35b-a3b', apiKeyEnv: 'OPENAI_API_KEY' },
    server: {
      baseUrl: 'http://127.0.0.1:8000',
      identity: { name: server, version },
      contextWindow: { value: 32768, source: '/v1/models max_model_len' },
    },
    machine: { label: machine, platform: 'darwin', arch: 'arm64', cpus: 12, memGiB: 64, node: 'v20.20.2' },
    tier: 'quick',
    strict: false,
  };
}

const CONCURRENCY = [1, 2, 4, 8, 16, 32];

/** Aggregate tok/s at each concurrency: `single` × min(n, gain). */
function curve(single: number, gain: number) {
  return CONCURRENCY.map((n) => ({
    concurrency: n,
    aggregateTps: +(single * Math.min(n, gain)).toFixed(2),
    ttftP50Ms: 40 + 5 * n,
    perStreamTps: +((single * Math.min(n, gain)) / n).toFixed(2),
  }));
}

const PROMPTS = [1024, 2048, 4096, 8192, 16384, 32768];

export function sampleResults(): ResultsFile[] {
  const batching: ResultsFile = {
    header: header('mlx-openai-server', 'm2-max', 'mlx-openai-server', '1.2.0'),
    checks: [
      check('sse.done-terminator', 'pass', {
        evidence: [
          {
            label: 'stream',
            wire: 'data: {"choices":[]}\\n\\ndata: [DONE]\\n\\n',
            status: 200,
            ttftMs: 48,
            e2eMs: 1200,
          },
        ],
      }),
      check('stream.ttft-before-end', 'pass', {
        metrics: { ttft_p50: 48.2, e2e_p50: 1190, wall_tps_p50: 52.1, wall_tps: [51.8, 52.1, 52.6, 51.9, 52.4] },
      }),
      check('metrics.gen-tps-plausible', 'pass', {
        metrics: {
          workload: {
            name: '1 stream, 32 tokens',
            requests: 3,
            concurrency: 1,
            wall_tps_p50: 52.1,
            ttft_p50_ms: 48.2,
            gen_tps_p50: 55.3,
            tokens_usage: 96,
            tokens_counted: 96,
            samples: [{ wall_tps: 52.1, ttft_ms: 48.2, gen_tps: 55.3, usage: 32, counted: 32 }],
          },
          streams: [
            { phantom: false, causes: [] },
            { phantom: false, causes: [] },
            { phantom: false, causes: [] },
          ],
        },
      }),
      check('parallel.speedup-2', 'pass', {
        metrics: {
          speedup: { estimate: 2.17, low: 2.05, high: 2.3, singleTps: 52, aggregateTps: 112.8, reps: 3 },
          singleTpsSamples: [52, 51.5, 52.2],
          aggregateTpsSamples: [112, 113.1, 112.8],
        },
      }),
      check('parallel.scaling', 'pass', { level: 'INFO', metrics: { curve: curve(52, 20), saturationPoint: 16 } }),
      check('cycles.no-slowdown', 'pass', {
        metrics: {
          cycles: [52.1, 51.8, 52.3, 52.0, 51.7, 52.2, 52.0, 51.9].map((t, i) => ({
            cycle: i + 1,
            wallTps: t,
            ttftMs: 48,
          })),
          slopeTpsPerCycle: -0.01,
        },
      }),
      check('context.prefill-scaling', 'pass', {
        level: 'INFO',
        metrics: {
          slope: 1.02,
          curve: PROMPTS.map((p) => ({ tokens: p, ttftMsP50: +(0.09 * p + 30).toFixed(1), n: 3, censored: 0 })),
        },
      }),
      check('context.over-window-rejected', 'pass'),
    ],
    finished: { date: '2026-11-29T10:05:00.000Z', reason: 'done' },
  };
  const phantom: ResultsFile = {
    header: header('vllm-mlx', 'm2-max', 'vllm-mlx', '0.3.1'),
    checks: [
      check('sse.done-terminator', 'fail', {
        message: `SSE stream must end with data: [DONE]\n  Expected: a final "data: [DONE]" event\n  Actual:   stream ended after ${HOSTILE.script} and ${HOSTILE.img}`,
        evidence: [
          { label: `wire ${HOSTILE.attr}`, wire: `data: {"x":"${HOSTILE.script}"}\\n\\n${HOSTILE.img}`, status: 200 },
        ],
      }),
      check('stream.ttft-before-end', 'fail', { metrics: { ttft_p50: 2400, e2e_p50: 2410, wall_tps_p50: 51.2 } }),
      check('metrics.gen-tps-plausible', 'fail', {
        message:
          'gen_tps is PHANTOM: 97% of content tokens arrived in one read at the end\n  Expected: tokens spread over the stream\n  Actual:   255 of 256 tokens in one read',
        metrics: {
          gen_tps_p50: 14000,
          wall_tps_p50: 51.2,
          ttft_p50: 2400,
          phantom: { cause: 'tokens held and flushed in one write at the end' },
        },
      }),
      check('parallel.speedup-2', 'warn', { metrics: { speedup: 1.4 } }),
      check('parallel.scaling', 'pass', { level: 'INFO', metrics: { curve: curve(42, 27) } }),
      check('cycles.no-slowdown', 'pass', { metrics: { cycles: [42, 41.5, 42.2, 41.9, 42.1, 41.8, 42.3, 42] } }),
      check('context.prefill-scaling', 'warn', {
        level: 'INFO',
        metrics: {
          exponent: 1.4,
          curve: PROMPTS.map((p) => ({ promptTokens: p, ttftMs: +(0.00002 * p * p + 0.05 * p).toFixed(1) })),
        },
      }),
    ],
    finished: { date: '2026-11-29T10:09:00.000Z', reason: 'done' },
  };
  const degrading: ResultsFile = {
    header: header('mlx-vlm', 'm4-pro', 'mlx-vlm', '0.1.9'),
    checks: [
      check('sse.done-terminator', 'pass'),
      check('stream.ttft-before-end', 'pass', { metrics: { ttft_p50: 61, wall_tps_p50: 49.7 } }),
      check('parallel.speedup-2', 'fail', { metrics: { speedup: 0.85 } }),
      check('parallel.scaling', 'pass', { level: 'INFO', metrics: { curve: curve(50, 1) } }),
      check('cycles.no-slowdown', 'fail', { metrics: { cycles: [790, 610, 402, 220, 96, 31, 9.8, 3.5] } }),
      check('context.prefill-scaling', 'known', {
        level: 'INFO',
        metrics: { curve: PROMPTS.map((p) => ({ promptTokens: p, ttftMs: +(0.0004 * p * p).toFixed(1) })) },
      }),
      check('context.over-window-rejected', 'error', {
        message: 'harness error in context.over-window-rejected: connection refused',
      }),
    ],
    // No `finished`: an interrupted run, with a problem outside the checks.
    errors: [{ where: 'suites/context.test.ts', message: `failed to load: ${HOSTILE.img}` }],
  };
  return [batching, phantom, degrading];
}
