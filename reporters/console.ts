// Vitest reporter: after the run, a table per project — each check's outcome and message, then per workload
// wall_tps_p50, ttft_p50, gen_tps_p50 (marked PHANTOM with the cause where flagged), speedup, tokens usage vs
// counted — and a prominent line for every known issue that now passes; then the capacity table when there is one. Rendered by reporters/render.ts from
// exactly what results.json holds.

import { setupFailureOf } from '../lib/server/setup-failure.ts';
import { capacityLines } from './capacity-table.ts';
import { renderConsole, toColumns } from './render.ts';
import type { ResultsFile } from './results-types.ts';
import { RunEndReporter } from './run-end.ts';

export default class ConsoleTableReporter extends RunEndReporter {
  protected readonly name = 'console';
  protected render(file: ResultsFile): void {
    // A run stopped before its checks: global setup printed what stopped it, once, as it happened.
    if (setupFailureOf(file.header.server)) return;
    const color = !process.env.NO_COLOR && process.stdout.isTTY === true;
    const log = (s: string) => (this.vitest ? this.vitest.logger.log(s) : process.stdout.write(`${s}\n`));
    log('');
    log(renderConsole(toColumns([file]), { color }));
    // The capacity table, when the run had one (docs/capacity.md): one row per level, flagged figures marked `!`.
    if (file.capacity) log(['', ...capacityLines(file.capacity)].join('\n'));
  }
}
