// Messages that teach (h2spec style): the requirement, every acceptable value, the actual value,
// all violations rather than the first, and the offending bytes escaped.
import type { Verdict } from './types.ts';

interface FailureText {
  requirement: string;
  expected: string;
  actual: string;
  /** Further violations, each one line. */
  violations?: string[];
  /** Escaped excerpt of the offending bytes. */
  bytes?: string;
}

function describeFailure(f: FailureText): string {
  const lines = [f.requirement, `  Expected: ${f.expected}`, `  Actual:   ${f.actual}`];
  const more = f.violations ?? [];
  if (more.length) {
    lines.push(`  Violations (${more.length}):`);
    for (const v of more.slice(0, 20)) lines.push(`    - ${v}`);
    if (more.length > 20) lines.push(`    … and ${more.length - 20} more`);
  }
  if (f.bytes !== undefined) lines.push(`  Bytes:    ${f.bytes}`);
  return lines.join('\n');
}

export function pass(message: string, metrics?: Verdict['metrics'], evidence?: Verdict['evidence']): Verdict {
  return { outcome: 'pass', message, metrics, evidence };
}
export function fail(f: FailureText, metrics?: Verdict['metrics'], evidence?: Verdict['evidence']): Verdict {
  return { outcome: 'fail', message: describeFailure(f), metrics, evidence };
}
export function warn(message: string, metrics?: Verdict['metrics'], evidence?: Verdict['evidence']): Verdict {
  return { outcome: 'warn', message, metrics, evidence };
}
/**
 * Borderline evidence: a warn whose figures lean the check's way with no confidence bound past its threshold.
 * Strict mode leaves it a warn (a clear warn fails under strict).
 */
export function borderline(message: string, metrics?: Verdict['metrics'], evidence?: Verdict['evidence']): Verdict {
  return { outcome: 'warn', message, borderline: true, metrics, evidence };
}
/** Not enough evidence either way (docs/grading.md "Outcomes"): an outcome of its own, never a warn, never failed by strict mode. */
export function inconclusive(why: string, metrics?: Verdict['metrics'], evidence?: Verdict['evidence']): Verdict {
  return { outcome: 'inconclusive', message: why, metrics, evidence };
}
export function skip(why: string): Verdict {
  return { outcome: 'skip', message: why };
}

/** Round for messages: figures, not adjectives, but not 17 digits either. */
export function fmt(x: number | undefined, digits = 2): string {
  if (x === undefined || !Number.isFinite(x)) return 'n/a';
  return Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(digits);
}

/** A share (0.25) as a percentage for messages ("25.0 %"; "n/a" for no value). */
export const pct = (x: number | undefined) =>
  x === undefined || !Number.isFinite(x) ? 'n/a' : `${(x * 100).toFixed(1)} %`;

/** Thrown where the server's answers leave nothing to measure (no usage to calibrate prompts with, …). */
export class NotMeasurable extends Error {}
