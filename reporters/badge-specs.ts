// Badges: what each badge of a column says (conformance, streaming, batching, long context) and its colour; the
// shields.io endpoint JSON of one. reporters/badges.ts writes them.

import type { HeadlineFigure } from '../lib/model/figures.ts';
import type { Outcome } from '../lib/model/types.ts';
import { type Column, setupFailureOfColumn, tally } from './columns.ts';
import { providerOf } from './figures.ts';
import type { CheckResult } from './results-types.ts';
import { figure } from './workload-rows.ts';

export interface BadgeSpec {
  /** Stable file name (badges/<name>.json|svg) for every profile. */
  name: 'conformance' | 'streaming' | 'batching' | 'long-context';
  label: string;
  message: string;
  color: 'brightgreen' | 'green' | 'yellow' | 'orange' | 'red' | 'lightgrey';
}

/** The shields.io endpoint JSON (https://shields.io/badges/endpoint-badge). */
export function shieldsEndpoint(b: BadgeSpec): { schemaVersion: 1; label: string; message: string; color: string } {
  return { schemaVersion: 1, label: b.label, message: b.message, color: b.color };
}

function colourOf(outcomes: readonly Outcome[]): BadgeSpec['color'] {
  if (outcomes.some((o) => o === 'fail' || o === 'error')) return 'red';
  if (outcomes.some((o) => o === 'known')) return 'orange';
  if (outcomes.some((o) => o === 'warn')) return 'yellow';
  // Nothing wrong found, but not everything could be decided: green, not bright green.
  if (outcomes.some((o) => o === 'inconclusive')) return 'green';
  return 'brightgreen';
}

/** Every one of these checks ended without a verdict either way (inconclusive or skipped). */
const undecidedOnly = (cs: readonly CheckResult[]) =>
  cs.length > 0 &&
  cs.every((c) => c.outcome === 'inconclusive' || c.outcome === 'skip') &&
  cs.some((c) => c.outcome === 'inconclusive');

export function badgeSpecs(col: Column): BadgeSpec[] {
  // A run stopped before its checks measured nothing: one badge that says so, no n/a for every family.
  const stopped = setupFailureOfColumn(col);
  if (stopped)
    return [
      {
        name: 'conformance',
        label: 'conformance',
        message: { 'never-ready': 'never ready', config: 'config error', error: 'setup error' }[stopped.kind],
        color: 'lightgrey',
      },
    ];
  const t = tally(col.checks);
  const ran = (c: CheckResult) => c.outcome !== 'skip';
  const fam = (f: string) => col.checks.filter((c) => c.family === f && ran(c));
  // Each badge reads the check that provides its figure (lib/model/figures.ts), never one named here.
  const provider = (figure: HeadlineFigure) => providerOf(col.checks, figure);

  const conformance: BadgeSpec = {
    name: 'conformance',
    label: 'conformance',
    message: `${t.passed}/${t.graded}${t.counts.inconclusive ? `, ${t.counts.inconclusive} inconclusive` : ''}`,
    color: t.graded === 0 ? 'lightgrey' : colourOf(col.checks.map((c) => c.outcome)),
  };

  // streaming: real (tokens arrive as generated), phantom (flushed: the phantom verdict), buffered (stream.* failed).
  const plausible = provider('gen_tps_phantom');
  const streamChecks = [...fam('stream'), ...(plausible && ran(plausible) ? [plausible] : [])];
  let streaming: BadgeSpec | undefined;
  if (streamChecks.length === 0) streaming = undefined;
  else if (plausible && (plausible.outcome === 'fail' || plausible.outcome === 'known'))
    streaming = {
      name: 'streaming',
      label: 'streaming',
      message: 'phantom',
      color: plausible.outcome === 'known' ? 'orange' : 'red',
    };
  else if (streamChecks.some((c) => c.outcome === 'fail' || c.outcome === 'known'))
    streaming = {
      name: 'streaming',
      label: 'streaming',
      message: 'buffered',
      color: colourOf(streamChecks.map((c) => c.outcome)),
    };
  else if (streamChecks.some((c) => c.outcome === 'error'))
    streaming = { name: 'streaming', label: 'streaming', message: 'error', color: 'red' };
  else if (undecidedOnly(streamChecks))
    streaming = { name: 'streaming', label: 'streaming', message: 'inconclusive', color: 'lightgrey' };
  else
    streaming = {
      name: 'streaming',
      label: 'streaming',
      message: 'real',
      color: colourOf(streamChecks.map((c) => c.outcome)),
    };

  // batching: the speedup with 2 requests.
  const sp = provider('speedup_2');
  let batching: BadgeSpec | undefined;
  if (!sp || !ran(sp)) batching = undefined;
  else {
    const x = figure(sp.metrics?.speedup) ?? figure(sp.metrics?.speedup_p50);
    // An inconclusive measurement shows no figure: it is not one the check stands behind.
    batching =
      sp.outcome === 'inconclusive'
        ? { name: 'batching', label: 'batching', message: 'inconclusive', color: 'lightgrey' }
        : {
            name: 'batching',
            label: 'batching',
            message: x === undefined ? sp.outcome : `${x.toFixed(2)}x`,
            color: colourOf([sp.outcome]),
          };
  }

  // long context: does an over-long prompt get its 400, and do the context checks pass?
  const ctx = fam('context');
  const over = provider('over_window');
  let long: BadgeSpec | undefined;
  if (ctx.length === 0) long = undefined;
  else {
    const bad = ctx.filter((c) => c.outcome === 'fail' || c.outcome === 'error' || c.outcome === 'known');
    const colour = colourOf(ctx.map((c) => c.outcome));
    if (over && (over.outcome === 'fail' || over.outcome === 'known'))
      long = { name: 'long-context', label: 'long context', message: 'no 400', color: colour };
    else if (bad.length)
      long = {
        name: 'long-context',
        label: 'long context',
        message: `${bad.length} failing (${bad[0].id.split('.')[1]})`,
        color: colour,
      };
    else if (undecidedOnly(ctx))
      long = { name: 'long-context', label: 'long context', message: 'inconclusive', color: 'lightgrey' };
    else
      long = {
        name: 'long-context',
        label: 'long context',
        message: over && over.outcome === 'pass' ? '400 ok' : 'ok',
        color: colour,
      };
  }
  // A family that did not run (left out, or every check skipped) gets no badge: "n/a" on a README says nothing.
  return [conformance, streaming, batching, long].filter((b) => b !== undefined);
}

/** Every badge name badgeSpecs may produce: a run that produces fewer removes the others' old files. */
export const BADGE_NAMES: readonly BadgeSpec['name'][] = ['conformance', 'streaming', 'batching', 'long-context'];
