// Vitest reporter: a Markdown summary per project, always written to reports/<project>/summary.md (so it travels with
// the artifact) and also appended to $GITHUB_STEP_SUMMARY when that is set (the PR's check page). Rendered by
// reporters/render.ts from results data.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { redact } from '../lib/config/secrets.ts';
import { type Column, renderMarkdown, toColumns } from './render.ts';
import { dirOfResults, writeTextAtomic } from './results.ts';
import type { ResultsFile } from './results-types.ts';
import { RunEndReporter } from './run-end.ts';

/** Write <dir>/summary.md, and append the same text to the step summary file when GITHUB_STEP_SUMMARY is set. Returns the summary.md path. */
export function writeSummary(markdown: string, dir: string, env: NodeJS.ProcessEnv = process.env): string {
  const text = redact(markdown);
  const path = join(dir, 'summary.md');
  writeTextAtomic(path, text);
  if (env.GITHUB_STEP_SUMMARY) appendFileSync(env.GITHUB_STEP_SUMMARY, `${text}\n`);
  return path;
}

export function summaryOf(cols: readonly Column[]): string {
  return renderMarkdown(cols);
}

export default class SummaryReporter extends RunEndReporter {
  protected readonly name = 'summary';
  protected render(file: ResultsFile, root: string): void {
    writeSummary(summaryOf(toColumns([file])), dirOfResults(root, file));
  }
}
