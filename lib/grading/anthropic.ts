// Judges of the Anthropic Messages stream (/v1/messages, stream: true). Reference: Anthropic API docs, "Streaming
// Messages": each event is an `event: <type>` line plus a `data: <json>` line whose `type` is the same; flow
// message_start → (content_block_start, content_block_delta…, content_block_stop)… → message_delta → message_stop,
// with ping events anywhere and error events on failure. Pure functions of a recorded sample.

import { mediaType } from '../decode/framing.ts';
import { escapeBytes } from '../decode/stream-decoder.ts';
import { isJsonObject as isObj } from '../json.ts';
import type { Verdict } from '../model/types.ts';
import { fail, pass } from '../model/verdict.ts';
import { evidenceOf, type Sample } from './sse-samples.ts';

type Obj = Record<string, unknown>;

const STOP_REASONS = [
  'end_turn',
  'max_tokens',
  'stop_sequence',
  'tool_use',
  'pause_turn',
  'refusal',
  'model_context_window_exceeded',
];

const typeOf = (json: Obj | undefined): string | undefined =>
  json && typeof json.type === 'string' ? json.type : undefined;

/** Every event: an `event:` line naming the same type as its JSON `type`, in a text/event-stream, blank-line terminated. */
export function judgeEventLines(s: Sample): Verdict {
  const violations: string[] = [];
  let bytes: string | undefined;
  const ct = mediaType(s.rec.headers['content-type']);
  if (ct !== 'text/event-stream')
    violations.push(
      `content-type ${JSON.stringify(s.rec.headers['content-type'] ?? '(none)')} instead of text/event-stream`,
    );
  const missing = s.events.filter((e) => e.event === undefined || e.event === '');
  if (missing.length) {
    violations.push(
      `${missing.length} of ${s.events.length} events have no "event:" line (first: event #${missing[0]!.i}, type ${JSON.stringify(typeOf(missing[0]!.json) ?? null)})`,
    );
    bytes ??= escapeBytes(s.rec.body.subarray(missing[0]!.offset, missing[0]!.offset + 200), 200);
  }
  for (const e of s.events) {
    const t = typeOf(e.json);
    if (e.event && t !== undefined && e.event !== t)
      violations.push(`event #${e.i}: "event: ${e.event}" but data type ${JSON.stringify(t)}`);
    if (!e.json) violations.push(`event #${e.i}: data is not one JSON object: ${escapeBytes(e.data, 120)}`);
  }
  if (s.events.length === 0) violations.push('no event was dispatched');
  if (s.framing.unterminated?.data !== undefined && !s.rec.failure)
    violations.push(`the body ends inside an event (no blank line): ${escapeBytes(s.framing.unterminated.data, 120)}`);
  if (s.framing.bareJson.length) violations.push(`${s.framing.bareJson.length} payload line(s) without "data:"`);
  if (violations.length) {
    return fail(
      {
        requirement:
          'Each Messages stream event MUST be an "event: <type>" line and a "data: <json>" line with the same type, ended by a blank line, in a text/event-stream response (clients dispatch on the event name).',
        expected: '"event: message_start\\ndata: {\\"type\\":\\"message_start\\",…}\\n\\n" for every event',
        actual: violations[0]!,
        violations: violations.slice(1),
        bytes,
      },
      undefined,
      evidenceOf([s]),
    );
  }
  return pass(`${s.events.length} events, each with an event: line matching its data type`);
}

/** The Messages event grammar, checked event by event. */
export function judgeEventSequence(s: Sample): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let bytes: string | undefined;
  const seq: string[] = [];
  const blocks = new Map<number, 'open' | 'closed'>();
  let started = false;
  let messageDelta = 0;
  let stopAt = -1;
  const at = (e: { i: number; data: string }, what: string) => {
    violations.push(`event #${e.i}: ${what}`);
    bytes ??= escapeBytes(e.data, 200);
  };
  for (const e of s.events) {
    const type = typeOf(e.json) ?? e.event ?? '(none)';
    seq.push(type);
    if (stopAt >= 0) {
      at(e, `${type} after message_stop`);
      continue;
    }
    const index = isObj(e.json) && typeof e.json.index === 'number' ? e.json.index : undefined;
    switch (type) {
      case 'ping':
        break;
      case 'message_start': {
        if (started) at(e, 'a second message_start');
        else if (seq.length > 1 && seq.slice(0, -1).some((x) => x !== 'ping'))
          at(e, 'message_start is not the first event');
        started = true;
        const msg = isObj(e.json?.message) ? e.json.message : undefined;
        if (!msg || typeof msg.id !== 'string' || msg.role !== 'assistant')
          at(e, 'message_start without message.id and role "assistant"');
        break;
      }
      case 'content_block_start':
        if (!started) at(e, 'content_block_start before message_start');
        if (index === undefined) at(e, 'content_block_start without an index');
        else if (blocks.has(index)) at(e, `content_block_start for index ${index} a second time`);
        else blocks.set(index, 'open');
        if (messageDelta) at(e, 'content_block_start after message_delta');
        break;
      case 'content_block_delta':
        if (index === undefined) at(e, 'content_block_delta without an index');
        else if (blocks.get(index) !== 'open')
          at(
            e,
            `content_block_delta for index ${index} ${blocks.has(index) ? 'after its content_block_stop' : 'before its content_block_start'}`,
          );
        if (!isObj(e.json?.delta) || typeof e.json.delta.type !== 'string')
          at(e, 'content_block_delta without delta.type');
        break;
      case 'content_block_stop':
        if (index === undefined) at(e, 'content_block_stop without an index');
        else if (blocks.get(index) !== 'open') at(e, `content_block_stop for index ${index} that is not open`);
        else blocks.set(index, 'closed');
        break;
      case 'message_delta': {
        messageDelta++;
        const open = [...blocks].filter(([, st]) => st === 'open').map(([k]) => k);
        if (open.length) at(e, `message_delta while content block(s) ${open.join(', ')} are still open`);
        const sr = isObj(e.json?.delta) ? e.json.delta.stop_reason : undefined;
        if (typeof sr !== 'string') at(e, 'message_delta without delta.stop_reason');
        else if (!STOP_REASONS.includes(sr))
          at(e, `stop_reason ${JSON.stringify(sr)} is not one of ${STOP_REASONS.join(', ')}`);
        break;
      }
      case 'message_stop':
        if (!messageDelta) at(e, 'message_stop without a message_delta before it');
        stopAt = e.i;
        break;
      case 'error':
        at(e, `error event: ${escapeBytes(e.data, 160)}`);
        break;
      default:
        notes.push(`event #${e.i}: unknown type ${JSON.stringify(type)} (ignored, as the docs ask of clients)`);
    }
  }
  if (!started) violations.unshift('no message_start event');
  if (blocks.size === 0 && started) violations.push('no content block (content_block_start … content_block_stop)');
  if (stopAt < 0) {
    violations.unshift(
      `no message_stop event: the stream ends after ${JSON.stringify(seq[seq.length - 1] ?? '(nothing)')}`,
    );
    bytes ??= escapeBytes(s.rec.body.subarray(Math.max(0, s.rec.body.length - 200)), 200);
  } else if (s.rec.failure)
    violations.push(`the body did not end after message_stop: ${s.rec.failure.kind} (${s.rec.failure.message})`);
  const flow = compress(seq);
  if (violations.length) {
    return fail(
      {
        requirement:
          'A Messages stream MUST follow the documented flow: message_start, then each content block as content_block_start, content_block_delta…, content_block_stop, then message_delta (stop_reason), then message_stop as the last event; ping may appear anywhere.',
        expected:
          'message_start → (content_block_start → content_block_delta* → content_block_stop)+ → message_delta → message_stop, then the end of the body',
        actual: violations[0]!,
        violations: [...violations.slice(1), `sequence seen: ${flow}`, ...notes],
        bytes,
      },
      undefined,
      evidenceOf([s]),
    );
  }
  return pass(`event flow ${flow}${notes.length ? `; ${notes.join('; ')}` : ''}`);
}

/** "a, b, b, b, c" → "a → b×3 → c" */
function compress(seq: string[]): string {
  const out: string[] = [];
  for (let i = 0; i < seq.length; ) {
    let j = i;
    while (j < seq.length && seq[j] === seq[i]) j++;
    out.push(j - i > 1 ? `${seq[i]}×${j - i}` : seq[i]!);
    i = j;
  }
  return out.join(' → ');
}
