// Recorded SSE exchanges as the framing checks read them: every dispatched event with its timestamp and byte offset,
// plus the helpers every streaming family shares (evidence excerpts, "the request itself failed" verdicts).
// Moved here from suites/sse.ts: completions, anthropic and ollama use them too, and infrastructure lives in lib/.

import { analyzeSse, classifyPayload, type SseFraming } from '../decode/framing.ts';
import { escapeBytes } from '../decode/stream-decoder.ts';
import { endingOf } from '../measure/deadlines.ts';
import type { Evidence, Recording, Verdict } from '../model/types.ts';
import { fail } from '../model/verdict.ts';
import { blockedOn, requestPrecondition } from './preconditions.ts';

type Obj = Record<string, unknown>;

const WIRE_EXCERPT = 1500;

export interface EventInfo {
  /** Index among the dispatched events of the stream. */
  i: number;
  t: number;
  offset: number;
  data: string;
  event?: string;
  done: boolean;
  /** The payload when it is exactly one JSON object. */
  json?: Obj;
}

export interface Sample {
  label: string;
  rec: Recording;
  framing: SseFraming;
  events: EventInfo[];
}

export function makeSample(label: string, rec: Recording): Sample {
  const framing = analyzeSse(rec.reads.length ? rec.reads : rec.body);
  const events = framing.events.map((b, i): EventInfo => {
    const data = b.data ?? '';
    const e: EventInfo = { i, t: b.t, offset: b.offset, data, done: data.trim() === '[DONE]' };
    if (b.event !== undefined) e.event = b.event;
    if (classifyPayload(data).kind === 'object') e.json = JSON.parse(data) as Obj;
    return e;
  });
  return { label, rec, framing, events };
}

/** Our side cannot reach the server: a harness/setup error, never the server's failure. */
export function assertReached(rec: Recording | undefined): void {
  if (rec?.failure?.kind === 'connect') throw new Error(`cannot reach ${rec.url}: ${rec.failure.message}`);
}

export function evidenceOf(samples: readonly Sample[]): Evidence[] {
  return samples.map((s) => ({
    label: s.label,
    status: s.rec.status,
    wire: escapeBytes(s.rec.body, WIRE_EXCERPT),
    readTimes: s.rec.reads.slice(0, 200).map((r) => Math.round(r.t * 10) / 10),
    e2eMs: Math.round(s.rec.tEnd),
  }));
}

/**
 * A sample that cannot be judged because the request itself failed: the server's failure, stated plainly, once — by
 * the first check that meets it (the others name the check they declare they depend on; lib/check/blocked.ts).
 */
export function unusable(samples: readonly Sample[], what: string): Verdict | undefined {
  // Our side ending a request (lib/measure/deadlines.ts) is never the server's failure: lib/http/recordings.ts marks such a
  // recording incomplete and its readers grade it inconclusive before they get here.
  const bad = samples.filter(
    (s) => endingOf(s.rec).by === 'server' && (s.rec.status !== 200 || (s.rec.failure && s.rec.reads.length === 0)),
  );
  if (bad.length === 0) return undefined;
  const failed = fail(
    {
      requirement: `A ${what} request MUST be answered with HTTP 200 and an event stream.`,
      expected: 'HTTP 200 with a text/event-stream body',
      actual: bad
        .map((s) =>
          `${s.label}: ${s.rec.failure ? `${s.rec.failure.kind}: ${s.rec.failure.message}` : ''}${s.rec.status !== undefined ? ` HTTP ${s.rec.status}` : ''}`.trim(),
        )
        .join('; '),
      bytes: escapeBytes(bad[0]!.rec.body, 300),
    },
    undefined,
    evidenceOf(samples),
  );
  return blockedOn(failed, requestPrecondition(bad[0]!.rec));
}
