// Workload figures: the seed's table row (wall_tps_p50, ttft_p50, gen_tps_p50, speedup, tokens usage vs counted).
//
// A check that measures a workload puts one of these in its verdict metrics as `workload` (or several as
// `workloads`); reporters show them per project and flag phantom gen_tps from the same check's evidence
// (lib/grading/phantom.ts). Every figure is a plain number computed here from per-request metrics, so a results file
// carries both the figure and the per-request samples it came from.

import type { RequestMetrics } from './request-metrics.ts';
import { median } from './stats.ts';

export interface WorkloadFigures {
  /** What was run, e.g. "1 stream, 32 tokens" or "2 parallel, 64 tokens". */
  name: string;
  requests: number;
  concurrency?: number;
  /** Median of per-request wall_tps (tok/s). */
  wall_tps_p50?: number;
  /** Median TTFT (ms). */
  ttft_p50_ms?: number;
  /** Median of the naive per-request gen_tps (tok/s): phantom-prone, reporters flag it. */
  gen_tps_p50?: number;
  /** speedup(N) as docs/grading.md "Measuring" defines it, when the workload measured one. */
  speedup?: number;
  /** Sum of usage.completion_tokens over the requests (undefined when any request had no usage). */
  tokens_usage?: number;
  /** Sum of token-bearing events over the requests (events are not tokens: a lower bound). */
  tokens_counted?: number;
  /** Per-request samples the medians came from. */
  samples?: { wall_tps?: number; ttft_ms?: number; gen_tps?: number; usage?: number; counted: number }[];
}

export function workloadFigures(
  name: string,
  ms: readonly RequestMetrics[],
  extra: Partial<WorkloadFigures> = {},
): WorkloadFigures {
  const usage =
    ms.every((m) => m.tokenSource === 'usage') && ms.length > 0
      ? ms.reduce((s, m) => s + (m.completionTokens ?? 0), 0)
      : undefined;
  return {
    name,
    requests: ms.length,
    wall_tps_p50: median(ms.map((m) => m.wallTps)),
    ttft_p50_ms: median(ms.map((m) => m.ttftMs)),
    gen_tps_p50: median(ms.map((m) => m.genTps)),
    tokens_usage: usage,
    tokens_counted: ms.reduce((s, m) => s + m.countedTokenEvents, 0),
    samples: ms.map((m) => ({
      wall_tps: m.wallTps,
      ttft_ms: m.ttftMs,
      gen_tps: m.genTps,
      usage: m.tokenSource === 'usage' ? m.completionTokens : undefined,
      counted: m.countedTokenEvents,
    })),
    ...extra,
  };
}
