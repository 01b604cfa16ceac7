// Run one check N times against a fresh reference server each time (optionally with faults, a decode speed, a CPU
// burner beside it) and count the graded outcomes: how often a proof would flake (issue 8: "about 1 run in 5 against a
// real phantom stream grades warn instead of fail", measured here over >= 20 runs).
//
//   node --import tsx scripts/repeat-check.ts --check metrics.gen-tps-plausible [--fault stream-role-now-content-at-end]
//        [--decode-tps 125] [--iterations 20] [--burner]
import { randomBytes } from 'node:crypto';
import { startReference } from '../fixtures/reference-server/spawn.ts';
import { grade, runCheck } from '../lib/check/check.ts';
import { type Burner, startBurner } from '../lib/measure/cpu-burner.ts';
import { freshMemory } from '../lib/model/memory.ts';
import { loadFamily } from './support/speed-matrix.ts';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const get = (k: string) => {
    const i = argv.indexOf(k);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const id = get('--check');
  if (!id) throw new Error('--check <id> is required');
  const faults = argv.flatMap((a, i) => (a === '--fault' && argv[i + 1] ? ['--fault', argv[i + 1]!] : []));
  const tps = get('--decode-tps');
  const iterations = Math.max(1, Math.min(500, Number(get('--iterations') ?? 20)));
  const check = (await loadFamily(id.split('.')[0]!)).checks.find((c) => c.id === id);
  if (!check) throw new Error(`no check ${id}`);
  let burner: Burner | undefined;
  if (argv.includes('--burner')) burner = startBurner({ maxMs: iterations * 120_000 });
  const counts: Record<string, number> = {};
  try {
    for (let i = 1; i <= iterations; i++) {
      const ref = await startReference([...faults, ...(tps ? ['--decode-tps', tps] : [])]);
      try {
        const { verdict, ms } = await runCheck(check, {
          memory: freshMemory(),
          profile: ref.profile,
          server: ref.info,
          runId: randomBytes(4).toString('hex'),
          log: () => undefined,
        });
        const g = grade(check, verdict, ref.profile, false);
        counts[g.outcome] = (counts[g.outcome] ?? 0) + 1;
        const stall = (verdict.metrics as { clientStallMs?: number } | undefined)?.clientStallMs;
        console.log(
          `${String(i).padStart(3)}: ${g.outcome.padEnd(12)} ${Math.round(ms)} ms${stall !== undefined ? `, client stall allowance ${stall.toFixed(1)} ms` : ''}${g.outcome === 'fail' || g.outcome === 'pass' ? '' : ` — ${g.message.split('\n')[0]!.slice(0, 240)}`}`,
        );
      } finally {
        await ref.stop();
      }
    }
  } finally {
    await burner?.stop();
  }
  console.log(
    `${id}${faults.length ? ` with ${faults.filter((_, i) => i % 2).join(',')}` : ''}${tps ? ` at ${tps} tok/s` : ''}${burner ? ' (CPU burner beside it)' : ''}: ${Object.entries(
      counts,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')} of ${iterations}`,
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
