// The CLI: parse, dispatch, print, and return the exit code (bin/llm-server-conformance.mjs sets it).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../lib/config/profile.ts';
import { EXIT, HELP, parseCommand, UsageError } from './args.ts';

const version = () => (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

export async function main(argv: readonly string[]): Promise<number> {
  if (process.platform === 'win32') {
    console.error(
      'llm-server-conformance: Windows is not supported (the suite is tested on Linux and macOS); run it under WSL.',
    );
    return EXIT.usage;
  }
  try {
    const cmd = parseCommand(argv);
    switch (cmd.kind) {
      case 'help':
        console.log(HELP);
        return EXIT.passed;
      case 'version':
        console.log(version());
        return EXIT.passed;
      case 'list': {
        const { listing, loadCatalogue } = await import('./catalogue.ts');
        const entries = await loadCatalogue();
        console.log(cmd.json ? JSON.stringify(entries, null, 2) : listing(entries));
        return EXIT.passed;
      }
      case 'explain': {
        const { explain, loadCatalogue } = await import('./catalogue.ts');
        const entries = await loadCatalogue();
        const e = entries.find((x) => x.id === cmd.id);
        if (!e) {
          const near = entries
            .filter((x) => x.id.includes(cmd.id) || cmd.id.includes(x.family))
            .map((x) => x.id)
            .slice(0, 12);
          throw new UsageError(
            `no check "${cmd.id}"${near.length ? `; did you mean: ${near.join(', ')}` : ''} (llm-server-conformance list shows them all)`,
          );
        }
        console.log(explain(e));
        return EXIT.passed;
      }
      case 'report': {
        const { main: report } = await import('../scripts/report.ts');
        return report(
          cmd.argv.some((a) => a === '--out' || a.startsWith('--out='))
            ? cmd.argv
            : [...cmd.argv, '--out', 'conformance-reports'],
        );
      }
      case 'compare': {
        const { main: compare } = await import('../scripts/compare.ts');
        return compare(cmd.argv);
      }
      case 'merge': {
        const { main: merge } = await import('../scripts/merge.ts');
        return merge(cmd.argv);
      }
      case 'run': {
        // Vitest and the catalogue load only for the commands that need them: --help answers at once.
        const { runConformance } = await import('./run.ts');
        const r = await runConformance(cmd.options);
        if (r.gate === 'never-ready') {
          console.error(`llm-server-conformance: SERVER NEVER READY (exit ${r.exitCode}): ${r.reason.split('\n')[0]}`);
          console.log(`reports: ${r.reportsDir} (results: ${r.resultsPath})`);
        } else if (r.gate === 'error') {
          console.error(`llm-server-conformance: ${r.reason} (exit ${r.exitCode})`);
          console.log(`reports: ${r.reportsDir} (results: ${r.resultsPath})`);
        } else if (r.regressions !== undefined)
          // The console reporter printed the gate line with the counts and the reports; only the baseline is new here.
          console.log(
            `against the baseline: ${r.regressions} regression(s)${r.gate === 'failed' && /^\d+ regression/.test(r.reason) ? ' — so the gate FAILED (--fail-on-regression)' : ''}`,
          );
        return r.exitCode;
      }
    }
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`llm-server-conformance: ${e.message}`);
      return EXIT.usage;
    }
    console.error(`llm-server-conformance: internal error: ${(e as Error).stack ?? e}`);
    return EXIT.internal;
  }
}
