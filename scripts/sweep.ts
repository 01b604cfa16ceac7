// The speed sweep (issue 8, item 3): the reference server's whole quick-tier catalogue at several decode speeds, a
// server whose speed changes 200x during the run, and the timing faults at the slow and the fast end. Prints a table
// and writes reports/sweep.json. Outside CI (about 40 minutes); CI runs the two ends of the timing families
// (test/speed-matrix.test.ts).
//
//   npm run sweep -- [--speeds 3,30,300,3000] [--fault-speeds 5,3000] [--faults burst,phantom,serialisation,slowdown,decay]
//                    [--no-change] [--families stream,metrics] [--burner] [--out reports/sweep.json]
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ROOT } from '../lib/config/profile.ts';
import { type Burner, startBurner } from '../lib/measure/cpu-burner.ts';
import { FAMILY_ORDER } from '../vitest.config.ts';
import {
  type CatalogueRun,
  type FaultRow,
  faultProofs,
  MATRIX_FAULTS,
  runCatalogue,
  runFaultProof,
  speedArgs,
  speedProfile,
} from './support/speed-matrix.ts';

function args(argv: string[]) {
  const get = (k: string) => {
    const i = argv.indexOf(k);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const list = (k: string, d: string) =>
    (get(k) ?? d)
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
  return {
    speeds: list('--speeds', '3,30,300,3000').map(Number),
    faultSpeeds: list('--fault-speeds', '5,3000').map(Number),
    faults: list('--faults', Object.keys(MATRIX_FAULTS).join(',')),
    change: !argv.includes('--no-change'),
    families: get('--families') ? list('--families', '') : FAMILY_ORDER.filter((f) => f !== 'setup'),
    burner: argv.includes('--burner'),
    out: get('--out') ?? resolve(ROOT, 'reports', 'sweep.json'),
  };
}

const OUTCOMES = ['pass', 'warn', 'inconclusive', 'skip', 'known', 'fail', 'error'] as const;
const pad = (s: string | number, n: number) => String(s).padEnd(n);

function catalogueTable(runs: CatalogueRun[]): string {
  const lines = [`${pad('server', 34)}${OUTCOMES.map((o) => pad(o, 13)).join('')}time`];
  for (const r of runs) {
    lines.push(
      `${pad(r.label, 34)}${OUTCOMES.map((o) => pad(r.counts[o] ?? 0, 13)).join('')}${(r.ms / 1000).toFixed(0)} s`,
    );
    for (const row of r.rows.filter((x) => x.outcome !== 'pass' && x.outcome !== 'skip'))
      lines.push(`    ${row.outcome.padEnd(13)}${row.id}: ${row.message.split('\n')[0]!.slice(0, 160)}`);
  }
  return lines.join('\n');
}

function faultTable(rows: FaultRow[], speeds: number[]): string {
  const lines = [`${pad('fault', 16)}${pad('check', 28)}${speeds.map((s) => pad(`${s} tok/s`, 26)).join('')}`];
  const keys = [...new Set(rows.map((r) => `${r.fault}|${r.check}`))];
  for (const k of keys) {
    const [fault, check] = k.split('|') as [string, string];
    const cells = speeds.map((s) => {
      const r = rows.find((x) => x.fault === fault && x.check === check && x.decodeTps === s);
      return pad(r ? `${r.caught ? 'caught' : 'MISSED'} (${r.outcome}, ${(r.ms / 1000).toFixed(0)} s)` : '-', 26);
    });
    lines.push(`${pad(fault, 16)}${pad(check, 28)}${cells.join('')}`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const a = args(process.argv.slice(2));
  const log = (l: string) => console.log(l);
  const runs: CatalogueRun[] = [];
  const faults: FaultRow[] = [];
  let burner: Burner | undefined;
  const t0 = performance.now();
  try {
    if (a.burner) burner = startBurner({ maxMs: 3 * 3600_000 });
    for (const tps of a.speeds) {
      runs.push(
        await runCatalogue(`correct @ ${tps} tok/s`, speedArgs(tps), {
          families: a.families,
          profile: speedProfile(tps),
          log,
        }),
      );
    }
    if (a.change) {
      // 600 tok/s, and every other 20 s a neighbour takes the machine: 3 tok/s (200x slower) until it leaves.
      runs.push(
        await runCatalogue(
          'correct @ 600 <-> 3 tok/s (20 s)',
          speedArgs(600, ['--slow-step-ms', '333.3', '--slow-period-ms', '20000']),
          { families: a.families, profile: speedProfile(600), log },
        ),
      );
    }
    for (const name of a.faults) {
      const fault = MATRIX_FAULTS[name] ?? name;
      for (const proof of await faultProofs(fault))
        for (const tps of a.faultSpeeds) faults.push({ ...(await runFaultProof(proof, tps, log)), fault: name });
    }
  } finally {
    await burner?.stop();
  }
  const out = { when: new Date().toISOString(), burner: a.burner, ms: performance.now() - t0, catalogue: runs, faults };
  mkdirSync(dirname(a.out), { recursive: true });
  writeFileSync(a.out, JSON.stringify(out, null, 2));
  console.log(`\nreference server, quick tier${a.burner ? ', CPU burner beside it' : ''}\n${catalogueTable(runs)}`);
  if (faults.length)
    console.log(
      `\ntiming faults (caught = the proof's expected outcome and message)\n${faultTable(faults, a.faultSpeeds)}`,
    );
  console.log(`\n${((performance.now() - t0) / 60_000).toFixed(1)} min; written to ${a.out}`);
  const bad = runs.some((r) => (r.counts.fail ?? 0) + (r.counts.error ?? 0) > 0) || faults.some((f) => !f.caught);
  process.exitCode = bad ? 1 : 0;
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
