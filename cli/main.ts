// The CLI: parse, dispatch, print, and return the exit code (bin/llm-server-conformance.mjs sets it).
import { readFileSync } from 'node:fs';
import { EXIT, parseCommand, UsageError } from './args.ts';

// Not lib/config/profile.ts's ROOT: that module compiles the profile schema, 0.3 s that --help and --version skip.
const version = () =>
  (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const HEADLINE: Record<string, string> = {
  'never-ready': 'SERVER NEVER READY',
  'config-error': 'CONFIGURATION ERROR',
  error: 'SETUP ERROR',
};

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
        console.log(cmd.text);
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
      case 'reference-server': {
        const { serveReference } = await import('./reference-server.ts');
        return serveReference(cmd.argv);
      }
      case 'run': {
        // Vitest and the catalogue load only for the commands that need them: --help answers at once.
        const { runConformance } = await import('./run.ts');
        const r = await runConformance(cmd.options);
        const where = `reports: ${r.reportsDir} (results: ${r.resultsPath})`;
        // Stopped before its checks: global setup printed what stopped it; one line with the exit code and the files.
        if (r.gate === 'never-ready' || r.gate === 'config-error' || (r.gate === 'error' && r.results))
          console.error(`llm-server-conformance: ${HEADLINE[r.gate]} (exit ${r.exitCode}); ${where}`);
        else if (r.gate === 'error')
          console.error(`llm-server-conformance: ${r.reason} (exit ${r.exitCode}); ${where}`);
        else if (r.regressions !== undefined)
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
