// Our own headroom during a level: the client's CPU time per received event (process.cpuUsage) and its event-loop
// lateness (perf_hooks monitorEventLoopDelay at 1 ms, lib/measure/client-lag.ts). A level where either is past its
// bound measured our client as much as the server: it is marked client-bound, never reported as the server's.
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** Sampling interval (ms), subtracted from every sample as lib/measure/client-lag.ts does: the figure is the lateness itself. */
const RESOLUTION_MS = 1;

interface ClientMeter {
  stop(events: number): {
    cpuUsPerEvent: number | null;
    cpuShare: number;
    loopLagP99Ms: number | null;
    loopLagP90Ms: number | null;
    loopLagMaxMs: number;
  };
}

export function startClientMeter(): ClientMeter {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const h = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  h.enable();
  const late = (p: number) => (h.count ? Math.max(0, h.percentile(p) / 1e6 - RESOLUTION_MS) : null);
  return {
    stop(events) {
      const d = process.cpuUsage(cpu0);
      h.disable();
      const cpuUs = d.user + d.system;
      const wallUs = (performance.now() - t0) * 1000;
      return {
        cpuUsPerEvent: events > 0 ? cpuUs / events : null,
        cpuShare: wallUs > 0 ? cpuUs / wallUs : 0,
        loopLagP99Ms: late(99),
        loopLagP90Ms: late(90),
        loopLagMaxMs: h.count ? Math.max(0, h.max / 1e6 - RESOLUTION_MS) : 0,
      };
    },
  };
}

/**
 * The client-bound rule: our process used more than `maxCpuShare` of one core over the level (a single-threaded
 * client near its limit reads late), or its event loop was late by more than the larger of `lagFloorMs` and the level's
 * median inter-token gap at the 90th percentile: for a tenth of the level our stamps were late by a whole token gap,
 * so the ITL figures would be our own. (The p90, not the p99: one GC pause or a neighbour's burst in a short level
 * is the p99 of its few hundred samples, not a client that cannot keep up; the p99 is still shown.)
 */
const CLIENT_BOUNDS = {
  maxCpuShare: {
    value: 0.8,
    why: 'one event loop at 80 % of a core queues reads behind its own work: arrival stamps turn into our processing time',
  },
  lagFloorMs: {
    value: 10,
    why: 'below 10 ms the 1 ms lag sampler on a shared machine reads its own scheduling noise; above the median token gap our stamps are late by a whole token',
  },
};

export function clientBoundReason(
  m: { cpuShare: number; loopLagP90Ms: number | null },
  itlP50Ms: number | null,
  bounds = { maxCpuShare: CLIENT_BOUNDS.maxCpuShare.value, lagFloorMs: CLIENT_BOUNDS.lagFloorMs.value },
): string | undefined {
  if (m.cpuShare > bounds.maxCpuShare)
    return `client-bound: our process used ${(m.cpuShare * 100).toFixed(0)} % of a core during the level (bound ${(bounds.maxCpuShare * 100).toFixed(0)} %)`;
  const lagBound = Math.max(bounds.lagFloorMs, itlP50Ms ?? 0);
  if (m.loopLagP90Ms !== null && m.loopLagP90Ms > lagBound)
    return `client-bound: our event loop's p90 lateness ${m.loopLagP90Ms.toFixed(1)} ms exceeds ${lagBound.toFixed(1)} ms (the larger of ${bounds.lagFloorMs} ms and the level's ITL p50)`;
  return undefined;
}
