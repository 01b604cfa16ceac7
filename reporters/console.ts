// Vitest reporter: after the run, a table per project — each check's outcome and message, then per workload
// wall_tps_p50, ttft_p50, gen_tps_p50 (marked PHANTOM with the cause where flagged), speedup, tokens usage vs
// counted — and a prominent line for every known issue that now passes. Rendered by reporters/render.ts from
// exactly what results.json holds.
import type { Reporter, TestModule, TestRunEndReason, Vitest } from 'vitest/node';
import type { SerializedError } from 'vitest';
import { reporterError, runResults } from './results.ts';
import { renderConsole, toColumns } from './render.ts';

export default class ConsoleTableReporter implements Reporter {
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
      const color = !process.env.NO_COLOR && process.stdout.isTTY === true;
      const log = (s: string) => (this.vitest ? this.vitest.logger.log(s) : process.stdout.write(`${s}\n`));
      for (const file of runResults(testModules, this.vitest, this.startedAt, reason, unhandledErrors)) {
        log('');
        log(renderConsole(toColumns([file]), { color }));
      }
    } catch (e) {
      reporterError('console', e);
    }
  }
}
