// Vitest reporter: a Markdown summary per project, appended to $GITHUB_STEP_SUMMARY when that is set (the PR's
// check page), else written to reports/<project>/summary.md. Rendered by reporters/render.ts from results data.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Reporter, TestModule, TestRunEndReason, Vitest } from 'vitest/node';
import type { SerializedError } from 'vitest';
import { redact } from '../lib/secrets.ts';
import { dirOfResults, reportsRoot, reporterError, runResults, writeTextAtomic } from './results.ts';
import { renderMarkdown, toColumns, type Column } from './render.ts';

/** Where a summary goes: the step summary file when GITHUB_STEP_SUMMARY is set, else <dir>/summary.md. Returns the path. */
export function writeSummary(markdown: string, dir: string, env: NodeJS.ProcessEnv = process.env): string {
  const text = redact(markdown);
  if (env.GITHUB_STEP_SUMMARY) {
    appendFileSync(env.GITHUB_STEP_SUMMARY, `${text}\n`);
    return env.GITHUB_STEP_SUMMARY;
  }
  const path = join(dir, 'summary.md');
  writeTextAtomic(path, text);
  return path;
}

export function summaryOf(cols: readonly Column[]): string {
  return renderMarkdown(cols);
}

export default class SummaryReporter implements Reporter {
  private vitest: Vitest | undefined;
  private startedAt = new Date();

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  onTestRunStart(): void {
    this.startedAt = new Date();
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>, reason: TestRunEndReason): void {
    const root = reportsRoot(this.vitest?.config.root ?? process.cwd());
    for (const file of safeResults(() => runResults(testModules, this.vitest, this.startedAt, reason, unhandledErrors))) {
      try {
        writeSummary(summaryOf(toColumns([file])), dirOfResults(root, file));
      } catch (e) {
        reporterError('summary', e);
      }
    }
  }
}

function safeResults<T>(f: () => T[]): T[] {
  try {
    return f();
  } catch (e) {
    reporterError('summary', e);
    return [];
  }
}
