// What stops every check before the first one (no server, a model the server does not serve, a crash of setup):
// reported once, as requirement / expected / actual with the evidence, with its own exit code; never a check failure
// charged to the server. Recorded in the results header (server.setupFailure) for every report to say so.

export interface SetupFailure {
  /**
   * never-ready: the server did not pass its readiness probe within the wait bound, or exited first (exit 3);
   * config: the user's configuration cannot work with this server, e.g. a model it does not serve (exit 2);
   * error: setup itself went wrong (exit 4).
   */
  kind: 'never-ready' | 'config' | 'error';
  /** One line: what went wrong, in the user's terms. */
  summary: string;
  requirement: string;
  expected: string;
  actual: string;
  /** Further evidence, one line each: the lines a server we started printed last, a body excerpt. */
  evidence?: string[];
  /** What to change, when we know. */
  fix?: string;
}

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
