// The instrument's own fidelity: how late our timestamps are. A server that stamps every event with its send time
// (the reference server's --stamp-send: `id: <process.hrtime.bigint()>` on each SSE event) lets a client compute
// arrival − send per event; the harness's lag beside a raw-socket floor is what bench/fidelity.ts reports, and the
// preflight of every run (lib/run/preflight.ts) measures it on this machine now, so checks can allow for it.
//
// Clocks: the server stamps process.hrtime (CLOCK_MONOTONIC, ns, machine-wide); the harness timestamps with
// performance.now() (ms since this process's time origin, the same monotonic source with a per-process origin).
// monotonicOffset() converts: it brackets performance.now() between two hrtime reads and keeps the tightest
// bracket, so the conversion error is at most half that bracket (well under a microsecond on an idle core).
import type { BodyRead, ClientLag, FidelityPreflight, LagSummary } from '../model/types.ts';
import { quantile } from './stats.ts';

/** Offset such that performance.now() + offsetMs is process.hrtime in ms (same clock as the server's stamps). */
export function monotonicOffset(samples = 64): { offsetMs: number; uncertaintyMs: number } {
  let best = Infinity;
  let offset = 0;
  for (let i = 0; i < samples; i++) {
    const a = process.hrtime.bigint();
    const p = performance.now();
    const b = process.hrtime.bigint();
    const width = Number(b - a);
    if (width < best) {
      best = width;
      offset = Number((a + b) / 2n) / 1e6 - p;
    }
  }
  return { offsetMs: offset, uncertaintyMs: best / 2e6 };
}

/** Send time (ms on the monotonic clock) carried by a stamped event's id, or undefined when it carries none. */
export function sendTimeMs(id: string | undefined): number | undefined {
  if (id === undefined || !/^\d{1,19}$/.test(id)) return undefined;
  return Number(id) / 1e6;
}

/** One stamped event of one stream: when the server wrote it and when our client had it (both monotonic, ms). */
export interface StampedArrival {
  stream: number;
  sendMs: number;
  arriveMs: number;
}

/**
 * Arrivals of the stamped events of recorded streams, as the checks see them: an event arrives at the timestamp of
 * the body read that completed it (Recording.t0Abs + event.t).
 */
export function stampedArrivals(
  streams: ReadonlyArray<{ t0Abs: number; events: ReadonlyArray<{ t: number; id?: string }> }>,
  offsetMs: number,
): StampedArrival[] {
  const out: StampedArrival[] = [];
  streams.forEach((s, stream) => {
    for (const ev of s.events) {
      const sendMs = sendTimeMs(ev.id);
      if (sendMs !== undefined) out.push({ stream, sendMs, arriveMs: s.t0Abs + ev.t + offsetMs });
    }
  });
  return out;
}

/**
 * Stamped events in raw response bytes (the floor client, which parses no HTTP): each `id: <ns>` line, arriving
 * with the read that holds the blank line ending its event. Chunked-transfer size lines between events do not
 * matter: an event never spans two HTTP chunks (one write per event).
 */
export function stampedArrivalsInBytes(reads: readonly BodyRead[], stream: number, offsetMs: number): StampedArrival[] {
  const ends: number[] = [];
  let total = 0;
  for (const r of reads) ends.push((total += r.bytes.length));
  const text = Buffer.concat(reads.map((r) => r.bytes)).toString('latin1');
  const out: StampedArrival[] = [];
  const re = /(?:^|\n)id: (\d+)\n/g;
  let k = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const end = text.indexOf('\n\n', m.index + m[0].length - 1);
    if (end === -1) break; // incomplete event at EOF: never delivered to an SSE client
    while (k < ends.length - 1 && ends[k]! <= end + 1) k++;
    out.push({ stream, sendMs: Number(m[1]) / 1e6, arriveMs: reads[k]!.t + offsetMs });
  }
  return out;
}

/**
 * The events sent while every stream was streaming: from the latest *second* send of any stream (the first is the
 * role chunk a server writes on admission, before the stream's prefill: all streams send it at once, long before
 * the last of them decodes) to the earliest last send. The in-phase steady state at full concurrency, without the
 * ramp-up and the tail where fewer streams were live.
 */
export function steadyWindow(arrivals: readonly StampedArrival[]): StampedArrival[] {
  const sends = new Map<number, number[]>();
  for (const a of arrivals) {
    const xs = sends.get(a.stream);
    if (xs) xs.push(a.sendMs);
    else sends.set(a.stream, [a.sendMs]);
  }
  let from = -Infinity;
  let to = Infinity;
  for (const xs of sends.values()) {
    xs.sort((x, y) => x - y);
    from = Math.max(from, xs[Math.min(1, xs.length - 1)]!);
    to = Math.min(to, xs[xs.length - 1]!);
  }
  return arrivals.filter((a) => a.sendMs >= from && a.sendMs <= to);
}

/**
 * Per in-phase step, the least-late event: steps are runs of sends less than half a cadence apart; each step's
 * smallest arrival − send, as one pseudo-arrival (so lagSummary applies).
 */
export function stepMinima(arrivals: readonly StampedArrival[], cadenceMs: number): StampedArrival[] {
  const sorted = [...arrivals].sort((a, b) => a.sendMs - b.sendMs);
  const out: StampedArrival[] = [];
  let start = -Infinity;
  for (const a of sorted) {
    const last = out[out.length - 1];
    if (last && a.sendMs - start < cadenceMs / 2) {
      if (a.arriveMs - a.sendMs < last.arriveMs - last.sendMs) out[out.length - 1] = a;
    } else {
      out.push(a);
      start = a.sendMs;
    }
  }
  return out;
}

export function lagSummary(arrivals: readonly StampedArrival[]): LagSummary | undefined {
  if (arrivals.length === 0) return undefined;
  const lags = arrivals.map((a) => a.arriveMs - a.sendMs);
  let mx = -Infinity;
  for (const l of lags) if (l > mx) mx = l;
  return { n: lags.length, p50Ms: quantile(lags, 0.5)!, p99Ms: quantile(lags, 0.99)!, maxMs: mx };
}

const f1 = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(1));

/**
 * The client's lag for a check that times one stream at a time (the stream and metrics families): its own
 * event-loop delay, measured during the check, and the lag the run's preflight measured for an event that waits
 * behind no other (stepLag p99), whichever is larger. The check's own stall is its evidence; the preflight adds what
 * the loop monitor cannot see (kernel and HTTP-stack delay, stalls shorter than its 10 ms sampling). A timing
 * verdict that this much lateness of our timestamps could explain is inconclusive, never a failure.
 */
export function clientLag(loop: { p99Ms: number; maxMs: number }, preflight?: FidelityPreflight): ClientLag {
  const pre = preflight?.stepLag;
  const parts = [`longest event-loop stall ${f1(loop.maxMs)} ms`];
  if (pre)
    parts.push(
      `preflight arrival lag p99 ${f1(pre.p99Ms)} ms for one stream (${f1(preflight!.lag?.p99Ms ?? NaN)} ms with ${preflight!.streams} in phase)`,
    );
  else if (preflight?.error) parts.push(`no preflight figure (${preflight.error})`);
  return { ms: Math.max(loop.maxMs, pre?.p99Ms ?? 0), source: parts.join('; ') };
}

/** One line for reports and logs. */
export function describePreflight(p: FidelityPreflight | undefined): string {
  if (!p) return 'fidelity preflight: not run';
  if (!p.lag) return `fidelity preflight: no measurement (${p.error ?? 'no stamped events'})`;
  const cpu = p.cpuUsPerEvent !== undefined ? `, client CPU ${f1(p.cpuUsPerEvent)} µs/event` : '';
  const one = p.stepLag
    ? `; one stream: p50 ${p.stepLag.p50Ms.toFixed(2)} ms, p99 ${p.stepLag.p99Ms.toFixed(2)} ms`
    : '';
  return (
    `fidelity preflight: our client's arrival lag p50 ${p.lag.p50Ms.toFixed(2)} ms, p99 ${p.lag.p99Ms.toFixed(2)} ms, max ${p.lag.maxMs.toFixed(2)} ms ` +
    `(${p.lag.n} events, ${p.streams} streams in phase every ${p.cadenceMs} ms${cpu})${one}`
  );
}
