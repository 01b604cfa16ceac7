// context.prefill-scaling: the prefill curve judged by its size at the window, with the fixed cost removed and by
// the model's own physics (the fit itself: lib/grading/prefill-fit.ts).
// Pure: no I/O, no clock, no unseeded randomness, so every verdict can be recomputed from the recorded figures and
// simulated with seeded noise (test/context-grading.test.ts runs 10,000 noisy trials of the timing gradings).
// Times in ms, sizes in tokens as the server counts them (usage.prompt_tokens, calibrated).

import { logLogSlope, median } from '../measure/stats.ts';
import type { Tier } from '../model/check.ts';
import type { Evidence, Recording, Verdict } from '../model/types.ts';
import { fail, fmt, inconclusive, pass, warn } from '../model/verdict.ts';
import { attentionExcess, extrapolatePrefill, type PrefillFit, prefillMs } from './prefill-fit.ts';
import { guardStarvation, type TimingGrade } from './timing-grade.ts';

interface ScalingPoint {
  /** Prompt tokens (server-counted when it reported them, else the calibrated estimate). */
  tokens: number;
  /** TTFT of each repetition; undefined when it failed. A censored value (deadline hit) is given as the deadline. */
  ttftMs: ReadonlyArray<number | undefined>;
  /** Repetitions that hit the deadline (their value is a lower bound). */
  censored?: number;
}

export interface ScalingThresholds {
  /** The upper range: this many of the longest measured lengths give the log-log slope the message reports. */
  fitPoints: number;
  /** Distinct lengths needed for the fit. */
  minPoints: number;
  /** The median TTFT must grow by at least this much over the upper range, or prefill is not visible (ms). */
  minSpreadMs: number;
  /** The window whose prefill is judged (tokens): the served window, else an assumed one. */
  windowTokens?: number;
  windowSource?: string;
  /**
   * Nothing known of the model: a window whose prefill is this many times what the short-prompt rate predicts is a
   * warn, never a pass (attention cannot be told from a defect without the model's width).
   */
  excessFactor: number;
  /** How much dearer a FLOP of attention may be than one of the matrix products (κ in attentionExcess). */
  attentionCostFactor: number;
  /** Growth past this many times what attention explains is a defect (fail along the bound, warn by the estimate). */
  unexplainedFactor: number;
  /** Nothing known of the model: the narrowest model assumed, for the fail bar only (a wider one explains less). */
  narrowestWidth: number;
  /** The model's embedding width (n_embd), reported by the server or declared, with where it came from. */
  width?: ModelWidth;
}

export interface ModelWidth {
  value: number;
  source: string;
  /** n_params as reported: with ~12·d² weights per layer it gives the layer count the message shows. */
  params?: number;
  /** n_vocab: the embedding matrix's share of n_params. */
  vocab?: number;
}

interface ScalingGrade extends TimingGrade {
  /** Log-log Theil–Sen slope of TTFT with the fixed cost removed, over the upper range, and its 95 % interval. */
  slope?: number;
  low?: number;
  high?: number;
  /** The fitted curve TTFT = fixedMs + perTokenMs·n + perTokenSqMs·n². */
  fit?: PrefillFit;
  /** The window's prefill without the fixed cost, extrapolated along the fit (s), and its bootstrap lower bound. */
  windowPrefillS?: number;
  windowPrefillLowS?: number;
  /** windowPrefillS over the linear estimate at the short-prompt rate, and its bootstrap lower bound. */
  excess?: number;
  excessLow?: number;
  /** Lengths of the fit with their median TTFT. */
  fitted: { tokens: number; ttftMsP50: number; n: number }[];
  /** Every length with its median, for the curve in the results. */
  curve: { tokens: number; ttftMsP50?: number; n: number; censored: number }[];
}

const finitePositive = (xs: ReadonlyArray<number | undefined>) =>
  xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x) && x > 0);

/** "x layers" from n_params with ~12·d² weights per layer, after the (tied) embedding matrix; undefined when implausible. */
function layersOf(w: ModelWidth): number | undefined {
  if (!w.params) return undefined;
  const layers = (w.params - (w.vocab ?? 0) * w.value) / (12 * w.value * w.value);
  return layers >= 0.5 ? layers : undefined;
}

/**
 * Prefill growth judged by its size at the window, with the fixed cost removed and by the model's own physics
 * (docs/grading.md "Prefill scaling"). The per-length medians are fitted with TTFT = c + a·n + b·n² (lib/grading/
 * prefill-fit.ts), the window's prefill extrapolated along a + b·n without c, and compared with what the server's own
 * short-prompt rate (the shortest length) predicts for it: excess = (a + b·W) / (a + b·n_s), bounded by resampling
 * the repetitions.
 *
 * - The model's width d known (reported or declared): attention at up to κ (attentionCostFactor) times its FLOP cost
 *   explains (1 + κ·W/(12·d)) / (1 + κ·n_s/(12·d)); fail when the excess's lower bound is ≥ unexplainedFactor times
 *   that, warn when its estimate is.
 * - Nothing known: warn when the excess is ≥ excessFactor (attention cannot be told from a defect, so never a pass);
 *   fail when its lower bound is ≥ unexplainedFactor times what attention explains in the narrowest model assumed.
 *
 * Ratios measured in one run, never an absolute time: a slow machine and a fast one get the same verdict.
 */
export function gradePrefillScaling(points: readonly ScalingPoint[], t: ScalingThresholds): ScalingGrade {
  const sortedPoints = [...points].sort((a, b) => a.tokens - b.tokens);
  const curve = sortedPoints.map((p) => ({
    tokens: p.tokens,
    ttftMsP50: median(finitePositive(p.ttftMs)),
    n: finitePositive(p.ttftMs).length,
    censored: p.censored ?? 0,
  }));
  const measured = sortedPoints.filter((p) => p.tokens > 0 && finitePositive(p.ttftMs).length > 0);
  const fitted = measured.map((p) => ({
    tokens: p.tokens,
    ttftMsP50: median(finitePositive(p.ttftMs))!,
    n: finitePositive(p.ttftMs).length,
  }));
  const upper = fitted.slice(-t.fitPoints);
  const top = fitted.length ? fitted[fitted.length - 1].tokens : 0;
  const base = { fitted, curve };
  const figures: Record<string, number | undefined> = { points: fitted.length, topTokens: top };
  if (fitted.length < t.minPoints)
    return {
      ...base,
      outcome: 'inconclusive',
      reason: `only ${fitted.length} prompt length(s) measured (need ${t.minPoints})`,
      figures,
    };
  const spread = upper[upper.length - 1].ttftMsP50 - upper[0].ttftMsP50;
  figures.spreadMs = spread;
  if (spread < t.minSpreadMs)
    return {
      ...base,
      outcome: 'inconclusive',
      reason: `TTFT grew by only ${fmt(spread)} ms from ${upper[0].tokens} to ${top} tokens (need ${t.minSpreadMs} ms): prefill is hidden by fixed costs and noise`,
      figures,
    };
  const window = Math.max(t.windowTokens ?? top, top);
  const short = fitted[0].tokens;
  const ex = extrapolatePrefill(
    measured.map((p) => ({ tokens: p.tokens, ttftMs: finitePositive(p.ttftMs) })),
    window,
    short,
  );
  if (!ex || ex.excess === undefined)
    return {
      ...base,
      outcome: 'inconclusive',
      reason: `no curve TTFT = c + a·n + b·n² with non-negative costs fits the medians of ${fitted.length} lengths`,
      figures,
    };
  const { fit } = ex;
  // The slope the message reports: the upper range's samples with the fixed cost taken off.
  const xs: number[] = [];
  const ys: number[] = [];
  for (const p of measured.slice(-t.fitPoints))
    for (const y of finitePositive(p.ttftMs))
      if (y - fit.fixedMs > 0) {
        xs.push(p.tokens);
        ys.push(y - fit.fixedMs);
      }
  const slope = logLogSlope(xs, ys, { alpha: 0.05 });
  const shortRate = short / (prefillMs(fit, short) / 1000);
  const linearS = window / shortRate;
  Object.assign(figures, {
    fixedMs: fit.fixedMs,
    perTokenMs: fit.perTokenMs,
    perTokenSqMs: fit.perTokenSqMs,
    slope: slope.slope,
    slopeLow: slope.low,
    slopeHigh: slope.high,
    samples: xs.length,
    windowTokens: window,
    windowPrefillS: ex.windowMs / 1000,
    windowPrefillLowS: ex.windowMsLow === undefined ? undefined : ex.windowMsLow / 1000,
    windowPrefillHighS: ex.windowMsHigh === undefined ? undefined : ex.windowMsHigh / 1000,
    shortPromptTps: shortRate,
    linearWindowS: linearS,
    excess: ex.excess,
    excessLow: ex.excessLow,
    excessHigh: ex.excessHigh,
  });
  const out = {
    ...base,
    slope: slope.slope,
    low: slope.low,
    high: slope.high,
    fit,
    windowPrefillS: ex.windowMs / 1000,
    windowPrefillLowS: ex.windowMsLow === undefined ? undefined : ex.windowMsLow / 1000,
    excess: ex.excess,
    excessLow: ex.excessLow,
  };
  const x = ex.excess;
  const xLow = ex.excessLow ?? 0; // no interval (too few usable replicates): nothing is clear
  const ci = (lo: number | undefined, hi: number | undefined, d = 1) =>
    lo === undefined || hi === undefined ? 'no interval' : `95 % CI ${fmt(lo, d)}–${fmt(hi, d)}`;
  const text =
    `TTFT = ${fmt(fit.fixedMs, 1)} ms + ${fit.perTokenMs.toPrecision(3)} ms·n + ${fit.perTokenSqMs.toPrecision(3)} ms·n² over ${fitted[0].tokens}–${top} tokens (medians ${fmt(fitted[0].ttftMsP50)} → ${fmt(fitted[fitted.length - 1].ttftMsP50)} ms; log-log slope without the ${fmt(fit.fixedMs, 1)} ms fixed cost ${fmt(slope.slope)}, ${ci(slope.low, slope.high, 2)}): ` +
    `the ${window}-token window${t.windowSource ? ` (${t.windowSource})` : ''} extrapolates to ${fmt(ex.windowMs / 1000, 1)} s of prefill (${ci(figures.windowPrefillLowS, figures.windowPrefillHighS)}), ` +
    `${fmt(x, 1)}x (${ci(ex.excessLow, ex.excessHigh)}) the ${fmt(linearS, 1)} s its short-prompt rate of ${fmt(shortRate, 0)} tok/s (at ${short} tokens) predicts`;
  const kappa = t.attentionCostFactor;
  const factor = t.unexplainedFactor;
  if (t.width) {
    const d = t.width.value;
    const explained = attentionExcess(d, window, short, kappa);
    const bar = factor * explained;
    const layers = layersOf(t.width);
    Object.assign(figures, { modelWidth: d, explainedExcess: explained, unexplained: x / explained });
    const physics = `attention in a ${d}-wide model (${t.width.source}${layers ? `; ~${fmt(layers, 0)} layers of ~12·d² weights in its ${fmt(t.width.params! / 1e6, 1)} M parameters` : ''}) costs a share of about n/(6·${d}) per token and, at up to ${kappa}x its FLOP cost, explains ${fmt(explained, 1)}x`;
    if (xLow >= bar)
      return {
        ...out,
        outcome: 'fail',
        reason: `${text}; ${physics}: prefill grows quadratically, ${fmt(x / explained, 1)}x faster than attention explains (lower bound ${fmt(xLow, 1)}x ≥ ${factor} × ${fmt(explained, 1)}x), beyond the model's physics`,
        figures,
      };
    if (x >= bar)
      return {
        ...out,
        outcome: 'warn',
        reason: `${text}; ${physics}: ${fmt(x / explained, 1)}x that by the estimate, past ${factor}x, but the lower bound ${fmt(xLow, 1)}x is not`,
        figures,
        borderline: true,
      };
    return {
      ...out,
      outcome: 'pass',
      reason: `${text}; ${physics}: ${x < 2 ? 'close to linear' : 'superlinear, within what real attention explains'} (a defect needs ${factor}x that, ${fmt(bar, 1)}x)`,
      figures,
    };
  }
  const widest = attentionExcess(t.narrowestWidth, window, short, kappa);
  const failBar = factor * widest;
  Object.assign(figures, { explainedExcessNarrowest: widest });
  const unknown = `the server reports no model width (no n_embd) and none is declared, so attention's share is unknown`;
  if (xLow >= failBar)
    return {
      ...out,
      outcome: 'fail',
      reason: `${text}; ${unknown}, but even a ${t.narrowestWidth}-wide model's attention at ${kappa}x its FLOP cost explains only ${fmt(widest, 1)}x: prefill grows quadratically beyond any model's physics (lower bound ${fmt(xLow, 1)}x ≥ ${factor} × ${fmt(widest, 1)}x)`,
      figures,
    };
  if (x >= t.excessFactor)
    return {
      ...out,
      outcome: 'warn',
      reason: `${text}; ${unknown}: ${fmt(x, 1)}x is at least ${t.excessFactor}x, growth a wide model's attention does not explain (declare modelWidth to judge it; a fail needs ${fmt(failBar, 1)}x, what no model ${t.narrowestWidth} or more wide explains)`,
      figures,
      borderline: true,
    };
  return {
    ...out,
    outcome: 'pass',
    reason: `${text}; ${unknown}: ${x < 2 ? 'close to linear' : 'superlinear'}, under ${t.excessFactor}x`,
    figures,
  };
}

/**
 * The same points with our client's delay moved against a failing verdict: every TTFT at the upper half of the
 * lengths `delayMs` shorter (floored at 0.1 ms), every one below it `delayMs` longer.
 */
export function scalingWorstCase(points: readonly ScalingPoint[], delayMs: number): ScalingPoint[] {
  const lengths = [...new Set(points.map((p) => p.tokens))].sort((a, b) => a - b);
  const mid = median(lengths) ?? 0;
  return points.map((p) => ({
    ...p,
    ttftMs: p.ttftMs.map((y) => (y === undefined ? y : p.tokens >= mid ? Math.max(0.1, y - delayMs) : y + delayMs)),
  }));
}

/**
 * Prompt lengths for the scaling curve: `count` lengths spaced geometrically from `top / span` to `top`, rounded
 * to whole tokens and distinct.
 */
export function scalingLengths(top: number, count: number, span: number): number[] {
  if (!(top >= 1) || count < 1) return [];
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const x = Math.round(top / span ** ((count - 1 - i) / Math.max(1, count - 1)));
    if (x >= 1 && !out.includes(x)) out.push(x);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The curve's plan

export interface CurvePlan {
  /** The upper range (the slope the message reports), the two short lengths below it, and all of them in order. */
  upper: number[];
  lower: number[];
  lengths: number[];
}

export interface PlanSettings {
  /** Lengths in the upper range, and the fraction of the longest where it starts. */
  upperPoints: number;
  upperFraction: number;
  /** Repetitions of each length, and of the two short ones. */
  reps: number;
  shortReps: number;
  budgetMs: number;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/**
 * The lengths timed up to `top`: `upperPoints` spaced geometrically over the upper range, and two short ones (the
 * upper range's start times upperFraction, and half of it) that pin the fixed cost and the short-prompt rate.
 */
export function curveLengths(top: number, s: Pick<PlanSettings, 'upperPoints' | 'upperFraction'>): CurvePlan {
  const f = s.upperFraction;
  const upper = scalingLengths(top, s.upperPoints, 1 / f);
  const lower = [Math.round(top * f * f), Math.round((top * f) / 2)].filter((n) => n >= 16 && n < upper[0]);
  return { upper, lower, lengths: [...lower, ...upper] };
}

/**
 * The longest length from the prefill rate measured on a probe prompt: all repetitions of all lengths fit 70 % of
 * the budget, so a 200 tok/s server gets a shorter curve rather than a cut-off one; at least 256 tokens (or `cap`).
 */
export function longestLength(cap: number, rate: number | undefined, s: PlanSettings): { top: number; sizing: string } {
  const plan = curveLengths(cap, s);
  const sumFraction = (sum(plan.upper) + (sum(plan.lower) * s.shortReps) / s.reps) / cap;
  const fit = rate !== undefined ? Math.floor((0.7 * (s.budgetMs / 1000) * rate) / (s.reps * sumFraction)) : cap;
  const top = Math.max(Math.min(cap, 256), Math.min(cap, fit));
  const sizing = `longest prompt ${top} tokens${top < cap ? ` (of ${cap}), sized from the measured prefill rate ${fmt(rate, 0)} tok/s to fit the ${s.budgetMs / 1000} s budget` : ` (prefill rate ${fmt(rate, 0)} tok/s)`}`;
  return { top, sizing };
}

/** The curve's run time (s), from the warm-up's `topMs` at the longest length, prefill taken as linear. */
export function curveEstimateS(plan: CurvePlan, top: number, topMs: number, s: PlanSettings): number {
  const at = (ns: number[]) => sum(ns.map((n) => topMs * (n / top)));
  return (s.reps * at(plan.upper) + s.shortReps * at(plan.lower)) / 1000;
}

// ---------------------------------------------------------------------------------------------------------------
// The curve's samples and the check's verdict

/** What the requests at one length gave. */
export interface LengthSamples {
  /** TTFT of each request timed; a censored one (deadline hit) is its time, a lower bound. */
  ttft: (number | undefined)[];
  /** usage.prompt_tokens of the first answer that reported it. */
  counted?: number;
  censored: number;
}

const DEADLINE_KINDS = ['headers-timeout', 'token-idle', 'total-timeout'];

/**
 * One request at a length: `timed` (its TTFT), `censored` (it hit a deadline: its time is a lower bound, and longer
 * lengths are not worth timing), or `failed` (left out of the curve).
 */
export function addSample(
  s: LengthSamples,
  p: { ttft?: number; rec: Recording; counted?: number },
): 'timed' | 'censored' | 'failed' {
  s.counted ??= p.counted;
  if (p.ttft !== undefined) {
    s.ttft.push(p.ttft);
    return 'timed';
  }
  if (p.rec.failure && DEADLINE_KINDS.includes(p.rec.failure.kind)) {
    s.ttft.push(p.rec.tEnd); // censored: a lower bound of the TTFT
    s.censored++;
    return 'censored';
  }
  return 'failed';
}

/** The model's width: declared (modelWidth > 0, with what the server reports beside it when that differs), else reported. */
export function modelWidthOf(declared: number, reported: ModelWidth | undefined): ModelWidth | undefined {
  return declared > 0
    ? {
        value: declared,
        source: `declared (modelWidth)${reported && reported.value !== declared ? `; the server reports ${reported.value} (${reported.source})` : ''}`,
      }
    : reported;
}

/** What the check recorded. */
export interface CurveRecord {
  plan: CurvePlan;
  samples: Map<number, LengthSamples>;
  /** One line per failed request. */
  failures: string[];
  sizing: string;
  /** The probe's prefill rate (tok/s) that sized the curve. */
  probePrefillTps?: number;
  repetitions: number;
  shortRepetitions: number;
  tier: Tier;
  /** The served window, when one is known. */
  window?: { value: number; source: string };
  ev: Evidence[];
}

/** Not one length timed, every request refused: no curve to judge (inconclusive), else undefined. */
export function nothingTimed(o: Pick<CurveRecord, 'samples' | 'failures' | 'ev'>): Verdict | undefined {
  if (!o.failures.length || ![...o.samples.values()].every((s) => s.ttft.length === 0)) return undefined;
  return inconclusive(
    `no prompt length timed: ${o.failures.length} request(s) failed (${o.failures.slice(0, 3).join('; ')})`,
    { failures: o.failures },
    o.ev,
  );
}

interface CurveThresholds
  extends Pick<
    ScalingThresholds,
    'minPoints' | 'minSpreadMs' | 'excessFactor' | 'attentionCostFactor' | 'unexplainedFactor' | 'narrowestWidth'
  > {
  /** The window judged when the server reports none (tokens). */
  assumedWindowTokens: number;
  /** Our event loop late by more than this (p99, ms) means our timestamps are not the server's. */
  maxLoopDelayMs: number;
}

/** The curve judged (gradePrefillScaling, guarded against a starved client) as the check's verdict, the curve in its message. */
export function judgePrefillScaling(
  o: CurveRecord,
  t: CurveThresholds,
  width: ModelWidth | undefined,
  loop: { p99Ms: number; maxMs: number } | undefined,
): Verdict {
  const { samples, failures, sizing, ev } = o;
  const points: ScalingPoint[] = o.plan.lengths.map((n) => ({
    tokens: samples.get(n)!.counted ?? n,
    ttftMs: samples.get(n)!.ttft,
    censored: samples.get(n)!.censored,
  }));
  const st: ScalingThresholds = {
    fitPoints: o.plan.upper.length,
    minPoints: t.minPoints,
    minSpreadMs: t.minSpreadMs,
    windowTokens: o.window?.value ?? t.assumedWindowTokens,
    windowSource: o.window ? `served, ${o.window.source}` : 'assumed: no window known',
    excessFactor: t.excessFactor,
    attentionCostFactor: t.attentionCostFactor,
    unexplainedFactor: t.unexplainedFactor,
    narrowestWidth: t.narrowestWidth,
    width,
  };
  const g = gradePrefillScaling(points, st);
  const timing = guardStarvation(g, loop, t.maxLoopDelayMs, (d) =>
    gradePrefillScaling(scalingWorstCase(points, d), st),
  );
  const metrics = {
    curve: g.curve,
    fitted: g.fitted,
    slope: g.slope,
    slopeLow: g.low,
    slopeHigh: g.high,
    fit: g.fit,
    modelWidth: width,
    repetitions: o.repetitions,
    shortRepetitions: o.shortRepetitions,
    tier: o.tier,
    window: o.window?.value,
    raw: Object.fromEntries([...samples].map(([n, s]) => [n, s.ttft])),
    failures,
    loopDelay: loop,
    ...timing.figures,
    sizing,
    probePrefillTps: o.probePrefillTps,
  };
  const failed = failures.length
    ? `; ${failures.length} request(s) failed and are left out (${failures.slice(0, 3).join('; ')})`
    : '';
  const curveText =
    g.curve.map((c) => `${c.tokens}:${c.ttftMsP50 === undefined ? 'failed' : `${fmt(c.ttftMsP50)}ms`}`).join(' ') +
    failed +
    `; ${sizing}`;
  if (timing.outcome === 'fail') {
    return fail(
      {
        requirement:
          "Prefill time MUST NOT grow faster with the prompt than the model's attention explains (fixed cost removed, extrapolated to the window).",
        expected: width
          ? `the window's prefill under ${t.unexplainedFactor}x what attention in a ${width.value}-wide model explains, over the short-prompt rate's linear estimate`
          : `the window's prefill under ${t.unexplainedFactor}x what attention explains in any model ${t.narrowestWidth} or more wide`,
        actual: timing.reason,
        violations: [`TTFT medians (tokens:ms): ${curveText}`],
      },
      metrics,
      ev,
    );
  }
  if (timing.outcome === 'inconclusive') return inconclusive(`${timing.reason}; curve ${curveText}`, metrics, ev);
  if (timing.outcome === 'warn')
    return { ...warn(`${timing.reason}; curve ${curveText}`, metrics, ev), borderline: timing.borderline };
  return pass(`${timing.reason}; curve ${curveText}`, metrics, ev);
}
