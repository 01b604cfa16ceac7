// Family `context`: the per-request context window — served, enforced, rejected cleanly beyond it, prefill that
// scales, and a server that is still healthy after long prompts. Runs last (FAMILY_ORDER): its long and
// over-long requests must not disturb the timing of other families.
//
// References: OpenAI API error codes (400 `context_length_exceeded`); documented server behaviour in
// docs/servers.md (vLLM, llama.cpp `exceed_context_size_error`, omlx 32768 limit, Ollama silent
// truncation); seed study 000 (omlx 400 above 32768 on a model trained for more; mlx-vlm > 30k pathology;
// a 52k-token prefill taking 31 min instead of 2–3).
//
// Grading functions are pure and live in lib/grading/ (timing-grade.ts, over-window.ts, prefill-scaling.ts,
// healthy-after.ts, context-window.ts; simulated in test/context-grading.test.ts).

import { describeExchange, paceFor } from '../lib/exchange/exchange.ts';
import {
  acceptanceProbe,
  confirmedCount,
  exchangeEvidence,
  LONG_REQUEST_MS,
  longDeadlines,
  longRequests,
  overWindowRequest,
  overWindowRounds,
  timedPrefill,
  windowPrompt,
} from '../lib/exchange/long-prompts.ts';
import { normalOf, normalSets, normalSize } from '../lib/exchange/normal-sets.ts';
import { recordCurve } from '../lib/exchange/prefill-curve.ts';
import { calibrate } from '../lib/exchange/prompts.ts';
import {
  bisectLargestAccepted,
  fittingPrompt,
  type JudgedWindow,
  judgeMaxAccepted,
  judgeServedWindow,
  judgeWithinWindow,
  type WindowPrompt,
} from '../lib/grading/context-window.ts';
import {
  gradeAfterSet,
  judgeHealthyAfter,
  judgeServedAfter,
  type NormalRequest,
} from '../lib/grading/healthy-after.ts';
import { judgeOverWindowAnswers, judgeRejectionTiming, rejectionTimes } from '../lib/grading/over-window.ts';
import { judgePrefillScaling, modelWidthOf, nothingTimed } from '../lib/grading/prefill-scaling.ts';
import type { TimingGrade } from '../lib/grading/timing-grade.ts';
import { budgetText, endedByUs } from '../lib/measure/deadlines.ts';
import { median } from '../lib/measure/stats.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Evidence, Profile } from '../lib/model/types.ts';
import { fmt, inconclusive } from '../lib/model/verdict.ts';
import { describeWindowDisagreement, windowDisagreement } from '../lib/server/discovery.ts';
import { discoverModelWidth } from '../lib/server/model-width.ts';
import { faultProof, type Proof, passProof, plainProof } from './support/proof.ts';
import { blockedIfUnserved } from './support/root-causes.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'context',
  order: 130,
  headline: false,
  what: 'prompts within the window accepted, a proper 400 beyond it, served vs trained window, prefill scaling, healthy afterwards',
};

// ---------------------------------------------------------------------------------------------------------------
// Helpers shared by the checks of this family (the requests with long prompts: lib/exchange/long-prompts.ts)

/** The check's thresholds of these names, as the graders take them. */
function thresholdsOf<const K extends string>(ctx: CheckContext, names: readonly K[]): Record<K, number> {
  return Object.fromEntries(names.map((n) => [n, ctx.threshold(n)])) as Record<K, number>;
}

function windowOf(ctx: CheckContext): number {
  const w = ctx.server.contextWindow?.value;
  if (!w) throw new Error('harness bug: context check ran without a context window (requires "context-window")');
  return w;
}

/** The window judged, with a larger one the server also states (discovery's figures, for the graders). */
function judgedWindow(ctx: CheckContext): JudgedWindow {
  const d = windowDisagreement(ctx.server);
  return {
    value: windowOf(ctx),
    source: ctx.server.contextWindow!.source,
    ...(d ? { disagreement: { described: describeWindowDisagreement(d), larger: d.larger.map((w) => w.value) } } : {}),
  };
}

/** How long to wait for an answer to an over-long prompt: a few within-window prefills, never less than a floor. */
function noAnswerBound(ctx: CheckContext, prefillMs: number | undefined): number {
  const floor = ctx.threshold('noAnswerFloorMs');
  return Math.round(
    Math.min(
      ctx.threshold('noAnswerCeilingMs'),
      Math.max(floor, (prefillMs ?? 0) * ctx.threshold('noAnswerPrefillMultiple')),
    ),
  );
}

// ---------------------------------------------------------------------------------------------------------------

const REF_OPENAI_ERRORS =
  'OpenAI API reference, Error codes: 400 Bad Request with error.code "context_length_exceeded"';

export const checks: CheckDef[] = [
  // First of the family: a curve timed before within-window's long prompts can have left the server slower (the
  // health sentinel probes after each and before the timing checks that follow: docs/grading.md "Health sentinel").
  {
    id: 'context.prefill-scaling',
    timing: true,
    disturbs: true, // long prompts: the health sentinel probes after it
    title: 'prefill time grows about linearly with the prompt, not quadratically',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    provides: ['prefill_curve'],
    rationale:
      'A quadratic prefill turns a long prompt into a stall: a 52k-token prompt took 31 min instead of 2–3 (seed 000); mlx-vlm is pathological above 30k tokens.',
    reference:
      'seed 000 (52k-token prefill 31 min instead of 2–3; mlx-vlm > 30k); docs/servers.md "mlx-vlm": single-pass prefill O(N²) (#1355)',
    requires: ['openai-chat'],
    thresholds: {
      excessFactor: {
        value: 4,
        why: "nothing known of the model: a window whose prefill is 4x or more what the short-prompt rate predicts is a warn naming the ratio, never a pass (attention cannot be told from a defect without the model's width)",
      },
      attentionCostFactor: {
        value: 8,
        why: "a FLOP of attention may cost up to 8x one of the matrix products: llama.cpp's CPU build measured 4.7-7.6x on its 256-dim test model on this project's 2-core machine; fused GPU kernels (flash attention) are near 1",
      },
      unexplainedFactor: {
        value: 2,
        why: "a defect is growth past twice what attention explains (fail along the bound, warn by the estimate): the seed's pathology (52k tokens in 31 min instead of 2-3) was 10x, attention's own cost at 8x FLOPs already holds every kernel measured",
      },
      narrowestWidth: {
        value: 512,
        why: 'nothing known of the model: the fail bar assumes a model 512 wide, narrower than any served chat model (llama.cpp, which serves the 256-wide test models, reports n_embd)',
      },
      modelWidth: {
        value: 0,
        why: "the model's embedding width where the server reports none (llama.cpp /v1/models meta.n_embd, Ollama /api/show embedding_length): 0 = not declared",
      },
      assumedWindowTokens: {
        value: 65_536,
        why: "the window judged when the server reports none: the seed study's longest prompt (53k tokens) rounded up",
      },
      upperFraction: {
        value: 0.25,
        why: 'the upper range (the top quarter of lengths and up) gives the log-log slope the message reports, and must show prefill growth (minSpreadMs)',
      },
      shortRepetitionFactor: {
        value: 3,
        why: 'the two short lengths (a sixteenth and an eighth of the longest) are repeated 3x as often: they pin the fixed cost and the short-prompt rate every ratio is judged against, and cost little',
      },
      upperPointsQuick: { value: 6, why: 'lengths in the upper range in the quick tier' },
      upperPointsFull: { value: 7, why: 'lengths in the upper range in the full tier' },
      repetitionsQuick: {
        value: 3,
        why: 'repetitions per length in the quick tier (each is a point of the Theil–Sen fit; the curve shows medians)',
      },
      repetitionsFull: { value: 5, why: 'repetitions per length in the full tier' },
      maxTokensQuick: {
        value: 4096,
        why: 'longest prompt in the quick tier (also capped at 90 % of the window where one is known)',
      },
      maxTokensFull: {
        value: 32768,
        why: "longest prompt in the full tier, the seed study's range (also capped by the window)",
      },
      minSpreadMs: {
        value: 20,
        why: 'TTFT must grow at least this much over the fitted range or prefill is invisible under fixed costs',
      },
      minPoints: { value: 5, why: "fewer distinct lengths cannot show the curve's shape (three terms to fit)" },
      budgetQuickS: {
        value: 120,
        why: 'time budget of the quick tier; longer lengths are dropped when it would be exceeded',
      },
      budgetFullS: {
        value: 1_500,
        why: 'time budget of the full tier (25 min: a quadratic server can take that long)',
      },
      maxLoopDelayMs: {
        value: 50,
        why: "our event loop late by more than this (p99) means our timestamps are not the server's",
      },
    },
    timeoutMs: 1_800_000,
    async run(ctx) {
      const window = ctx.server.contextWindow?.value ? ctx.server.contextWindow : undefined;
      await calibrate(ctx);
      const full = ctx.tier === 'full';
      const reps = ctx.threshold(full ? 'repetitionsFull' : 'repetitionsQuick');
      const shortReps = reps * ctx.threshold('shortRepetitionFactor');
      const curve = await recordCurve(ctx, {
        upperPoints: ctx.threshold(full ? 'upperPointsFull' : 'upperPointsQuick'),
        upperFraction: ctx.threshold('upperFraction'),
        reps,
        shortReps,
        budgetMs: ctx.threshold(full ? 'budgetFullS' : 'budgetQuickS') * 1000,
        cap: Math.min(
          ctx.threshold(full ? 'maxTokensFull' : 'maxTokensQuick'),
          window ? fittingPrompt(window.value, 0.9, 1) : Infinity,
        ),
      });
      // Not one prompt length timed, every request refused: the run reports that cause once.
      const none = nothingTimed(curve);
      if (none) return blockedIfUnserved(none, curve.failedRecs);
      // The model's width: declared, else what the server reports (after the timed requests: nothing runs beside them).
      const reported = await discoverModelWidth(ctx.baseUrl, ctx.headers, ctx.profile.model);
      const width = modelWidthOf(ctx.threshold('modelWidth'), reported);
      const t = {
        ...thresholdsOf(ctx, ['minPoints', 'minSpreadMs', 'assumedWindowTokens', 'excessFactor', 'maxLoopDelayMs']),
        ...thresholdsOf(ctx, ['attentionCostFactor', 'unexplainedFactor', 'narrowestWidth']),
      };
      const record = { ...curve, repetitions: reps, shortRepetitions: shortReps, tier: ctx.tier, window };
      return judgePrefillScaling(record, t, width, ctx.loopDelay());
    },
  },
  {
    id: 'context.within-window',
    disturbs: true, // long prompts: the health sentinel probes after it
    title: 'prompts at 50 % and 90 % of the advertised window are answered 200',
    level: 'MUST',
    rationale:
      'A client sizes prompts by the window the server advertises; rejecting or cutting prompts inside it breaks every long-document use.',
    reference:
      'OpenAI API reference, Chat Completions (a request within the model context length is served); omlx/Ollama behaviour in docs/servers.md "Over-long prompts" (hard limits below the model, silent truncation)',
    requires: ['openai-chat', 'context-window'],
    thresholds: {
      lowFraction: {
        value: 0.5,
        why: 'the first prompt: half the window, far from any off-by-one in prompt + max_tokens accounting',
      },
      highFraction: {
        value: 0.9,
        why: 'the second prompt: near the limit, with room left for max_tokens (servers count prompt + max_tokens)',
      },
      maxTokens: { value: 16, why: 'enough to prove generation works; capped further by what is left of the window' },
      minCountedFraction: {
        value: 0.8,
        why: 'prompt calibration is within a few % on every server we know; usage.prompt_tokens below 80 % of the prompt means it was cut',
      },
    },
    timeoutMs: 2 * LONG_REQUEST_MS + 60_000,
    async run(ctx) {
      const w = judgedWindow(ctx);
      const cal = await calibrate(ctx);
      const ev: Evidence[] = [];
      const prompts: WindowPrompt[] = [];
      for (const fraction of [ctx.threshold('lowFraction'), ctx.threshold('highFraction')])
        prompts.push(await windowPrompt(ctx, w.value, fraction, ctx.threshold('maxTokens'), ev));
      return judgeWithinWindow(
        prompts,
        w,
        { minCountedFraction: ctx.threshold('minCountedFraction'), calibration: cal },
        ev,
      );
    },
  },
  {
    id: 'context.served-window',
    title: "the served window is the model's trained context (or the one the profile declares for it)",
    level: 'SHOULD',
    provides: ['served_window'],
    rationale:
      "omlx serves and enforces 32768 tokens by default on a model trained for far more; a user who declared the model's 262144 must see that.",
    reference:
      'seed 000 (omlx HTTP 400 above 32768 tokens, model supports more); docs/servers.md "omlx": max_context_window default 32768; llama.cpp n_ctx vs n_ctx_train',
    requires: ['context-window'],
    thresholds: {
      minServedFraction: {
        value: 1,
        why: 'any window below the trained context is worth a warning; lower it per profile where a smaller window is deliberate',
      },
    },
    timeoutMs: 10_000,
    async run(ctx) {
      const declared = ctx.profile.context.modelTrained;
      const trained = declared
        ? { value: declared, source: 'declared in profile (context.modelTrained)' }
        : ctx.server.trainedContext;
      return judgeServedWindow(ctx.server.contextWindow!, trained, ctx.threshold('minServedFraction'));
    },
  },
  {
    id: 'context.over-window-400',
    destructive: true, // over-long prompts may crash or wedge the server
    timing: true, // its hang and rejection-latency verdicts time the server
    title: 'a prompt of ≥ 1.25x the window gets HTTP 400 (context exceeded) before prefill and before any SSE bytes',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    provides: ['over_window'],
    rationale:
      'A client must learn at once that the prompt is too long: a 500 is retried, a drop or hang stalls it, truncation silently loses the prompt, an in-stream error arrives after it accepted a 200.',
    reference: `${REF_OPENAI_ERRORS}; vLLM "maximum context length is N tokens", llama.cpp 400 exceed_context_size_error (docs/servers.md "llama.cpp", "vllm")`,
    requires: ['openai-chat', 'context-window'],
    thresholds: {
      overFactor: {
        value: 1.3,
        why: 'at least 1.25x the window, so calibration error and template overhead cannot make the prompt fit',
      },
      repetitions: {
        value: 3,
        why: 'rounds of (non-stream, stream) rejections timed; the latency verdict uses their median',
      },
      immediateMs: { value: 100, why: 'a 400 within 100 ms cannot have paid for a prefill a user would notice' },
      failFraction: {
        value: 0.75,
        why: 'a server that prefills the (longer) prompt before rejecting needs ≥ 1.4x the within-window prefill; fail when the lower bound of the ratio reaches 0.75',
      },
      warnFraction: {
        value: 0.35,
        why: 'an up-front length check costs a small fraction of a prefill; a third of one is suspicious',
      },
      noAnswerFloorMs: { value: 2_000, why: 'the shortest wait for an answer before calling it a hang' },
      noAnswerPrefillMultiple: {
        value: 3,
        why: 'wait three within-window prefills: even a server that prefills before rejecting answers by then',
      },
      noAnswerCeilingMs: { value: 180_000, why: 'never wait longer than this for an answer to an over-long prompt' },
      maxLoopDelayMs: {
        value: 50,
        why: "our event loop late by more than this (p99) means our timestamps are not the server's",
      },
    },
    timeoutMs: 3 * LONG_REQUEST_MS + 300_000,
    async run(ctx) {
      const w = judgedWindow(ctx);
      const window = w.value;
      await calibrate(ctx);
      const ev: Evidence[] = [];
      // Anchor: the prefill time of a within-window prompt of similar size (the 90 % prompt).
      const anchorTokens = fittingPrompt(window, 0.9, 1);
      const anchor = await timedPrefill(ctx, anchorTokens, longDeadlines(ctx));
      ev.push(exchangeEvidence(`within-window prefill anchor (~${anchor.sent} tokens)`, anchor.x));
      const prefills = anchor.ttft !== undefined ? [anchor.ttft] : [];
      const waitMs = noAnswerBound(ctx, anchor.ttft);
      const target = Math.ceil(window * ctx.threshold('overFactor'));
      ctx.log(`over-window prompt ~${target} tokens (window ${window}); waiting at most ${waitMs} ms for each answer`);
      const runs = await overWindowRounds(ctx, window, target, waitMs, ctx.threshold('repetitions'), ev);
      const bad = judgeOverWindowAnswers({ runs, window: w, waitMs, prefills, ev }, ctx.threshold('overFactor'));
      // Only the streamed requests failed, not served at all, on a server the run found serving no stream (every
      // stream a 500): blocked by the check that reported that; else this check's own finding.
      if (bad)
        return bad.failed.every((r) => r.stream)
          ? blockedIfUnserved(
              bad.verdict,
              bad.failed.map((r) => r.rec),
              { ownFinding: true },
            )
          : bad.verdict;
      // Timing: only when the rejection was not immediate do we need more prefill samples to compare with.
      const rejectMs = rejectionTimes(runs);
      if ((median(rejectMs) ?? 0) > ctx.threshold('immediateMs')) {
        ctx.log(`rejection took ${fmt(median(rejectMs))} ms; timing two more within-window prefills to compare`);
        for (let i = 0; i < 2; i++) {
          const p = await timedPrefill(ctx, anchorTokens, longDeadlines(ctx), 100 + i);
          if (p.ttft !== undefined) prefills.push(p.ttft);
        }
      }
      const t = thresholdsOf(ctx, ['immediateMs', 'failFraction', 'warnFraction', 'maxLoopDelayMs']);
      return judgeRejectionTiming({ runs, window: w, waitMs, prefills, ev }, t, ctx.loopDelay());
    },
  },
  {
    id: 'context.max-accepted',
    destructive: true, // over-long prompts may crash or wedge the server
    title: 'the largest accepted prompt, found by bisection, beside the advertised window',
    level: 'INFO',
    rationale:
      'What a server really accepts is what a client can rely on; an advertised window the server does not honour (either way) misleads every client that sizes prompts by it.',
    reference:
      'seed 000 (omlx rejects above 32768); docs/servers.md "Over-long prompts" (silent truncation vs 400 pre-check)',
    requires: ['openai-chat', 'context-window'],
    tier: 'full',
    thresholds: {
      resolutionTokens: {
        value: 16,
        why: 'bisection stops when the bracket is this narrow (or 0.5 % of the window, whichever is larger)',
      },
      minAcceptedFraction: {
        value: 0.9,
        why: 'accepting less than 90 % of the advertised window (with max_tokens 1) means the advertised figure is wrong',
      },
      acceptBoundFloorMs: {
        value: 500,
        why: 'a probe with no 4xx within this long (or a few rejection latencies) counts as accepted and is aborted',
      },
      acceptBoundMultiple: {
        value: 4,
        why: 'a few times the rejection latency: servers check length up front, so a rejection that has not come by then will not',
      },
      maxProbes: {
        value: 24,
        why: 'bounds the bisection (about 12 halvings from 1.25x the window, plus growth when nothing is rejected)',
      },
      growUntilFactor: { value: 4, why: 'when 1.25x the window is accepted, look for a limit up to 4x the window' },
      noAnswerFloorMs: {
        value: 2_000,
        why: 'the shortest wait for an answer to the over-long probe that times the rejection',
      },
      noAnswerPrefillMultiple: {
        value: 3,
        why: 'unused here (no prefill anchor); kept so the shared wait rule reads one set of names',
      },
      noAnswerCeilingMs: { value: 180_000, why: 'never wait longer than this for an answer to an over-long prompt' },
    },
    timeoutMs: 1_200_000,
    async run(ctx) {
      const window = windowOf(ctx);
      const cal = await calibrate(ctx);
      // Rejection latency: one over-long probe.
      const over = await overWindowRequest(
        ctx,
        window,
        false,
        Math.ceil(window * 1.3),
        noAnswerBound(ctx, undefined),
        1,
      );
      const rejLatency = over.finding.verdict !== 'fail' ? over.x.rec.tHeaders : undefined;
      const bound = Math.round(
        Math.max(ctx.threshold('acceptBoundFloorMs'), (rejLatency ?? 0) * ctx.threshold('acceptBoundMultiple')),
      );
      const resolution = Math.max(ctx.threshold('resolutionTokens'), Math.round(window * 0.005));
      const growUntil = Math.ceil(window * ctx.threshold('growUntilFactor'));
      const maxProbes = ctx.threshold('maxProbes');
      ctx.log(
        `estimate: up to ${maxProbes} probes of up to ${Math.ceil(window * 1.25)} tokens, each bounded by ${bound} ms (≤ ${fmt((maxProbes * bound) / 1000)} s)`,
      );
      const ev: Evidence[] = [exchangeEvidence('rejection-latency probe', over.x)];
      const result = await bisectLargestAccepted(acceptanceProbe(ctx, bound, ev), {
        lo: Math.round(cal.overhead + 64 * cal.tokensPerWord),
        hi: Math.ceil(window * 1.25),
        growUntil,
        resolution,
        maxProbes,
      });
      // Confirm the largest accepted size with a counted request (usage.prompt_tokens is the server's own count).
      const counted = await confirmedCount(ctx, result.largestAccepted, ev);
      return judgeMaxAccepted(
        result,
        counted,
        ctx.server.contextWindow!,
        {
          acceptBoundMs: bound,
          resolution,
          growUntil,
          growUntilFactor: ctx.threshold('growUntilFactor'),
          minAcceptedFraction: ctx.threshold('minAcceptedFraction'),
        },
        ev,
      );
    },
  },
  {
    id: 'context.healthy-after',
    destructive: true, // over-long prompts may crash or wedge the server
    timing: true, // its before/after comparison means nothing on a server already degraded before it
    title: 'after long and over-long prompts, a normal request works at normal speed',
    level: 'MUST',
    dependsOn: ['sse.content-type'],
    rationale:
      'A server that degrades after one long prompt (a cache never freed, a slot left broken) fails every user after it, long after the prompt that did it.',
    reference:
      'seed 000 (mlx-vlm pathological after > 30k prompts; cyclic slowdown 790 → 3.5 tok/s); docs/servers.md "vllm-mlx" (#501, #442)',
    requires: ['openai-chat'],
    thresholds: {
      repetitions: {
        value: 7,
        why: "normal requests timed before and after: with 7 and 7, Moses' 95 % interval ignores the 9 most extreme of the 49 pairwise ratios on each side, so one stalled request cannot decide the verdict",
      },
      maxTokens: {
        value: 24,
        why: 'tokens of each normal request when no speed is measured (forced length where the profile says how)',
      },
      requestMs: {
        value: 200,
        why: 'each normal request decodes for about this long (tokens sized from the measured speed, at least 8): a scheduling stall of tens of ms is a small part of it (simulated at 8 ms steps: 16 tokens warned in 2.6 % of bursty trials, 24 tokens, 192 ms, in 0.15 %)',
      },
      longFraction: { value: 0.9, why: 'the long prompt: 90 % of the window (capped by the tier)' },
      longTokensQuick: { value: 4096, why: 'the long prompt in the quick tier when the window is larger or unknown' },
      longTokensFull: { value: 32768, why: 'the long prompt in the full tier when the window is larger or unknown' },
      failSlowdown: { value: 1.5, why: 'fail when wall_tps after is clearly (lower bound) below two thirds of before' },
      warnSlowdown: { value: 1.25, why: 'a 25 % slowdown estimate (with the lower bound above 1x) is worth a warning' },
      minSamples: { value: 3, why: 'fewer timed requests on a side cannot give a median with a bound' },
      noAnswerFloorMs: {
        value: 2_000,
        why: "how long to wait for the over-long requests' answers (they are not graded here)",
      },
      noAnswerPrefillMultiple: { value: 3, why: 'or three within-window prefills, whichever is longer' },
      noAnswerCeilingMs: { value: 180_000, why: 'never wait longer than this for an over-long prompt' },
      maxLoopDelayMs: {
        value: 50,
        why: "our event loop late by more than this (p99) means our timestamps are not the server's",
      },
    },
    timeoutMs: 3 * LONG_REQUEST_MS + 300_000,
    async run(ctx) {
      const window = ctx.server.contextWindow?.value;
      await calibrate(ctx);
      const reps = ctx.threshold('repetitions');
      const { maxTokens, sizing } = await normalSize(ctx, window, {
        requestMs: ctx.threshold('requestMs'),
        maxTokens: ctx.threshold('maxTokens'),
      });
      const ev: Evidence[] = [];
      const sets = normalSets(ctx, maxTokens, reps, ev);
      const longTokens = Math.min(
        ctx.threshold(ctx.tier === 'full' ? 'longTokensFull' : 'longTokensQuick'),
        window ? fittingPrompt(window, ctx.threshold('longFraction'), 1) : Infinity,
      );
      const warm = await sets.one('warm-up (dropped)');
      ctx.log(
        `estimate: ~${fmt((2 * reps * warm.rec.tEnd) / 1000, 1)} s for ${2 * reps} normal requests of ${maxTokens} tokens (${sizing}; one took ${fmt(warm.rec.tEnd)} ms), ` +
          `plus one ~${longTokens}-token prompt${window ? ' and two over-long prompts' : ' (no window known: no over-long prompt)'}`,
      );
      const beforeSet = await sets.timed('before');
      const long = await longRequests(ctx, window, longTokens, (ms) => noAnswerBound(ctx, ms), ev);
      ctx.log('long requests done; timing normal requests again');
      const afterSet = await sets.timed('after');
      const all = [...beforeSet.xs, ...afterSet.xs];
      const ours = all.find((x) => endedByUs(x.rec));
      if (ours)
        return inconclusive(
          budgetText('the normal requests finished', paceFor(ctx), describeExchange(ours)),
          { tokens: maxTokens, sizing },
          ev,
        );
      const record = {
        before: beforeSet.xs.map(normalOf),
        after: afterSet.xs.map(normalOf),
        tokens: maxTokens,
        sizing,
        ...long,
        ev,
      };
      const unserved = judgeServedAfter(record);
      if (unserved)
        return unserved.blocked
          ? blockedIfUnserved(
              unserved.verdict,
              all.map((x) => x.rec),
            )
          : unserved.verdict;
      const t = thresholdsOf(ctx, ['failSlowdown', 'warnSlowdown', 'minSamples', 'maxLoopDelayMs']);
      const first = gradeAfterSet(record.before, record.after, t, ctx.loopDelay());
      let lastSet = afterSet;
      let confirmation: { xs: NormalRequest[]; grade: TimingGrade } | undefined;
      if (first.outcome !== 'pass') {
        // A slowdown must persist: time a second set of normal requests, so a transient stall (ours or the
        // server's) cannot decide the verdict. A server that stays degraded is slow in both.
        ctx.log(
          `after the long requests: ${first.outcome} (${fmt(first.figures.slowdown)}x); confirming with ${reps} more normal requests`,
        );
        lastSet = await sets.timed('confirmation');
        const xs = lastSet.xs.map(normalOf);
        confirmation = { xs, grade: gradeAfterSet(record.before, xs, t, ctx.loopDelay()) };
      }
      const cpu = { before: beforeSet.cpu, after: lastSet.cpu };
      return judgeHealthyAfter({ ...record, first, confirmation, cpu }, t.failSlowdown);
    },
  },
];

// Fast settings for the quadratic-prefill proof: little fixed cost (1 ms decode step, small linear prefill) so the
// quadratic term dominates the upper range without a multi-second prefill.
const QUADRATIC_PROOF_ARGS = ['--decode-step-ms', '0.5', '--prefill-ms-per-token', '0.005', '--fault-arg', 'factor=15'];
// llama.cpp's tiny model (256 wide, 4 layers) on 2 CPU cores, fitted T(n) = 78 + 0.063 n + 1.33e-4 n² ms (274 ms at
// 1k, 9.1 s at 8k, 20 s at 12k): attention at ~6.5x its FLOP cost. The proof serves that curve at twice the speed
// (every term halved: the shape, which is what the check judges, is the same; 26.6 → 13.9 s of CI). /v1/models
// reports n_embd 256 as llama.cpp does.
const TINY_LLAMA_PREFILL_ARGS = [
  '--fault-arg',
  'fixedMs=39',
  '--fault-arg',
  'linear=0.0315',
  '--fault-arg',
  'quadratic=0.0000665',
  '--fault-arg',
  'embd=256',
  '--fault-arg',
  'layers=4',
  '--context-window',
  '16384',
];

/** What a user pointing the suite at a server gets: slots unknown, the window discovered by `auto`. */
const TOLD_NOTHING: Partial<Profile> = { slots: undefined, context: { discovery: 'auto' } };

export const proofs: Proof[] = [
  passProof('context.within-window', { messageIncludes: ['both served', '(window 4096)'] }),
  faultProof('context.within-window', 'context-cap-quarter', ['50 %', 'rejected', 'smaller window than it advertises']),

  passProof('context.served-window', { messageIncludes: ['served window 4096 tokens', '100.0 % served'] }),
  faultProof('context.served-window', 'context-trained-larger', ['4096 tokens served', '32768 trained'], {
    expect: 'warn',
  }),

  passProof('context.over-window-400', {
    messageIncludes: ['over-long requests (stream and non-stream) rejected', 'HTTP 400'],
  }),
  faultProof('context.over-window-400', 'context-over-500', ['HTTP 500', 'instead of 400']),
  faultProof('context.over-window-400', 'context-over-drop', ['connection dropped']),
  faultProof('context.over-window-400', 'context-over-hang', ['no response within', 'hangs']),
  faultProof('context.over-window-400', 'context-over-truncate', ['silently truncated']),
  faultProof('context.over-window-400', 'context-over-in-stream', ['error inside the stream']),
  faultProof('context.over-window-400', 'context-over-error-field', ['SSE "error:" line', 'empty successful answer']),

  passProof('context.max-accepted', {
    tier: 'full',
    messageIncludes: ['largest accepted prompt', 'advertised window 4096'],
  }),
  faultProof(
    'context.max-accepted',
    'context-cap-quarter',
    ['largest accepted prompt', 'of the advertised window is usable'],
    { tier: 'full', expect: 'warn' },
  ),

  // Against a server that only advertises max_model_len on /v1/models, nothing declared (window discovered generically).
  plainProof('context.within-window', undefined, ['both served', 'window 4096']),
  plainProof('context.within-window', 'context-cap-quarter', [
    'rejected',
    'smaller window than it advertises',
    'GET /v1/models max_model_len',
  ]),
  plainProof('context.over-window-400', undefined, ['over-long requests (stream and non-stream) rejected', 'HTTP 400']),
  plainProof('context.over-window-400', 'context-over-500', ['HTTP 500', 'instead of 400']),
  plainProof('context.over-window-400', 'context-over-hang', ['no response within', 'hangs']),
  plainProof('context.over-window-400', 'context-over-truncate', ['silently truncated']),

  // A server that advertises its whole window (/v1/models max_model_len 4096) while each of its 4 slots holds 1024
  // (/slots n_ctx) and answers 500 above that, nothing declared: discovery judges at the per-slot window, and both
  // checks name both figures.
  passProof('context.within-window', {
    faults: ['discovery-slot-window'],
    profile: TOLD_NOTHING,
    messageIncludes: ['both served', '(window 1024)', 'advertised 4096', 'each slot holds 1024', 'judged at 1024'],
    note: 'per-slot window beside a larger total, nothing declared',
  }),
  faultProof(
    'context.over-window-400',
    'discovery-slot-window',
    [
      'HTTP 500',
      'advertised 4096 (GET /v1/models max_model_len), each slot holds 1024',
      'prompts between them get HTTP 500',
    ],
    { profile: TOLD_NOTHING, note: 'per-slot window beside a larger total, nothing declared' },
  ),

  passProof('context.prefill-scaling', { messageIncludes: ['close to linear', 'fixed cost', 'under 4x'] }),
  // The health gate (lib/grading/health-gate.ts): in a run (start-of-run baseline, a probe right after the check), the
  // correct server stays graded; a server made sick by the check's own longest prompt (3686 tokens, past the fault's
  // 3000, inside the 4096 window) is not a pass, naming the degradation and the check as its cause.
  passProof('context.prefill-scaling', { run: { checks: [], waitS: 2 }, messageIncludes: ['close to linear'] }),
  faultProof(
    'context.prefill-scaling',
    'health-degrade-after-long-prompt',
    [
      'not graded: the server was degraded right after this check',
      'context.prefill-scaling is the check that made it so',
    ],
    { run: { checks: [], waitS: 2 }, expect: 'inconclusive', raw: 'inconclusive' },
  ),
  // Linear + constant and quadratic + constant on a 32768-token window, extrapolated within ±25 % of their formulas:
  // test/prefill-extrapolation.test.ts (pass, and never a pass for the quadratic of a model of unknown width).
  // Real attention cost passes: llama.cpp's tiny model's measured curve and its width (256, reported in /v1/models
  // meta as llama.cpp does) on a 16384-token window: ~23x the short-prompt rate, within what its attention explains.
  passProof('context.prefill-scaling', {
    faults: ['prefill-curve'],
    serverArgs: TINY_LLAMA_PREFILL_ARGS,
    messageIncludes: ['256-wide model', 'GET /v1/models meta.n_embd', 'real attention'],
    note: 'llama.cpp tiny model curve',
  }),
  // Quadratic + constant (n²/16000 ms, no per-token cost) from a 4096-wide model on a 32768-token window: the window
  // takes 128x what the short-prompt rate predicts, attention in that model explains ~6x.
  faultProof(
    'context.prefill-scaling',
    'prefill-quadratic',
    ['4096-wide model', 'faster than attention explains', 'grows quadratically'],
    { serverArgs: ['--context-window', '32768', '--fault-arg', 'embd=4096'] },
  ),
  // The fault on a server that serves a long window (1M tokens, as long-context models advertise), the model's width
  // declared in the profile (the reference server reports none).
  faultProof('context.prefill-scaling', 'context-quadratic-prefill', ['2048-wide model', 'declared (modelWidth)'], {
    serverArgs: [...QUADRATIC_PROOF_ARGS, '--context-window', '1048576'],
    profile: { thresholds: { 'context.prefill-scaling': { modelWidth: 2048 } } },
  }),

  passProof('context.healthy-after', { messageIncludes: ['before the long requests', 'slowdown'] }),
  // 4 ms decode steps halve the proof's time; a 3x slowdown stays detected in 9,999 of 10,000 simulated bursty trials.
  faultProof('context.healthy-after', 'context-degrade-after-long', ['stays degraded', 'slowdown'], {
    serverArgs: ['--decode-step-ms', '4'],
  }),
];
