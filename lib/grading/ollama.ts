// Judges of Ollama's native /api/chat stream (NDJSON). Reference: Ollama API docs
// (https://github.com/ollama/ollama/blob/main/docs/api.md, "Generate a chat completion"): a stream of JSON objects, one
// per line; the final object has done: true, done_reason and the statistics. Pure functions of a recorded sample.

import { analyzeNdjson, bytesAt, mediaType, type NdjsonFraming } from '../decode/framing.ts';
import { escapeBytes } from '../decode/stream-decoder.ts';
import { isJsonObject as isObj } from '../json.ts';
import type { Evidence, Recording, Verdict } from '../model/types.ts';
import { fail, pass } from '../model/verdict.ts';

type Obj = Record<string, unknown>;

export interface NdjsonSample {
  rec: Recording;
  framing: NdjsonFraming;
}

export function makeNdjsonSample(rec: Recording): NdjsonSample {
  return { rec, framing: analyzeNdjson(rec.reads.length ? rec.reads : rec.body) };
}

export function evidence(s: NdjsonSample): Evidence[] {
  return [
    {
      label: '/api/chat stream',
      status: s.rec.status,
      wire: escapeBytes(s.rec.body, 1500),
      readTimes: s.rec.reads.slice(0, 200).map((r) => Math.round(r.t * 10) / 10),
      e2eMs: Math.round(s.rec.tEnd),
    },
  ];
}

export function judgeNdjsonFraming(s: NdjsonSample): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let bytes: string | undefined;
  const ct = mediaType(s.rec.headers['content-type']);
  if (ct === 'text/event-stream')
    violations.push(`content-type ${JSON.stringify(s.rec.headers['content-type'])}: an SSE stream, not NDJSON`);
  else if (ct !== 'application/x-ndjson')
    notes.push(
      `content-type ${JSON.stringify(s.rec.headers['content-type'] ?? '(none)')} (Ollama sends application/x-ndjson; tolerated)`,
    );
  const sse = s.framing.lines.filter((l) => l.sseLike);
  if (sse.length) {
    violations.push(
      `${sse.length} of ${s.framing.lines.length} lines use SSE framing ("data: …", "event: …" or ":" comments) instead of one bare JSON object per line`,
    );
    bytes ??= escapeBytes(bytesAt(s.rec.body, sse[0]!.offset, 200), 200);
  }
  for (const l of s.framing.lines.filter((x) => !x.isObject && !x.sseLike)) {
    violations.push(`line at byte ${l.offset}: ${l.problem}: ${escapeBytes(l.text, 120)}`);
    bytes ??= escapeBytes(bytesAt(s.rec.body, l.offset, 200), 200);
  }
  if (s.framing.lines.length === 0) violations.push('no line at all');
  if (s.framing.loneCrOffsets.length) notes.push(`${s.framing.loneCrOffsets.length} lone CR(s) inside lines`);
  const last = s.framing.lines[s.framing.lines.length - 1];
  if (last && last.end === 'EOF' && !s.rec.failure) notes.push('the last line has no terminating "\\n" (tolerated)');
  if (s.framing.blankLines) notes.push(`${s.framing.blankLines} blank line(s) (tolerated)`);
  if (violations.length) {
    return fail(
      {
        requirement:
          'The /api/chat stream MUST be newline-delimited JSON: each line exactly one JSON object, no SSE framing (Ollama clients split on "\\n" and JSON-parse each line).',
        expected:
          'application/x-ndjson; lines like {"model":…,"message":{"role":"assistant","content":"…"},"done":false}\\n',
        actual: violations[0]!,
        violations: [...violations.slice(1), ...notes],
        bytes,
      },
      { lines: s.framing.lines.length },
      evidence(s),
    );
  }
  return pass(
    `${s.framing.lines.length} NDJSON lines, each one JSON object${notes.length ? `; ${notes.join('; ')}` : ''}`,
    { lines: s.framing.lines.length },
  );
}

/** Statistics clients compute tokens/s from (eval_count / eval_duration × 1e9). */
const FINAL_COUNTS = ['eval_count', 'eval_duration'];

export function judgeDoneLine(s: NdjsonSample): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let bytes: string | undefined;
  const objs = s.framing.lines.filter((l) => l.isObject).map((l) => ({ l, j: l.json as Obj }));
  const dones = objs.filter((x) => x.j.done === true);
  const lastLine = s.framing.lines[s.framing.lines.length - 1];
  for (const x of objs)
    if (x.j.error !== undefined) violations.push(`error line at byte ${x.l.offset}: ${escapeBytes(x.l.text, 160)}`);
  if (dones.length === 0) {
    violations.unshift(
      `no line with "done": true; the last line is ${lastLine ? escapeBytes(lastLine.text, 160) : '(none)'}${s.rec.failure ? ` and the response did not end (${s.rec.failure.kind}: ${s.rec.failure.message})` : ''}`,
    );
    bytes = lastLine ? escapeBytes(bytesAt(s.rec.body, lastLine.offset, 240), 240) : undefined;
  } else {
    const d = dones[0]!;
    if (dones.length > 1) violations.push(`${dones.length} lines with "done": true`);
    if (lastLine && lastLine !== d.l) {
      violations.push(
        `the done line (byte ${d.l.offset}) is not the last line: ${escapeBytes(lastLine.text, 120)} follows`,
      );
      bytes ??= escapeBytes(bytesAt(s.rec.body, d.l.offset, 300), 300);
    }
    const missing = FINAL_COUNTS.filter((k) => typeof d.j[k] !== 'number');
    if (missing.length)
      violations.push(`the done line lacks ${missing.join(', ')} (numbers; clients compute tokens/s from them)`);
    if (typeof d.j.done_reason !== 'string')
      notes.push('the done line has no done_reason (older Ollama versions; tolerated)');
    if (s.rec.failure)
      violations.push(`the body did not end after the done line: ${s.rec.failure.kind} (${s.rec.failure.message})`);
    if (isObj(d.j.message) && typeof d.j.message.content === 'string' && d.j.message.content !== '')
      notes.push('the done line carries content (allowed)');
  }
  if (violations.length) {
    return fail(
      {
        requirement:
          'The /api/chat stream MUST end with exactly one line with "done": true carrying the final statistics, and the body MUST end after it.',
        expected:
          'last line {"done":true,"done_reason":"stop"|"length",…,"eval_count":n,"eval_duration":ns}, then the end of the body',
        actual: violations[0]!,
        violations: [...violations.slice(1), ...notes],
        bytes,
      },
      undefined,
      evidence(s),
    );
  }
  const d = dones[0]!.j;
  return pass(
    `last line done: true (done_reason ${JSON.stringify(d.done_reason ?? null)}, eval_count ${String(d.eval_count)})${notes.length ? `; ${notes.join('; ')}` : ''}`,
  );
}
