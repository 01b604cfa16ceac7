// Family `metrics`: are the figures a benchmark would compute from this server's streams real?
//
// One shared sample (3 sequential single streams, forced to a fixed length, usage requested) feeds every check of
// the family, memoized per run. The phantom rules live in lib/phantom.ts so reporters flag other checks' figures
// with exactly the same code.
import type { CheckContext, CheckDef } from '../lib/check.ts';
import type { Evidence } from '../lib/types.ts';
import { chat, generationBody, uniquePrompt, describeExchange, type Exchange } from '../lib/api.ts';
import { fail, fmt, inconclusive, pass, skip, warn } from '../lib/messages.ts';
import { borderline } from '../lib/messages.ts';
import { escapeBytes } from '../lib/sse.ts';
import { bodyText } from '../lib/client.ts';
import { median, min, max } from '../lib/stats.ts';
import type { ServerTimings } from '../lib/stream-events.ts';
import {
  PHANTOM_THRESHOLDS, PHYSICAL_THRESHOLDS, assessPhysical, assessStream, describeCauses, genTpsAtLeast, maxPlausibleTps, physicalBoundTps,
  type PhantomAssessment, type PhantomThresholds,
} from '../lib/phantom.ts';
import { workloadFigures } from '../lib/workload.ts';
import { passProof, faultProof, type Proof } from './support/proof.ts';

/** Streams in the shared sample and tokens per stream: ~0.4 s each on the reference server (8 ms per token). */
const STREAMS = 3;
const MAX_TOKENS = 48;
const EVIDENCE_CAP = 512;

interface Sample {
  streams: Exchange[];
  maxTokens: number;
  /** How late our client's timestamps may have been while the sample was recorded (ms; ctx.clientLag()). */
  clientStallMs: number;
}

const samples = new Map<string, Promise<Sample>>();

/** The family's shared sample: recorded once per run (per runId), read by every check. */
function sample(ctx: CheckContext): Promise<Sample> {
  let s = samples.get(ctx.runId);
  if (!s) {
    s = record(ctx);
    samples.set(ctx.runId, s);
    // A failed recording (our side) must not poison the later checks of the run.
    s.catch(() => samples.delete(ctx.runId));
  }
  return s;
}

async function record(ctx: CheckContext): Promise<Sample> {
  ctx.log(`recording ${STREAMS} single streams of ${MAX_TOKENS} tokens (about ${fmt(STREAMS * MAX_TOKENS * 0.01, 1)} s at 100 tok/s)`);
  const streams: Exchange[] = [];
  for (let i = 0; i < STREAMS; i++) {
    const body = generationBody(ctx, 'openai-chat', {
      prompt: uniquePrompt(ctx, 'Count from one to one hundred in words, one number per line.'),
      maxTokens: MAX_TOKENS,
      stream: true,
      exactLength: true,
      extra: { stream_options: { include_usage: true } },
    });
    streams.push(await chat(ctx, body));
  }
  return { streams, maxTokens: MAX_TOKENS, clientStallMs: ctx.clientLag().ms };
}

function ok(x: Exchange): boolean {
  return x.rec.status === 200 && !x.rec.failure && x.events !== undefined && x.metrics !== undefined;
}

function cap(xs: readonly number[]): number[] {
  return xs.slice(0, EVIDENCE_CAP).map((t) => Math.round(t * 1000) / 1000);
}

/** Per-request timestamps and a wire excerpt: what reports show behind the verdict (and recompute flags from). */
function evidence(s: Sample): Evidence[] {
  return s.streams.map((x, i) => ({
    label: `stream ${i + 1}`,
    status: x.rec.status,
    readTimes: cap(x.rec.reads.map((r) => r.t)),
    tokenTimes: cap((x.events?.tokens ?? []).map((t) => t.t)),
    ttftMs: x.metrics?.ttftMs,
    e2eMs: x.rec.tEnd,
    wire: escapeBytes(bodyText(x.rec), 600),
  }));
}

function phantomThresholds(ctx: CheckContext): PhantomThresholds {
  return Object.fromEntries(Object.keys(PHANTOM_THRESHOLDS).map((k) => [k, ctx.threshold(k)])) as PhantomThresholds;
}

function assess(ctx: CheckContext, s: Sample, x: Exchange): PhantomAssessment {
  return assessStream(
    {
      tokenTimes: (x.events?.tokens ?? []).map((t) => t.t),
      readTimes: x.rec.reads.map((r) => r.t),
      e2eMs: x.rec.tEnd,
      completionTokens: x.metrics?.completionTokens,
      clientStallMs: s.clientStallMs,
      maxPlausibleTps: maxPlausibleTps(ctx.profile.hardware, { margin: PHYSICAL_THRESHOLDS.margin.value, speculativeFactor: PHYSICAL_THRESHOLDS.speculativeFactor.value }),
    },
    phantomThresholds(ctx),
  );
}

/** Streams that could not be recorded make every check of the family inconclusive (other families grade them). */
function unusable(s: Sample): string | undefined {
  const bad = s.streams.filter((x) => !ok(x));
  if (bad.length === 0) return undefined;
  return `${bad.length} of ${s.streams.length} streams could not be recorded (${bad.map(describeExchange).join('; ')}); the stream and sse families grade that`;
}

/** The naive per-stream rate, or what a zero-length window still proves about it. */
function streamRate(x: Exchange): { tps?: number; atLeast: boolean } {
  const m = x.metrics;
  if (m?.genTps !== undefined) return { tps: m.genTps, atLeast: false };
  const tokens = x.events?.tokens ?? [];
  const window = tokens.length ? tokens[tokens.length - 1].t - tokens[0].t : undefined;
  const lb = genTpsAtLeast(m?.completionTokens, window);
  return { tps: lb, atLeast: lb !== undefined };
}

// ------------------------------------------------------------------------------------------------------------
// Server-reported timings, per source (units differ: llama.cpp / vLLM ms, oMLX s, Ollama ns).

export interface ServerDecode {
  /** Decode rate the server reports (tok/s) and the field it came from. */
  tps?: number;
  tpsField?: string;
  /** Time before the first token the server reports (prefill or TTFT, ms): never more than the client saw. */
  preMs?: number;
  preField?: string;
}

function n(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export function serverDecode(st: ServerTimings, completionTokens: number | undefined): ServerDecode {
  const v = st.value;
  const out: ServerDecode = {};
  switch (st.source) {
    case 'timings': {
      const pps = n(v.predicted_per_second);
      const pn = n(v.predicted_n);
      const pms = n(v.predicted_ms);
      if (pps !== undefined && pps > 0) { out.tps = pps; out.tpsField = 'timings.predicted_per_second'; }
      else if (pn !== undefined && pms !== undefined && pms > 0) { out.tps = (pn / pms) * 1000; out.tpsField = 'timings.predicted_n / predicted_ms'; }
      const prompt = n(v.prompt_ms);
      if (prompt !== undefined) { out.preMs = prompt; out.preField = 'timings.prompt_ms'; }
      break;
    }
    case 'metrics': {
      const tps = n(v.tokens_per_second);
      const gen = n(v.generation_time_ms);
      if (tps !== undefined && tps > 0) { out.tps = tps; out.tpsField = 'metrics.tokens_per_second'; }
      else if (gen !== undefined && gen > 0 && completionTokens !== undefined) { out.tps = (completionTokens / gen) * 1000; out.tpsField = 'usage.completion_tokens / metrics.generation_time_ms'; }
      const ttft = n(v.time_to_first_token_ms);
      if (ttft !== undefined) { out.preMs = ttft; out.preField = 'metrics.time_to_first_token_ms'; }
      break;
    }
    case 'usage': {
      const tps = n(v.generation_tokens_per_second);
      const dur = n(v.generation_duration);
      if (tps !== undefined && tps > 0) { out.tps = tps; out.tpsField = 'usage.generation_tokens_per_second'; }
      else if (dur !== undefined && dur > 0 && completionTokens !== undefined) { out.tps = completionTokens / dur; out.tpsField = 'usage.completion_tokens / usage.generation_duration'; }
      const ttft = n(v.time_to_first_token);
      if (ttft !== undefined) { out.preMs = ttft * 1000; out.preField = 'usage.time_to_first_token (s)'; }
      break;
    }
    case 'ollama': {
      const c = n(v.eval_count);
      const d = n(v.eval_duration);
      if (c !== undefined && d !== undefined && d > 0) { out.tps = (c / d) * 1e9; out.tpsField = 'eval_count / eval_duration (ns)'; }
      const p = n(v.prompt_eval_duration);
      if (p !== undefined) { out.preMs = p / 1e6; out.preField = 'prompt_eval_duration (ns)'; }
      break;
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------------------

const REFERENCE_PHANTOM = 'design.md "Measuring" (gen_tps); seed 000: vllm-mlx streamed the role chunk at once and every content token in one write at the end, so naive clients computed 14000 tok/s (vllm-mlx #187, #200)';

export const checks: CheckDef[] = [
  {
    id: 'metrics.gen-tps-plausible',
    title: 'tokens reach the client as they are generated (no phantom gen_tps from a flush)',
    level: 'MUST',
    rationale: 'A stream flushed at the end makes every benchmark report an impossible decode rate and a TTFT that is really the whole response time.',
    reference: REFERENCE_PHANTOM,
    requires: ['openai-chat'],
    thresholds: PHANTOM_THRESHOLDS,
    timeoutMs: 30_000,
    async run(ctx) {
      const s = await sample(ctx);
      const bad = unusable(s);
      if (bad) return inconclusive(bad, undefined, evidence(s));
      const results = s.streams.map((x) => assess(ctx, s, x));
      const flagged = results.filter((a) => a.phantom);
      const judged = results.filter((a) => !a.tooShort);
      const metrics = {
        workload: workloadFigures(`1 stream, ${s.maxTokens} tokens`, s.streams.map((x) => x.metrics!), { concurrency: 1 }),
        streams: results.map((a) => ({ phantom: a.phantom, causes: a.causes.map((c) => c.kind), ...a.figures })),
        clientStallMs: s.clientStallMs,
      };
      const lines = results.map((a, i) => `stream ${i + 1}: ${a.phantom ? `PHANTOM: ${describeCauses(a)}` : a.inconclusive ? `inconclusive: ${a.inconclusive}` : a.tooShort ? `too few token events (${a.figures.tokenEvents})` : `streamed (${a.figures.tokenEvents} token events over ${fmt(a.figures.tokenWindowMs, 1)} ms, at most ${a.figures.maxEventsInOneRead} in one read)`}`);
      if (judged.length === 0) {
        return inconclusive(`every stream had fewer than ${ctx.threshold('minTokenEvents')} token events; cannot judge delivery`, metrics, evidence(s));
      }
      if (flagged.length * 2 > judged.length) {
        const a = flagged[0];
        return fail({
          requirement: 'Each token MUST reach the client when it is generated: a stream whose tokens arrive in a window far shorter than the request took yields a phantom gen_tps.',
          expected: `token events spread over the decode time: under ${Math.round(ctx.threshold('oneReadShare') * 100)} % of them in one read and under ${Math.round(ctx.threshold('burstShare') * 100)} % of gaps below ${ctx.threshold('burstGapMs')} ms (at least ${ctx.threshold('minTokenEvents')} events judged)`,
          actual: `${flagged.length} of ${judged.length} streams phantom: ${describeCauses(a)}; naive gen_tps ${a.figures.genTps !== undefined ? `${fmt(a.figures.genTps, 0)} tok/s` : `undefined (zero-length window), at least ${fmt(a.figures.genTpsAtLeast, 0)} tok/s`} against wall_tps ${fmt(s.streams[results.indexOf(a)].metrics?.wallTps, 1)} tok/s`,
          violations: lines,
        }, metrics, evidence(s));
      }
      if (flagged.length > 0) {
        return borderline(`${flagged.length} of ${judged.length} streams delivered in a burst (not enough to fail): ${lines.join('; ')}`, metrics, evidence(s));
      }
      const undecided = results.filter((a) => a.inconclusive);
      if (undecided.length * 2 >= judged.length) {
        return inconclusive(`our client stalled: ${lines.join('; ')}`, metrics, evidence(s));
      }
      return pass(`tokens streamed as generated: ${lines.join('; ')}`, metrics, evidence(s));
    },
  },
  {
    id: 'metrics.gen-tps-physical',
    title: 'single-stream decode rate is below the memory-bandwidth bound',
    level: 'SHOULD',
    rationale: 'Decode is memory-bound: one stream cannot beat bandwidth / active bytes per token, so a figure above it is a measurement artefact or a wrong profile.',
    reference: 'seed 004 (memory-bandwidth argument: single-stream tok/s <= bandwidth / bytes read per token; 400 GB/s over ~1.7 GB for a 35B-A3B MoE at 4 bit caps it near 235 tok/s)',
    requires: ['openai-chat', 'hardware'],
    thresholds: PHYSICAL_THRESHOLDS,
    timeoutMs: 30_000,
    async run(ctx) {
      const s = await sample(ctx);
      const bad = unusable(s);
      if (bad) return inconclusive(bad, undefined, evidence(s));
      const hw = ctx.profile.hardware!;
      const rates = s.streams.map(streamRate);
      const tps = rates.map((r) => r.tps);
      const lo = min(tps);
      const mid = median(tps);
      const opts = { margin: ctx.threshold('margin'), speculativeFactor: ctx.threshold('speculativeFactor') };
      const atMin = assessPhysical(lo, hw, opts);
      const atMid = assessPhysical(mid, hw, opts);
      const metrics = {
        gen_tps: tps,
        gen_tps_is_lower_bound: rates.map((r) => r.atLeast),
        gen_tps_p50: mid,
        gen_tps_min: lo,
        gen_tps_max: max(tps),
        bound_tps: physicalBoundTps(hw),
        limit_tps: atMid?.limitTps,
        hardware: hw,
      };
      if (!atMin || !atMid) return inconclusive(`no gen_tps could be computed (${s.streams.map((x) => x.metrics?.reasons.join(', ')).join('; ')})`, metrics, evidence(s));
      const shown = rates.map((r) => (r.tps === undefined ? 'n/a' : `${r.atLeast ? 'at least ' : ''}${fmt(r.tps, 0)}`)).join(', ');
      if (atMin.above) {
        return fail({
          requirement: 'A single stream SHOULD NOT decode faster than memory bandwidth / active bytes read per token (with a margin): such a figure is phantom or the profile\'s hardware is wrong.',
          expected: `gen_tps at most ${fmt(atMin.limitTps, 0)} tok/s`,
          actual: `every stream above it: gen_tps ${shown} tok/s; slowest: ${atMin.detail}`,
          violations: hw.speculativeDecoding ? [] : ['if the server uses speculative decoding, set "hardware.speculativeDecoding": true in the profile'],
        }, metrics, evidence(s));
      }
      if (atMid.above) {
        return borderline(`borderline: median gen_tps ${atMid.detail}, but the slowest stream is within it (gen_tps ${shown} tok/s)`, metrics, evidence(s));
      }
      return pass(`median ${atMid.detail}; per stream ${shown} tok/s`, metrics, evidence(s));
    },
  },
  {
    id: 'metrics.usage-matches-stream',
    title: 'usage.completion_tokens agrees with max_tokens, finish_reason and the streamed events',
    level: 'MUST',
    rationale: 'Throughput, billing and context accounting all divide by completion_tokens; an inflated count inflates every rate a client computes.',
    reference: 'OpenAI API reference, Chat Completions: usage.completion_tokens ("number of tokens in the generated completion"), max_tokens, finish_reason "length"; stream_options.include_usage',
    requires: ['openai-chat'],
    timeoutMs: 30_000,
    async run(ctx) {
      const s = await sample(ctx);
      const bad = unusable(s);
      if (bad) return inconclusive(bad, undefined, evidence(s));
      const violations: string[] = [];
      const rows = s.streams.map((x, i) => {
        const usage = x.events!.usage?.completion_tokens;
        const finish = x.events!.finishReasons.at(-1)?.value;
        const counted = x.events!.tokens.length;
        if (usage !== undefined) {
          if (usage > s.maxTokens) violations.push(`stream ${i + 1}: usage.completion_tokens ${usage} exceeds max_tokens ${s.maxTokens}`);
          if (finish === 'length' && usage !== s.maxTokens) violations.push(`stream ${i + 1}: finish_reason "length" but usage.completion_tokens ${usage} is not max_tokens ${s.maxTokens}`);
          if (usage < counted) violations.push(`stream ${i + 1}: usage.completion_tokens ${usage} is fewer than the ${counted} token-bearing events streamed`);
        }
        return { usage, finish, counted };
      });
      const metrics = { max_tokens: s.maxTokens, streams: rows };
      const withUsage = rows.filter((r) => r.usage !== undefined).length;
      if (withUsage === 0) {
        return skip('the server sent no usage in any stream although stream_options.include_usage was set (the sse family grades that); nothing to compare');
      }
      if (violations.length) {
        return fail({
          requirement: 'usage.completion_tokens MUST count the tokens generated: at most max_tokens, exactly max_tokens when finish_reason is "length", and not fewer than the token-bearing events streamed (events may carry several tokens, so it may be more).',
          expected: `completion_tokens <= ${s.maxTokens}; = ${s.maxTokens} when finish_reason is "length"; >= events counted`,
          actual: rows.map((r, i) => `stream ${i + 1}: completion_tokens ${r.usage ?? 'none'}, finish_reason ${r.finish ?? 'none'}, ${r.counted} token events`).join('; '),
          violations,
        }, metrics, evidence(s));
      }
      return pass(`${withUsage} of ${rows.length} streams: ${rows.map((r) => `${r.usage ?? 'no usage'} tokens (${r.finish ?? 'no finish_reason'}, ${r.counted} events)`).join('; ')}`, metrics, evidence(s));
    },
  },
  {
    id: 'metrics.server-timings-agree',
    title: "the server's own timing figures agree with what the client measured",
    level: 'SHOULD',
    rationale: 'Dashboards and benchmark tables quote the server\'s self-reported tok/s; a figure the client cannot reproduce misleads everyone who reads it.',
    reference: 'llama.cpp server README: `timings` {prompt_ms, predicted_n, predicted_ms, predicted_per_second} in the final chunk; vLLM --enable-per-request-metrics `metrics`; oMLX timing keys in usage; Ollama eval_count / eval_duration (ns)',
    requires: ['openai-chat'],
    thresholds: {
      tolerance: {
        value: 0.35,
        why: 'the server times n tokens from prefill end, the client n-1 gaps between events on a noisy 2-core machine: a few % apart on honest servers; a wrong unit or a lie is off by 2x or more',
      },
    },
    timeoutMs: 30_000,
    async run(ctx) {
      const s = await sample(ctx);
      const bad = unusable(s);
      if (bad) return inconclusive(bad, undefined, evidence(s));
      const tol = ctx.threshold('tolerance');
      const rows = s.streams.map((x) => {
        const st = x.events!.serverTimings;
        const d = st ? serverDecode(st, x.events!.usage?.completion_tokens) : undefined;
        const client = x.metrics!.genTps;
        return { source: st?.source, ...d, clientTps: client, clientTtftMs: x.metrics!.ttftMs, ratio: d?.tps !== undefined && client !== undefined ? d.tps / client : undefined };
      });
      const metrics = { tolerance: tol, streams: rows, ratio_p50: median(rows.map((r) => r.ratio)) };
      if (rows.every((r) => r.source === undefined)) {
        return skip('the server reports no timing figures of its own (llama.cpp `timings`, vLLM `metrics`, oMLX timing keys in usage); nothing to compare');
      }
      if (rows.every((r) => r.tps === undefined)) {
        return skip(`the server reports timings (${rows.find((r) => r.source)?.source}) but no decode rate this check knows how to read`);
      }
      const measured = rows.filter((r) => r.ratio !== undefined);
      if (measured.length === 0) return inconclusive('no client gen_tps to compare with (zero-length token windows: see metrics.gen-tps-plausible)', metrics, evidence(s));
      const outside = (r: number) => r > 1 + tol || r < 1 / (1 + tol);
      const violations: string[] = [];
      rows.forEach((r, i) => {
        if (r.ratio !== undefined && outside(r.ratio)) {
          violations.push(`stream ${i + 1}: ${r.tpsField} ${fmt(r.tps, 1)} tok/s vs client gen_tps ${fmt(r.clientTps, 1)} tok/s (x${fmt(r.ratio, 2)})`);
        }
        if (r.preMs !== undefined && r.clientTtftMs !== undefined && r.preMs > r.clientTtftMs * (1 + tol) + 20) {
          violations.push(`stream ${i + 1}: ${r.preField} ${fmt(r.preMs, 1)} ms exceeds the TTFT the client saw (${fmt(r.clientTtftMs, 1)} ms)`);
        }
      });
      const rateOff = measured.filter((r) => outside(r.ratio!)).length;
      const shown = measured.map((r) => `${fmt(r.tps, 1)} vs ${fmt(r.clientTps, 1)} tok/s`).join(', ');
      if (rateOff === measured.length || violations.some((v) => v.includes('exceeds the TTFT'))) {
        const r = measured[0];
        return fail({
          requirement: `The server's self-reported timing figures SHOULD agree with the client's measurement within ${Math.round(tol * 100)} %.`,
          expected: `${r.tpsField} within x${fmt(1 / (1 + tol), 2)}..x${fmt(1 + tol, 2)} of the client's gen_tps; reported prefill/TTFT not above the client's TTFT`,
          actual: `server vs client per stream: ${shown}`,
          violations,
        }, metrics, evidence(s));
      }
      if (rateOff > 0) return inconclusive(`${rateOff} of ${measured.length} streams disagree beyond ${Math.round(tol * 100)} % (${violations.join('; ')})`, metrics, evidence(s));
      return pass(`server-reported decode rate agrees: ${shown} (${rows[0].tpsField})`, metrics, evidence(s));
    },
  },
];

export const proofs: Proof[] = [
  passProof('metrics.gen-tps-plausible', { messageIncludes: ['tokens streamed as generated'] }),
  faultProof('metrics.gen-tps-plausible', 'stream-role-now-content-at-end', ['role chunk', 'one read', 'PHANTOM']),
  faultProof('metrics.gen-tps-plausible', 'stream-burst-at-end', ['whole response', 'one read']),
  passProof('metrics.gen-tps-physical', { messageIncludes: ['is within the physical bound'] }),
  // A server that flushes the stream produces a rate no memory system can: the bound catches it too.
  faultProof('metrics.gen-tps-physical', 'stream-burst-at-end', ['every stream above it', 'physical bound', 'at least'], { expect: 'warn' }),
  // The reference server cannot decode faster than its timing model: declare hardware far too slow for it instead.
  passProof('metrics.gen-tps-physical', {
    expect: 'warn',
    raw: 'fail',
    profile: { hardware: { memoryBandwidthGBs: 0.03, activeBytesPerTokenGB: 0.001 } },
    messageIncludes: ['every stream above it', 'physical bound', '30 tok/s'],
    note: 'declared bound 30 tok/s (x1.5 = 45) against ~125 tok/s measured',
  }),
  passProof('metrics.gen-tps-physical', {
    profile: { hardware: { memoryBandwidthGBs: 0.03, activeBytesPerTokenGB: 0.001, speculativeDecoding: true } },
    messageIncludes: ['within the physical bound', 'x4 for declared speculative decoding'],
    note: 'speculative decoding lifts the bound x4: 30 x 1.5 x 4 = 180 tok/s',
  }),
  passProof('metrics.usage-matches-stream', { messageIncludes: ['3 of 3 streams: 48 tokens (length, 48 events)'] }),
  faultProof('metrics.usage-matches-stream', 'metrics-inflate-usage', ['usage.completion_tokens 101 exceeds max_tokens 48']),
  passProof('metrics.server-timings-agree', { messageIncludes: ['server-reported decode rate agrees', 'timings.predicted_per_second'] }),
  faultProof('metrics.server-timings-agree', 'metrics-timings-lie', ['timings.predicted_per_second'], { expect: 'warn' }),
];
