// Vitest reporter: the HTML report (reports/index.html) written at the end of every run that checked a server, as
// Playwright writes its report: the projects of this run, one self-contained page (reporters/html.ts, the same page
// `npm run html` builds from results files). A run of the self-tests alone writes none. Its errors never fail the run.
// Its path is on the console's gate line (reporters/console.ts).
import { join } from 'node:path';
import { renderHtml } from './html.ts';
import { writeTextAtomic } from './results.ts';
import type { ResultsFile } from './results-types.ts';
import { RunAllReporter } from './run-end.ts';

export default class HtmlRunReporter extends RunAllReporter {
  protected readonly name = 'html';
  protected renderAll(files: ResultsFile[], root: string): void {
    const out = join(root, 'index.html');
    writeTextAtomic(
      out,
      renderHtml(files, {
        generatedAt: new Date().toISOString(),
        sources: files.map((f) => `${f.header.project} (this run)`),
      }),
    );
  }
}
