// Family `capacity`: how much a server serves, with every figure certified on the streams that produced it (issue 23).
// A concurrency sweep to saturation and request-rate runs (lib/capacity/run.ts), recorded once per run and server
// and read by every check here; the table goes to results.json (top-level `capacity`) and the console. It runs only
// when asked (--capacity, or "capacity" in the profile): never in the quick PR gate by default. docs/capacity.md.

import { isServerFlag, NOT_JUDGED } from '../lib/capacity/certify.ts';
import { capacityConfig } from '../lib/capacity/config.ts';
import { levelName } from '../lib/capacity/peer-columns.ts';
import { type CapacityRun, runCapacity } from '../lib/capacity/run.ts';
import { judgeCollapse, judgeErrorsBelowSlots, judgeStarvation, VERDICT_THRESHOLDS } from '../lib/capacity/verdicts.ts';
import { incompleteVerdict, shared } from '../lib/exchange/recordings.ts';
import type { CheckContext, CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { CapacityProfile, Verdict } from '../lib/model/types.ts';
import { borderline, fail, inconclusive, pass } from '../lib/model/verdict.ts';
import { capacityLines } from '../reporters/capacity-table.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';

export const family: FamilySpec = {
  name: 'capacity',
  order: 115,
  timing: true,
  headline: false,
  what: 'opt-in (--capacity): concurrency sweep to saturation, request-rate runs, goodput under an SLO, every figure certified; no collapse, errors or starvation under load',
};

/** A whole sweep with rate runs: minutes on a real server (each level is `rounds` requests per stream). */
const TIMEOUT_MS = 900_000;
/** Share of the check's bound the run may spend (the rest: grading, a slower last level than estimated). */
const BUDGET_SHARE = 0.8;

const REF = 'issue 23 (capacity figures certified); seed study 004 (32-parallel table); docs/capacity.md "Verdicts"';

/** The run, recorded once per run and server and shared by every capacity check. */
async function capacityRun(ctx: CheckContext): Promise<CapacityRun | Verdict> {
  const cfg = capacityConfig(ctx.profile, ctx.settings);
  const r = await shared(
    ctx,
    'capacity',
    () => runCapacity(ctx, cfg, BUDGET_SHARE * (ctx.check.timeoutMs ?? TIMEOUT_MS)),
    (run) => run.recordings,
  );
  if (r.incomplete) return incompleteVerdict(r, 'the capacity run finished');
  return r.value;
}
const isVerdict = (x: CapacityRun | Verdict): x is Verdict => 'outcome' in x;

function fromJudged(j: ReturnType<typeof judgeCollapse>): Verdict {
  switch (j.outcome) {
    case 'pass':
      return pass(j.message, j.metrics);
    case 'inconclusive':
      return inconclusive(j.message, j.metrics);
    case 'borderline':
      return borderline(j.message, j.metrics);
    case 'fail':
      return fail(
        { requirement: j.message.split(':')[0]!, expected: 'see docs/capacity.md "Verdicts"', actual: j.message },
        j.metrics,
      );
  }
}

export const checks: CheckDef[] = [
  {
    id: 'capacity.sweep',
    title: 'the capacity table: concurrency sweep to saturation and request-rate runs, each level certified',
    level: 'INFO',
    rationale:
      'People choosing a server need how much it serves at what latency; a figure printed without the checks that make it true (a burst read as 14000 tok/s) misleads them.',
    reference: REF,
    requires: ['openai-chat'],
    provides: ['capacity_table'],
    timeoutMs: TIMEOUT_MS,
    async run(ctx) {
      const run = await capacityRun(ctx);
      if (isVerdict(run)) return run;
      const t = run.table;
      const text = capacityLines(t).join('\n');
      const metrics = {
        levels: t.levels.length,
        saturationConcurrency: t.saturation?.concurrency,
        saturationTps: t.saturation?.aggregateTps,
        flagged: t.levels.reduce((a, l) => a + l.flags.length, 0),
        notes: run.notes,
        capacity: t,
      };
      if (!t.levels.some((l) => l.completed > 0)) return inconclusive(`no request was served:\n${text}`, metrics);
      return pass(text, metrics);
    },
  },
  {
    id: 'capacity.figures-certified',
    title: "every capacity figure is certified on its level's own streams",
    level: 'SHOULD',
    rationale:
      'A throughput or latency figure from burst-delivered streams, usage that does not count the stream, or beyond the hardware is not a decode rate: it must not be reported as one.',
    reference: `${REF}; docs/grading.md "Measuring"; lib/grading/phantom.ts`,
    requires: ['openai-chat'],
    provides: ['capacity_table'],
    timeoutMs: TIMEOUT_MS,
    async run(ctx) {
      const run = await capacityRun(ctx);
      if (isVerdict(run)) return run;
      const levels = run.table.levels;
      const name = levelName;
      const server = levels.flatMap((l) => l.flags.filter(isServerFlag).map((f) => `${name(l)}: ${f.reason}`));
      const ours = levels.filter((l) => l.client.clientBound).map((l) => `${name(l)}: ${l.client.reason}`);
      // One entry per level: a level's unjudged delivery flags its four rate and latency figures with one reason.
      const unjudged = levels.flatMap((l) => {
        const f = l.flags.find((x) => x.reason.startsWith(NOT_JUDGED));
        return f ? [`${name(l)}: ${f.reason}`] : [];
      });
      const metrics = {
        levels: levels.length,
        flagged: server.length,
        clientBound: ours.length,
        notJudged: unjudged.length,
      };
      if (server.length)
        return fail(
          {
            requirement: 'capacity figures must come from real streaming, consistent usage and plausible rates',
            expected:
              "every level's streams certified (streamed, usage ≥ streamed events, server timings within 2x, within the hardware)",
            actual: `${server.length} flagged figure(s) on ${levels.length} level(s)`,
            violations: server,
          },
          metrics,
        );
      if (ours.length)
        return inconclusive(`our client was the bottleneck at ${ours.length} level(s): ${ours.join('; ')}`, metrics);
      if (unjudged.length)
        return inconclusive(
          `delivery could not be judged at ${unjudged.length} of ${levels.length} level(s), so their rate and latency figures are not certified (longer answers, or fewer streams, let a burst be told from a stream): ${unjudged.join('; ')}`,
          metrics,
        );
      return pass(`every figure of ${levels.length} level(s) certified on its own streams`, metrics);
    },
  },
  {
    id: 'capacity.no-collapse',
    title: 'throughput past saturation does not collapse',
    level: 'SHOULD',
    rationale:
      'Overload should queue requests, not lose throughput: a server that serves markedly less when offered more falls over exactly when it is needed.',
    reference: REF,
    requires: ['openai-chat'],
    timeoutMs: TIMEOUT_MS,
    thresholds: { collapseBelow: VERDICT_THRESHOLDS.collapseBelow },
    async run(ctx) {
      const run = await capacityRun(ctx);
      if (isVerdict(run)) return run;
      return fromJudged(judgeCollapse(run.table, ctx.threshold('collapseBelow')));
    },
  },
  {
    id: 'capacity.no-errors-below-slots',
    title: "no request errors at or below the server's slot count",
    level: 'MUST',
    rationale:
      'A server that fails requests at a load it says it serves (its slots) breaks every client that stays within it; 429/503 belong above the slots.',
    reference: `${REF}; docs/grading.md "Declared and discovered capabilities"`,
    requires: ['openai-chat'],
    provides: ['capacity_table'],
    timeoutMs: TIMEOUT_MS,
    async run(ctx) {
      const run = await capacityRun(ctx);
      if (isVerdict(run)) return run;
      const declared =
        ctx.server.slots ?? (ctx.profile.slots ? { value: ctx.profile.slots, source: 'declared' } : undefined);
      const sat = run.table.saturation?.concurrency;
      if (!declared && sat === undefined)
        return inconclusive('no slot count: none declared or reported, and the sweep found no saturation point');
      const slots = declared?.value ?? sat!;
      const source = declared ? declared.source : 'measured: the saturation point of the sweep';
      return fromJudged(judgeErrorsBelowSlots(run.table, slots, source));
    },
  },
  {
    id: 'capacity.no-starvation',
    title: 'no request starves at saturation (p99 TTFT within a multiple of the median)',
    level: 'SHOULD',
    rationale:
      'A scheduler that passes some requests over makes their users wait many times what everyone else waits: the median hides it, the p99 shows it.',
    reference: REF,
    requires: ['openai-chat'],
    timeoutMs: TIMEOUT_MS,
    thresholds: { starvationFactor: VERDICT_THRESHOLDS.starvationFactor },
    async run(ctx) {
      const run = await capacityRun(ctx);
      if (isVerdict(run)) return run;
      return fromJudged(judgeStarvation(run.table, ctx.threshold('starvationFactor')));
    },
  },
];

/** Short levels for the proofs: few tokens on the reference server's fast decode (CI share of issue 23). */
export const PROOF_CAPACITY: CapacityProfile = {
  maxConcurrency: 16,
  rounds: 3,
  minLevelMs: 400,
  inputTokens: 16,
  // 32 tokens at the reference server's 8 ms steps: a request of ~0.3 s, beside which a stream's turnaround between
  // requests (which leaves its slot idle at exactly 4 streams) stays within the noise band.
  outputTokens: 32,
  rateFractions: [0.5],
  rateRequests: 12,
  slo: { ttftP99Ms: 1000 },
};
const withCapacity = { profile: { capacity: PROOF_CAPACITY } };
/** Fault proofs need no exact saturation point: shorter requests. */
const FAST: CapacityProfile = { ...PROOF_CAPACITY, outputTokens: 16 };

export const proofs: Proof[] = [
  // The saturation point is the slot count, or one doubling past it on a loaded machine: in a closed loop a slot idles
  // while its stream turns the next request around, which a queue of waiting requests (twice the slots) hides.
  passProof('capacity.sweep', { ...withCapacity, messageIncludes: [/saturation at (4|8) streams/] }),
  // The variant: a server with 1 slot saturates at 1 stream (the point follows the server, not the sweep).
  passProof('capacity.sweep', {
    serverArgs: ['--slots', '1'],
    profile: { slots: 1, capacity: { ...PROOF_CAPACITY, rateFractions: [] } },
    messageIncludes: [/saturation at (1|2) streams/],
  }),
  passProof('capacity.figures-certified', { ...withCapacity, messageIncludes: ['certified on its own streams'] }),
  passProof('capacity.no-collapse', { ...withCapacity, messageIncludes: ['no collapse under overload'] }),
  passProof('capacity.no-errors-below-slots', { ...withCapacity, messageIncludes: ['every request served'] }),
  passProof('capacity.no-starvation', { ...withCapacity, messageIncludes: ['no starvation at saturation'] }),
  faultProof('capacity.figures-certified', 'stream-burst-at-end', ['burst delivery, not a decode rate', 'ITL p50'], {
    profile: { capacity: { ...FAST, rateFractions: [] } },
    expect: 'warn',
  }),
  // Answers too short to tell a burst from a stream (4 tokens, under the phantom rules' minimum): nothing certified,
  // nothing accused — inconclusive, naming what could not be judged.
  passProof('capacity.figures-certified', {
    profile: { capacity: { ...FAST, outputTokens: 4, maxConcurrency: 2, rateFractions: [] } },
    expect: 'inconclusive',
    messageIncludes: ['delivery could not be judged', 'too short to tell', 'nor could answers of two lengths'],
  }),
  // Held answers with no server timings: every token within our client's lag, so the streams alone cannot tell; the
  // answers' length can (TTFT grows with it): burst delivery, named as told by length. The same profile as the "too
  // short" proof would be unknown on the correct server (its 4-token answers move TTFT by less than the noise floor).
  faultProof(
    'capacity.figures-certified',
    'capacity-held-answers',
    ['burst delivery, not a decode rate', 'answers held to the end, told by their length', 'TTFT grew'],
    { profile: { capacity: { ...PROOF_CAPACITY, maxConcurrency: 1, rateFractions: [] } }, expect: 'warn' },
  ),
  faultProof('capacity.figures-certified', 'capacity-usage-undercount', ['usage does not count what was streamed'], {
    profile: { capacity: { ...FAST, maxConcurrency: 4, rateFractions: [] } },
    expect: 'warn',
  }),
  faultProof('capacity.figures-certified', 'metrics-timings-lie', ["disagrees with the server's own timings"], {
    profile: { capacity: { ...FAST, maxConcurrency: 4, rateFractions: [] } },
    expect: 'warn',
  }),
  faultProof('capacity.no-collapse', 'capacity-collapse', ['throughput collapses under overload', 'interval'], {
    profile: { capacity: { ...FAST, rateFractions: [] } },
    expect: 'warn',
  }),
  faultProof('capacity.no-errors-below-slots', 'capacity-errors-past', ['requests failed at or below', '4 slots'], {
    profile: { capacity: { ...FAST, rateFractions: [] } },
  }),
  faultProof('capacity.no-starvation', 'capacity-starvation', ['starvation at', 'TTFT p99'], {
    // Held requests stretch every level by the hold: a shorter sweep, no rate runs.
    profile: { capacity: { ...FAST, maxConcurrency: 8, rateFractions: [] } },
    expect: 'warn',
  }),
];
