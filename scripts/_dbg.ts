import { readFileSync } from 'node:fs';
import { Rng, simCycles, type Fit } from './simulate-false-failures.ts';
import { gradeNoSlowdown } from '../lib/perf-grading.ts';
import { trendThresholds, checks } from '../suites/cycles.ts';
import { median } from '../lib/stats.ts';
const fit = (JSON.parse(readFileSync('reports/simulation.json', 'utf8')) as { fit: Fit }).fit;
const trend = trendThresholds((id, name) => checks.find((c) => c.id === id)!.thresholds![name].value);
const rng = new Rng(1);
let shown = 0;
for (let i = 0; i < 10000; i++) {
  const cycles = simCycles(rng, fit, 1, undefined, trend);
  const v = gradeNoSlowdown({ cycles, thresholds: trend.slowdown });
  if (v.outcome === 'fail' && shown++ < 6) {
    console.log(cycles.length, cycles.map((c) => c.wallTps.map((x) => x!.toFixed(0)).join('/')).join('  '));
    console.log('   medians', cycles.map((c) => median(c.wallTps)!.toFixed(0)).join(' '), (v.metrics as any).slopeCI.map((x: number) => x.toFixed(2)), (v.metrics as any).lastOverFirst.toFixed(2));
  }
}
