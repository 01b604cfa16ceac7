import { startReference } from '/work/main/test/support/reference.ts';
import { runCheck, grade } from '/work/main/lib/check.ts';
import { families } from '/tmp/catalogue-shim.ts';
const [family, checkId, ...args] = process.argv.slice(2);
const mod = families[family!]!;
const ref = await startReference(args);
try {
  for (const c of mod.checks.filter((c) => !checkId || checkId === '*' || c.id === checkId)) {
    const { verdict, ms } = await runCheck(c, { profile: ref.profile, server: ref.info, log: () => {} });
    const g = grade(c, verdict, ref.profile, false);
    console.log(`== ${c.id} [${c.level}] ${g.outcome} (${ms.toFixed(0)} ms)\n${g.message}\n`);
  }
} finally { await ref.stop(); }
