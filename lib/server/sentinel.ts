// The health sentinel: is the server still as fast as it was at the start of the run? One short streamed request
// (the probe: the same prompt shape and length every time) is timed at the start (the baseline, median of 3), after
// every check that sends long, over-long, malformed or abandoned requests, and before every timing check. A server
// markedly slower than its own start is "degraded since <check>": reported once (health.sentinel), and the timing
// checks after it are inconclusive naming it rather than graded on a sick server (docs/grading.md "Health sentinel").
//
// Cross-file state lives in the run's state directory (each test file runs in its own worker), like the circuit
// breaker's (suites/support/guard.ts). Plain functions, no Vitest.
import { describeExchange, generationBody, send, uniquePrompt } from '../exchange/exchange.ts';
import { makeRequester } from '../exchange/requester.ts';
import type { HealthAfterCheck } from '../grading/health-gate.ts';
import { tokensAt } from '../measure/pace.ts';
import { median } from '../measure/stats.ts';
import type { CheckDef, RunMemory, SharedSlice } from '../model/check.ts';
import type { ApiFlavour, Profile, ServerInfo } from '../model/types.ts';
import { fmt } from '../model/verdict.ts';

/** One probe's figures (ms); `censored`: no complete answer within its bound (its times are the bound). */
interface ProbeSample {
  ttftMs: number;
  /** Decode time after the first token: e2e − TTFT. */
  decodeMs: number;
  e2eMs: number;
  tokens: number;
  censored?: boolean;
}

/** Medians of a few probes. */
interface ProbeFigures {
  ttftMs: number;
  decodeMs: number;
  e2eMs: number;
  /** Decode rate after the first token, tokens/s ((tokens − 1) / decode time); undefined for a flushed answer. */
  decodeTps?: number;
  samples: number;
  /** Epoch ms when measured. */
  at: number;
}

interface SentinelVerdict {
  degraded: boolean;
  ttftRatio: number;
  decodeRatio: number;
  e2eRatio: number;
  /** One line: the figures against the baseline. */
  figures: string;
}

/**
 * The line between "slower" and "degraded", and why:
 * - `ratio` 4: a median of 3 probes at least 4x its own start, in TTFT or in decode time. A correct server on a
 *   shared 2-core machine moves by up to 2-3x while neighbours run (the pace store sees it: lib/measure/pace.ts);
 *   the defect this is for moved by 250x (0.02 s → 5.5 s) and more with every request.
 * - `floorMs` 500: and at least half a second slower, a delay a user notices on a short request. A single probe on
 *   the reference server read 0.24 s slower than its start right after the parallel family (its TTFT 20x); TTFTs of a
 *   few ms multiply under load without meaning anything.
 * - the slowdown must last: the sentinel re-probes with backoff for `waitBoundMs` (60 s) before it says "degraded",
 *   so a burst of load (or a server that recovers by itself) only costs a wait.
 */
export const SENTINEL = {
  ratio: 4,
  floorMs: 500,
  probes: 3,
  waitBoundMs: 60_000,
  /** Probe length: about this long to decode at the measured pace, within [minTokens, maxTokens]. */
  targetMs: 80,
  minTokens: 4,
  maxTokens: 8,
  /** The first (sizing) probe's tokens and bound; every probe's bound: 10x the baseline e2e, within these. */
  sizingTokens: 8,
  /** The baseline probes' bound: a 3 tok/s server answers 8 tokens in ~3 s; a server that stalls costs this once. */
  baselineBoundMs: 15_000,
  minBoundMs: 5_000,
  maxBoundMs: 60_000,
} as const;

/** Pure: the figures against the baseline; degraded when TTFT or decode time is ≥ ratio x and ≥ floor ms slower. */
export function judgeHealth(
  base: Pick<ProbeFigures, 'ttftMs' | 'decodeMs' | 'e2eMs' | 'decodeTps'>,
  now: Pick<ProbeFigures, 'ttftMs' | 'decodeMs' | 'e2eMs' | 'decodeTps'>,
  t: { ratio: number; floorMs: number } = SENTINEL,
): SentinelVerdict {
  const r = (a: number, b: number) => a / Math.max(b, 1e-3);
  const ttftRatio = r(now.ttftMs, base.ttftMs);
  const decodeRatio = r(now.decodeMs, base.decodeMs);
  const e2eRatio = r(now.e2eMs, base.e2eMs);
  const slower = (ratio: number, a: number, b: number) => ratio >= t.ratio && a - b >= t.floorMs;
  const degraded =
    slower(ttftRatio, now.ttftMs, base.ttftMs) ||
    slower(decodeRatio, now.decodeMs, base.decodeMs) ||
    slower(e2eRatio, now.e2eMs, base.e2eMs);
  const tps = (x: number | undefined) => (x === undefined ? 'n/a' : `${fmt(x, 1)} tok/s`);
  return {
    degraded,
    ttftRatio,
    decodeRatio,
    e2eRatio,
    figures:
      `TTFT ${fmt(base.ttftMs)} → ${fmt(now.ttftMs)} ms (${fmt(ttftRatio)}x), ` +
      `decode ${tps(base.decodeTps)} → ${tps(now.decodeTps)} (${fmt(decodeRatio)}x the time), ` +
      `end to end ${fmt(base.e2eMs)} → ${fmt(now.e2eMs)} ms (${fmt(e2eRatio)}x)`,
  };
}

/** Pure: medians of probe samples. */
export function figuresOf(samples: readonly ProbeSample[], at: number): ProbeFigures {
  const tps = samples
    .filter((s) => s.tokens >= 2 && s.decodeMs > 0 && !s.censored)
    .map((s) => (s.tokens - 1) / (s.decodeMs / 1000));
  return {
    ttftMs: median(samples.map((s) => s.ttftMs))!,
    decodeMs: median(samples.map((s) => s.decodeMs))!,
    e2eMs: median(samples.map((s) => s.e2eMs))!,
    decodeTps: median(tps),
    samples: samples.length,
    at,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// State shared by the run's test files

interface SentinelEvent {
  /** 'after' a disturbing check, 'before' a timing check, 'wait' while waiting for recovery. */
  when: 'after' | 'before' | 'wait';
  /** The check that ran last before the probe. */
  check: string;
  /** The timing check the probe came before ('before'). */
  next?: string;
  figures: ProbeFigures;
  /** The largest of the TTFT, decode-time and end-to-end ratios to the baseline. */
  ratio: number;
  /** End to end, ms slower than the baseline. */
  slowerMs: number;
}

interface SentinelState {
  /** Probe length in tokens, sized from the first probe's pace. */
  tokens?: number;
  baseline?: ProbeFigures;
  /** Why there is no baseline (the probe got no usable answer): the sentinel is off for the run. */
  off?: string;
  /** The check that ran last, its last request, and when it ended (epoch ms). */
  lastCheck?: { id: string; request?: string; endedAt: number };
  /** Epoch ms of the last probe. */
  lastProbeAt?: number;
  /** Set once: every later timing check is inconclusive naming it. */
  degraded?: { since: string; request?: string; figures: ProbeFigures; verdict: SentinelVerdict; waitedMs: number };
  /** Slowdowns that passed while the sentinel waited. */
  recovered?: Array<{ after: string; verdict: string; waitedMs: number }>;
  /** Timing checks not graded because of `degraded`. */
  notGraded?: string[];
  /** Probe figures (capped), for the finding's metrics. */
  events?: SentinelEvent[];
  /** Probes sent and their total time (ms): what the sentinel cost. */
  probeCount?: number;
  probeMs?: number;
}

/** The sentinel's state: shared by the run's workers (lib/run/memory.ts). */
const SENTINEL_STATE: SharedSlice<SentinelState> = { name: 'health-sentinel', initial: {} };

export function readSentinel(memory: RunMemory): SentinelState {
  return memory.shared(SENTINEL_STATE).read();
}

function update(memory: RunMemory, f: (s: SentinelState) => SentinelState): SentinelState {
  return memory.shared(SENTINEL_STATE).update(f);
}

// ---------------------------------------------------------------------------------------------------------------
// Probing

export interface SentinelContext {
  profile: Profile;
  server: ServerInfo;
  /** The run's memory: the sentinel's state, shared by the run's workers. */
  memory: RunMemory;
  runId: string;
  /** Epoch ms after which no check runs: probes and waits end before it. */
  deadlineAt?: number;
  /** Overrides SENTINEL.waitBoundMs (CONFORMANCE_HEALTH_WAIT_S; the self-tests' short waits). */
  waitBoundMs?: number;
  log?: (line: string) => void;
}

function probeBoundMs(base: ProbeFigures | undefined): number {
  if (!base) return SENTINEL.baselineBoundMs;
  return Math.round(Math.min(SENTINEL.maxBoundMs, Math.max(SENTINEL.minBoundMs, 10 * base.e2eMs)));
}

/** One probe: a short streamed generation; undefined (with why) when the answer cannot be timed. */
async function probeOnce(
  sc: SentinelContext,
  tokens: number,
  boundMs: number,
): Promise<{ sample?: ProbeSample; why?: string }> {
  const ac = new AbortController();
  const ctx = makeRequester({
    memory: sc.memory,
    profile: sc.profile,
    server: sc.server,
    runId: sc.runId,
    owner: 'sentinel',
    signal: ac.signal,
    log: () => undefined,
  });
  const flavour: ApiFlavour = ctx.profile.apis.includes('openai-chat') ? 'openai-chat' : ctx.profile.apis[0]!;
  const t0 = Date.now();
  const x = await send(
    ctx,
    flavour,
    generationBody(ctx, flavour, {
      prompt: uniquePrompt(ctx, 'Count from one to twenty in words.'),
      maxTokens: tokens,
      stream: true,
      exactLength: true,
      extra: flavour.startsWith('openai') ? { stream_options: { include_usage: true } } : undefined,
    }),
    { deadlines: { headersMs: boundMs, tokenIdleMs: boundMs, totalMs: boundMs } },
  );
  update(sc.memory, (s) => ({
    ...s,
    lastProbeAt: Date.now(),
    probeCount: (s.probeCount ?? 0) + 1,
    probeMs: (s.probeMs ?? 0) + (Date.now() - t0),
  }));
  const kind = x.rec.failure?.kind;
  // No answer within the bound (10x the baseline): as slow as the bound at least — evidence of a slowdown.
  if (kind === 'headers-timeout' || kind === 'token-idle' || kind === 'total-timeout')
    return {
      sample: { ttftMs: x.metrics?.ttftMs ?? boundMs, decodeMs: boundMs, e2eMs: boundMs, tokens, censored: true },
    };
  const m = x.metrics;
  if (x.rec.status !== 200 || kind || !m || m.ttftMs === undefined)
    return { why: `the probe got no timed answer (${describeExchange(x)})` };
  const n = m.completionTokens ?? m.countedTokenEvents;
  return { sample: { ttftMs: m.ttftMs, decodeMs: Math.max(0, m.e2eMs - m.ttftMs), e2eMs: m.e2eMs, tokens: n } };
}

async function probeMany(sc: SentinelContext, n: number, tokens: number, boundMs: number): Promise<ProbeSample[]> {
  const out: ProbeSample[] = [];
  for (let i = 0; i < n; i++) {
    const p = await probeOnce(sc, tokens, boundMs);
    if (p.sample) out.push(p.sample);
  }
  return out;
}

/**
 * The baseline, at the start of the run (after setup): one sizing probe, the probe's length from its pace, then
 * the median of SENTINEL.probes probes. A server that does not answer it leaves the sentinel off, saying why.
 */
export async function measureBaseline(sc: SentinelContext): Promise<SentinelState> {
  const first = await probeOnce(sc, SENTINEL.sizingTokens, SENTINEL.baselineBoundMs);
  if (!first.sample || first.sample.censored)
    return update(sc.memory, (s) => ({
      ...s,
      off: first.why ?? `the first probe got no complete answer within ${SENTINEL.baselineBoundMs / 1000} s`,
    }));
  const f = first.sample;
  const perTokenMs = f.e2eMs / Math.max(1, f.tokens);
  const tpotMs = f.tokens >= 2 ? f.decodeMs / (f.tokens - 1) : undefined;
  const tokens = tokensAt(
    {
      perTokenMs,
      tpotMs: tpotMs && tpotMs > 0.05 ? tpotMs : undefined,
      samples: 1,
      wallTps: 1000 / perTokenMs,
      source: '',
    },
    { targetMs: SENTINEL.targetMs, min: SENTINEL.minTokens, max: SENTINEL.maxTokens, wallCapMs: 5_000 },
  );
  const samples = await probeMany(sc, SENTINEL.probes, tokens, SENTINEL.baselineBoundMs);
  if (samples.length < 2 || samples.some((s) => s.censored))
    return update(sc.memory, (s) => ({ ...s, tokens, off: 'the baseline probes got too few timed answers' }));
  const baseline = figuresOf(samples, Date.now());
  sc.log?.(
    `health sentinel: baseline of ${samples.length} probes of ${tokens} tokens: TTFT ${fmt(baseline.ttftMs)} ms, ` +
      `decode ${fmt(baseline.decodeTps, 1)} tok/s, ${fmt(baseline.e2eMs)} ms end to end`,
  );
  return update(sc.memory, (s) => ({ ...s, tokens, baseline }));
}

/** Record the check that just ran (its last request names what preceded a degradation). */
export function noteCheckEnded(memory: RunMemory, checkId: string, request: string | undefined): void {
  // Already noted, and probed after, by healthAfterTiming: the probe stays the fresh one.
  update(memory, (s) =>
    probedAfter(s, checkId) ? s : { ...s, lastCheck: { id: checkId, request, endedAt: Date.now() } },
  );
}

const MAX_EVENTS = 60;

function eventOf(
  when: SentinelEvent['when'],
  check: string,
  next: string | undefined,
  j: { figures: ProbeFigures; verdict: SentinelVerdict },
  base: ProbeFigures,
): SentinelEvent {
  const v = j.verdict;
  return {
    when,
    check,
    ...(next ? { next } : {}),
    figures: j.figures,
    ratio: Math.max(v.ttftRatio, v.decodeRatio, v.e2eRatio),
    slowerMs: j.figures.e2eMs - base.e2eMs,
  };
}

function logEvent(memory: RunMemory, e: SentinelEvent): void {
  update(memory, (s) => ({ ...s, events: [...(s.events ?? []), e].slice(-MAX_EVENTS) }));
}

/**
 * Probe and judge: one probe; when it looks degraded, the median of SENTINEL.probes; when that is degraded too,
 * wait with backoff (2, 4, 8, 16 … s, bounded) re-probing until it recovers. Sets `degraded` when it does not.
 */
async function probeAndJudge(
  sc: SentinelContext,
  when: 'after' | 'before',
  after: string,
  next?: string,
): Promise<SentinelState> {
  return (await probeJudgeWait(sc, when, after, next)).state;
}

/** probeAndJudge, with the first degraded judgement (before any wait) and how long the sentinel waited. */
async function probeJudgeWait(
  sc: SentinelContext,
  when: 'after' | 'before',
  after: string,
  next?: string,
): Promise<{ state: SentinelState; first?: SentinelVerdict; waitedMs?: number }> {
  const s0 = readSentinel(sc.memory);
  const base = s0.baseline;
  if (!base || !s0.tokens || s0.degraded) return { state: s0 };
  const tokens = s0.tokens;
  const bound = probeBoundMs(base);
  // One probe; when its verdict is `confirm`, two more and the median of the three decide (a verdict that changes
  // what the run does rests on a median, never one sample).
  const judgeOf = async (confirm: boolean) => {
    const first = await probeMany(sc, 1, tokens, bound);
    if (!first.length) return undefined;
    let samples = first;
    if (judgeHealth(base, figuresOf(first, Date.now())).degraded === confirm)
      samples = [...first, ...(await probeMany(sc, SENTINEL.probes - 1, tokens, bound))];
    const figures = figuresOf(samples, Date.now());
    return { figures, verdict: judgeHealth(base, figures) };
  };
  let j = await judgeOf(true);
  if (!j) return { state: readSentinel(sc.memory) };
  logEvent(sc.memory, eventOf(when, after, next, j, base));
  if (!j.verdict.degraded) return { state: readSentinel(sc.memory) };
  const first = j;
  const waitBound = Math.max(
    0,
    Math.min(sc.waitBoundMs ?? SENTINEL.waitBoundMs, (sc.deadlineAt ?? Infinity) - Date.now() - 10_000),
  );
  const start = Date.now();
  sc.log?.(
    `health sentinel: the server is markedly slower than at the start after ${after} (${first.verdict.figures}); ` +
      `waiting up to ${Math.round(waitBound / 1000)} s for it to recover`,
  );
  for (let delay = 2_000; Date.now() - start < waitBound; delay *= 2) {
    await new Promise((r) => setTimeout(r, Math.min(delay, Math.max(0, waitBound - (Date.now() - start)))));
    const again = await judgeOf(false);
    if (!again) continue;
    logEvent(sc.memory, eventOf('wait', after, undefined, again, base));
    j = again;
    if (!j.verdict.degraded) break;
  }
  const waitedMs = Date.now() - start;
  if (!j.verdict.degraded) {
    sc.log?.(`health sentinel: recovered after ${fmt(waitedMs / 1000, 1)} s (${j.verdict.figures})`);
    const state = update(sc.memory, (s) => ({
      ...s,
      recovered: [...(s.recovered ?? []), { after, verdict: first.verdict.figures, waitedMs }],
    }));
    return { state, first: first.verdict, waitedMs };
  }
  const request = readSentinel(sc.memory).lastCheck?.request;
  sc.log?.(`health sentinel: degraded since ${after} (${j.verdict.figures}), still after ${fmt(waitedMs / 1000, 1)} s`);
  const state = update(sc.memory, (s) => ({
    ...s,
    degraded: { since: after, request, figures: j.figures, verdict: j.verdict, waitedMs },
  }));
  return { state, first: first.verdict, waitedMs };
}

/** What a check declares that the sentinel cares about. */
type SentinelCheck = Pick<CheckDef, 'id' | 'destructive' | 'disturbs' | 'timing'>;

/** Sends long, over-long, malformed or abandoned requests: probed after. */
export const disturbing = (c: SentinelCheck) => !!(c.destructive || c.disturbs);
/** Times the server: probed before, and not graded on a degraded server. */
export const timingCheck = (c: SentinelCheck, timingFamilies: readonly string[]) =>
  c.timing ?? timingFamilies.includes(c.id.split('.')[0]!);

/**
 * Before a timing check: the message of its inconclusive verdict when the server is degraded (the check is then not
 * run), else undefined. Probes first unless a probe already followed the last check.
 */
export async function sentinelBefore(sc: SentinelContext, check: SentinelCheck): Promise<string | undefined> {
  let s = readSentinel(sc.memory);
  if (!s.baseline || s.off) return undefined;
  const fresh = s.lastProbeAt !== undefined && s.lastProbeAt >= (s.lastCheck?.endedAt ?? 0);
  if (!s.degraded && !fresh) s = await probeAndJudge(sc, 'before', s.lastCheck?.id ?? 'the start of the run', check.id);
  if (!s.degraded) return undefined;
  update(sc.memory, (x) => ({ ...x, notGraded: [...new Set([...(x.notGraded ?? []), check.id])] }));
  return degradedText(s.degraded);
}

/**
 * Right after a timing check (lib/check/check.ts gates its verdict with it): its last request recorded, then one
 * probe against the start-of-run baseline (three when it looks degraded, then the wait for a recovery). Undefined when
 * the sentinel is off, or the run was already degraded before the check (it was then not run).
 */
export async function healthAfterTiming(
  sc: SentinelContext,
  check: SentinelCheck,
  lastRequest: string | undefined,
): Promise<HealthAfterCheck | undefined> {
  const s = readSentinel(sc.memory);
  if (!s.baseline || s.off || s.degraded) return undefined;
  noteCheckEnded(sc.memory, check.id, lastRequest);
  const r = await probeJudgeWait(sc, 'after', check.id);
  if (!r.first) return { degraded: false, figures: '', lasting: false, waitedMs: 0 };
  return { degraded: true, figures: r.first.figures, lasting: !!r.state.degraded, waitedMs: r.waitedMs ?? 0 };
}

/** A probe already followed this check's end (healthAfterTiming): no second one. */
function probedAfter(s: SentinelState, checkId: string): boolean {
  return s.lastCheck?.id === checkId && s.lastProbeAt !== undefined && s.lastProbeAt >= s.lastCheck.endedAt;
}

/** After a disturbing check: probe, wait for a recovery within the bound, or mark the run degraded since it. */
export async function sentinelAfter(sc: SentinelContext, check: SentinelCheck): Promise<string | undefined> {
  const s = readSentinel(sc.memory);
  if (!s.baseline || s.off || s.degraded || probedAfter(s, check.id)) return undefined;
  const after = await probeAndJudge(sc, 'after', check.id);
  return after.degraded
    ? `(health sentinel: the server is degraded since this check — ${after.degraded.verdict.figures}; health.sentinel reports it)`
    : undefined;
}

function degradedText(d: NonNullable<SentinelState['degraded']>): string {
  return (
    `not graded: the server is degraded since ${d.since} (health.sentinel): ${d.verdict.figures} against the start of the run, ` +
    `still after waiting ${fmt(d.waitedMs / 1000, 1)} s; a timing verdict on a degraded server would grade its sickness, not this check`
  );
}
