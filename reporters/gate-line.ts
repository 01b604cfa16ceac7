// The gate: whether a run failed, and the one line that says so with the counts behind it.

import { SETUP_HEADLINE } from '../lib/server/setup-failure.ts';
import { type Column, setupFailureOfColumn, tally } from './columns.ts';
import { firstLine } from './report-text.ts';

/** The run gate: any fail or error. */
export function gateFailed(cols: readonly Column[]): boolean {
  return cols.some((c) => c.checks.some((x) => x.outcome === 'fail' || x.outcome === 'error') || c.errors.length > 0);
}

/** A run that did not finish (Ctrl-C, a kill, a crash): what it got to is no verdict on the whole. */
function interrupted(cols: readonly Column[]): boolean {
  return cols.some((c) => !c.finished);
}

/**
 * The gate line: the verdict and the counts behind it, over every column. Pass, fail and error are always counted;
 * the other outcomes when there are any. Inconclusive checks never fail the gate but are counted: a gate passed with
 * many of them proved less than it seems. A run that did not finish is INTERRUPTED, never passed, whatever ran.
 */
export function gateLine(cols: readonly Column[], o: { reports?: string } = {}): string {
  // A run stopped before its checks has no gate to pass or fail: it says what stopped it (the server's checks: none).
  const stopped = cols.map((x) => setupFailureOfColumn(x)).filter((f) => f !== undefined);
  if (stopped.length && stopped.length === cols.length)
    return `GATE: ${[...new Set(stopped.map((f) => SETUP_HEADLINE[f.kind]))].join(', ')} (no check was run: ${firstLine(stopped[0]!.summary, 200)})`;
  const t = tally(cols.flatMap((x) => x.checks));
  const c = t.counts;
  const runErrors = cols.reduce((n, x) => n + x.errors.length, 0);
  const counts = [
    `${c.pass} pass`,
    `${c.fail} fail`,
    `${c.error} error`,
    ...(runErrors ? [`${runErrors} run error${runErrors === 1 ? '' : 's'}`] : []),
    ...(['warn', 'inconclusive', 'known', 'known-passing', 'skip'] as const)
      .filter((k) => c[k] > 0)
      .map((k) => `${c[k]} ${k}${k === 'inconclusive' ? ' (no verdict either way)' : ''}`),
    ...(stopped.length ? [`${stopped.length} run${stopped.length === 1 ? '' : 's'} stopped by a setup error`] : []),
  ].join(', ');
  const where = o.reports ? ` · reports: ${o.reports}` : '';
  if (interrupted(cols)) {
    const when = cols.map((x) => x.header.interrupted).find((i) => i !== undefined);
    const how = when ? ` by ${when.signal}${when.running ? ` during ${when.running}` : ''}` : '';
    const of = when?.planned ? ` of ${when.planned}` : '';
    return `GATE: INTERRUPTED${how}, not judged — ${t.total}${of} checks finished: ${counts}${where}`;
  }
  return `GATE: ${gateFailed(cols) ? 'FAILED' : 'passed'} — ${t.total} checks: ${counts}${where}`;
}
