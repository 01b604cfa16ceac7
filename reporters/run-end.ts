// Base of the reporters that render once the run has ended (console table, summary, badges): each gets the
// run's results, built exactly as results.json holds them, one file per project; its errors never crash the run.
import type { Reporter, TestModule, TestRunEndReason, Vitest } from 'vitest/node';
import type { SerializedError } from 'vitest';
import type { ResultsFile } from './results-types.ts';
import { reportsRoot, reporterError, runResults } from './results.ts';

export abstract class RunEndReporter implements Reporter {
  protected vitest: Vitest | undefined;
  private startedAt = new Date();
  /** Name used in error lines: "[conformance <name> reporter] ERROR …". */
  protected abstract readonly name: string;
  /** Render one project's results; `root` is the reports directory. */
  protected abstract render(file: ResultsFile, root: string): void;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunStart(): void {
    this.startedAt = new Date();
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>, reason: TestRunEndReason): void {
    let files: ResultsFile[];
    try {
      files = runResults(testModules, this.vitest, this.startedAt, reason, unhandledErrors);
    } catch (e) {
      reporterError(this.name, e);
      return;
    }
    const root = reportsRoot(this.vitest?.config.root ?? process.cwd());
    for (const file of files) {
      try {
        this.render(file, root);
      } catch (e) {
        reporterError(this.name, e);
      }
    }
  }
}
