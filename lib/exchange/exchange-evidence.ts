// What a streamed exchange shows behind a verdict (timestamps capped, a wire excerpt), and why a stream that was asked
// for is not one a timing rule can read. Shared by the families that judge streams.
import { escapeBytes } from '../decode/stream-decoder.ts';
import { bodyText } from '../http/recorder.ts';
import type { Evidence } from '../model/types.ts';
import { describeExchange, type Exchange } from './exchange.ts';

/** Timestamps kept per request in the evidence (reports draw them; more adds bytes, not insight). */
const CAP = 200;
const cap = (xs: number[]) => xs.slice(0, CAP).map((x) => Math.round(x * 10) / 10);

/** A request that did not give a complete 200 stream: why, or undefined when it did. */
export function streamProblem(x: Exchange): string | undefined {
  if (x.rec.status !== 200) return `${describeExchange(x)}; body ${escapeBytes(bodyText(x.rec), 200)}`;
  if (x.rec.failure?.kind === 'token-idle') return `stalled: ${describeExchange(x)}`;
  if (x.rec.failure) return describeExchange(x);
  if (!x.events) return `HTTP 200 but not an event stream (content-type ${x.rec.headers['content-type'] ?? 'none'})`;
  return undefined;
}

/** One stream's evidence: status, read and token times, TTFT, end, and the first 400 bytes of the wire. */
export function streamEvidence(label: string, x: Exchange): Evidence {
  return {
    label,
    status: x.rec.status,
    readTimes: cap(x.rec.reads.map((r) => r.t)),
    tokenTimes: cap((x.events?.tokens ?? []).map((t) => t.t)),
    ttftMs: x.metrics?.ttftMs,
    e2eMs: x.rec.tEnd,
    wire: escapeBytes(bodyText(x.rec), 400),
  };
}
