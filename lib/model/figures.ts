// The figures and curves the reports show in their headlines (the seed table, the plots, the badges), each named and
// described once. A check declares which of them its metrics carry (`provides` in lib/model/check.ts); reporters find
// a figure by what provides it, never by a check id (docs/reports.md "Where the figures come from").

/** Figure name → what it is, and where in the providing check's metrics it is read. */
export const HEADLINE_FIGURES = {
  wall_tps_p50:
    'median wall-clock output rate of one stream (completion tokens / (end − start), tok/s): the headline tok/s; metrics.workload(s) or top-level wall_tps_p50',
  ttft_p50: 'median time to first token of one stream (ms): ttft_p50_ms, ttft_ms.p50 …',
  gen_tps_p50: 'median generation rate of one stream, first token to last (tok/s): gen_tps_p50',
  gen_tps_phantom:
    "whether the stream's gen_tps is phantom (text flushed at once, or above the hardware's bound): the check's verdict and its metrics.streams[].phantom",
  speedup_2:
    'speedup with 2 concurrent requests: aggregate tok/s of two over one alone (speedup_estimate, speedup_low, speedup_high)',
  best_scaling: 'the best aggregate gain over one stream and the concurrency it came at (bestGain, bestConcurrency)',
  scaling_curve: 'aggregate tok/s against concurrency (metrics.curve)',
  prefill_curve: 'median TTFT against prompt length (metrics.curve)',
  cycle_curve: 'wall_tps of each cycle of one workload, warm-up dropped (metrics.cycles)',
  cycles_slope: 'trend of tok/s over the cycles (slopeTpsPerCycle; firstMedianTps, lastMedianTps, lastOverFirst)',
  served_window: 'the context window the server serves, and the trained one (servedWindow, trainedContext, fraction)',
  over_window:
    'what a prompt over the window got (metrics.findings: rejected, truncated, accepted …) and the verdict on it',
  first_token_share:
    'time to first token as a share of the response time (ratio): near 1, the stream was held back until the end',
  read_share: 'the largest share of the text that came in one read (maxReadShare): near 1, the stream came at once',
  capacity_table:
    "the capacity mode's table: sweep levels, rate runs, saturation (metrics.capacity; results.json keeps it at its top level)",
} as const;

export type HeadlineFigure = keyof typeof HEADLINE_FIGURES;
