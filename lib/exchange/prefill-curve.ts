// context.prefill-scaling's requests: a probe prompt whose prefill rate sizes the curve, a warm-up at the longest
// length, then every length timed in rounds until the budget is spent. The plan and the verdict are
// lib/grading/prefill-scaling.ts's.

import {
  addSample,
  type CurvePlan,
  type CurveRecord,
  curveEstimateS,
  curveLengths,
  type LengthSamples,
  longestLength,
  type PlanSettings,
} from '../grading/prefill-scaling.ts';
import type { Requester } from '../model/check.ts';
import type { Evidence, Recording } from '../model/types.ts';
import { fmt } from '../model/verdict.ts';
import { describeExchange } from './exchange.ts';
import { exchangeEvidence, promptTokensOf, timedPrefill } from './long-prompts.ts';

/**
 * Time the curve: each length `reps` times and the short ones `shortReps` times, in rounds over the lengths, until
 * the budget is spent; a length that hits a deadline ends the longer ones.
 */
async function timeCurve(
  req: Requester,
  plan: CurvePlan,
  o: { reps: number; shortReps: number; budgetMs: number; t0: number },
  ev: Evidence[],
): Promise<{ samples: Map<number, LengthSamples>; failures: string[]; failedRecs: Recording[] }> {
  const samples = new Map<number, LengthSamples>(plan.lengths.map((n) => [n, { ttft: [], censored: 0 }]));
  let cutoff = Infinity; // lengths at or above this are skipped (budget or deadline)
  const failures: string[] = [];
  const failedRecs: Recording[] = [];
  for (let rep = 0; rep < o.shortReps; rep++) {
    for (const n of plan.lengths) {
      if (n >= cutoff || (rep >= o.reps && !plan.lower.includes(n))) continue;
      const left = o.budgetMs - (performance.now() - o.t0);
      if (left < 1_000) {
        cutoff = n;
        break;
      }
      const p = await timedPrefill(req, n, { headersMs: left, tokenIdleMs: left, totalMs: left }, rep * 31 + n);
      const got = addSample(samples.get(n)!, { ttft: p.ttft, rec: p.x.rec, counted: promptTokensOf(p.x) });
      if (got === 'censored') cutoff = n;
      else if (got === 'failed') {
        failures.push(`~${n} tokens: ${describeExchange(p.x)}`);
        failedRecs.push(p.x.rec);
        if (ev.length < 20) ev.push(exchangeEvidence(`failed request at ~${n} tokens`, p.x));
      }
    }
    req.log(`repetition ${rep + 1}/${o.shortReps} done (${fmt((performance.now() - o.t0) / 1000, 1)} s)`);
  }
  return { samples, failures, failedRecs };
}

/** The curve as measured: what judgePrefillScaling reads of it, and the failed requests. */
type RecordedCurve = Pick<CurveRecord, 'plan' | 'samples' | 'failures' | 'sizing' | 'probePrefillTps' | 'ev'> & {
  failedRecs: Recording[];
};

/** The curve measured, up to `cap` tokens: its plan and sizing, every length's samples, the evidence. */
export async function recordCurve(req: Requester, s: PlanSettings & { cap: number }): Promise<RecordedCurve> {
  const t0 = performance.now();
  const remaining = () => Math.max(1_000, s.budgetMs - (performance.now() - t0));
  const left = () => ({ headersMs: remaining(), tokenIdleMs: remaining(), totalMs: remaining() });
  // The longest length from the measured prefill rate (one probe prompt of up to 1024 tokens).
  const probe = await timedPrefill(req, Math.min(s.cap, 1024), left(), 3);
  const rate = probe.ttft !== undefined && probe.ttft > 0 ? (probe.sent / probe.ttft) * 1000 : undefined;
  const { top, sizing } = longestLength(s.cap, rate, s);
  const plan = curveLengths(top, s);
  const { lengths, lower } = plan;
  // Warm-up at the top length: dropped from the fit, and the anchor of the run-time estimate.
  const warm = await timedPrefill(req, top, left());
  const topMs = warm.ttft ?? warm.x.rec.tEnd;
  req.log(
    `estimate: ~${fmt(curveEstimateS(plan, top, topMs, s), 1)} s (${lengths.length} lengths ${lengths[0]}…${top} tokens × ${s.reps} repetitions, the ${lower.length} shortest × ${s.shortReps}; a ${top}-token prefill took ${fmt(topMs)} ms; ${sizing})`,
  );
  const ev: Evidence[] = [exchangeEvidence(`warm-up ~${top} tokens (dropped)`, warm.x)];
  const curve = await timeCurve(req, plan, { ...s, t0 }, ev);
  return { plan, sizing, probePrefillTps: rate, ev, ...curve };
}
