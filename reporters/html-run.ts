// Vitest reporter: the HTML report (reports/index.html) written at the end of every run that checked a server, as
// Playwright writes its report: the projects of this run, one self-contained page (reporters/html.ts, the same page
// `npm run html` builds from results files). A run of the self-tests alone writes none. Its errors never fail the run.
import { join } from 'node:path';
import type { Reporter, TestModule, TestRunEndReason, Vitest } from 'vitest/node';
import type { SerializedError } from 'vitest';
import { renderHtml } from './html.ts';
import { reporterError, reportsRoot, runResults, writeTextAtomic } from './results.ts';

export default class HtmlRunReporter implements Reporter {
  private vitest: Vitest | undefined;
  private startedAt = new Date();

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunStart(): void {
    this.startedAt = new Date();
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>, reason: TestRunEndReason): void {
    try {
      const files = runResults(testModules, this.vitest, this.startedAt, reason, unhandledErrors);
      if (!files.length) return;
      const out = join(reportsRoot(this.vitest?.config.root ?? process.cwd()), 'index.html');
      writeTextAtomic(out, renderHtml(files, { generatedAt: new Date().toISOString(), sources: files.map((f) => `${f.header.project} (this run)`) }));
      const log = (s: string) => (this.vitest ? this.vitest.logger.log(s) : process.stdout.write(`${s}\n`));
      log(`HTML report: ${out}`);
    } catch (e) {
      reporterError('html', e);
    }
  }
}
