import { startReference } from '/work/main/test/support/reference.ts';
import { runCheck } from '/work/main/lib/check.ts';
import { checks } from '/work/main/suites/parallel.ts';
const args = process.argv.slice(2);
const ref = await startReference(args);
try {
  const c = checks.find((c) => c.id === 'parallel.speedup-2')!;
  for (let i = 0; i < 4; i++) {
    const { verdict, ms } = await runCheck(c, { profile: ref.profile, server: ref.info, tier: 'quick', log: () => {} });
    const m = verdict.metrics as any;
    console.log(verdict.outcome, Math.round(ms), JSON.stringify(m.speedup), m.singleTpsSamples.map((x: number) => x.toFixed(1)).join(' '), '|', m.aggregateTpsSamples.map((x: number) => x.toFixed(1)).join(' '), JSON.stringify(m.loopDelay));
  }
} finally { await ref.stop(); }
