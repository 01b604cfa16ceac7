// Our own client's lag: how late our event loop ran while it was reading a server's stream.
//
// A frozen client merges whatever arrives meanwhile into one read, so timing checks give the server an allowance for
// it. Node's monitorEventLoopDelay records the time between its timer's fires: with `resolution: 10` every sample is
// at least ~10 ms even on an idle loop (measured: min 9.1, p50 10.1 ms idle). Taking that as "the client stalled
// 10 ms" excused real phantom streams about one run in five (issue 8). Here the sampler runs at 1 ms and the
// resolution is subtracted, so the figure is the lateness itself.
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

/** Sampling interval (ms): fine enough to see a few ms of lateness, cheap enough to leave on during a recording. */
const LAG_RESOLUTION_MS = 1;

export interface ClientLag {
  /** Longest lateness of our event loop (ms), the sampling interval subtracted; 0 when nothing was sampled. */
  maxMs: number;
  /** 99th percentile of the lateness (ms). */
  p99Ms: number;
  samples: number;
}

interface LagSampler {
  /** Lateness seen so far. */
  read(): ClientLag;
  /** Stop sampling; returns the final figures. */
  stop(): ClientLag;
}

function figures(h: IntervalHistogram): ClientLag {
  if (h.count === 0) return { maxMs: 0, p99Ms: 0, samples: 0 };
  const late = (ns: number) => Math.max(0, ns / 1e6 - LAG_RESOLUTION_MS);
  return { maxMs: late(h.max), p99Ms: late(h.percentile(99)), samples: h.count };
}

/** Start measuring our own event-loop lateness (1 ms sampling, the interval subtracted). */
export function startLagSampler(): LagSampler {
  const h = monitorEventLoopDelay({ resolution: LAG_RESOLUTION_MS });
  h.enable();
  let final: ClientLag | undefined;
  return {
    read: () => final ?? figures(h),
    stop() {
      if (!final) {
        final = figures(h);
        h.disable();
      }
      return final;
    },
  };
}

/** A lateness measured before the run (e.g. a fidelity preflight): the client's usual worst case on this machine. */
interface LagBaseline {
  maxMs: number;
  source: string;
}

/**
 * The stall our client may have had while it read a stream: what the sampler measured during the recording, plus one
 * sampling interval (a stall can start just after a sample), and never less than a preflight's measured lateness when
 * one was taken. Timing checks excuse the server for exactly this much; nothing more.
 */
export function clientAllowanceMs(measured: Pick<ClientLag, 'maxMs'> | undefined, pre?: LagBaseline): number {
  const during = measured ? measured.maxMs + LAG_RESOLUTION_MS : 0;
  return Math.max(during, pre?.maxMs ?? 0);
}
