// Bases of the reporters that render once the run has ended, from the run's results built exactly as results.json
// holds them; their errors never crash the run. RunAllReporter renders every project of the run at once (the HTML
// report, JUnit); RunEndReporter one project at a time (console table, summary, badges).

import type { SerializedError } from 'vitest';
import type { Reporter, TestModule, TestRunEndReason, TestSpecification, Vitest } from 'vitest/node';
import { reporterError, reportsRoot, runResults, runStartedAt } from './results.ts';
import type { ResultsFile } from './results-types.ts';

export abstract class RunAllReporter implements Reporter {
  protected vitest: Vitest | undefined;
  private startedAt = new Date();
  /** Name used in error lines: "[conformance <name> reporter] ERROR …". */
  protected abstract readonly name: string;
  /** Render the run's projects (never called for a run without one, e.g. the self-tests alone); `root` is the reports directory. */
  protected abstract renderAll(files: ResultsFile[], root: string): void;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunStart(specifications?: ReadonlyArray<TestSpecification>): void {
    this.startedAt = runStartedAt(specifications);
  }

  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
    reason: TestRunEndReason,
  ): void {
    let files: ResultsFile[];
    try {
      files = runResults(testModules, this.vitest, this.startedAt, reason, unhandledErrors);
    } catch (e) {
      reporterError(this.name, e);
      return;
    }
    if (!files.length) return;
    try {
      this.renderAll(files, reportsRoot(this.vitest?.config.root ?? process.cwd()));
    } catch (e) {
      reporterError(this.name, e);
    }
  }
}

export abstract class RunEndReporter extends RunAllReporter {
  /** Render one project's results; `root` is the reports directory. */
  protected abstract render(file: ResultsFile, root: string): void;

  protected renderAll(files: ResultsFile[], root: string): void {
    for (const file of files) {
      try {
        this.render(file, root);
      } catch (e) {
        reporterError(this.name, e);
      }
    }
  }
}
