// The two ends of the speed proof matrix, in CI (issue 8 item 3; the whole grid is `npm run sweep`). Real HTTP to a
// real reference-server process at 3 and 3000 tok/s:
//  - at 3 tok/s the checks that used to end `error` on our own bounds (stream.ttft-before-end,
//    metrics.gen-tps-plausible, parallel.speedup-2, api.stop-sequence) and stream.spread, which failed the server on a
//    recording we had cut short, pass: their work is sized from the speed they measure;
//  - at 3000 tok/s every check of the timing families passes (a correct fast server is not phantom, not bursty);
//  - the burst and phantom faults are still caught at 5 tok/s, and burst, phantom, serialisation, slowdown and decay
//    at 3000 tok/s. (Slowdown and decay at 5 tok/s take 2 minutes between them: the sweep proves them.)
// Budget: about 3.5 minutes. The slow end waits on servers that decode 3-5 tokens a second, not on the CPU: its tests
// run concurrently, and each of its slow checks against a server of its own (as a run's fresh memory would meet it);
// the fast end keeps the machine to itself, one run at a time.
import { describe, expect, test } from 'vitest';
import {
  faultProofs,
  MATRIX_FAULTS,
  runCatalogue,
  runFaultProof,
  speedArgs,
  speedProfile,
  TIMING_FAMILIES,
} from '../scripts/support/speed-matrix.ts';

const SLOW_CHECKS = [
  'api.stop-sequence',
  'stream.ttft-before-end',
  'stream.spread',
  'metrics.gen-tps-plausible',
  'parallel.speedup-2',
];
const problems = (rows: Array<{ id: string; outcome: string; message: string }>) =>
  rows.filter((r) => r.outcome !== 'pass').map((r) => `${r.id}: ${r.outcome}: ${r.message.split('\n')[0]}`);

describe('speed matrix: the slow end', { concurrent: true }, () => {
  test('a correct server at 3 tok/s passes the checks that used to end on our own bounds', {
    timeout: 300_000,
  }, async () => {
    const runs = await Promise.all(
      SLOW_CHECKS.map((id) =>
        runCatalogue(`correct @ 3 tok/s: ${id}`, speedArgs(3), {
          families: [id.split('.')[0]!],
          only: [id],
          profile: speedProfile(3),
        }),
      ),
    );
    const rows = runs.flatMap((r) => r.rows);
    expect(rows.map((r) => r.id)).toEqual(SLOW_CHECKS);
    expect(problems(rows)).toEqual([]);
    // Each says what it sized its work from.
    for (const id of ['stream.ttft-before-end', 'parallel.speedup-2'])
      expect(rows.find((r) => r.id === id)!.message).toContain('sized from the measured speed');
  });

  for (const name of ['burst', 'phantom'] as const) {
    test(`the ${name} fault is still caught at 5 tok/s`, { timeout: 300_000 }, async () => {
      const proofs = (await faultProofs(MATRIX_FAULTS[name]!)).filter((p) =>
        ['stream.ttft-before-end', 'metrics.gen-tps-plausible'].includes(p.check),
      );
      expect(proofs.length).toBeGreaterThan(0);
      for (const p of proofs) {
        const row = await runFaultProof(p, 5);
        expect(row.caught, `${p.check} with ${row.fault} at 5 tok/s: ${row.outcome}: ${row.message}`).toBe(true);
      }
    });
  }
});

describe('speed matrix: the fast end', () => {
  test('a correct server at 3000 tok/s passes every timing check (0 fail, 0 error)', { timeout: 300_000 }, async () => {
    const run = await runCatalogue('correct @ 3000 tok/s', speedArgs(3000), {
      families: TIMING_FAMILIES,
      profile: speedProfile(3000),
    });
    const bad = run.rows.filter((r) => r.outcome === 'fail' || r.outcome === 'error');
    expect(bad.map((r) => `${r.id}: ${r.outcome}: ${r.message.split('\n')[0]}`)).toEqual([]);
    const phantom = run.rows.find((r) => r.id === 'metrics.gen-tps-plausible')!;
    expect(phantom.outcome).toBe('pass');
  });

  test('burst, phantom, serialisation, slowdown and decay are still caught at 3000 tok/s', {
    timeout: 300_000,
  }, async () => {
    const missed: string[] = [];
    for (const fault of Object.values(MATRIX_FAULTS)) {
      for (const p of await faultProofs(fault)) {
        const row = await runFaultProof(p, 3000);
        if (!row.caught)
          missed.push(`${p.check} with ${fault}: ${row.outcome} (expected ${p.expect}): ${row.message.split('\n')[0]}`);
      }
    }
    expect(missed).toEqual([]);
  });
});
