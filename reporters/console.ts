// Vitest reporter: after the run, the console a person reads (reporters/render.ts renderConsole): what did not pass,
// by family in run order with its one-line reason, then one gate line with the counts and where the reports are.
// CONFORMANCE_VERBOSE=1 (--verbose) prints every check, the workloads and the client matrix as well. The capacity
// table follows when the run had one. Rendered from exactly what results.json holds.

import { join } from 'node:path';
import { setupFailureOf } from '../lib/server/setup-failure.ts';
import { capacityLines } from './capacity-table.ts';
import { renderConsole, toColumns } from './render.ts';
import type { ResultsFile } from './results-types.ts';
import { RunEndReporter } from './run-end.ts';

export default class ConsoleTableReporter extends RunEndReporter {
  protected readonly name = 'console';
  protected render(file: ResultsFile, root: string): void {
    // A run stopped before its checks: global setup printed what stopped it, once, as it happened.
    if (setupFailureOf(file.header.server)) return;
    const color = !process.env.NO_COLOR && process.stdout.isTTY === true;
    const verbose = process.env.CONFORMANCE_VERBOSE === '1';
    const log = (s: string) => (this.vitest ? this.vitest.logger.log(s) : process.stdout.write(`${s}\n`));
    const text = renderConsole(toColumns([file]), { color, verbose, reports: join(root, 'index.html') }).split('\n');
    // The capacity table, when the run had one (docs/capacity.md): one row per level, flagged figures marked `!`;
    // before the gate line, which stays last.
    const capacity = file.capacity ? ['', ...capacityLines(file.capacity)] : [];
    log(['', ...text.slice(0, -1), ...capacity, text.at(-1)!].join('\n'));
  }
}
