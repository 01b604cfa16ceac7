// Soak (outside CI; issue 4 "Done when" (2)): the `cycles` and `parallel` families run N times (default 20) for real
// against the reference server while a CPU burner holds the other core. Prints every non-pass with its message, the
// outcome counts per check, and the spread of the speedup and slope figures; writes reports/soak.json.
//
//   node --import tsx scripts/burner-soak.ts [--iterations 20] [--tier quick|full] [--no-burner] [--fault NAME]
//        [--out reports/soak.json]
//
// Each iteration starts a fresh reference server (as a Vitest run does), so memory and request counters start over.

import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startReference } from '../fixtures/reference-server/spawn.ts';
import { grade, runCheck } from '../lib/check/check.ts';
import { type Burner, startBurner } from '../lib/measure/cpu-burner.ts';
import { quantile } from '../lib/measure/stats.ts';
import { freshMemory } from '../lib/model/memory.ts';
import { checks as cycleChecks } from '../suites/cycles.ts';
import { checks as parallelChecks } from '../suites/parallel.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function args(argv: string[]) {
  const get = (k: string) => {
    const i = argv.indexOf(k);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const tier = get('--tier') ?? 'quick';
  if (tier !== 'quick' && tier !== 'full') throw new Error('--tier must be quick or full');
  const faults: string[] = [];
  argv.forEach((a, i) => {
    if (a === '--fault' && argv[i + 1]) faults.push(argv[i + 1]);
  });
  return {
    iterations: Math.max(1, Math.min(200, Number(get('--iterations') ?? 20))),
    tier: tier as 'quick' | 'full',
    burner: !argv.includes('--no-burner'),
    faults,
    out: get('--out') ?? resolve(ROOT, 'reports', 'soak.json'),
  };
}

interface Row {
  iteration: number;
  check: string;
  outcome: string;
  raw: string;
  ms: number;
  loopP99Ms: number;
  message: string;
  figures: Record<string, number | undefined>;
}

/** The figures whose spread the soak reports, per check. */
function figuresOf(id: string, m: Record<string, any>): Record<string, number | undefined> {
  switch (id) {
    case 'parallel.speedup-2':
      return { speedup: m.speedup?.estimate, ciLow: m.speedup?.low, ciHigh: m.speedup?.high, reps: m.speedup?.reps };
    case 'cycles.no-slowdown':
      return {
        slopeTpsPerCycle: m.slopeTpsPerCycle,
        slopeCiHigh: m.slopeCI?.[1],
        lastOverFirst: m.lastOverFirst,
        cycles: m.cycles?.length,
      };
    case 'cycles.ttft-stable':
      return { slopeMsPerCycle: m.slopeMsPerCycle, slopeCiLow: m.slopeCI?.[0], growthMs: m.growthMs };
    case 'cycles.memory':
      return { slopeKiBPerRequest: m.slopeKiBPerRequest, laterHalfGrowthKiB: m.laterHalfGrowthKiB };
    case 'cycles.no-stalls':
      return {
        stalls: Array.isArray(m.stalls) ? m.stalls.length : undefined,
        largestGapMs: m.largestGapMs,
        e2eP99OverP50: m.e2eP99OverP50,
      };
    case 'parallel.scaling':
      return { bestGain: m.bestGain, saturationPoint: m.saturationPoint };
    default:
      return {};
  }
}

function spread(xs: Array<number | undefined>): string {
  const f = xs.filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
  if (!f.length) return 'n/a';
  const r = (x: number | undefined) => (x === undefined ? 'n/a' : Math.abs(x) >= 100 ? x.toFixed(0) : x.toPrecision(3));
  return `min ${r(Math.min(...f))}  p10 ${r(quantile(f, 0.1))}  p50 ${r(quantile(f, 0.5))}  p90 ${r(quantile(f, 0.9))}  max ${r(Math.max(...f))}  (n=${f.length})`;
}

async function main(): Promise<void> {
  const a = args(process.argv.slice(2));
  const checks = [...parallelChecks, ...cycleChecks];
  console.log(
    `soak: ${a.iterations} iteration(s) of ${checks.length} checks (parallel, cycles; tier ${a.tier})${a.burner ? ' under a CPU burner' : ''}${a.faults.length ? `, faults ${a.faults.join(',')}` : ''}; ≈ ${a.iterations * 16} s`,
  );
  const rows: Row[] = [];
  const t0 = performance.now();
  let burner: Burner | undefined;
  try {
    if (a.burner) burner = startBurner({ maxMs: (a.iterations * 60 + 120) * 1000 });
    for (let it = 1; it <= a.iterations; it++) {
      const ref = await startReference(a.faults.flatMap((f) => ['--fault', f]));
      const runId = randomBytes(4).toString('hex');
      try {
        for (const c of checks) {
          const { verdict, ms, loopDelay } = await runCheck(c, {
            memory: freshMemory(),
            profile: ref.profile,
            server: ref.info,
            tier: a.tier,
            runId,
            log: () => undefined,
          });
          const g = grade(c, verdict, ref.profile, false);
          const row: Row = {
            iteration: it,
            check: c.id,
            outcome: g.outcome,
            raw: verdict.outcome,
            ms: Math.round(ms),
            loopP99Ms: Math.round(loopDelay.p99Ms),
            message: g.message,
            figures: figuresOf(c.id, (verdict.metrics ?? {}) as Record<string, any>),
          };
          rows.push(row);
          if (g.outcome !== 'pass')
            console.log(
              `  [${it}] ${c.id}: ${g.outcome.toUpperCase()} — ${g.message.split('\n').join(' | ').slice(0, 400)}`,
            );
        }
      } finally {
        await ref.stop();
      }
      const mine = rows.filter((r) => r.iteration === it);
      const fam = (p: string) => mine.filter((r) => r.check.startsWith(p)).reduce((s, r) => s + r.ms, 0) / 1000;
      console.log(
        `iteration ${it}/${a.iterations}: ${mine.filter((r) => r.outcome === 'pass').length}/${mine.length} pass; parallel ${fam('parallel.').toFixed(1)} s, cycles ${fam('cycles.').toFixed(1)} s; speedup ${mine.find((r) => r.check === 'parallel.speedup-2')?.figures.speedup?.toFixed(2)}x`,
      );
    }
  } finally {
    await burner?.stop();
  }

  console.log('\noutcomes per check:');
  const summary: Record<string, unknown> = {};
  for (const c of checks) {
    const rs = rows.filter((r) => r.check === c.id);
    const counts: Record<string, number> = {};
    for (const r of rs) counts[r.outcome] = (counts[r.outcome] ?? 0) + 1;
    const keys = [...new Set(rs.flatMap((r) => Object.keys(r.figures)))];
    const spreads = Object.fromEntries(keys.map((k) => [k, spread(rs.map((r) => r.figures[k]))]));
    summary[c.id] = {
      level: c.level,
      counts,
      spreads,
      secondsP50: quantile(
        rs.map((r) => r.ms / 1000),
        0.5,
      ),
      secondsMax: Math.max(...rs.map((r) => r.ms / 1000)),
    };
    console.log(
      `  ${c.id.padEnd(23)} ${c.level.padEnd(6)} ${Object.entries(counts)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}`,
    );
    for (const [k, v] of Object.entries(spreads)) console.log(`      ${k.padEnd(20)} ${v}`);
  }
  const familySeconds = (p: string) =>
    spread(
      Array.from(
        { length: a.iterations },
        (_, i) =>
          rows.filter((r) => r.iteration === i + 1 && r.check.startsWith(p)).reduce((s, r) => s + r.ms, 0) / 1000,
      ),
    );
  console.log(
    `\nfamily time (s): parallel ${familySeconds('parallel.')}\n                 cycles   ${familySeconds('cycles.')}`,
  );
  const failures = rows.filter((r) => r.outcome === 'fail' || r.outcome === 'error');
  console.log(
    failures.length
      ? `\n${failures.length} FAILURE(S):\n${failures.map((r) => `  [${r.iteration}] ${r.check}: ${r.message.split('\n')[0]}`).join('\n')}`
      : '\nno failures',
  );
  const report = {
    generatedAt: new Date().toISOString(),
    iterations: a.iterations,
    tier: a.tier,
    burner: a.burner,
    faults: a.faults,
    seconds: Math.round((performance.now() - t0) / 1000),
    familySeconds: { parallel: familySeconds('parallel.'), cycles: familySeconds('cycles.') },
    summary,
    rows,
  };
  mkdirSync(dirname(a.out), { recursive: true });
  writeFileSync(a.out, JSON.stringify(report, null, 2));
  console.log(`wrote ${a.out}`);
  process.exitCode = failures.length && !a.faults.length ? 1 : 0;
}

main().catch((e) => {
  console.error(e);
  process.exit(2);
});
