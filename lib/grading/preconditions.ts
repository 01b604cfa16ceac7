// A check's precondition, named from the request that failed it (docs/grading.md "Blocked checks"): what kind of
// request it was and how it was answered, so one cause is one kind of request answered alike. The check core decides
// who reports it, from the check's declared `dependsOn` (lib/check/blocked.ts); these build the verdict's mark.
import { escapeBytes } from '../decode/stream-decoder.ts';
import type { Precondition, Recording, Verdict } from '../model/types.ts';

const isStreamed = (rec: Recording) => /"stream"\s*:\s*true/.test(rec.requestBody ?? '');

/** How a request that should have been served was answered: `HTTP 500`, `reset`, … */
function answerOf(rec: Recording): string {
  if (rec.status !== undefined && rec.status !== 200) return `HTTP ${rec.status}`;
  return rec.failure?.kind ?? (rec.status === undefined ? 'no answer' : `HTTP ${rec.status}`);
}

/**
 * What the answer said, reduced to what identifies its cause: the error message of a JSON error body (OpenAI's
 * {"error": {"message"}}, or {"error": "…"}, {"message": "…"}), else the start of the body, with every number replaced
 * (a message that quotes a position in the prompt is one cause whatever the prompt).
 */
function causeText(rec: Recording): string {
  const text = new TextDecoder().decode(rec.body.slice(0, 4_000));
  let msg: unknown = text;
  try {
    const j = JSON.parse(text) as { error?: unknown; message?: unknown };
    const e = j.error as { message?: unknown } | string | undefined;
    msg = typeof e === 'string' ? e : (e?.message ?? j.message ?? text);
  } catch {
    /* not JSON: the text itself */
  }
  return String(msg).replace(/\s+/g, ' ').trim().slice(0, 100).replace(/\d+/g, '#');
}

/**
 * The precondition a failed request stands for: its kind (streamed or not, method and path) and its answer, with the
 * error text it carried — one cause is one kind of request answered alike (`streamed POST /v1/chat/completions → HTTP
 * 500 "Bad control character in string literal in JSON at position #…"`), so a 500 of another origin ("Cannot use
 * tools with stream") is a cause of its own. Who reports it is the check's declaration (`dependsOn`: lib/check/blocked.ts).
 */
export function requestPrecondition(
  rec: Recording,
  o: Pick<Precondition, 'mayReport' | 'ownFinding'> = {},
): Precondition {
  // Not sent for a stream the run saw never end: one cause with the check that saw it (lib/check/check.ts claims it
  // for that check when its verdict failed), whichever check meets it next.
  if (rec.notSent)
    return {
      key: endlessCauseKey(rec.notSent.kind),
      detail: rec.failure?.message ?? `${rec.notSent.kind} not sent`,
      ...o,
    };
  let path = rec.url;
  try {
    path = new URL(rec.url).pathname;
  } catch {
    /* keep the URL as recorded */
  }
  const kind = `${isStreamed(rec) ? 'streamed ' : ''}${rec.method} ${path}`;
  const answer = answerOf(rec);
  const body = rec.body.length ? `: ${escapeBytes(rec.body, 160)}` : rec.failure ? `: ${rec.failure.message}` : '';
  const said = causeText(rec);
  return {
    key: `${kind} → ${answer}${said ? ` ${JSON.stringify(said)}` : ''}`,
    detail: `${kind} answered ${answer}${body}`,
    ...o,
  };
}

/** The root cause "this kind of request never ends" (evidence `endless`, lib/measure/deadline-evidence.ts). */
export function endlessCauseKey(kind: string): string {
  return `${kind} → streamed past its max_tokens without end`;
}

/** Mark a verdict as resting on a failed precondition (the runner resolves it: see `resolveBlocked`). */
export function blockedOn(v: Verdict, p: Precondition): Verdict {
  return { ...v, precondition: p };
}
