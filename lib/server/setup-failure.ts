// What stops every check before the first one (no server, a model the server does not serve, a crash of setup):
// reported once, as requirement / expected / actual with the evidence, with its own exit code; never a check failure
// charged to the server. Recorded in the results header (server.setupFailure) for every report to say so.
import type { SetupFailure } from '../model/types.ts';

/** Raised by setup for anything that stops every check. */
export class SetupError extends Error {
  constructor(readonly failure: SetupFailure) {
    super(describeSetupFailure(failure));
  }
}

export const SETUP_HEADLINE: Record<SetupFailure['kind'], string> = {
  'never-ready': 'SERVER NEVER READY',
  config: 'CONFIGURATION ERROR',
  error: 'SETUP ERROR',
};

/**
 * The failure as text. Multi-line: the headline and summary, then Requirement / Expected / Actual (and evidence, fix).
 * One line (a server that was never there says it in one): the headline, summary, expected and actual.
 */
export function describeSetupFailure(f: SetupFailure, o: { oneLine?: boolean } = {}): string {
  const head = `${SETUP_HEADLINE[f.kind]}: ${f.summary}`;
  if (o.oneLine) return `${head}; expected ${f.expected}; actual: ${f.actual}${f.fix ? `; fix: ${f.fix}` : ''}`;
  return [
    head,
    `  Requirement: ${f.requirement}`,
    `  Expected:    ${f.expected}`,
    `  Actual:      ${f.actual}`,
    ...(f.evidence?.length ? ['  Evidence:', ...f.evidence.map((l) => `    ${l}`)] : []),
    ...(f.fix ? [`  Fix:         ${f.fix}`] : []),
  ].join('\n');
}

/** The form a run prints: one line unless there is evidence to show under it. */
export function printedSetupFailure(f: SetupFailure): string {
  return describeSetupFailure(f, { oneLine: f.kind === 'never-ready' && !f.evidence?.length });
}

function isFailure(v: unknown): v is SetupFailure {
  const f = v as Partial<SetupFailure> | null;
  return (
    typeof f === 'object' &&
    f !== null &&
    (f.kind === 'never-ready' || f.kind === 'config' || f.kind === 'error') &&
    typeof f.summary === 'string' &&
    typeof f.requirement === 'string' &&
    typeof f.expected === 'string' &&
    typeof f.actual === 'string'
  );
}

/**
 * The setup failure a results header records (`header.server`), also from files written before it was structured:
 * a readiness that never held is never-ready, a bare setupError string an error.
 */
export function setupFailureOf(server: unknown): SetupFailure | undefined {
  const s = (typeof server === 'object' && server !== null ? server : {}) as Record<string, unknown>;
  if (isFailure(s.setupFailure)) return s.setupFailure;
  const readiness = s.readiness as { ready?: boolean; reason?: string } | undefined;
  const text = typeof s.setupError === 'string' ? s.setupError : undefined;
  if (readiness?.ready === false)
    return {
      kind: 'never-ready',
      summary: (readiness.reason ?? text ?? 'the server never became ready').split('\n')[0]!,
      requirement: 'the server passes its readiness probe within the wait bound',
      expected: 'a ready server',
      actual: 'never ready',
    };
  if (text)
    return {
      kind: 'error',
      summary: text.split('\n')[0]!,
      requirement: 'setup completes',
      expected: 'no error',
      actual: text,
    };
  return undefined;
}
