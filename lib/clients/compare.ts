// Comparison of what a client library reported with what the wire carried. Pure functions, unit-tested in
// test/clients.test.ts; suites/clients.ts turns their findings into verdicts.

import { firstDifference } from '../decode/framing.ts';
import { escapeBytes } from '../decode/stream-decoder.ts';
import type { Recording } from '../model/types.ts';
import { fmt } from '../model/verdict.ts';
import { type ClientDriver, errorText, type Observation } from './drivers.ts';
import type { Facts } from './wire.ts';
import { wireLines } from './wire.ts';

interface Findings {
  /** What went wrong on the client's side, one line each (each fails the check). */
  problems: string[];
  /** What is worth saying but fails nothing (a reasoning field this client does not read, …). */
  notes: string[];
  /** The client's own first error, when it raised or reported one. */
  error?: string;
}

const quote = (s: string, n = 60) => JSON.stringify(s.length > n ? `${s.slice(0, n)}…` : s);

/** Errors first; when the client raised none, its text, reasoning, finish reason and usage against the wire's. */
export function compareFacts(
  d: ClientDriver,
  label: string,
  wire: Facts | undefined,
  obs: Observation,
  wireReasoningFields: readonly string[],
): Findings {
  const problems: string[] = [];
  const notes: string[] = [];
  const thrown = obs.thrown !== undefined ? errorText(obs.thrown) : undefined;
  // A helper that emits an 'error' event and then rejects with the same error says it once.
  const reported = [...new Set(obs.reported)].filter((r) => r !== thrown);
  const errors = [
    ...(thrown !== undefined ? [`threw ${thrown}`] : []),
    ...reported.map((r) => `reported an error: ${r}`),
  ];
  if (errors.length) return { problems: errors.map((e) => `${label} ${e}`), notes, error: errors[0] };
  if (!wire) return { problems, notes };

  if (obs.text !== wire.text) {
    if (obs.text === '' && wire.text !== '')
      problems.push(
        `${label} reported no text and no error, although the wire carried ${wire.text.length} characters of content (${quote(wire.text)})`,
      );
    else {
      const at = firstDifference(obs.text, wire.text);
      problems.push(
        `${label} reported text that differs from the wire's content at character ${at}: client ${quote(obs.text.slice(Math.max(0, at - 10)), 50)} vs wire ${quote(wire.text.slice(Math.max(0, at - 10)), 50)} (${obs.text.length} vs ${wire.text.length} characters)`,
      );
    }
  }
  if (wire.reasoning !== '') {
    const readable = wireReasoningFields.filter((f) => d.reasoningFields.includes(f));
    if (obs.reasoning === undefined || (wireReasoningFields.length > 0 && readable.length === 0)) {
      notes.push(
        `the wire carried ${wire.reasoning.length} characters of reasoning in ${wireReasoningFields.join(', ') || 'a reasoning field'}, which ${label} does not surface (it reads ${d.reasoningFields.join(', ') || 'none'}): not compared`,
      );
    } else if (obs.reasoning !== wire.reasoning) {
      const at = firstDifference(obs.reasoning, wire.reasoning);
      problems.push(
        `${label} reported reasoning that differs from the wire's at character ${at}: client ${quote(obs.reasoning, 50)} vs wire ${quote(wire.reasoning, 50)}`,
      );
    }
  }
  if (wire.finish !== undefined) {
    const expected = d.finishMap(wire.finish);
    if (obs.finish !== expected) {
      const sent =
        wire.finishes.length > 1
          ? ` (sent ${wire.finishes.length} times: ${wire.finishes.map((f) => JSON.stringify(f)).join(', ')})`
          : '';
      problems.push(
        `${label} reported finish reason ${JSON.stringify(obs.finish ?? null)}; the wire said ${JSON.stringify(wire.finish)}${sent}, which this client reports as ${JSON.stringify(expected)}`,
      );
    }
  }
  if (wire.usage) {
    const diffs: string[] = [];
    for (const k of ['input', 'output'] as const) {
      const w = wire.usage[k];
      if (w !== undefined && obs.usage?.[k] !== w) diffs.push(`${k} ${obs.usage?.[k] ?? 'none'} (wire ${w})`);
    }
    if (diffs.length) problems.push(`${label} reported usage ${diffs.join(', ')}`);
  }
  return { problems, notes };
}

export type Incremental =
  | { kind: 'ok'; note: string }
  | { kind: 'buffered'; note: string }
  | { kind: 'not-judged'; note: string }
  | { kind: 'starved'; note: string };

/** Fewer content events than this on the wire, or a shorter spread, leave nothing to compare. */
const MIN_WIRE_EVENTS = 3;
const MIN_WIRE_SPREAD_MS = 30;

/**
 * Did the client surface text as it arrived? On the wire, content spread over [first, last]; the client must show
 * its first text within the first half of that spread (a client that holds text back until the end shows it after
 * the last). Our own starved event loop (a block as long as that half) makes the comparison inconclusive.
 */
export function judgeIncremental(
  wireTimes: readonly number[],
  clientTimes: readonly number[],
  loopMaxMs: number,
): Incremental {
  if (wireTimes.length < MIN_WIRE_EVENTS)
    return {
      kind: 'not-judged',
      note: `incremental surfacing not judged: ${wireTimes.length} content event(s) on the wire`,
    };
  const first = wireTimes[0]!;
  const last = wireTimes[wireTimes.length - 1]!;
  const spread = last - first;
  if (spread < MIN_WIRE_SPREAD_MS)
    return {
      kind: 'not-judged',
      note: `incremental surfacing not judged: the wire delivered its content within ${fmt(spread)} ms (a burst; the stream family judges that)`,
    };
  if (clientTimes.length === 0)
    return { kind: 'not-judged', note: 'incremental surfacing not judged: the client surfaced no text' };
  const c0 = clientTimes[0]!;
  const limit = first + spread / 2;
  const span = `content arrived from ${fmt(first)} to ${fmt(last)} ms over ${wireTimes.length} events`;
  if (c0 <= limit)
    return { kind: 'ok', note: `first text surfaced at ${fmt(c0)} ms (${span}; ${clientTimes.length} pieces)` };
  if (loopMaxMs >= spread / 2)
    return {
      kind: 'starved',
      note: `first text surfaced at ${fmt(c0)} ms (${span}), but our event loop was blocked for up to ${fmt(loopMaxMs)} ms`,
    };
  const share = Math.round((wireTimes.filter((t) => t <= c0).length / wireTimes.length) * 100);
  return {
    kind: 'buffered',
    note: `the client surfaced its first text at ${fmt(c0)} ms, after ${share} % of the content events had arrived (${span}): it held text back instead of streaming it`,
  };
}

/**
 * The chunk a client failed on: the lines of the last read it had been handed (a read may hold several events, and
 * the client fails on one of them), or the body for a non-stream call.
 */
export function triggerOf(rec: Recording, delivered: number, stream: boolean): { where: string; bytes: string } {
  if (!stream || rec.status !== 200)
    return {
      where: `the response body (HTTP ${rec.status ?? '-'}, ${rec.body.length} bytes)`,
      bytes: escapeBytes(rec.body, 300),
    };
  let start = 0;
  for (const r of rec.reads) {
    if (start + r.bytes.length >= delivered) break;
    start += r.bytes.length;
  }
  const lines = wireLines(rec.reads).filter(
    (l) => l.text.trim() !== '' && l.offset < delivered && l.offset + l.bytes >= start,
  );
  if (lines.length === 0)
    return {
      where: `before any line (${delivered} bytes handed to the client)`,
      bytes: escapeBytes(rec.body.subarray(0, 200), 200),
    };
  const whole = delivered >= rec.body.length;
  const text = lines.map((l) => l.text).join('\n');
  return {
    where: whole
      ? `the end of the stream: the client had read all ${rec.body.length} bytes; the last read (bytes ${start}–${delivered}) held`
      : `the last read the client had been handed (bytes ${start}–${delivered} of ${rec.body.length})`,
    bytes: escapeBytes(text, 600),
  };
}
