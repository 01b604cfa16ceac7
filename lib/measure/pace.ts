// The pace of a server as this run has measured it: per-token time, token gap, TTFT and prefill rate, from every
// streamed request the harness sends (lib/http/exchange.ts feeds it). Timing checks size their token counts, repetitions and
// deadlines from it (docs/grading.md "Who owns a deadline": budgets scale with the speed the check measures), so a correct server at
// 3 tok/s and at 5000 tok/s gets the same verdicts.
//
// Speeds change during a run (neighbours on a shared machine move them 200x), so the pace is the recent past: the
// last few requests, and for sizing the slower of their median and the latest one. Plain data and pure functions;
// the store is keyed by server so every check of a run (and every proof against one server) shares it.
import type { LocalSlice, RunMemory } from '../model/check.ts';
import { median } from './stats.ts';

export interface PaceObservation {
  /** performance.now() when the request ended. */
  at: number;
  /** Completion tokens (usage, else estimated from the text). */
  tokens: number;
  tokenSource: 'usage' | 'counted' | 'estimated';
  e2eMs: number;
  ttftMs?: number;
  /** usage.prompt_tokens, when the server reported it. */
  promptTokens?: number;
  /** Median gap between token-bearing events (ms). */
  gapMs?: number;
  /** Token-bearing events, and how many distinct reads carried them (a flushed stream: one or two). */
  tokenEvents?: number;
  tokenReads?: number;
  /** Code points of generated text per completion token, where usage gave the count. */
  charsPerToken?: number;
}

/** Requests remembered per server: enough for a median, few enough to follow a speed that changes. */
const KEEP = 8;
/** Requests with fewer tokens say more about TTFT than about the per-token time. */
const MIN_DECODE_TOKENS = 4;
/** Observations whose prompt is longer than this say more about prefill than about decode. */
const SHORT_PROMPT_TOKENS = 1024;

/** The run's recent requests, per server (a worker's own: the pace is the recent past of this process's requests). */
const PACE: LocalSlice<Map<string, PaceObservation[]>> = { name: 'pace', create: () => new Map() };

export function paceKey(baseUrl: string, model: string): string {
  return `${baseUrl}|${model}`;
}

/** Add one complete request's figures (a one-token request still tells the prefill rate). */
export function observe(memory: RunMemory, key: string, o: PaceObservation): void {
  if (!(o.tokens >= 1) || !(o.e2eMs > 0)) return;
  const store = memory.local(PACE);
  const list = store.get(key) ?? [];
  list.push(o);
  if (list.length > KEEP) list.splice(0, list.length - KEEP);
  store.set(key, list);
}

export function observations(memory: RunMemory, key: string): readonly PaceObservation[] {
  return memory.local(PACE).get(key) ?? [];
}

export interface Pace {
  /** Requests the figures come from. */
  samples: number;
  /** Wall time per completion token of short-prompt requests (e2e / tokens, ms): what a request of n tokens costs. */
  perTokenMs: number;
  /** The same as a rate (tok/s): the speed messages name. */
  wallTps: number;
  /** Median decode time per token after the first ((e2e − TTFT) / (tokens − 1), ms): what sizes a decode's length.
   *  About 0 for a server that flushes its stream at the end, whose perTokenMs still tells the truth. */
  tpotMs?: number;
  /** Median gap between token-bearing events (ms), when streams had gaps. */
  gapMs?: number;
  /** Median TTFT of short-prompt requests (ms). */
  ttftMs?: number;
  /** Prompt tokens per second of prefill (median over requests with a reported prompt size). */
  prefillTps?: number;
  /** Code points per token learned from usage. */
  charsPerToken?: number;
  /** One line: where the figures come from. */
  source: string;
}

/**
 * The pace from recent observations, or undefined before the first one. perTokenMs is the slower of the median and the
 * latest request, so a server that just slowed down (a neighbour started) is not given a deadline sized for before.
 */
export function paceOf(obs: readonly PaceObservation[]): Pace | undefined {
  // Per-token time from requests with some tokens and a short prompt (a long prefill is not a decode pace).
  const decoding = obs.filter((o) => o.tokens >= MIN_DECODE_TOKENS);
  const short = decoding.filter((o) => o.promptTokens === undefined || o.promptTokens <= SHORT_PROMPT_TOKENS);
  const use = short.length ? short : decoding;
  if (!use.length) return undefined;
  const per = use.map((o) => o.e2eMs / o.tokens);
  const perTokenMs = Math.max(median(per)!, per[per.length - 1]!);
  const prefill = obs
    .filter((o) => o.promptTokens !== undefined && o.promptTokens >= 64 && o.ttftMs !== undefined && o.ttftMs > 0)
    .map((o) => o.promptTokens! / (o.ttftMs! / 1000));
  const sources = [...new Set(use.map((o) => o.tokenSource))].join('/');
  return {
    samples: use.length,
    perTokenMs,
    wallTps: 1000 / perTokenMs,
    // TPOT only where it is a decode rate at all: a flushed stream's (e2e − TTFT) is ~0 (faster than any server).
    tpotMs: median(use.filter(decoded).map(tpotOf)),
    gapMs: median(use.map((o) => o.gapMs)),
    // TTFT of streamed answers only: a flushed stream's "TTFT" is its whole duration.
    ttftMs: median(short.filter(decoded).map((o) => o.ttftMs)),
    prefillTps: median(prefill),
    charsPerToken: median(obs.map((o) => o.charsPerToken)),
    source: `${use.length} recent request${use.length === 1 ? '' : 's'}, tokens from ${sources}`,
  };
}

/** The fastest decode any server reaches (tok/s): 4x the top of the range the suite supports (5000 tok/s). */
const FASTEST_PLAUSIBLE_TPS = 20_000;

function tpotOf(o: PaceObservation): number {
  return (o.e2eMs - (o.ttftMs ?? o.e2eMs)) / Math.max(1, o.tokens - 1);
}

/**
 * The tokens came at a decode rate: TPOT no faster than any server can decode, and spread over at least 3 reads (a
 * flush of a short answer is one or two reads, however its last bytes straggle): a stream, not a flush.
 */
function decoded(o: PaceObservation): boolean {
  const reads = o.tokenReads === undefined || o.tokenEvents === undefined || o.tokenReads >= Math.min(3, o.tokenEvents);
  return o.ttftMs !== undefined && o.tokens >= 2 && reads && tpotOf(o) >= 1000 / FASTEST_PLAUSIBLE_TPS;
}

/** "3.1 tok/s (wall, 5 recent requests, tokens from usage)": the speed as messages name it. */
export function describePace(p: Pace | undefined): string {
  if (!p) return 'no speed measured yet';
  const tps = p.wallTps >= 100 ? p.wallTps.toFixed(0) : p.wallTps.toFixed(1);
  return `${tps} tok/s (wall time per token over ${p.source})`;
}

/** Decode time per token for sizing a generation's length: TPOT of streamed answers, else the wall time per token
 *  (a server that flushes at the end: its wall time is the truth). */
export function decodeMsPerToken(p: Pick<Pace, 'perTokenMs' | 'tpotMs'>): number {
  return p.tpotMs !== undefined ? p.tpotMs : p.perTokenMs;
}

/** "sized from the measured speed (3.1 tok/s …)": how a check says what it sized its work from. */
export function sizedFrom(p: Pace | undefined): string {
  return p ? `sized from the measured speed, ${describePace(p)}` : 'default size (no speed measured)';
}

// ---------------------------------------------------------------------------------------------------------------
// Sizing: pure, so the budgets of the speed matrix can be checked without a server.

interface TokenSizing {
  /** Wall time per token (ms), from the pace. */
  perTokenMs: number;
  /** How long the generation should take, to be measurable (ms). */
  targetMs: number;
  /** Fewest tokens the check's statistics need. */
  min: number;
  /** Most tokens (window, server limits, what the check can use). */
  max: number;
  /**
   * The wall time one request may take at most (its share of the check's budget), with the pace's wall time per token:
   * a TPOT that looks far faster than the wall time (a flush split over a few reads, a long prefill) must not size a
   * request the budget cannot pay for.
   */
  wallCapMs?: number;
  wallMsPerToken?: number;
}

/** Tokens so that one generation lasts about targetMs at this pace, within [min, max] and the wall-time cap. */
export function tokensFor(s: TokenSizing): number {
  let n = Math.round(s.targetMs / Math.max(1e-3, s.perTokenMs));
  if (s.wallCapMs !== undefined && s.wallMsPerToken !== undefined && s.wallMsPerToken > 0)
    n = Math.min(n, Math.floor(s.wallCapMs / s.wallMsPerToken));
  return Math.max(s.min, Math.min(s.max, n));
}

/** tokensFor with this pace's per-token times: TPOT sizes the decode, the wall time caps it (see wallCapMs). */
export function tokensAt(p: Pace, o: { targetMs: number; min: number; max: number; wallCapMs: number }): number {
  return tokensFor({ perTokenMs: decodeMsPerToken(p), wallMsPerToken: p.perTokenMs, ...o });
}

/** Expected wall time (ms) of `requests` sequential requests of `tokens` tokens at this pace (TTFT included). */
export function expectedMs(p: Pick<Pace, 'perTokenMs' | 'ttftMs'>, tokens: number, requests = 1): number {
  return requests * ((p.ttftMs ?? 0) + tokens * p.perTokenMs);
}

/**
 * The most repetitions (between min and max) of a unit of work costing unitMs that fit in budgetMs; 0 when even
 * `min` does not fit (the caller reports that as inconclusive, naming the speed).
 */
export function repetitionsFor(unitMs: number, budgetMs: number, min: number, max: number): number {
  const fit = Math.floor(budgetMs / Math.max(1e-3, unitMs));
  if (fit < min) return 0;
  return Math.min(max, fit);
}
