// Vitest reporter: Ctrl-C (SIGINT) or SIGTERM during a run writes every report from the checks that finished —
// results.json (its header marked `interrupted`), summary.md, the badges, JUnit and the HTML report — prints one line
// saying so, and exits with 128 + the signal's number (130, 143), as shells report it. Vitest's own handler exits
// without calling any reporter, and the check in flight may run for minutes (a capacity sweep), so the reports are
// written here at once, synchronously, from the same collection the end-of-run reporters use (runResults). The
// server the suite started is stopped by lib/server/lifecycle.ts's exit hook as the process exits.

import { constants } from 'node:os';
import { join } from 'node:path';
import type { Reporter, TestCase, TestSpecification, Vitest } from 'vitest/node';
import { CHECKS_PER_FILE } from '../lib/check/family-order.ts';
import { writeBadges } from './badges.ts';
import { renderHtml } from './html.ts';
import { writeJunit } from './junit.ts';
import { toColumns } from './render.ts';
import {
  dirOfResults,
  reporterError,
  reportsRoot,
  runResults,
  runStartedAt,
  shardOf,
  writeJsonAtomic,
  writeTextAtomic,
} from './results.ts';
import type { Interruption, ResultsFile } from './results-types.ts';
import { summaryOf, writeSummary } from './summary.ts';

type Signal = Interruption['signal'];
const SIGNALS: readonly Signal[] = ['SIGINT', 'SIGTERM'];

/** The exit code of a run stopped by `signal`: 128 + its number (SIGINT 130, SIGTERM 143). */
export function interruptedExitCode(signal: Signal): number {
  return 128 + constants.signals[signal];
}

/** Every report of the finished checks (files already marked interrupted), where the end-of-run reporters put them. */
export function writeInterruptedReports(files: ResultsFile[], root: string, shard?: string): void {
  for (const f of files) {
    const dir = dirOfResults(root, f);
    writeJsonAtomic(join(dir, 'results.json'), f);
    const cols = toColumns([f]);
    writeSummary(summaryOf(cols), dir);
    for (const c of cols) writeBadges(c, dir);
  }
  writeJunit(files, root, shard);
  writeTextAtomic(
    join(root, 'index.html'),
    renderHtml(files, {
      generatedAt: new Date().toISOString(),
      sources: files.map((f) => `${f.header.project} (this run, interrupted)`),
    }),
  );
}

export default class InterruptReporter implements Reporter {
  private vitest: Vitest | undefined;
  private startedAt = new Date();
  private planned = 0;
  private running: string | undefined;
  private readonly handlers = new Map<Signal, () => void>();

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  // Installed when the run starts: before the global setup starts a server (whose own exit hook must come after).
  onTestRunStart(specifications: ReadonlyArray<TestSpecification>): void {
    this.startedAt = runStartedAt(specifications);
    this.planned = specifications.reduce((n, s) => {
      const file = /suites[\\/]([a-z0-9-]+)\.test\.ts$/.exec(s.moduleId)?.[1];
      return n + (file ? (CHECKS_PER_FILE[file] ?? 0) : 0);
    }, 0);
    for (const signal of SIGNALS) {
      const handler = () => this.interrupted(signal);
      this.handlers.set(signal, handler);
      process.on(signal, handler);
    }
  }

  onTestCaseReady(testCase: TestCase): void {
    this.running = testCase.name.split(' — ')[0];
  }

  onTestCaseResult(): void {
    this.running = undefined;
  }

  onTestRunEnd(): void {
    for (const [signal, handler] of this.handlers) process.off(signal, handler);
    this.handlers.clear();
  }

  private interrupted(signal: Signal): void {
    let files: ResultsFile[] = [];
    const root = reportsRoot(this.vitest?.config.root ?? process.cwd());
    try {
      const modules = this.vitest?.state.getTestModules() ?? [];
      files = runResults(modules, this.vitest, this.startedAt, 'interrupted');
      // A self-test run has no conformance project: Vitest's own handler ends it as it always did.
      if (!files.length && !this.planned) return;
      const interruption: Interruption = {
        signal,
        date: new Date().toISOString(),
        ...(this.running ? { running: this.running } : {}),
        ...(this.planned ? { planned: this.planned } : {}),
      };
      for (const f of files) {
        delete f.finished;
        f.header.interrupted = interruption;
      }
      writeInterruptedReports(files, root, shardOf(this.vitest));
    } catch (e) {
      reporterError('interrupt', e);
    }
    const n = files.reduce((s, f) => s + f.checks.length, 0);
    const started = files.some((f) => (f.header.profile as { start?: unknown }).start !== undefined);
    const code = interruptedExitCode(signal);
    const what = files.length
      ? `${n}${this.planned ? ` of ${this.planned}` : ''} checks finished; every report written from them to ${root} (results.json marked interrupted, no gate judged)`
      : 'before any check finished: no reports written';
    // On a terminal the progress reporter's live line is cleared first; a log gets the plain line.
    process.stdout.write(
      `${process.stdout.isTTY ? '\r\x1b[2K' : ''}llm-server-conformance: INTERRUPTED by ${signal}${this.running ? ` during ${this.running}` : ''}: ${what}${started ? '; the server the suite started is stopped' : ''}; exit ${code}\n`,
    );
    process.exit(code);
  }
}
