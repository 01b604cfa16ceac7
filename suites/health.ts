// Family `health`: the health sentinel's finding (lib/server/sentinel.ts). The sentinel times one short streamed
// request at the start of the run, after every check that sends long, over-long, malformed or abandoned requests, and
// before every timing check; this check, last in the run, reports what it saw once: a server that stayed as fast as it
// started, one that slowed down and recovered while the sentinel waited, or one "degraded since <check>" (the timing
// checks after it were inconclusive naming it). It sends nothing itself (readsRun).
import type { CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import { fail, fmt, inconclusive, pass } from '../lib/model/verdict.ts';
import { readSentinel, SENTINEL } from '../lib/server/sentinel.ts';
import { faultProof, type Proof, passProof } from './support/proof.ts';

/** The family (scripts/families.ts derives its test file, its place in FAMILY_ORDER and its docs row from this). */
export const family: FamilySpec = {
  name: 'health',
  order: 1010,
  what: 'the server stays as fast as it started: a short probe after every disturbing check and before every timing check',
};

const line = `a median of ${SENTINEL.probes} probes ≥ ${SENTINEL.ratio}x its start and ≥ ${SENTINEL.floorMs} ms slower`;

export const checks: CheckDef[] = [
  {
    id: 'health.sentinel',
    title: 'the server is not markedly slower than at the start of the run after any check',
    level: 'MUST',
    rationale:
      'A server that answers every request after one long, over-long or malformed one several times slower fails every user after it; and every timing verdict measured after it grades the sickness, not the check.',
    reference:
      'docs/grading.md "Health sentinel"; issue seen on a llama.cpp fork: after one over-window request (HTTP 500 in 54 ms) short requests took 5.5 s, 15.6 s, 24 s, 34 s (0.02 s before)',
    requires: [],
    readsRun: true,
    timeoutMs: 10_000,
    async run(ctx) {
      if (!ctx.memory.ofRun)
        return inconclusive('not in a conformance run: the sentinel probes only between checks of a run');
      const s = readSentinel(ctx.memory);
      const metrics: Record<string, unknown> = {
        probeTokens: s.tokens,
        baseline: s.baseline,
        degraded: s.degraded,
        recovered: s.recovered,
        notGraded: s.notGraded,
        probes: s.probeCount,
        probeMs: s.probeMs,
        events: s.events,
        threshold: { ratio: SENTINEL.ratio, floorMs: SENTINEL.floorMs, probes: SENTINEL.probes },
      };
      if (!s.baseline) return inconclusive(`the sentinel was off: ${s.off ?? 'no baseline was measured'}`, metrics);
      const base = `baseline ${fmt(s.baseline.ttftMs)} ms TTFT, ${fmt(s.baseline.e2eMs)} ms end to end (${s.tokens}-token probe, median of ${s.baseline.samples})`;
      const probes = `${s.probeCount ?? 0} probes in ${fmt((s.probeMs ?? 0) / 1000, 1)} s`;
      if (s.degraded) {
        const d = s.degraded;
        return fail(
          {
            requirement:
              'After long, over-long, malformed or abandoned requests a server MUST keep serving a short request at the speed it had at the start of the run.',
            expected: `no lasting slowdown (degraded: ${line}, throughout a wait of ${fmt(d.waitedMs / 1000, 1)} s)`,
            actual: `degraded since ${d.since}: ${d.verdict.figures}`,
            violations: [
              `the last request before it: ${d.request ?? 'not recorded'}`,
              `${s.notGraded?.length ?? 0} timing check(s) not graded: ${(s.notGraded ?? []).join(', ') || 'none followed'}`,
              `${base}; ${probes}`,
            ],
          },
          metrics,
        );
      }
      const worst = (s.events ?? []).reduce<(typeof s.events & object)[number] | undefined>(
        (a, e) => (a && a.ratio >= e.ratio ? a : e),
        undefined,
      );
      const rec = s.recovered?.length
        ? `; slower for a while and recovered: ${s.recovered.map((r) => `after ${r.after} (${r.verdict}; recovered within ${fmt(r.waitedMs / 1000, 1)} s)`).join('; ')}`
        : '';
      const slowest = worst
        ? `; slowest probe ${fmt(worst.ratio)}x the start in TTFT, decode or end to end (${fmt(worst.slowerMs)} ms slower end to end, after ${worst.check})`
        : '';
      const head = s.recovered?.length ? 'no lasting slowdown' : 'the server kept its start speed';
      return pass(`${head}: ${base}${slowest}; ${probes}${rec}`, metrics);
    },
  },
];

// A run of two checks: the over-long prompts of context.over-window-400 (disturbing: the faults' trigger), then a timing
// check. Degraded: the timing check is not graded and the finding names the check. Recovering (4 s after the last
// over-long prompt, while the sentinel waits up to 4 s after its three slow probes): both graded normally.
// test/proofs.test.ts asserts the timing check's outcome both ways.
const RUN = { checks: ['context.over-window-400', 'stream.headers-early'], waitS: 4 };

export const proofs: Proof[] = [
  passProof('health.sentinel', { run: RUN, messageIncludes: ['kept its start speed', 'probes in'] }),
  faultProof(
    'health.sentinel',
    'health-degrade-after-over-long',
    ['degraded since context.over-window-400', 'not graded: stream.headers-early', 'the last request before it: POST'],
    { run: RUN },
  ),
  passProof('health.sentinel', {
    faults: ['health-recover-after-over-long'],
    run: RUN,
    messageIncludes: [
      'no lasting slowdown',
      'slower for a while and recovered: after context.over-window-400',
      'recovered within',
    ],
  }),
];
