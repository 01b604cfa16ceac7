// Family `metrics`: are the figures a benchmark would compute from this server's streams real?
//
// One shared sample (3 sequential single streams sized from the measured speed, forced to their length, usage
// requested) feeds every check of the family (lib/http/recordings.ts). The phantom rules live in lib/grading/phantom.ts so reporters flag other checks' figures
// with exactly the same code.

import { serverDecode } from '../lib/decode/server-timings.ts';
import { escapeBytes } from '../lib/decode/stream-decoder.ts';
import {
  chat,
  describeExchange,
  type Exchange,
  generationBody,
  measurePace,
  uniquePrompt,
} from '../lib/exchange/exchange.ts';
import { incompleteVerdict, type SharedRecording, shared } from '../lib/exchange/recordings.ts';
import {
  assessPhysical,
  assessStream,
  describeCauses,
  genTpsAtLeast,
  maxPlausibleTps,
  PHANTOM_THRESHOLDS,
  PHYSICAL_THRESHOLDS,
  type PhantomAssessment,
  type PhantomThresholds,
  physicalBoundTps,
} from '../lib/grading/phantom.ts';
import { bodyText } from '../lib/http/recorder.ts';
import { clientAllowanceMs } from '../lib/measure/client-lag.ts';
import { expectedMs, type Pace, sizedFrom, tokensAt } from '../lib/measure/pace.ts';
import { max, median, min } from '../lib/measure/stats.ts';
import { workloadFigures } from '../lib/measure/workload.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Evidence, Verdict } from '../lib/model/types.ts';
import { borderline, fail, fmt, inconclusive, pass, skip } from '../lib/model/verdict.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';
import { blockedIfUnserved } from './support/root-causes.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'metrics',
  order: 100,
  timing: true,
  what: 'phantom gen_tps (bursts, physical bound), usage vs stream, server-reported timings vs measured',
};

/**
 * The shared sample: a long stream, a short one, a long one, each forced to its length, usage requested. Lengths are
 * sized from the measured speed (lib/measure/pace.ts): a long stream decodes for about `decodeMs`, so a flush is far longer
 * to generate than any stall of our client, at 3 tok/s as at 5000. The short one gives the generation rate end to
 * end: (long − short tokens) / (long − short e2e) is what the server really produced per second, prefill and delivery
 * aside — the cadence bursts are judged against when the server reports no rate of its own.
 */
const STREAMS = 3;
const EVIDENCE_CAP = 512;

/** Sizing of the sample (not thresholds of any one check: the four checks share it). */
const SAMPLE = {
  minTokens: 24,
  maxTokens: 2048,
  decodeMs: 1_000,
  /** Share of the first check's bound the recording may spend. */
  budgetShare: 0.6,
};

interface Sample {
  streams: Exchange[];
  /** max_tokens of each stream. */
  sizes: number[];
  /** Generation rate measured end to end from the long and short streams (tok/s), when the difference is clear. */
  e2eTps?: number;
  /** How the lengths were chosen (said in messages). */
  sizing: string;
}

function sample(ctx: CheckContext): Promise<SharedRecording<Sample>> {
  return shared(
    ctx,
    'metrics',
    () => record(ctx),
    (s) => s.streams.map((x) => x.rec),
  );
}

function lengths(ctx: CheckContext, pace: Pace | undefined): { long: number; short: number } {
  const window = ctx.server.contextWindow?.value;
  const max = Math.max(SAMPLE.minTokens, Math.min(SAMPLE.maxTokens, window !== undefined ? window - 256 : Infinity));
  const long = pace
    ? tokensAt(pace, {
        targetMs: Math.max(SAMPLE.decodeMs, 10 * (pace.ttftMs ?? 0)),
        min: SAMPLE.minTokens,
        max,
        wallCapMs: (SAMPLE.budgetShare * METRICS_TIMEOUT_MS) / 2.25,
      })
    : 48;
  return { long, short: Math.max(PHANTOM_THRESHOLDS.minTokenEvents.value + 4, Math.round(long / 4)) };
}

async function record(ctx: CheckContext): Promise<Sample> {
  const pace = await measurePace(ctx);
  const { long, short } = lengths(ctx, pace);
  const sizes = [long, short, long];
  const sizing = `${sizedFrom(pace)}: streams of ${long}, ${short} and ${long} tokens`;
  const budget = SAMPLE.budgetShare * (ctx.check.timeoutMs ?? 60_000);
  if (pace && expectedMs(pace, long, 2) + expectedMs(pace, short) > budget) {
    ctx.log(
      `the sample (${sizing}) may not fit ${Math.round(budget / 1000)} s at this speed; recording it anyway (its bound is ours)`,
    );
  }
  ctx.log(`recording ${sizing}`);
  const streams: Exchange[] = [];
  for (const n of sizes) {
    if (ctx.signal.aborted) break;
    const body = generationBody(ctx, 'openai-chat', {
      prompt: uniquePrompt(ctx, 'Count from one to one hundred in words, one number per line.'),
      maxTokens: n,
      stream: true,
      exactLength: true,
      extra: { stream_options: { include_usage: true } },
    });
    streams.push(await chat(ctx, body));
  }
  return { streams, sizes: sizes.slice(0, streams.length), e2eTps: endToEndTps(streams), sizing };
}

/**
 * Tokens per second the server generated, from e2e against length: the median of the pairwise slopes between streams
 * of different lengths (prefill and delivery cancel out). Undefined when no pair differs clearly.
 */
function endToEndTps(streams: readonly Exchange[]): number | undefined {
  const pts = streams
    .filter((x) => x.rec.status === 200 && !x.rec.failure && x.metrics?.completionTokens !== undefined)
    .map((x) => ({ n: x.metrics!.completionTokens!, e2e: x.rec.tEnd }));
  const rates: number[] = [];
  for (let i = 0; i < pts.length; i++) {
    for (let j = 0; j < pts.length; j++) {
      const dn = pts[j]!.n - pts[i]!.n;
      const dt = pts[j]!.e2e - pts[i]!.e2e;
      if (dn >= 8 && dt > 0) rates.push((dn / dt) * 1000);
    }
  }
  return median(rates);
}

function ok(x: Exchange): boolean {
  return x.rec.status === 200 && !x.rec.failure && x.events !== undefined && x.metrics !== undefined;
}

function cap(xs: readonly number[]): number[] {
  return xs.slice(0, EVIDENCE_CAP).map((t) => Math.round(t * 1000) / 1000);
}

/** The rate a stream's delivery is judged against: the fastest of what the server reports and what we measured. */
function reference(ctx: CheckContext, s: Sample, x: Exchange): { tps?: number; source?: string } {
  const st = x.events?.serverTimings;
  const reported = st ? serverDecode(st, x.events?.usage?.completion_tokens) : undefined;
  const cands: Array<{ tps: number; source: string }> = [];
  if (reported?.tps !== undefined) cands.push({ tps: reported.tps, source: `server-reported ${reported.tpsField}` });
  if (s.e2eTps !== undefined) cands.push({ tps: s.e2eTps, source: 'measured end to end (long against short streams)' });
  const best = cands.sort((a, b) => b.tps - a.tps)[0];
  if (best) return best;
  const bound = maxPlausibleTps(ctx.profile.hardware, {
    margin: PHYSICAL_THRESHOLDS.margin.value,
    speculativeFactor: PHYSICAL_THRESHOLDS.speculativeFactor.value,
  });
  return bound !== undefined ? { tps: bound, source: 'the declared physical bound' } : {};
}

/** Per-request timestamps and a wire excerpt: what reports show behind the verdict (and recompute flags from). */
function evidence(ctx: CheckContext, s: Sample): Evidence[] {
  return s.streams.map((x, i) => {
    const ref = reference(ctx, s, x);
    return {
      label: `stream ${i + 1} (${s.sizes[i]} tokens)`,
      status: x.rec.status,
      readTimes: cap(x.rec.reads.map((r) => r.t)),
      tokenTimes: cap((x.events?.tokens ?? []).map((t) => t.t)),
      ttftMs: x.metrics?.ttftMs,
      e2eMs: x.rec.tEnd,
      completionTokens: x.metrics?.completionTokens,
      ...(ref.tps !== undefined ? { referenceTps: ref.tps, referenceSource: ref.source } : {}),
      wire: escapeBytes(bodyText(x.rec), 600),
    };
  });
}

function phantomThresholds(ctx: CheckContext): PhantomThresholds {
  return Object.fromEntries(Object.keys(PHANTOM_THRESHOLDS).map((k) => [k, ctx.threshold(k)])) as PhantomThresholds;
}

function assess(ctx: CheckContext, s: Sample, x: Exchange, stallMs: number): PhantomAssessment {
  const ref = reference(ctx, s, x);
  return assessStream(
    {
      tokenTimes: (x.events?.tokens ?? []).map((t) => t.t),
      readTimes: x.rec.reads.map((r) => r.t),
      e2eMs: x.rec.tEnd,
      completionTokens: x.metrics?.completionTokens,
      clientStallMs: stallMs,
      referenceTps: ref.tps,
      referenceSource: ref.source,
    },
    phantomThresholds(ctx),
  );
}

/** Streams that could not be recorded make every check of the family inconclusive (other families grade them). */
function unusable(s: Sample): string | undefined {
  const bad = s.streams.filter((x) => !ok(x));
  if (bad.length === 0 && s.streams.length === STREAMS) return undefined;
  return `${bad.length} of ${s.streams.length} streams could not be recorded (${bad.map(describeExchange).join('; ')}); the stream and sse families grade that`;
}

/** The shared sample, or the verdict every check of the family gives when there is none to judge. */
async function judgeable(ctx: CheckContext): Promise<{ s: Sample; stallMs: number } | { verdict: Verdict }> {
  const r = await sample(ctx);
  if (r.incomplete) return { verdict: incompleteVerdict(r, 'the metrics sample was recorded') };
  const bad = unusable(r.value);
  if (bad)
    return {
      verdict: blockedIfUnserved(
        inconclusive(bad, undefined, evidence(ctx, r.value)),
        r.value.streams.filter((x) => !ok(x)).map((x) => x.rec),
      ),
    };
  // Our lateness while the sample was recorded (sampled at 1 ms: lib/measure/client-lag.ts), with the run's preflight lag.
  return { s: r.value, stallMs: ctx.clientLag({ p99Ms: r.lag.p99Ms, maxMs: clientAllowanceMs(r.lag) }).ms };
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

/** Bound of each metrics check: the first one pays for the shared sample (3 × 24 tokens at 3 tok/s is ~25 s). */
const METRICS_TIMEOUT_MS = 90_000;

const REFERENCE_PHANTOM =
  'docs/grading.md "Measuring" (gen_tps); seed 000: vllm-mlx streamed the role chunk at once and every content token in one write at the end, so naive clients computed 14000 tok/s (vllm-mlx #187, #200)';

export const checks: CheckDef[] = [
  {
    id: 'metrics.gen-tps-plausible',
    title: 'tokens reach the client as they are generated (no phantom gen_tps from a flush)',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    provides: ['wall_tps_p50', 'ttft_p50', 'gen_tps_p50', 'gen_tps_phantom'],
    rationale:
      'A stream flushed at the end makes every benchmark report an impossible decode rate and a TTFT that is really the whole response time.',
    reference: REFERENCE_PHANTOM,
    requires: ['openai-chat'],
    thresholds: PHANTOM_THRESHOLDS,
    timeoutMs: METRICS_TIMEOUT_MS,
    async run(ctx) {
      const j = await judgeable(ctx);
      if ('verdict' in j) return j.verdict;
      const { s, stallMs } = j;
      const results = s.streams.map((x) => assess(ctx, s, x, stallMs));
      const flagged = results.filter((a) => a.phantom);
      const judged = results.filter((a) => !a.tooShort);
      const metrics = {
        workload: workloadFigures(
          `1 stream, ${s.sizes.join('/')} tokens`,
          s.streams.map((x) => x.metrics!),
          { concurrency: 1 },
        ),
        sizes: s.sizes,
        sizing: s.sizing,
        e2eTps: s.e2eTps,
        streams: results.map((a) => ({ phantom: a.phantom, causes: a.causes.map((c) => c.kind), ...a.figures })),
        clientStallMs: stallMs,
      };
      const lines = results.map(
        (a, i) =>
          `stream ${i + 1} (${s.sizes[i]} tokens): ${a.phantom ? `PHANTOM: ${describeCauses(a)}` : a.inconclusive ? `inconclusive: ${a.inconclusive}` : a.tooShort ? `too few token events (${a.figures.tokenEvents})` : `streamed (${a.figures.tokenEvents} token events over ${fmt(a.figures.tokenWindowMs, 1)} ms, at most ${a.figures.maxEventsInOneRead} in one read)`}`,
      );
      if (judged.length === 0) {
        return inconclusive(
          `every stream had fewer than ${ctx.threshold('minTokenEvents')} token events; cannot judge delivery`,
          metrics,
          evidence(ctx, s),
        );
      }
      if (flagged.length * 2 > judged.length) {
        const a = flagged[0];
        return fail(
          {
            requirement:
              'Each token MUST reach the client when it is generated: a stream whose tokens arrive in a window far shorter than the request took yields a phantom gen_tps.',
            expected: `tokens delivered at about the rate they are generated (${fmt(a.figures.referenceTps, 0)} tok/s: ${a.figures.referenceSource}): under ${Math.round(ctx.threshold('oneReadShare') * 100)} % of the token events in one read, and not ${ctx.threshold('burstFactor')}x or more faster than generation, beyond what our client's measured stall of ${fmt(stallMs, 1)} ms explains (at least ${ctx.threshold('minTokenEvents')} events judged; ${s.sizing})`,
            actual: `${flagged.length} of ${judged.length} streams phantom: ${describeCauses(a)}; naive gen_tps ${a.figures.genTps !== undefined ? `${fmt(a.figures.genTps, 0)} tok/s` : `undefined (zero-length window), at least ${fmt(a.figures.genTpsAtLeast, 0)} tok/s`} against wall_tps ${fmt(s.streams[results.indexOf(a)].metrics?.wallTps, 1)} tok/s`,
            violations: lines,
          },
          metrics,
          evidence(ctx, s),
        );
      }
      if (flagged.length > 0) {
        return borderline(
          `${flagged.length} of ${judged.length} streams delivered in a burst (not enough to fail): ${lines.join('; ')}`,
          metrics,
          evidence(ctx, s),
        );
      }
      const undecided = results.filter((a) => a.inconclusive);
      if (undecided.length * 2 >= judged.length) {
        return inconclusive(`our client stalled: ${lines.join('; ')}`, metrics, evidence(ctx, s));
      }
      return pass(
        `tokens streamed as generated (${s.sizing}; judged against ${fmt(results[0]?.figures.referenceTps, 0)} tok/s, ${results[0]?.figures.referenceSource}; client stall allowance ${fmt(stallMs, 1)} ms): ${lines.join('; ')}`,
        metrics,
        evidence(ctx, s),
      );
    },
  },
  {
    id: 'metrics.gen-tps-physical',
    title: 'single-stream decode rate is below the memory-bandwidth bound',
    level: 'SHOULD',
    dependsOn: ['sse.content-type'],
    rationale:
      'Decode is memory-bound: one stream cannot beat bandwidth / active bytes per token, so a figure above it is a measurement artefact or a wrong profile.',
    reference:
      'seed 004 (memory-bandwidth argument: single-stream tok/s <= bandwidth / bytes read per token; 400 GB/s over ~1.7 GB for a 35B-A3B MoE at 4 bit caps it near 235 tok/s)',
    requires: ['openai-chat', 'hardware'],
    thresholds: PHYSICAL_THRESHOLDS,
    timeoutMs: METRICS_TIMEOUT_MS,
    async run(ctx) {
      const j = await judgeable(ctx);
      if ('verdict' in j) return j.verdict;
      const { s } = j;
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
      if (!atMin || !atMid)
        return inconclusive(
          `no gen_tps could be computed (${s.streams.map((x) => x.metrics?.reasons.join(', ')).join('; ')})`,
          metrics,
          evidence(ctx, s),
        );
      const shown = rates
        .map((r) => (r.tps === undefined ? 'n/a' : `${r.atLeast ? 'at least ' : ''}${fmt(r.tps, 0)}`))
        .join(', ');
      if (atMin.above) {
        return fail(
          {
            requirement:
              "A single stream SHOULD NOT decode faster than memory bandwidth / active bytes read per token (with a margin): such a figure is phantom or the profile's hardware is wrong.",
            expected: `gen_tps at most ${fmt(atMin.limitTps, 0)} tok/s`,
            actual: `every stream above it: gen_tps ${shown} tok/s; slowest: ${atMin.detail}`,
            violations: hw.speculativeDecoding
              ? []
              : ['if the server uses speculative decoding, set "hardware.speculativeDecoding": true in the profile'],
          },
          metrics,
          evidence(ctx, s),
        );
      }
      if (atMid.above) {
        return borderline(
          `borderline: median gen_tps ${atMid.detail}, but the slowest stream is within it (gen_tps ${shown} tok/s)`,
          metrics,
          evidence(ctx, s),
        );
      }
      return pass(`median ${atMid.detail}; per stream ${shown} tok/s`, metrics, evidence(ctx, s));
    },
  },
  {
    id: 'metrics.usage-matches-stream',
    title: 'usage.completion_tokens agrees with max_tokens, finish_reason and the streamed events',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'Throughput, billing and context accounting all divide by completion_tokens; an inflated count inflates every rate a client computes.',
    reference:
      'OpenAI API reference, Chat Completions: usage.completion_tokens ("number of tokens in the generated completion"), max_tokens, finish_reason "length"; stream_options.include_usage',
    requires: ['openai-chat'],
    timeoutMs: METRICS_TIMEOUT_MS,
    async run(ctx) {
      const j = await judgeable(ctx);
      if ('verdict' in j) return j.verdict;
      const { s } = j;
      const violations: string[] = [];
      const rows = s.streams.map((x, i) => {
        const maxTokens = s.sizes[i]!;
        const usage = x.events!.usage?.completion_tokens;
        const finish = x.events!.finishReasons.at(-1)?.value;
        const counted = x.events!.tokens.length;
        if (usage !== undefined) {
          if (usage > maxTokens)
            violations.push(`stream ${i + 1}: usage.completion_tokens ${usage} exceeds max_tokens ${maxTokens}`);
          if (finish === 'length' && usage !== maxTokens)
            violations.push(
              `stream ${i + 1}: finish_reason "length" but usage.completion_tokens ${usage} is not max_tokens ${maxTokens}`,
            );
          if (usage < counted)
            violations.push(
              `stream ${i + 1}: usage.completion_tokens ${usage} is fewer than the ${counted} token-bearing events streamed`,
            );
        }
        return { usage, finish, counted, maxTokens };
      });
      const metrics = { max_tokens: s.sizes, streams: rows };
      const withUsage = rows.filter((r) => r.usage !== undefined).length;
      if (withUsage === 0) {
        return skip(
          'the server sent no usage in any stream although stream_options.include_usage was set (the sse family grades that); nothing to compare',
        );
      }
      if (violations.length) {
        return fail(
          {
            requirement:
              'usage.completion_tokens MUST count the tokens generated: at most max_tokens, exactly max_tokens when finish_reason is "length", and not fewer than the token-bearing events streamed (events may carry several tokens, so it may be more).',
            expected: `completion_tokens <= max_tokens (${s.sizes.join(', ')}); = max_tokens when finish_reason is "length"; >= events counted`,
            actual: rows
              .map(
                (r, i) =>
                  `stream ${i + 1}: completion_tokens ${r.usage ?? 'none'}, finish_reason ${r.finish ?? 'none'}, ${r.counted} token events`,
              )
              .join('; '),
            violations,
          },
          metrics,
          evidence(ctx, s),
        );
      }
      return pass(
        `${withUsage} of ${rows.length} streams: ${rows.map((r) => `${r.usage ?? 'no usage'} tokens (${r.finish ?? 'no finish_reason'}, ${r.counted} events)`).join('; ')}`,
        metrics,
        evidence(ctx, s),
      );
    },
  },
  {
    id: 'metrics.server-timings-agree',
    title: "the server's own timing figures agree with what the client measured",
    level: 'SHOULD',
    dependsOn: ['sse.content-type'],
    rationale:
      "Dashboards and benchmark tables quote the server's self-reported tok/s; a figure the client cannot reproduce misleads everyone who reads it.",
    reference:
      'llama.cpp server README: `timings` {prompt_ms, predicted_n, predicted_ms, predicted_per_second} in the final chunk; vLLM --enable-per-request-metrics `metrics`; oMLX timing keys in usage; Ollama eval_count / eval_duration (ns)',
    requires: ['openai-chat'],
    thresholds: {
      tolerance: {
        value: 0.35,
        why: 'the server times n tokens from prefill end, the client n-1 gaps between events on a noisy 2-core machine: a few % apart on honest servers; a wrong unit or a lie is off by 2x or more',
      },
    },
    timeoutMs: METRICS_TIMEOUT_MS,
    async run(ctx) {
      const j = await judgeable(ctx);
      if ('verdict' in j) return j.verdict;
      const { s } = j;
      const tol = ctx.threshold('tolerance');
      const rows = s.streams.map((x) => {
        const st = x.events!.serverTimings;
        const d = st ? serverDecode(st, x.events!.usage?.completion_tokens) : undefined;
        const client = x.metrics!.genTps;
        return {
          source: st?.source,
          ...d,
          clientTps: client,
          clientTtftMs: x.metrics!.ttftMs,
          ratio: d?.tps !== undefined && client !== undefined ? d.tps / client : undefined,
        };
      });
      const metrics = { tolerance: tol, streams: rows, ratio_p50: median(rows.map((r) => r.ratio)) };
      if (rows.every((r) => r.source === undefined)) {
        return skip(
          'the server reports no timing figures of its own (llama.cpp `timings`, vLLM `metrics`, oMLX timing keys in usage); nothing to compare',
        );
      }
      if (rows.every((r) => r.tps === undefined)) {
        return skip(
          `the server reports timings (${rows.find((r) => r.source)?.source}) but no decode rate this check knows how to read`,
        );
      }
      const measured = rows.filter((r) => r.ratio !== undefined);
      if (measured.length === 0)
        return inconclusive(
          'no client gen_tps to compare with (zero-length token windows: see metrics.gen-tps-plausible)',
          metrics,
          evidence(ctx, s),
        );
      const outside = (r: number) => r > 1 + tol || r < 1 / (1 + tol);
      const violations: string[] = [];
      rows.forEach((r, i) => {
        if (r.ratio !== undefined && outside(r.ratio)) {
          violations.push(
            `stream ${i + 1}: ${r.tpsField} ${fmt(r.tps, 1)} tok/s vs client gen_tps ${fmt(r.clientTps, 1)} tok/s (x${fmt(r.ratio, 2)})`,
          );
        }
        if (r.preMs !== undefined && r.clientTtftMs !== undefined && r.preMs > r.clientTtftMs * (1 + tol) + 20) {
          violations.push(
            `stream ${i + 1}: ${r.preField} ${fmt(r.preMs, 1)} ms exceeds the TTFT the client saw (${fmt(r.clientTtftMs, 1)} ms)`,
          );
        }
      });
      const rateOff = measured.filter((r) => outside(r.ratio!)).length;
      const shown = measured.map((r) => `${fmt(r.tps, 1)} vs ${fmt(r.clientTps, 1)} tok/s`).join(', ');
      if (rateOff === measured.length || violations.some((v) => v.includes('exceeds the TTFT'))) {
        const r = measured[0];
        return fail(
          {
            requirement: `The server's self-reported timing figures SHOULD agree with the client's measurement within ${Math.round(tol * 100)} %.`,
            expected: `${r.tpsField} within x${fmt(1 / (1 + tol), 2)}..x${fmt(1 + tol, 2)} of the client's gen_tps; reported prefill/TTFT not above the client's TTFT`,
            actual: `server vs client per stream: ${shown}`,
            violations,
          },
          metrics,
          evidence(ctx, s),
        );
      }
      if (rateOff > 0)
        return inconclusive(
          `${rateOff} of ${measured.length} streams disagree beyond ${Math.round(tol * 100)} % (${violations.join('; ')})`,
          metrics,
          evidence(ctx, s),
        );
      return pass(`server-reported decode rate agrees: ${shown} (${rows[0].tpsField})`, metrics, evidence(ctx, s));
    },
  },
];

export const proofs: Proof[] = [
  passProof('metrics.gen-tps-plausible', { messageIncludes: ['tokens streamed as generated'] }),
  faultProof('metrics.gen-tps-plausible', 'stream-role-now-content-at-end', ['role chunk', 'one read', 'PHANTOM']),
  faultProof('metrics.gen-tps-plausible', 'stream-burst-at-end', ['whole response', 'one read']),
  passProof('metrics.gen-tps-physical', { messageIncludes: ['is within the physical bound'] }),
  // A server that flushes the stream produces a rate no memory system can: the bound catches it too. ("at least" is
  // not required: a stream whose whole burst came in one read has only a lower bound, one split over two reads a figure.)
  faultProof('metrics.gen-tps-physical', 'stream-burst-at-end', ['every stream above it', 'physical bound'], {
    expect: 'warn',
  }),
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
  passProof('metrics.usage-matches-stream', {
    messageIncludes: [/3 of 3 streams: (\d+) tokens \(length, \1 events\)/],
  }),
  faultProof('metrics.usage-matches-stream', 'metrics-inflate-usage', [
    /usage\.completion_tokens \d+ exceeds max_tokens \d+/,
  ]),
  passProof('metrics.server-timings-agree', {
    messageIncludes: ['server-reported decode rate agrees', 'timings.predicted_per_second'],
  }),
  faultProof('metrics.server-timings-agree', 'metrics-timings-lie', ['timings.predicted_per_second'], {
    expect: 'warn',
  }),
];
