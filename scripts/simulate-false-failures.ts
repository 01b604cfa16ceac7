// False failures, measured: how often each timing check fails a correct server (target: at most 1 in 10,000), and how
// often it catches each fault of the reference server. This file is the CLI; the work is in scripts/simulate/.
//
//   node --import tsx scripts/simulate-false-failures.ts [--trials 10000] [--calibration-runs 4] [--seed 1]
//        [--fit reports/simulation.json] [--pool FILE[,FILE…]] [--burners 1] [--no-burner] [--out reports/simulation.json]
//
// 1. Calibration (simulate/calibrate.ts): a real run of the `cycles` and `parallel` families (quick tier) against the reference server while a
//    CPU burner holds the other core. From the raw measurements it fits heavy-tailed jitter: a half-Student-t on the
//    log slowdown of each request (delays only add time, so the noise is one-sided), a Student-t on log token gaps,
//    on the cycle-to-cycle level and on RSS residuals, and a half-t on TTFT excess (ms). ν and the scale are maximum
//    likelihood fits (ν on a grid from 1 to 100). `--fit FILE` reuses the fit of an earlier report instead; `--pool`
//    adds the raw calibration runs kept in earlier reports to this run's before fitting (more load conditions, more
//    tail); `--calibration-runs 0 --pool FILE` refits from stored runs alone.
// 2. Simulation (simulate/scenarios.ts, sampling from simulate/fit.ts): for every timing check, 10,000 seeded trials of the check's quick-tier workload built from the fitted
//    nominal figures plus sampled jitter, graded by exactly the pure functions of lib/grading/cycles.ts, lib/grading/parallel.ts, lib/grading/{prefill-scaling,over-window,healthy-after}.ts (and the same
//    sequential-sampling rule for parallel.speedup-2). Scenarios: the correct server (fitted jitter, and the fitted
//    scales doubled as a stress margin) and each fault of the reference server, modelled from its definition.
// 3. Report: false-failure rate per check (with a 95 % upper bound) against the target of 1 in 10,000, detection rate
//    per fault, written to reports/simulation.json and printed as a table.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type CalibrationRaw, calibrationRuns, type Fit, fitCalibration } from './simulate/calibrate.ts';
import { describeDist } from './simulate/fit.ts';
import { runScenario, scenarios } from './simulate/scenarios.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function parseArgs(argv: string[]) {
  const get = (k: string) => {
    const i = argv.indexOf(k);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  return {
    trials: Number(get('--trials') ?? 10_000),
    runs: Number(get('--calibration-runs') ?? 4),
    seed: Number(get('--seed') ?? 1),
    fit: get('--fit'),
    pool: (get('--pool') ?? '').split(',').filter(Boolean),
    out: get('--out') ?? resolve(ROOT, 'reports', 'simulation.json'),
    burner: !argv.includes('--no-burner'),
    /** Extra burners make a harsher condition to pool (both cores contended). */
    burners: argv.includes('--no-burner') ? 0 : Math.max(1, Number(get('--burners') ?? 1)),
  };
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const t0 = performance.now();
  let fit: Fit;
  let calibration: CalibrationRaw | undefined;
  if (a.fit) {
    fit = (JSON.parse(readFileSync(a.fit, 'utf8')) as { fit: Fit }).fit;
    console.log(`jitter fit reused from ${a.fit} (${fit.source})`);
  } else {
    console.log(
      `calibration: ${a.runs} real run(s) of the cycles and parallel families against the reference server under ${a.burners} CPU burner(s) (≈ ${a.runs * 20} s)`,
    );
    calibration =
      a.runs > 0
        ? await calibrationRuns(a.runs, { burners: a.burners, log: (m) => console.log(`  ${m}`) })
        : { cyclesRuns: [], speedup: [], scaling: [], starvation: [], outcomes: [] };
    for (const file of a.pool) {
      const old = (JSON.parse(readFileSync(file, 'utf8')) as { calibration?: CalibrationRaw }).calibration;
      if (!old) throw new Error(`${file} keeps no raw calibration to pool`);
      console.log(`  pooled ${old.cyclesRuns.length} stored calibration run(s) from ${file}`);
      calibration = {
        cyclesRuns: [...calibration.cyclesRuns, ...old.cyclesRuns],
        speedup: [...calibration.speedup, ...old.speedup],
        scaling: [...calibration.scaling, ...old.scaling],
        starvation: [...calibration.starvation, ...old.starvation],
        outcomes: [...calibration.outcomes, ...old.outcomes],
      };
    }
    if (!calibration.cyclesRuns.length)
      throw new Error('no calibration runs: use --calibration-runs N and/or --pool FILE');
    fit = fitCalibration(calibration, a.burner, a.pool);
  }
  console.log(`fitted jitter (${fit.source}):`);
  for (const [k, v] of Object.entries(fit.jitter)) console.log(`  ${k.padEnd(13)} ${describeDist(v)}`);
  console.log(`  nominal: ${JSON.stringify(fit.nominal)}`);

  const all = scenarios(fit);
  const results: Record<
    string,
    Array<{ scenario: string; kind: string; trials: number } & ReturnType<typeof runScenario>>
  > = {};
  let seed = a.seed;
  for (const [check, list] of Object.entries(all)) {
    results[check] = [];
    for (const s of list) {
      const ts = performance.now();
      const r = runScenario(s, a.trials, seed++);
      results[check].push({ scenario: s.name, kind: s.kind, trials: a.trials, ...r });
      const what =
        s.kind === 'correct'
          ? `false failures ${r.fail}/${a.trials} (rate ${r.rate.toExponential(1)}, 95 % upper ${r.upper95!.toExponential(1)}); warn ${r.warn}, inconclusive ${r.inconclusive}`
          : `detected ${(r.rate * 100).toFixed(2)} % (${(s.detects ?? ['fail']).join('/')}); pass ${r.pass}, warn ${r.warn}, inconclusive ${r.inconclusive}, fail ${r.fail}`;
      console.log(
        `${check.padEnd(23)} ${s.name.padEnd(58)} ${what} [${((performance.now() - ts) / 1000).toFixed(1)} s]`,
      );
    }
  }
  const target = 1e-4;
  const summary = Object.fromEntries(
    Object.entries(results).map(([check, rs]) => {
      const fitted = rs.find((r) => r.scenario === 'correct server (fitted jitter)')!;
      return [
        check,
        {
          falseFailureRate: fitted.rate,
          falseFailureUpper95: fitted.upper95,
          meetsTarget: fitted.fail / fitted.trials <= target,
          detection: Object.fromEntries(rs.filter((r) => r.kind === 'fault').map((r) => [r.scenario, r.rate])),
        },
      ];
    }),
  );
  const report = {
    generatedAt: new Date().toISOString(),
    node: process.version,
    trialsPerScenario: a.trials,
    seed: a.seed,
    target:
      'false-failure rate ≤ 1/10,000 per check on the correct server; with 10,000 trials and 0 failures the 95 % upper bound is 3/10,000',
    isolationNote:
      'parallel.isolation is not a timing verdict (ids, models, texts compared exactly): its proofs are deterministic, nothing to simulate',
    fit,
    calibrationOutcomes: calibration?.outcomes,
    /** Raw calibration measurements, so later runs can pool them (--pool) or refit them. */
    calibration,
    summary,
    results,
    seconds: Math.round((performance.now() - t0) / 1000),
  };
  mkdirSync(dirname(a.out), { recursive: true });
  writeFileSync(a.out, JSON.stringify(report, null, 2));
  console.log(`\nwrote ${a.out} (${report.seconds} s)`);
  const bad = Object.entries(summary).filter(([, s]) => !s.meetsTarget);
  console.log(
    bad.length
      ? `ABOVE TARGET: ${bad.map(([c, s]) => `${c} ${s.falseFailureRate}`).join(', ')}`
      : 'every check: false-failure rate within 1/10,000 on the fitted jitter',
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
