// Requests with long prompts, what the context family sends: a prompt of N tokens timed to its first token, a prompt
// inside the window, an over-long prompt and how it was answered (lib/grading/over-window.ts classifies it), probes
// of what size is accepted, deadlines raised for them.

import { escapeBytes } from '../decode/stream-decoder.ts';
import {
  fittingPrompt,
  type ProbeAnswer,
  probeAnswer,
  promptLabel,
  type WindowPrompt,
} from '../grading/context-window.ts';
import { classifyOverWindow, type OverWindowRun } from '../grading/over-window.ts';
import { bodyText } from '../http/recorder.ts';
import type { Requester } from '../model/check.ts';
import type { Evidence } from '../model/types.ts';
import { chat, describeExchange, type Exchange, generationBody } from './exchange.ts';
import { promptOfTokens } from './prompts.ts';

/**
 * Deadlines for a request with a long prompt: a slow server legitimately needs minutes to prefill 0.9 × 128k tokens
 * (~500 tokens/s on an M2 Max, docs/servers.md "rapid-mlx"), so the profile's per-request deadlines are raised to this bound.
 */
export const LONG_REQUEST_MS = 600_000;
export function longDeadlines(req: Requester): Partial<Requester['deadlines']> {
  return {
    headersMs: Math.max(req.deadlines.headersMs, LONG_REQUEST_MS),
    tokenIdleMs: Math.max(req.deadlines.tokenIdleMs, LONG_REQUEST_MS),
    totalMs: Math.max(req.deadlines.totalMs, LONG_REQUEST_MS),
  };
}

/** usage.prompt_tokens of a non-stream body or a stream's usage chunk. */
export function promptTokensOf(x: Exchange): number | undefined {
  const n =
    x.events?.usage?.prompt_tokens ??
    (x.json as { usage?: { prompt_tokens?: unknown } } | undefined)?.usage?.prompt_tokens;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
}

/** An exchange as a verdict's evidence: status, times, the first reads' times and the wire, capped. */
export function exchangeEvidence(label: string, x: Exchange): Evidence {
  return {
    label,
    status: x.rec.status,
    ttftMs: x.metrics?.ttftMs,
    e2eMs: x.rec.tEnd,
    readTimes: x.rec.reads.slice(0, 50).map((r) => Math.round(r.t * 10) / 10),
    wire: escapeBytes(bodyText(x.rec), 300),
  };
}

/** Time to first token (prefill + one step), or the whole exchange when no token event was seen. */
function ttftOf(x: Exchange): number | undefined {
  if (x.rec.status !== 200 || (x.rec.failure && x.rec.failure.kind !== 'aborted')) return undefined;
  return x.metrics?.ttftMs ?? (x.json !== undefined ? x.rec.tEnd : undefined);
}

export const STREAM_USAGE = { stream_options: { include_usage: true } };

/** One streaming request of about `tokens` prompt tokens that stops at the first token. */
export async function timedPrefill(
  req: Requester,
  tokens: number,
  deadlines?: Partial<Requester['deadlines']>,
  offset = 0,
): Promise<{ x: Exchange; ttft?: number; sent: number }> {
  const { prompt, expectedTokens } = await promptOfTokens(req, tokens, offset);
  const x = await chat(
    req,
    generationBody(req, 'openai-chat', { prompt, maxTokens: 1, stream: true, extra: STREAM_USAGE }),
    { deadlines },
  );
  return { x, ttft: ttftOf(x), sent: promptTokensOf(x) ?? expectedTokens };
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

interface OverWindowRequest extends OverWindowRun {
  x: Exchange;
}

/** A prompt of about `targetTokens` beyond the `window`, given `waitMs` to be answered, and how it was answered. */
export async function overWindowRequest(
  req: Requester,
  window: number,
  stream: boolean,
  targetTokens: number,
  waitMs: number,
  offset: number,
): Promise<OverWindowRequest> {
  const { prompt, expectedTokens } = await promptOfTokens(req, targetTokens, offset);
  const body = generationBody(req, 'openai-chat', {
    prompt,
    maxTokens: 8,
    stream,
    extra: stream ? STREAM_USAGE : undefined,
  });
  const x = await chat(req, body, { deadlines: { headersMs: waitMs, tokenIdleMs: waitMs, totalMs: waitMs + 5_000 } });
  const firstErrorT = x.events?.errors[0]?.t;
  const sseBytesBeforeError =
    firstErrorT === undefined
      ? undefined
      : sum(x.rec.reads.filter((r) => r.t < firstErrorT).map((r) => r.bytes.length));
  const finding = classifyOverWindow({
    stream,
    status: x.rec.status,
    failure: x.rec.failure,
    contentType: x.rec.headers['content-type'],
    json: x.json,
    sentTokens: expectedTokens,
    window,
    usagePromptTokens: promptTokensOf(x),
    streamErrors: x.events?.errors.length ?? 0,
    sseBytesBeforeError,
    tokenEvents: x.events?.tokens.length ?? 0,
    sseErrorField: stream ? /^error:[ ]?(.*)$/m.exec(bodyText(x.rec))?.[1] : undefined,
    waitedMs: waitMs,
  });
  return { stream, finding, x, rec: x.rec, sent: expectedTokens };
}

/**
 * The over-long requests of context.over-window-400: a first round of non-stream and stream together (a hanging
 * server costs one wait, not two), then, while every answer is a rejection, up to `rounds` rounds in all to time;
 * each in the evidence.
 */
export async function overWindowRounds(
  req: Requester,
  window: number,
  target: number,
  waitMs: number,
  rounds: number,
  ev: Evidence[],
): Promise<OverWindowRequest[]> {
  const runs = await Promise.all([
    overWindowRequest(req, window, false, target, waitMs, 1),
    overWindowRequest(req, window, true, target, waitMs, 2),
  ]);
  const allRejected = () => runs.every((r) => r.finding.verdict === 'pass');
  if (allRejected()) {
    for (let i = 1; i < rounds; i++) {
      runs.push(
        await overWindowRequest(req, window, false, target, waitMs, 10 + i),
        await overWindowRequest(req, window, true, target, waitMs, 20 + i),
      );
      if (!allRejected()) break;
    }
  }
  runs.forEach((r, i) =>
    ev.push(
      exchangeEvidence(`round ${Math.floor(i / 2) + 1} ${r.stream ? 'stream' : 'non-stream'}: ${r.finding.kind}`, r.x),
    ),
  );
  return runs;
}

/**
 * context.healthy-after's long requests between its timed sets: a prompt near the window that runs, and an over-long
 * one in each mode (where the window is known), each given `waitFor` the long prompt's prefill to be answered.
 */
export async function longRequests(
  req: Requester,
  window: number | undefined,
  longTokens: number,
  waitFor: (prefillMs: number | undefined) => number,
  ev: Evidence[],
): Promise<{ longPromptStatus?: number; overWindow: string[] }> {
  const long = await timedPrefill(req, longTokens, longDeadlines(req), 7);
  ev.push(exchangeEvidence(`long prompt ~${long.sent} tokens`, long.x));
  const waitMs = waitFor(long.ttft);
  const overs = window
    ? [
        await overWindowRequest(req, window, false, Math.ceil(window * 1.3), waitMs, 8),
        await overWindowRequest(req, window, true, Math.ceil(window * 1.3), waitMs, 9),
      ]
    : [];
  overs.forEach((o) => ev.push(exchangeEvidence(`over-long prompt ~${o.sent} tokens: ${o.finding.kind}`, o.x)));
  return { longPromptStatus: long.x.rec.status, overWindow: overs.map((o) => o.finding.kind) };
}

/**
 * context.within-window's prompt: a non-stream request at `fraction` of the window, max_tokens at most `maxTokens`
 * and half of what the prompt leaves, the prompt sized to fit beside it.
 */
export async function windowPrompt(
  req: Requester,
  window: number,
  fraction: number,
  maxTokensCap: number,
  ev: Evidence[],
): Promise<WindowPrompt> {
  const maxTokens = Math.max(1, Math.min(maxTokensCap, Math.floor((window * (1 - fraction)) / 2)));
  const target = fittingPrompt(window, fraction, maxTokens);
  const { prompt, expectedTokens } = await promptOfTokens(req, target, Math.round(fraction * 100));
  req.log(`${Math.round(fraction * 100)} % of the window: ~${expectedTokens} prompt tokens, max_tokens ${maxTokens}`);
  const x = await chat(req, generationBody(req, 'openai-chat', { prompt, maxTokens, stream: false }), {
    deadlines: longDeadlines(req),
  });
  const p: WindowPrompt = {
    fraction,
    sent: expectedTokens,
    counted: promptTokensOf(x),
    maxTokens,
    rec: x.rec,
    json: x.json,
    jsonError: x.jsonError,
    described: describeExchange(x),
  };
  ev.push(exchangeEvidence(promptLabel(p, window), x));
  return p;
}

/** context.max-accepted's probe of a prompt size (lib/grading/context-window.ts probeAnswer says what it counts as). */
export function acceptanceProbe(
  req: Requester,
  boundMs: number,
  ev: Evidence[],
): (tokens: number) => Promise<ProbeAnswer> {
  let probeNo = 0;
  return async (tokens) => {
    const { prompt } = await promptOfTokens(req, tokens, ++probeNo);
    // No 4xx within the bound (no headers, or no token after a 200) counts as accepted: the deadline aborts it.
    const x = await chat(req, generationBody(req, 'openai-chat', { prompt, maxTokens: 1, stream: true }), {
      stopAfterTokens: 1,
      deadlines: { headersMs: boundMs, tokenIdleMs: boundMs, totalMs: boundMs * 2 },
    });
    const answer = probeAnswer(x.rec);
    req.log(`probe ${probeNo}: ~${tokens} tokens → ${answer} (${describeExchange(x)})`);
    if (ev.length < 30) ev.push(exchangeEvidence(`probe ~${tokens} tokens: ${answer}`, x));
    return answer;
  };
}

/** The server's own count (usage.prompt_tokens) of a prompt of about `tokens`, from a request it answered 200. */
export async function confirmedCount(req: Requester, tokens: number, ev: Evidence[]): Promise<number | undefined> {
  const { prompt } = await promptOfTokens(req, tokens, 999);
  const confirm = await chat(req, generationBody(req, 'openai-chat', { prompt, maxTokens: 1, stream: false }), {
    deadlines: longDeadlines(req),
  });
  ev.push(exchangeEvidence(`confirmation at ~${tokens} tokens`, confirm));
  return confirm.rec.status === 200 ? promptTokensOf(confirm) : undefined;
}
