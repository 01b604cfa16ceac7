// Judges of the byte-level SSE framing of an OpenAI-style stream (WHATWG HTML §9.2.6; OpenAI "Chat Completions:
// streaming"), shared by the sse and completions families and the client wire rules.
//
// Lenient exactly where real servers differ and clients cope (docs/servers.md "Cross-server observations"): SSE
// comments, `data:` without the space, CRLF, several data lines in one event.
//
// Each judge is a pure function of the recorded samples, so test/framing.test.ts can feed it hand-written streams.

import {
  bytesAround,
  bytesAt,
  classifyPayload,
  mediaType,
  runTogetherEvents,
  splitAcrossEvents,
} from '../decode/framing.ts';
import { escapeBytes } from '../decode/stream-decoder.ts';
import { quantile } from '../measure/stats.ts';
import type { Verdict } from '../model/types.ts';
import { fail, fmt, pass } from '../model/verdict.ts';
import { evidenceOf, type Sample } from './sse-samples.ts';

export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const excerptAt = (s: Sample, offset: number, length = 200) => escapeBytes(bytesAt(s.rec.body, offset, length), length);

export function judgeContentType(samples: readonly Sample[], expected = 'text/event-stream'): Verdict {
  const wrong = samples.filter((s) => mediaType(s.rec.headers['content-type']) !== expected);
  if (wrong.length) {
    return fail(
      {
        requirement: `A streamed response MUST be sent with Content-Type ${expected} (clients pick the SSE parser by media type).`,
        expected: `${expected} (parameters such as "; charset=utf-8" allowed)`,
        actual: wrong
          .map(
            (s) =>
              `${s.label}: HTTP ${s.rec.status ?? '-'}, content-type ${JSON.stringify(s.rec.headers['content-type'] ?? '(none)')}`,
          )
          .join('; '),
      },
      undefined,
      evidenceOf(samples),
    );
  }
  return pass(`content-type ${samples.map((s) => JSON.stringify(s.rec.headers['content-type'])).join(', ')}`);
}

export function judgeEventTerminator(samples: readonly Sample[]): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let bytes: string | undefined;
  for (const s of samples) {
    const f = s.framing;
    for (const b of f.blocks) {
      const run = runTogetherEvents(b);
      if (run) {
        violations.push(
          `${s.label}: ${run.length} events run together in one block at byte ${b.offset} (each data line is a whole JSON chunk, no blank line between them), so a client sees one event whose data is ${plural(run.length, 'line')} joined by LF`,
        );
        bytes ??= excerptAt(s, b.offset, 300);
      }
    }
    const u = f.unterminated;
    if (u && u.lines.some((l) => l.kind !== 'comment')) {
      if (s.rec.failure)
        notes.push(`${s.label}: the body was cut off (${s.rec.failure.kind}) inside an event at byte ${u.offset}`);
      else {
        violations.push(
          `${s.label}: the body ends inside an event: ${plural(u.lines.length, 'line')} from byte ${u.offset} are never followed by a blank line, so a client never dispatches them`,
        );
        bytes ??= excerptAt(s, u.offset, 300);
      }
    }
  }
  const ends = (k: 'LF' | 'CRLF' | 'CR') => samples.reduce((n, s) => n + s.framing.lineEnds[k], 0);
  const events = samples.reduce((n, s) => n + s.framing.events.length, 0);
  const metrics = { events, lineEndsLF: ends('LF'), lineEndsCRLF: ends('CRLF'), lineEndsCR: ends('CR') };
  if (violations.length) {
    return fail(
      {
        requirement:
          'Every SSE event MUST end with a blank line: the blank line is what dispatches it (WHATWG §9.2.6). LF, CRLF and CR line ends are all valid; several data lines in one event are valid.',
        expected: 'each event followed by an empty line: "data: {…}\\n\\n" (or "\\r\\n\\r\\n", "\\r\\r")',
        actual: violations[0]!,
        violations: [...violations.slice(1), ...notes],
        bytes,
      },
      metrics,
      evidenceOf(samples),
    );
  }
  return pass(
    `${events} events in ${plural(samples.length, 'stream')}, each ended by a blank line (line ends: LF ${metrics.lineEndsLF}, CRLF ${metrics.lineEndsCRLF}, CR ${metrics.lineEndsCR})${notes.length ? `; ${notes.join('; ')}` : ''}`,
    metrics,
  );
}

export function judgeNoLoneCr(samples: readonly Sample[]): Verdict {
  const bad = samples.filter((s) => s.framing.loneCrOffsets.length > 0);
  if (bad.length) {
    const first = bad[0]!;
    return fail(
      {
        requirement:
          'Line ends SHOULD be LF or CRLF: a lone CR is valid SSE but many clients split only on "\\n" and never see the event end.',
        expected: 'LF ("\\n") or CRLF ("\\r\\n") line ends',
        actual: bad
          .map(
            (s) =>
              `${s.label}: ${plural(s.framing.loneCrOffsets.length, 'lone CR line end')} (first at byte ${s.framing.loneCrOffsets[0]})`,
          )
          .join('; '),
        bytes: escapeBytes(bytesAround(first.rec.body, first.framing.loneCrOffsets[0]!, 60), 200),
      },
      { loneCr: bad.reduce((n, s) => n + s.framing.loneCrOffsets.length, 0) },
      evidenceOf(samples),
    );
  }
  return pass('no lone CR line ends');
}

export function judgeDataPrefix(samples: readonly Sample[]): Verdict {
  const violations: string[] = [];
  let bytes: string | undefined;
  let bare = 0;
  for (const s of samples) {
    const lines = s.framing.bareJson;
    if (!lines.length) continue;
    bare += lines.length;
    violations.push(
      `${s.label}: ${plural(lines.length, 'payload line')} without a field name, first at byte ${lines[0]!.offset}: ${escapeBytes(lines[0]!.text, 120)}`,
    );
    bytes ??= excerptAt(s, lines[0]!.offset, 200);
  }
  const noSpace = samples.reduce((n, s) => n + s.framing.dataWithoutSpace, 0);
  if (violations.length) {
    return fail(
      {
        requirement:
          'Each payload line MUST start with the field name "data:" — a line without a field name is not data and clients drop it (WHATWG §9.2.6: the text before the first colon is the field name).',
        expected: '"data: {…}" or "data:{…}" lines (":" starts a comment)',
        actual: `${plural(bare, 'line')} without "data:"`,
        violations,
        bytes,
      },
      { bareLines: bare },
      evidenceOf(samples),
    );
  }
  return pass(
    `every payload line has "data:"${noSpace ? ` (${noSpace} written "data:" without the space — valid)` : ''}`,
    { dataWithoutSpace: noSpace },
  );
}

export function judgeUnknownFields(samples: readonly Sample[]): Verdict {
  const counts = new Map<string, number>();
  let bytes: string | undefined;
  for (const s of samples) {
    for (const l of s.framing.unknownFields) {
      counts.set(l.field!, (counts.get(l.field!) ?? 0) + 1);
      bytes ??= excerptAt(s, l.offset, 200);
    }
  }
  if (counts.size) {
    const names = [...counts].map(([n, c]) => `"${escapeBytes(n, 40)}" (${plural(c, 'line')})`).join(', ');
    return fail(
      {
        requirement:
          'Servers SHOULD write only the SSE fields data, event, id and retry: clients ignore any other field name, so what such a line carries is lost (an error belongs in a data: payload or an "event: error" event).',
        expected: 'field names data, event, id, retry; comments starting with ":"',
        actual: `unknown field name(s) ${names}`,
        bytes,
      },
      { unknownFields: Object.fromEntries(counts) },
      evidenceOf(samples),
    );
  }
  return pass('only known SSE field names (data, event, id, retry)');
}

export function judgeOneJsonPerEvent(samples: readonly Sample[]): Verdict {
  const violations: string[] = [];
  let bytes: string | undefined;
  let objects = 0;
  for (const s of samples) {
    const datas = s.events.map((e) => e.data);
    const splits = splitAcrossEvents(datas);
    const inSplit = new Set<number>();
    for (const [a, b] of splits) {
      for (let k = a; k <= b; k++) inSplit.add(k);
      violations.push(
        `${s.label}: events #${a}–#${b} carry one JSON object split over ${b - a + 1} events: ${escapeBytes(datas[a]!, 60)} | ${escapeBytes(datas[b]!, 60)}`,
      );
      bytes ??= excerptAt(s, s.events[a]!.offset, 300);
    }
    for (const e of s.events) {
      const p = classifyPayload(e.data);
      if (p.kind === 'object') {
        objects++;
        continue;
      }
      if (p.kind === 'done' || inSplit.has(e.i)) continue;
      const what =
        p.kind === 'several'
          ? `${p.count} JSON values concatenated in one data payload`
          : p.kind === 'not-object'
            ? `a JSON ${p.type}, not an object`
            : `not JSON (${p.message})`;
      violations.push(`${s.label}: event #${e.i} at byte ${e.offset}: ${what}: ${escapeBytes(e.data, 160)}`);
      bytes ??= excerptAt(s, e.offset, 300);
    }
  }
  if (objects === 0) {
    const dispatched = samples.reduce((n, s) => n + s.events.length, 0);
    violations.unshift(
      dispatched === 0
        ? `no event was dispatched at all (${samples.map((s) => `${s.label}: ${s.rec.body.length} bytes`).join(', ')}; see the event-terminator rule)`
        : 'no event carried a JSON object',
    );
  }
  if (violations.length) {
    return fail(
      {
        requirement:
          "Each event's data MUST be exactly one JSON object (or the literal [DONE]): clients JSON.parse each event on its own.",
        expected: 'one JSON object per event; [DONE] alone in the last event',
        actual: violations[0]!,
        violations: violations.slice(1),
        bytes,
      },
      { jsonEvents: objects },
      evidenceOf(samples),
    );
  }
  return pass(`${objects} events, each exactly one JSON object`, { jsonEvents: objects });
}

export function judgeDoneTerminator(samples: readonly Sample[], terminator = '[DONE]'): Verdict {
  const violations: string[] = [];
  const notes: string[] = [];
  let bytes: string | undefined;
  for (const s of samples) {
    const doneAt = s.events.findIndex((e) => e.done);
    const last = s.events[s.events.length - 1];
    if (doneAt < 0) {
      violations.push(
        `${s.label}: no "data: ${terminator}" event; the last event was ${last ? escapeBytes(last.data, 120) : '(none)'}${s.rec.failure ? ` and the response did not end (${s.rec.failure.kind}: ${s.rec.failure.message})` : ''}`,
      );
      bytes ??= escapeBytes(s.rec.body.subarray(Math.max(0, s.rec.body.length - 240)), 300);
      continue;
    }
    const after = s.events.slice(doneAt + 1);
    if (after.length) {
      violations.push(
        `${s.label}: ${plural(after.length, 'event')} after ${terminator}: ${after
          .slice(0, 3)
          .map((e) => escapeBytes(e.data, 100))
          .join(' | ')}`,
      );
      bytes ??= excerptAt(s, s.events[doneAt]!.offset, 300);
    }
    const tail = s.framing.unterminated;
    if (tail && tail.offset > s.events[doneAt]!.offset && tail.data !== undefined) {
      violations.push(`${s.label}: data after ${terminator} (unterminated): ${escapeBytes(tail.data, 100)}`);
    }
    if (s.rec.failure)
      violations.push(
        `${s.label}: the response body did not end after ${terminator}: ${s.rec.failure.kind} (${s.rec.failure.message})`,
      );
    const doneOffset = s.events[doneAt]!.offset;
    const lateComments = s.framing.comments.filter((c) => c.offset > doneOffset).length;
    if (lateComments)
      notes.push(`${s.label}: ${plural(lateComments, 'comment')} after ${terminator} (ignored by clients)`);
  }
  if (violations.length) {
    return fail(
      {
        requirement: `"data: ${terminator}" MUST be the last event of the stream, and the response body MUST end right after it (OpenAI streaming: the stream is terminated by a data: ${terminator} message).`,
        expected: `the last event is "data: ${terminator}", followed by the end of the body`,
        actual: violations[0]!,
        violations: [...violations.slice(1), ...notes],
        bytes,
      },
      undefined,
      evidenceOf(samples),
    );
  }
  return pass(
    `${terminator} is the last event and the body ends after it in ${plural(samples.length, 'stream')}${notes.length ? `; ${notes.join('; ')}` : ''}`,
  );
}

export function judgeComments(samples: readonly Sample[]): Verdict {
  const byLine = new Map<string, number>();
  const gaps: number[] = [];
  let beforeFirstEvent = 0;
  let total = 0;
  for (const s of samples) {
    const cs = s.framing.comments;
    total += cs.length;
    for (const c of cs) byLine.set(c.line, (byLine.get(c.line) ?? 0) + 1);
    for (let k = 1; k < cs.length; k++) gaps.push(cs[k]!.t - cs[k - 1]!.t);
    const firstEvent = s.framing.events[0]?.offset ?? Infinity;
    beforeFirstEvent += cs.filter((c) => c.offset < firstEvent).length;
  }
  const kinds = [...byLine].map(([line, n]) => `${JSON.stringify(line)} ×${n}`).join(', ');
  const metrics = {
    comments: total,
    kinds: Object.fromEntries(byLine),
    beforeFirstEvent,
    gapP50Ms: gaps.length ? quantile(gaps, 0.5) : undefined,
    gapP90Ms: gaps.length ? quantile(gaps, 0.9) : undefined,
  };
  if (total === 0) return pass(`no SSE comments in ${plural(samples.length, 'stream')}`, metrics);
  return pass(
    `${plural(total, 'SSE comment')} in ${plural(samples.length, 'stream')}: ${kinds}; ${beforeFirstEvent} before the first event` +
      (gaps.length ? `; median gap ${fmt(metrics.gapP50Ms)} ms, p90 ${fmt(metrics.gapP90Ms)} ms` : ''),
    metrics,
  );
}
