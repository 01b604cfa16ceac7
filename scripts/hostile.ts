// npm run hostile -- [mode ...] [--external] [--deadline S] [--out DIR]
// Runs the whole catalogue against each hostile-server mode (default: every mode, plus crash-after-5 against a
// server the suite did not start) and judges each run (scripts/support/hostile-run.ts): finished within the deadline,
// the expected checks failed with meaningful messages, reports complete and valid, the canary key nowhere.
// Prints time and peak RSS per mode; exit status 1 when any mode has a problem. Heavy: run it under
// `flock /tmp/heavy.lock` on a shared machine.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MODE_NAMES, type Mode, modeInfo } from '../fixtures/hostile-server/modes.ts';
import { EXTERNAL_CRASH, judge, runMode, summaryLine } from './support/hostile-run.ts';

async function main(argv: string[]): Promise<number> {
  const modes: Array<{ mode: Mode; external: boolean }> = [];
  let external = false;
  let deadlineS = 600;
  let out = join('reports', 'hostile');
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--external') external = true;
    else if (a === '--deadline') deadlineS = Number(argv[++i]);
    else if (a === '--out') out = argv[++i]!;
    else if ((MODE_NAMES as string[]).includes(a)) modes.push({ mode: a as Mode, external: false });
    else {
      console.error(`hostile: unknown mode or option ${a}; modes: ${MODE_NAMES.join(', ')}`);
      return 2;
    }
  }
  if (!modes.length)
    modes.push(...MODE_NAMES.map((mode) => ({ mode, external: false })), { mode: 'crash-after-5', external: true });
  if (external) for (const m of modes) m.external = true;
  mkdirSync(out, { recursive: true });
  const rows: unknown[] = [];
  let bad = 0;
  for (const { mode, external: ext } of modes) {
    const r = await runMode(mode, { deadlineS, external: ext, dir: join(out, `${mode}${ext ? '-external' : ''}`) });
    const problems = judge(r);
    if (problems.length) bad++;
    console.log(summaryLine(r, problems));
    for (const p of problems) console.log(`    - ${p}`);
    rows.push({
      mode,
      external: ext,
      seconds: +(r.wallMs / 1000).toFixed(1),
      peakRssMiB: Math.round(r.peakRssKiB / 1024),
      exitCode: r.exitCode,
      problems,
    });
  }
  writeFileSync(join(out, 'summary.json'), `${JSON.stringify(rows, null, 2)}\n`);
  // The table of docs/hostile.md: behaviour, the check that catches it, the time the whole catalogue took to end.
  const md = ['| mode | behaviour | caught by | catalogue ended after | peak RSS |', '|---|---|---|---|---|'];
  for (const r of rows as Array<{ mode: Mode; external: boolean; seconds: number; peakRssMiB: number }>) {
    const info = r.external ? EXTERNAL_CRASH : modeInfo(r.mode);
    const by =
      info.caughtBy.map((c) => (c.check === '*' ? 'the check in flight' : `\`${c.check}\``)).join(', ') ||
      '(valid: every check as on the reference server)';
    md.push(
      `| \`${r.mode}\`${r.external ? ' (not started by the suite)' : ''} | ${info.description} | ${by} | ${r.seconds} s | ${r.peakRssMiB} MiB |`,
    );
  }
  writeFileSync(join(out, 'table.md'), `${md.join('\n')}\n`);
  console.log(`${modes.length - bad} passed, ${bad} failed`);
  return bad ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (c) => (process.exitCode = c),
  (e) => {
    console.error(e);
    process.exitCode = 1;
  },
);
