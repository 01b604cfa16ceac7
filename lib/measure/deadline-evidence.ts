// Evidence, from this run, that the server leaves a kind of request without an end: it never sent the headers, went
// silent after them, or streamed past max_tokens without end. Without it every later request of that kind would wait
// out the profile's generous floors again (a catalogue of 85 checks × 15–120 s); with it, later requests of the same
// kind get a deadline sized from that evidence (lib/measure/deadlines.ts `requestDeadlines`), and a request cut by
// such a deadline says so.
//
// Only a cut at the profile's full floor, or a stream past its max_tokens, is evidence: our own budget running out
// while tokens flow (a slow server) never is, and the pace-sized part of a deadline is never shrunk, so a correct
// server at 3 tok/s keeps every deadline it had. A request of the same kind that completes withdraws the evidence.
//
// A run's test files run in separate workers: the evidence is kept in a small file in the run's state directory
// (suites/support/register.ts calls shareEvidence); without one (self-tests, proofs) nothing is recorded.
import { CAPS, parseUrl } from '../http/transport.ts';
import type { RunMemory, SharedSlice } from '../model/check.ts';
import type { Recording } from '../model/types.ts';

export interface DeadlineEvidence {
  /**
   * no-headers: no status line within the floor; silent: headers, then no body byte; endless: past max_tokens;
   * oversized: past the transport's read cap (16 MiB for an answer of a few tokens).
   */
  kind: 'no-headers' | 'silent' | 'endless' | 'oversized';
  /** The request, e.g. "POST /v1/chat/completions (stream)". */
  request: string;
  /** The check that sent it (when known). */
  check?: string;
  /** How long the server was silent (no-headers, silent), or how long the stream had run when it was cut (endless). */
  ms: number;
  /** silent: body bytes that had trickled in (a whole answer that never ended); oversized: bytes read before the cut. */
  bytes?: number;
  /** endless: the mean gap between its token events (ms), and the time to its first one. */
  gapMs?: number;
  ttftMs?: number;
}

/** The run's evidence, by kind of request: shared by its workers (lib/run/memory.ts), kept only in a run. */
const EVIDENCE: SharedSlice<Record<string, DeadlineEvidence>> = { name: 'deadline-evidence', initial: {} };

/** A request body as an object (JSON text is parsed); undefined when it is none. */
function parsed(body: unknown): object | undefined {
  let b = body;
  if (typeof body === 'string' || body instanceof Uint8Array)
    try {
      b = JSON.parse(typeof body === 'string' ? body : Buffer.from(body).toString('utf8'));
    } catch {
      return undefined;
    }
  return typeof b === 'object' && b !== null ? b : undefined;
}

/** A generation request's kind: method, path, and whether it streams (the same server treats them apart). */
export function requestKind(method: string, url: string, body: unknown): string | undefined {
  if (method !== 'POST') return undefined;
  const u = parseUrl(url);
  if (!u) return undefined;
  const b = parsed(body);
  if (b === undefined) return undefined;
  const s = (b as { stream?: unknown }).stream;
  // Ollama's native API streams unless told not to.
  const stream = s === true || (s === undefined && u.pathname.startsWith('/api/'));
  // Not the origin: a server the suite restarts may come back on another port, and a run has one server.
  return `POST ${u.pathname} (${stream ? 'stream' : 'whole'})`;
}

/** The evidence for a kind of request, if this run has any (a self-test's memory keeps none). */
export function evidenceFor(memory: RunMemory, kind: string | undefined): DeadlineEvidence | undefined {
  if (!memory.ofRun || kind === undefined) return undefined;
  return memory.shared(EVIDENCE).read()[kind];
}

/** The max_tokens a generation body asks for (max_tokens, max_completion_tokens, options.num_predict). */
function maxTokensOf(body: unknown): number | undefined {
  const b = parsed(body) as
    | { max_tokens?: unknown; max_completion_tokens?: unknown; options?: { num_predict?: unknown } }
    | undefined;
  const v = b?.max_tokens ?? b?.max_completion_tokens ?? b?.options?.num_predict;
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}

/**
 * A silence is evidence only when it lasted both the profile's floor and SLOW_MARGIN times what the whole answer
 * needs at 3 tok/s, the slowest pace the suite supports (a 16-token answer silent for 15 s): a correct server that is
 * merely slow never shows it, whatever it was asked.
 */
const SLOW_MARGIN = 2;
/** The slowest decode the suite supports (3 tok/s). */
const SLOWEST_TOKEN_MS = 1000 / 3;

/** The evidence a recording gives, if any (`floors`: the profile's; `maxTokens`: what the request asked for). */
function evidenceOf(
  rec: Pick<Recording, 'failure' | 'status' | 'tHeaders' | 'tEnd' | 'wireBytes' | 'reads'>,
  floors: { headersMs: number; totalMs: number },
  maxTokens: number | undefined,
  whole = false,
): Omit<DeadlineEvidence, 'request' | 'check'> | undefined {
  const f = rec.failure;
  if (!f) return undefined;
  // More bytes than any answer carries: a cap cut it (lib/http/transport.ts CAPS: the read cap, or one line past
  // 1 MiB), whatever was asked. (A stream past max_tokens is `endless`, noted by its sender.)
  if (f.kind === 'overflow' && (rec.wireBytes ?? 0) > CAPS.lineBytes)
    return { kind: 'oversized', ms: Math.round(rec.tEnd), bytes: rec.wireBytes };
  if (maxTokens === undefined) return undefined;
  const beyondSlow = (ms: number) => ms >= SLOW_MARGIN * SLOWEST_TOKEN_MS * maxTokens;
  if (f.kind === 'headers-timeout' && rec.status === undefined && rec.tEnd >= floors.headersMs && beyondSlow(rec.tEnd))
    return { kind: 'no-headers', ms: Math.round(rec.tEnd) };
  // Headers, then no end until our total deadline: not one byte (the body was never coming), or, for a whole
  // (non-streamed) answer, a trickle (a correct server sends a whole answer at once when it is done).
  const silence = rec.tEnd - (rec.tHeaders ?? 0);
  const bytes = rec.wireBytes ?? 0;
  if (
    (f.kind === 'total-timeout' || f.kind === 'token-idle') &&
    rec.status !== undefined &&
    (bytes === 0 || (whole && f.kind === 'total-timeout')) &&
    silence >= Math.min(floors.totalMs, floors.headersMs) &&
    beyondSlow(silence)
  )
    return { kind: 'silent', ms: Math.round(silence), ...(bytes ? { bytes } : {}) };
  return undefined;
}

/**
 * What the recorder calls when an exchange ends (lib/http/recorder.ts `onEnded`): a generation request cut after
 * waiting out the profile's floors is noted as this run's evidence, and one that completes withdraws it.
 */
export function endingListener(
  by: Sender,
  method: string,
  url: string,
  body: unknown,
  floors: { headersMs: number; totalMs: number },
): (rec: Recording) => void {
  const kind = requestKind(method, url, body);
  const maxTokens = maxTokensOf(body);
  return (rec) => noteEnding(by, kind, rec, floors, maxTokens);
}

/** Who sent a request: the run's memory it is noted in, and the check (named in the evidence). */
interface Sender {
  memory: RunMemory;
  owner: string;
}

/** Note what a finished generation request shows: new evidence, or (it completed) none any more for its kind. */
export function noteEnding(
  by: Sender,
  kind: string | undefined,
  rec: Pick<Recording, 'failure' | 'status' | 'tHeaders' | 'tEnd' | 'wireBytes' | 'reads'>,
  floors: { headersMs: number; totalMs: number },
  maxTokens: number | undefined,
  endless?: { gapMs?: number; ttftMs?: number },
): void {
  if (!by.memory.ofRun || kind === undefined) return;
  const slot = by.memory.shared(EVIDENCE);
  const m = slot.read();
  const request = kind;
  const found: Omit<DeadlineEvidence, 'request' | 'check'> | undefined = endless
    ? { kind: 'endless', ms: Math.round(rec.tEnd), ...endless }
    : evidenceOf(rec, floors, maxTokens, kind.endsWith('(whole)'));
  if (found) {
    // The first evidence stands: a later cut by a deadline it sized is no new evidence (no shrinking in a spiral).
    // Except that a check's own endless stream replaces a probe's (the sentinel's, outside the checks): only what a
    // check saw keeps later requests of the kind from being sent (lib/exchange/exchange.ts send).
    if (m[kind] && !(found.kind === 'endless' && !seenInCheck(m[kind]))) return;
    slot.update((all) => ({ ...all, [kind]: { ...found, request, check: by.owner } }));
  } else if (!rec.failure && rec.status !== undefined && m[kind]) {
    slot.update(({ [kind]: _withdrawn, ...rest }) => rest);
  }
}

/** The kinds of request `check` saw stream past max_tokens without end, with the evidence (one root cause each). */
export function endlessSeenBy(memory: RunMemory, check: string): Array<[string, DeadlineEvidence]> {
  return Object.entries(memory.shared(EVIDENCE).read()).filter(([, e]) => e.kind === 'endless' && e.check === check);
}

/** Evidence a check saw (check ids are `family.name`), not a probe outside the checks (the health sentinel). */
export function seenInCheck(e: DeadlineEvidence): boolean {
  return e.check?.includes('.') === true;
}

/** One line for messages: what was seen, by which check. */
export function describeEvidence(e: DeadlineEvidence): string {
  const by = e.check ? ` in ${e.check}` : '';
  switch (e.kind) {
    case 'no-headers':
      return `${e.request}${by} got no response headers in ${e.ms} ms`;
    case 'silent':
      return e.bytes
        ? `${e.request}${by} got headers and then ${e.bytes} bytes in ${e.ms} ms, no end`
        : `${e.request}${by} got headers and then not one byte in ${e.ms} ms`;
    case 'endless':
      return `${e.request}${by} streamed past its max_tokens without end${e.gapMs !== undefined ? ` (a token event every ${Math.round(e.gapMs * 10) / 10} ms)` : ''}`;
    case 'oversized':
      return `${e.request}${by} went on past ${Math.floor((e.bytes ?? CAPS.lineBytes) / 2 ** 20)} MiB without ending`;
  }
}

/**
 * Bytes an answer of `maxTokens` may take: every token event a stream may carry before it counts as runaway
 * (4 × max_tokens + 64, lib/http/stream-guards.ts), each up to 4 KiB — far more than any correct event — and at
 * least 2 MiB.
 */
export function answerBytesCap(maxTokens: number | undefined): number {
  // Never below twice the line cap: a stream's one endless line is still named as such (its cap comes first).
  return Math.max(2 * CAPS.lineBytes, (4 * (maxTokens ?? 256) + 64) * 4096);
}
