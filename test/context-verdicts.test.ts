// The context family's verdicts as pure functions (lib/grading/context-window.ts, over-window.ts, healthy-after.ts,
// prefill-scaling.ts): each rule both ways, with the words its message must say. No HTTP: the proofs
// (test/proofs.test.ts) hold the same verdicts against the reference server and its faults.
import { describe, expect, test } from 'vitest';
import {
  fittingPrompt,
  type JudgedWindow,
  judgeMaxAccepted,
  judgeServedWindow,
  judgeWithinWindow,
  probeAnswer,
  type WindowPrompt,
  windowNote,
  windowText,
} from '../lib/grading/context-window.ts';
import {
  gradeAfterSet,
  judgeHealthyAfter,
  judgeServedAfter,
  type NormalRequest,
} from '../lib/grading/healthy-after.ts';
import {
  judgeOverWindowAnswers,
  judgeRejectionTiming,
  type OverWindowRun,
  rejectionTimes,
} from '../lib/grading/over-window.ts';
import {
  addSample,
  curveEstimateS,
  curveLengths,
  judgePrefillScaling,
  type LengthSamples,
  longestLength,
  modelWidthOf,
  nothingTimed,
} from '../lib/grading/prefill-scaling.ts';
import type { Recording } from '../lib/model/types.ts';

function rec(r: Partial<Recording> = {}): Recording {
  return {
    method: 'POST',
    url: 'http://127.0.0.1/v1/chat/completions',
    t0Abs: 0,
    headers: {},
    reads: [],
    tEnd: 10,
    body: new Uint8Array(),
    truncated: false,
    ...r,
  };
}

const W: JudgedWindow = { value: 4096, source: 'GET /v1/models max_model_len' };
const SLOTS: JudgedWindow = {
  value: 1024,
  source: 'GET /slots [0].n_ctx (per slot)',
  disagreement: { described: 'advertised 4096 (GET /v1/models max_model_len), each slot holds 1024', larger: [4096] },
};

describe('the window judged', () => {
  test('its text, and a note only where the server states a larger one', () => {
    expect(windowText(W)).toBe('4096-token window (GET /v1/models max_model_len)');
    expect(windowNote(W)).toBe('');
    expect(windowNote(SLOTS)).toContain('judged at 1024, the smallest it states');
    expect(windowNote(SLOTS, 'HTTP 500')).toContain('prompts between them get HTTP 500');
  });

  test('a prompt that fits leaves max_tokens and a margin', () => {
    expect(fittingPrompt(4096, 0.9, 1)).toBe(3686);
    expect(fittingPrompt(4096, 0.99, 16)).toBe(4096 - 16 - 82);
  });
});

describe('context.within-window', () => {
  const served = (fraction: number, sent: number, counted = sent): WindowPrompt => ({
    fraction,
    sent,
    counted,
    maxTokens: 16,
    rec: rec({ status: 200 }),
    json: { choices: [{ message: { content: 'ok' } }] },
    described: 'HTTP 200',
  });
  const o = { minCountedFraction: 0.8, calibration: {} };

  test('both served passes, naming the counts and the window', () => {
    const v = judgeWithinWindow([served(0.5, 2048), served(0.9, 3686)], W, o, []);
    expect(v.outcome).toBe('pass');
    expect(v.message).toContain('both served: 2048 prompt tokens → 200, 3686 prompt tokens → 200 (window 4096)');
  });

  test('a 4xx inside the window fails: the server enforces a smaller window', () => {
    const rejected: WindowPrompt = {
      ...served(0.9, 3686, undefined),
      rec: rec({ status: 400 }),
      json: { error: { message: 'maximum context length is 1024 tokens' } },
      described: 'HTTP 400',
    };
    const v = judgeWithinWindow([served(0.5, 2048), rejected], W, o, []);
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('1 of 2 prompts not served as sent: the server enforces a smaller window');
    expect(v.message).toContain(
      '90 % prompt (~3686 tokens of the 4096-token window, max_tokens 16): rejected — HTTP 400',
    );
  });

  test('a count well below the prompt is a silent truncation; a 200 without choices is named', () => {
    const v = judgeWithinWindow([served(0.5, 2048, 1000), { ...served(0.9, 3686), json: {} }], W, o, []);
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('usage.prompt_tokens is 1000: the prompt was silently truncated');
    expect(v.message).toContain('HTTP 200 without a choices array');
    expect(v.message).not.toContain('smaller window');
  });
});

describe('context.served-window', () => {
  const served = { value: 4096, source: 'GET /v1/models max_model_len' };
  test('unknown trained context skips; below it fails with both figures; equal passes', () => {
    expect(judgeServedWindow(served, undefined, 1).outcome).toBe('skip');
    const v = judgeServedWindow(served, { value: 32768, source: 'GET /v1/models trained_context' }, 1);
    expect(v.outcome).toBe('fail');
    expect(v.message).toContain('4096 tokens served');
    expect(v.message).toContain('32768 trained');
    expect(judgeServedWindow(served, { value: 4096, source: 'declared' }, 1).message).toContain('100.0 % served');
  });
});

describe('context.max-accepted', () => {
  test('what a probe answer counts as', () => {
    expect(probeAnswer({ status: 400 })).toBe('rejected');
    expect(probeAnswer({ status: 200 })).toBe('accepted');
    expect(probeAnswer({ failure: { kind: 'headers-timeout', message: '' } })).toBe('accepted');
    expect(probeAnswer({ status: 500 })).toBe('error');
    expect(probeAnswer({ failure: { kind: 'reset', message: '' } })).toBe('error');
  });

  const o = { acceptBoundMs: 500, resolution: 20, growUntil: 16384, growUntilFactor: 4, minAcceptedFraction: 0.9 };
  const probes = [{ tokens: 5120, answer: 'rejected' as const }];

  test('the advertised window usable passes; the confirmed count rescales the probes', () => {
    const v = judgeMaxAccepted(
      { largestAccepted: 4000, smallestRejected: 4020, probes, stop: 'resolution' },
      4080,
      W,
      o,
      [],
    );
    expect(v.outcome).toBe('pass');
    expect(v.message).toContain('largest accepted prompt 4080 tokens (usage.prompt_tokens), smallest rejected ≈ 4100');
    expect((v.metrics as { calibrationScale: number }).calibrationScale).toBeCloseTo(1.02, 10);
  });

  test('a quarter of the window usable fails; nothing rejected warns that the window is not enforced', () => {
    const small = judgeMaxAccepted(
      { largestAccepted: 1024, smallestRejected: 1040, probes, stop: 'resolution' },
      undefined,
      W,
      o,
      [],
    );
    expect(small.outcome).toBe('fail');
    expect(small.message).toContain('(calibrated estimate)');
    expect(small.message).toContain('only 25.0 % of the advertised window is usable');
    const none = judgeMaxAccepted({ largestAccepted: 16384, probes, stop: 'no-limit-found' }, undefined, W, o, []);
    expect(none.outcome).toBe('warn');
    expect(none.message).toContain('no prompt up to ~16384 tokens (4x the window) was rejected');
  });
});

describe('context.over-window-400', () => {
  const finding = (verdict: 'pass' | 'warn' | 'fail', kind: string, summary: string) =>
    ({ verdict, kind, summary }) as OverWindowRun['finding'];
  const run = (stream: boolean, f: OverWindowRun['finding'], r: Partial<Recording>): OverWindowRun => ({
    stream,
    finding: f,
    sent: 5325,
    rec: rec(r),
  });
  const rejected = (stream: boolean, ms: number) =>
    run(stream, finding('pass', 'rejected', `${stream ? 'stream' : 'non-stream'} request: HTTP 400 "too long"`), {
      status: 400,
      tHeaders: ms,
    });
  const t = { immediateMs: 100, failFraction: 0.75, warnFraction: 0.35, maxLoopDelayMs: 50 };

  test('no failing answer: nothing to fail; failing answers named once each, with where the server states more', () => {
    const record = { window: W, waitMs: 2000, prefills: [800], ev: [] };
    expect(judgeOverWindowAnswers({ ...record, runs: [rejected(false, 3), rejected(true, 4)] }, 1.3)).toBeUndefined();
    const e500 = finding('fail', 'server-error', 'request: HTTP 500 (a server error) instead of 400');
    // 1.3x the per-slot window of 1024, below the 4096 advertised.
    const runs = [run(false, e500, { status: 500 }), run(true, e500, { status: 500 })].map((r) => ({
      ...r,
      sent: 1332,
    }));
    const bad = judgeOverWindowAnswers({ ...record, window: SLOTS, runs }, 1.3)!;
    expect(bad.verdict.outcome).toBe('fail');
    expect(bad.verdict.message).toContain('instead of 400 (advertised 4096');
    expect(bad.verdict.message).toContain('prompts between them get HTTP 500');
    expect(bad.verdict.message).not.toContain('Violations');
    expect(bad.failed).toHaveLength(2);
  });

  test('an immediate rejection passes; one slower than a prefill fails; a warned answer warns', () => {
    const fast = [rejected(false, 3), rejected(true, 4), rejected(false, 5), rejected(true, 3)];
    expect(rejectionTimes(fast)).toEqual([3, 4, 5, 3]);
    const record = { window: W, waitMs: 2000, ev: [] };
    const pass = judgeRejectionTiming({ ...record, runs: fast, prefills: [800] }, t, undefined);
    expect(pass.outcome).toBe('pass');
    expect(pass.message).toContain('4 over-long requests (stream and non-stream) rejected: HTTP 400');
    const slow = [900, 950, 1000, 1100, 1000, 950].map((ms, i) => rejected(i % 2 === 1, ms));
    const prefilled = judgeRejectionTiming({ ...record, runs: slow, prefills: [800, 820, 810] }, t, undefined);
    expect(prefilled.outcome).toBe('fail');
    expect(prefilled.message).toContain('the server prefilled the prompt before rejecting it');
    const other = run(true, finding('warn', 'rejected-other-4xx', 'stream request: HTTP 413 "too long"'), {
      status: 413,
      tHeaders: 4,
    });
    const warned = judgeRejectionTiming(
      { ...record, runs: [rejected(false, 3), other], prefills: [800] },
      t,
      undefined,
    );
    expect(warned.outcome).toBe('warn');
    expect(warned.borderline).toBeUndefined();
    expect(warned.message).toContain('HTTP 413');
  });
});

describe('context.healthy-after', () => {
  const normal = (tps: number, served = true): NormalRequest => ({
    rec: served ? rec({ status: 200, tEnd: 24_000 / tps }) : rec({ status: 500 }),
    metrics: served ? { e2eMs: 24_000 / tps, completionTokens: 24, ttftMs: 20 } : undefined,
    served,
    described: served ? 'HTTP 200' : 'HTTP 500',
  });
  const set = (tps: number[]) => tps.map((x) => normal(x));
  const base = { tokens: 24, sizing: 'sized from the pace: 24 tokens per normal request', overWindow: [], ev: [] };
  const t = { failSlowdown: 1.5, warnSlowdown: 1.25, minSamples: 3, maxLoopDelayMs: 50 };
  const before = set([100, 101, 99, 100, 102, 98, 100]);

  test('unserved after: a fail, blocked when nothing before was served either', () => {
    const after = [normal(100), normal(0, false), normal(100)];
    const one = judgeServedAfter({ ...base, before, after })!;
    expect(one.blocked).toBe(false);
    expect(one.verdict.message).toContain('1 of 3 normal requests after the long ones failed: HTTP 500');
    const none = judgeServedAfter({ ...base, before: [normal(0, false)], after: [normal(0, false)] })!;
    expect(none.blocked).toBe(true);
    expect(none.verdict.message).toContain('none of the 1 normal requests before the long prompts');
    expect(judgeServedAfter({ ...base, before, after: before })).toBeUndefined();
  });

  test('same speed passes; a third of it, confirmed, fails; a transient first set is named beside a pass', () => {
    const same = gradeAfterSet(before, set([99, 100, 101, 100, 98, 102, 100]), t, undefined);
    const pass = judgeHealthyAfter({ ...base, before, after: before, first: same, cpu: {} }, 1.5);
    expect(pass.outcome).toBe('pass');
    expect(pass.message).toContain('before the long requests');
    const slowSet = set([33, 34, 33, 32, 33, 34, 33]);
    const slow = gradeAfterSet(before, slowSet, t, undefined);
    const failed = judgeHealthyAfter(
      { ...base, before, after: slowSet, first: slow, confirmation: { xs: slowSet, grade: slow }, cpu: {} },
      1.5,
    );
    expect(failed.outcome).toBe('fail');
    expect(failed.message).toContain('the server stays degraded after a long prompt');
    expect(failed.message).toContain('confirmed: the first set after the long requests gave 3');
    const transient = judgeHealthyAfter(
      { ...base, before, after: slowSet, first: slow, confirmation: { xs: before, grade: same }, cpu: {} },
      1.5,
    );
    expect(transient.outcome).toBe('pass');
    expect(transient.message).toContain('the confirmation was not: transient');
  });

  test('a slowdown a neighbour explains is inconclusive', () => {
    const slowSet = set([50, 51, 50, 49, 50, 51, 50]);
    const slow = gradeAfterSet(before, slowSet, t, undefined);
    const cpu = {
      before: { cores: 2, otherCores: 0.05, serverCores: 1, clientCores: 0.1 },
      after: { cores: 2, otherCores: 1, serverCores: 0.5, clientCores: 0.1 },
    };
    const v = judgeHealthyAfter(
      { ...base, before, after: slowSet, first: slow, confirmation: { xs: slowSet, grade: slow }, cpu },
      1.5,
    );
    expect(v.outcome).toBe('inconclusive');
    expect(v.message).toContain(', but ');
  });
});

describe('context.prefill-scaling', () => {
  const s = { upperPoints: 6, upperFraction: 0.25, reps: 3, shortReps: 9, budgetMs: 120_000 };

  test('the plan: two short lengths below a geometric upper range; the longest sized from the rate', () => {
    const plan = curveLengths(4096, s);
    expect(plan.lower).toEqual([256, 512]);
    expect(plan.upper[0]).toBe(1024);
    expect(plan.upper.at(-1)).toBe(4096);
    expect(plan.lengths).toEqual([...plan.lower, ...plan.upper]);
    expect(longestLength(4096, undefined, s)).toEqual({
      top: 4096,
      sizing: 'longest prompt 4096 tokens (prefill rate n/a tok/s)',
    });
    const slow = longestLength(4096, 200, s);
    expect(slow.top).toBeLessThan(4096);
    expect(slow.sizing).toContain('sized from the measured prefill rate 200 tok/s to fit the 120 s budget');
    expect(longestLength(4096, 1, s).top).toBe(256);
    expect(curveEstimateS(plan, 4096, 1000, s)).toBeCloseTo(
      (3 * plan.upper.reduce((a, b) => a + b, 0) + 9 * 768) / 4096,
      10,
    );
  });

  test('a sample is timed, censored at a deadline, or failed; the width declared or reported', () => {
    const ls: LengthSamples = { ttft: [], censored: 0 };
    expect(addSample(ls, { ttft: 12, rec: rec(), counted: 1000 })).toBe('timed');
    expect(addSample(ls, { rec: rec({ tEnd: 900, failure: { kind: 'total-timeout', message: '' } }) })).toBe(
      'censored',
    );
    expect(addSample(ls, { rec: rec({ status: 500 }), counted: 5 })).toBe('failed');
    expect(ls).toEqual({ ttft: [12, 900], censored: 1, counted: 1000 });
    expect(modelWidthOf(0, undefined)).toBeUndefined();
    expect(modelWidthOf(2048, { value: 256, source: 'meta.n_embd' })?.source).toBe(
      'declared (modelWidth); the server reports 256 (meta.n_embd)',
    );
    expect(modelWidthOf(0, { value: 256, source: 'meta.n_embd' })?.value).toBe(256);
  });

  const T = {
    minPoints: 5,
    minSpreadMs: 20,
    assumedWindowTokens: 65_536,
    excessFactor: 4,
    attentionCostFactor: 8,
    unexplainedFactor: 2,
    narrowestWidth: 512,
    maxLoopDelayMs: 50,
  };
  const recordOf = (ms: (n: number) => number, window?: { value: number; source: string }) => {
    const plan = curveLengths(4096, s);
    const samples = new Map(plan.lengths.map((n) => [n, { ttft: [ms(n), ms(n) * 1.01, ms(n) * 0.99], censored: 0 }]));
    return {
      plan,
      samples,
      failures: [],
      sizing: 'longest prompt 4096 tokens',
      repetitions: 3,
      shortRepetitions: 9,
      tier: 'quick' as const,
      window,
      ev: [],
    };
  };

  test('a linear curve passes with the curve in the message; a quadratic one past the physics fails', () => {
    const linear = judgePrefillScaling(
      recordOf((n) => 15 + 0.1 * n),
      T,
      undefined,
      undefined,
    );
    expect(linear.outcome).toBe('pass');
    expect(linear.message).toContain('close to linear');
    expect(linear.message).toContain('; curve 256:');
    const window = { value: 32768, source: 'GET /v1/models max_model_len' };
    const quad = judgePrefillScaling(
      recordOf((n) => 15 + (n * n) / 16_000, window),
      T,
      { value: 4096, source: 'declared (modelWidth)' },
      undefined,
    );
    expect(quad.outcome).toBe('fail');
    expect(quad.message).toContain('4096-wide model');
    expect(quad.message).toContain('faster than attention explains');
    expect((quad.metrics as { window: number }).window).toBe(32768);
  });

  test('not one length timed and requests failed: inconclusive, naming them', () => {
    const samples = new Map([[256, { ttft: [], censored: 0 }]]);
    expect(nothingTimed({ samples, failures: [], ev: [] })).toBeUndefined();
    const v = nothingTimed({ samples, failures: ['~256 tokens: HTTP 500'], ev: [] })!;
    expect(v.outcome).toBe('inconclusive');
    expect(v.message).toBe('no prompt length timed: 1 request(s) failed (~256 tokens: HTTP 500)');
  });
});
