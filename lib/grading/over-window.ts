// context.over-window-400: what came back for an over-long prompt, and whether it was rejected before prefill.
// Pure: no I/O, no clock, no unseeded randomness, so every verdict can be recomputed from the recorded figures and
// simulated with seeded noise (test/context-grading.test.ts runs 10,000 noisy trials of the timing gradings).
// Times in ms, sizes in tokens as the server counts them (usage.prompt_tokens, calibrated).

import { median, summarize } from '../measure/stats.ts';
import type { Evidence, Recording, Verdict } from '../model/types.ts';
import { fail, fmt, inconclusive, pass, warn } from '../model/verdict.ts';
import { type JudgedWindow, windowNote, windowText } from './context-window.ts';
import { coverageText, guardStarvation, ratioCI, type TimingGrade } from './timing-grade.ts';

/** Text a server uses to say the context is exceeded (vLLM, llama.cpp, omlx, Rapid-MLX, mlx-serve, Anthropic). */
export const CONTEXT_EXCEEDED_RE =
  /context|too long|too many tokens|exceed|maximum (?:\w+ )?length|max_model_len|n_ctx|input length|prompt length|token limit/i;

/** The human-readable message of an error body in any of the shapes servers use, or undefined. */
export function errorMessageOf(json: unknown): string | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const o = json as Record<string, unknown>;
  const e = o.error;
  if (typeof e === 'string') return e; // Ollama {"error": "…"}
  if (typeof e === 'object' && e !== null) {
    const m = (e as Record<string, unknown>).message;
    return typeof m === 'string' ? m : JSON.stringify(e);
  }
  if (typeof o.message === 'string') return o.message; // vLLM < 0.10.1 flat {"object":"error","message":…}
  const d = o.detail; // FastAPI
  if (typeof d === 'string') return d;
  if (d !== undefined && d !== null) return JSON.stringify(d);
  return undefined;
}

/** How the error object is shaped: OpenAI's envelope or something a client has to special-case. */
export function errorShapeOf(json: unknown): 'openai' | 'string-error' | 'flat' | 'detail' | 'none' {
  if (typeof json !== 'object' || json === null) return 'none';
  const o = json as Record<string, unknown>;
  if (
    typeof o.error === 'object' &&
    o.error !== null &&
    typeof (o.error as Record<string, unknown>).message === 'string'
  )
    return 'openai';
  if (typeof o.error === 'string') return 'string-error';
  if (typeof o.message === 'string') return 'flat';
  if (o.detail !== undefined) return 'detail';
  return 'none';
}

export interface OverWindowObservation {
  stream: boolean;
  /** HTTP status, undefined when no response arrived. */
  status?: number;
  /** The recorder's failure (reset, headers-timeout, …), if any. */
  failure?: { kind: string; message: string };
  contentType?: string;
  /** Parsed JSON body (non-SSE), if it parsed. */
  json?: unknown;
  /** Prompt tokens sent (calibrated estimate). */
  sentTokens: number;
  window: number;
  /** usage.prompt_tokens of a 200 answer. */
  usagePromptTokens?: number;
  /** Error objects inside a 200 SSE stream, and the SSE bytes that came before the first one. */
  streamErrors: number;
  sseBytesBeforeError?: number;
  /** Token-bearing events of a 200 stream. */
  tokenEvents: number;
  /**
   * The value of an `error:` line in a 200 SSE body: not a field SSE defines, so every parser drops it (llama.cpp
   * b4747 sends its context error this way), and the client sees an empty successful answer.
   */
  sseErrorField?: string;
  /** The bound we waited for an answer (ms). */
  waitedMs: number;
}

type OverWindowKind =
  | 'rejected' // 400 + error object that says the context is exceeded
  | 'rejected-vague' // 400 whose error does not say why
  | 'rejected-other-4xx' // another 4xx (413, 422) saying the context is exceeded
  | 'server-error' // 5xx
  | 'dropped' // connection closed without a response
  | 'no-response' // nothing within the bound
  | 'error-in-stream' // 200 and an error event inside the stream
  | 'truncated' // 200 and usage.prompt_tokens shows the prompt was cut
  | 'accepted' // 200 otherwise (the prompt was processed: the window is not enforced)
  | 'other';

interface OverWindowFinding {
  kind: OverWindowKind;
  /** pass: meets the requirement; warn: a client can live with it; fail: violates it. */
  verdict: 'pass' | 'warn' | 'fail';
  /** One line, with the figures. */
  summary: string;
}

/** Classify the answer to a prompt of at least 1.25x the window. */
export function classifyOverWindow(o: OverWindowObservation): OverWindowFinding {
  const mode = o.stream ? 'stream' : 'non-stream';
  const what = `${mode} request with a ~${o.sentTokens}-token prompt (${fmt(o.sentTokens / o.window)}x the ${o.window}-token window)`;
  if (o.status === undefined) {
    if (o.failure?.kind === 'headers-timeout' || o.failure?.kind === 'total-timeout' || o.failure?.kind === 'aborted')
      return {
        kind: 'no-response',
        verdict: 'fail',
        summary: `${what}: no response within ${fmt(o.waitedMs)} ms (the server hangs instead of rejecting)`,
      };
    return {
      kind: 'dropped',
      verdict: 'fail',
      summary: `${what}: connection dropped without any response (${o.failure?.kind ?? 'no status'}: ${o.failure?.message ?? 'closed'})`,
    };
  }
  const msg = errorMessageOf(o.json);
  const saysContext = msg !== undefined && CONTEXT_EXCEEDED_RE.test(msg);
  const isSse = /text\/event-stream/i.test(o.contentType ?? '');
  if (o.status >= 200 && o.status < 300) {
    if (
      o.streamErrors > 0 ||
      (!o.stream && msg !== undefined && errorShapeOf(o.json) !== 'none' && o.usagePromptTokens === undefined)
    ) {
      const where = o.stream
        ? `an error inside the stream after ${o.sseBytesBeforeError ?? 0} SSE bytes`
        : 'an error object in a 200 body';
      return {
        kind: 'error-in-stream',
        verdict: 'fail',
        summary: `${what}: HTTP ${o.status} and ${where} instead of HTTP 400 before any SSE bytes (a client has already accepted the response as a success)`,
      };
    }
    if (o.stream && o.sseErrorField !== undefined && o.tokenEvents === 0) {
      return {
        kind: 'error-in-stream',
        verdict: 'fail',
        summary: `${what}: HTTP ${o.status} and the rejection sent as an SSE "error:" line (${JSON.stringify(o.sseErrorField.slice(0, 160))}), a field SSE does not define, so every parser drops it: the client sees an empty successful answer instead of HTTP 400`,
      };
    }
    if (o.usagePromptTokens !== undefined && o.usagePromptTokens < o.sentTokens * 0.9)
      return {
        kind: 'truncated',
        verdict: 'fail',
        summary: `${what}: HTTP ${o.status} and the prompt silently truncated (usage.prompt_tokens ${o.usagePromptTokens} of ~${o.sentTokens} sent): the model never saw the start or end of the prompt, and the client was not told`,
      };
    return {
      kind: 'accepted',
      verdict: 'fail',
      summary: `${what}: HTTP ${o.status}, the over-long prompt was accepted (usage.prompt_tokens ${o.usagePromptTokens ?? 'not reported'}; ${o.tokenEvents} token events): the window is not enforced`,
    };
  }
  if (o.status >= 500)
    return {
      kind: 'server-error',
      verdict: 'fail',
      summary: `${what}: HTTP ${o.status} (a server error) instead of 400 — clients retry 5xx, and this request can never succeed${msg ? `; message: ${JSON.stringify(msg.slice(0, 160))}` : ''}`,
    };
  if (o.status === 400) {
    if (isSse)
      return {
        kind: 'other',
        verdict: 'fail',
        summary: `${what}: HTTP 400 but with Content-Type ${o.contentType} (an SSE body), where a JSON error object is expected`,
      };
    if (!saysContext)
      return {
        kind: 'rejected-vague',
        verdict: 'fail',
        summary: `${what}: HTTP 400, but the error ${msg === undefined ? 'body is not an error object' : `message ${JSON.stringify(msg.slice(0, 160))}`} does not say the context is exceeded`,
      };
    return {
      kind: 'rejected',
      verdict: 'pass',
      summary: `${what}: HTTP 400 ${JSON.stringify(msg!.slice(0, 160))} (${errorShapeOf(o.json)} error shape)`,
    };
  }
  if (o.status >= 400 && o.status < 500 && saysContext)
    return {
      kind: 'rejected-other-4xx',
      verdict: 'warn',
      summary: `${what}: HTTP ${o.status} ${JSON.stringify(msg!.slice(0, 160))}; OpenAI clients expect 400 (context_length_exceeded)`,
    };
  return {
    kind: 'other',
    verdict: 'fail',
    summary: `${what}: HTTP ${o.status}${msg ? ` ${JSON.stringify(msg.slice(0, 160))}` : ''} instead of 400 with an error that says the context is exceeded`,
  };
}

interface RejectionThresholds {
  /** A rejection this fast cannot have paid for a prefill a user would notice (ms). */
  immediateMs: number;
  /** Fail when the ratio's lower bound reaches this fraction of the within-window prefill time. */
  failFraction: number;
  /** Warn when the ratio's estimate reaches this fraction. */
  warnFraction: number;
}

/**
 * Was the over-long prompt rejected before prefill? Compare the time to the 400 with the prefill time (TTFT) of a
 * within-window prompt of similar size, both measured in this run. A server that prefills before rejecting
 * needs at least that long (its prompt is longer), so the ratio is ≥ 1; an up-front check gives a ratio near 0.
 */
export function gradeRejectionLatency(
  rejectMs: readonly number[],
  prefillMs: readonly number[],
  t: RejectionThresholds,
): TimingGrade {
  const rej = median(rejectMs);
  const pre = median(prefillMs);
  const figures: Record<string, number | undefined> = {
    rejectMsP50: rej,
    prefillMsP50: pre,
    rejections: rejectMs.length,
    prefills: prefillMs.length,
  };
  if (rej === undefined) return { outcome: 'inconclusive', reason: 'no rejection was timed', figures };
  if (rej <= t.immediateMs)
    return {
      outcome: 'pass',
      reason: `rejected in ${fmt(rej)} ms (median of ${rejectMs.length}), within ${t.immediateMs} ms: no prefill was paid for${pre !== undefined ? ` (a within-window prompt of similar size takes ${fmt(pre)} ms to its first token)` : ''}`,
      figures,
    };
  if (pre === undefined)
    return {
      outcome: 'inconclusive',
      reason: `rejected in ${fmt(rej)} ms, and no within-window prefill time to compare with`,
      figures,
    };
  const ci = ratioCI(rejectMs, prefillMs);
  Object.assign(figures, { ratio: ci.estimate, ratioLow: ci.low, ratioHigh: ci.high, coverage: ci.coverage });
  const text = `rejection took ${fmt(rej)} ms (median of ${rejectMs.length}), ${fmt(ci.estimate)}x the ${fmt(pre)} ms prefill of a within-window prompt of similar size (${coverageText(ci.coverage)} ${fmt(ci.low)}–${fmt(ci.high)})`;
  if (ci.low !== undefined && ci.low >= t.failFraction)
    return {
      outcome: 'fail',
      reason: `${text}: the server prefilled the prompt before rejecting it (lower bound ≥ ${t.failFraction})`,
      figures,
    };
  if (ci.estimate !== undefined && ci.estimate >= t.warnFraction)
    return {
      outcome: 'warn',
      reason: `${text}: possibly prefilled before rejecting (estimate ≥ ${t.warnFraction}, bound below ${t.failFraction})`,
      figures,
      borderline: !(ci.low !== undefined && ci.low >= t.warnFraction),
    };
  return { outcome: 'pass', reason: `${text}: rejected before prefill`, figures };
}

// ---------------------------------------------------------------------------------------------------------------
// The check's verdict

/** One over-long request: its mode, the prompt sent, what came back and how it was classified. */
export interface OverWindowRun {
  stream: boolean;
  finding: OverWindowFinding;
  /** Prompt tokens sent (calibrated estimate). */
  sent: number;
  rec: Recording;
}

/** What the check recorded: the over-long requests in the order sent, and the within-window prefills beside them. */
interface OverWindowRecord {
  runs: readonly OverWindowRun[];
  window: JudgedWindow;
  /** How long each over-long request was given to answer (ms). */
  waitMs: number;
  /** TTFTs of within-window prompts of similar size (ms). */
  prefills: number[];
  ev: Evidence[];
}

/** Times to the headers of the answers that did not fail: the rejection latencies judged against a prefill. */
export function rejectionTimes(runs: readonly OverWindowRun[]): number[] {
  return runs.filter((r) => r.finding.verdict !== 'fail' && r.rec.tHeaders !== undefined).map((r) => r.rec.tHeaders!);
}

function overWindowMetrics(o: OverWindowRecord): Record<string, unknown> {
  const rejectMs = rejectionTimes(o.runs);
  return {
    window: o.window.value,
    promptTokens: o.runs[0].sent,
    overFactor: o.runs[0].sent / o.window.value,
    waitMs: o.waitMs,
    findings: o.runs.map((r) => r.finding.kind),
    rejectMs: summarize(rejectMs),
    rejectSamples: rejectMs,
    prefillAnchorMs: o.prefills,
  };
}

/**
 * The answers: a fail naming each distinct one that violates the requirement (and the requests behind it, so the
 * caller can tell a stream the server serves to no one), or undefined when none does.
 */
export function judgeOverWindowAnswers(
  o: OverWindowRecord,
  overFactor: number,
): { verdict: Verdict; failed: OverWindowRun[] } | undefined {
  const { runs } = o;
  const bad = runs.map((r) => r.finding).filter((f) => f.verdict === 'fail');
  if (!bad.length) return undefined;
  const unique = [...new Map(bad.map((f) => [f.summary, f])).values()];
  // A prompt between the window judged and a larger one the server advertises: say what it got there.
  const first = runs.find((r) => r.finding === unique[0]);
  const got = first?.rec.status !== undefined ? `HTTP ${first.rec.status}` : unique[0].kind;
  const between = o.window.disagreement?.larger.some((w) => w > runs[0].sent);
  const verdict = fail(
    {
      requirement: `A prompt of ≥ ${overFactor}x the ${windowText(o.window)} MUST get HTTP 400 with an error object that says the context is exceeded, before prefill and before any SSE bytes (stream and non-stream).`,
      expected:
        'HTTP 400, Content-Type application/json, {"error":{"message":"…maximum context length…","code":"context_length_exceeded"}} (or another error object saying the context/prompt is too long)',
      actual: `${unique[0].summary}${between ? ` (${windowNote(o.window, got)})` : ''}`,
      violations: unique.slice(1).map((f) => f.summary),
    },
    overWindowMetrics(o),
    o.ev,
  );
  return { verdict, failed: runs.filter((r) => r.finding.verdict === 'fail') };
}

function timingVerdictPart(g: TimingGrade): string {
  return g.outcome === 'pass' ? g.reason : `${g.outcome}: ${g.reason}`;
}

/**
 * Every answer a rejection (or a warn a client can live with): was it rejected before prefill? gradeRejectionLatency,
 * guarded against our own client's starvation, with the answers' warns beside it.
 */
export function judgeRejectionTiming(
  o: OverWindowRecord,
  t: RejectionThresholds & { maxLoopDelayMs: number },
  loop: { p99Ms: number; maxMs: number } | undefined,
): Verdict {
  const { prefills, ev } = o;
  const rejectMs = rejectionTimes(o.runs);
  const findings = o.runs.map((r) => r.finding);
  const rt = { immediateMs: t.immediateMs, failFraction: t.failFraction, warnFraction: t.warnFraction };
  const timing = guardStarvation(gradeRejectionLatency(rejectMs, prefills, rt), loop, t.maxLoopDelayMs, (d) =>
    gradeRejectionLatency(
      rejectMs.map((x) => Math.max(0.1, x - d)),
      prefills.map((x) => x + d),
      rt,
    ),
  );
  const metrics = overWindowMetrics(o);
  Object.assign(metrics, timing.figures, { prefillAnchorMs: prefills });
  const warned = findings.filter((f) => f.verdict === 'warn');
  if (timing.outcome === 'fail') {
    return fail(
      {
        requirement:
          'The over-long prompt MUST be rejected before prefill (an up-front length check), in bounded time.',
        expected: `a 400 in well under the ${fmt(median(prefills))} ms a within-window prompt of similar size takes to prefill`,
        actual: timing.reason,
        violations: findings.map((f) => f.summary),
      },
      metrics,
      ev,
    );
  }
  if (timing.outcome === 'inconclusive')
    return inconclusive(`${timing.reason}; answers: ${findings[0].summary}`, metrics, ev);
  if (timing.outcome === 'warn' || warned.length) {
    // Borderline only when nothing but a borderline timing warn is behind it (a wrong status or body is clear evidence).
    const v = warn(
      [...warned.map((f) => f.summary), ...(timing.outcome === 'warn' ? [timingVerdictPart(timing)] : [])].join('; '),
      metrics,
      ev,
    );
    return !warned.length && timing.borderline ? { ...v, borderline: true } : v;
  }
  return pass(
    `${findings.length} over-long requests (stream and non-stream) rejected: ${findings[0].summary.replace(/^.*?: /, '')}; ${timing.reason}`,
    metrics,
    ev,
  );
}
