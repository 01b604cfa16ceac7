// Proofs: every check passes on the correct reference server and fails, with a message naming the
// fault, on the reference server with exactly one fault switched on. Families export these as data;
// test/proofs.test.ts runs them through real HTTP.
//
// A proof states the check's own verdict (`raw`) and what its message must say, not only the graded outcome: a SHOULD
// check's fail and its borderline warn both grade to `warn`, so a proof of the graded outcome alone stays green when the
// detection it proves is gone. test/registry.test.ts refuses a proof without them.
import type { Outcome, Profile, RawOutcome } from '../../lib/model/types.ts';

export interface Proof {
  check: string;
  /** Reference-server fault switch(es); none for a pass proof. */
  faults?: string[];
  /** Extra reference-server flags (timing knobs, --fault-arg k=v, …). */
  serverArgs?: string[];
  /** Profile overrides for this proof (e.g. a declared context window). */
  profile?: Partial<Profile>;
  /** Outcome after grading (non-strict). Pass proofs expect 'pass' (or 'skip'/'warn' where that is the point). */
  expect: Outcome;
  /**
   * The check's own verdict before grading. passProof() defaults it to `expect`, faultProof() to 'fail'; state it where
   * that is not it (a MUST check's warn, a SHOULD check's fail graded `warn` on a pass-proof server, …).
   */
  raw?: RawOutcome;
  /**
   * Outcome after grading under CONFORMANCE_STRICT=1, where it is not the rule's: MUST/SHOULD `warn` → `fail`, anything
   * else unchanged. A borderline warn (no confidence bound past the threshold) says `strict: 'warn'`.
   */
  strict?: Outcome;
  /** What the check's raw message must contain: for every proof, pass proofs too (it shows what was judged). */
  messageIncludes?: Array<string | RegExp>;
  /** Environment for the check (e.g. CONFORMANCE_TIER). */
  tier?: 'quick' | 'full';
  note?: string;
  /** The proof leaves the server's state as it found it: the next proof with the same flags may reuse the server. */
  shareServer?: boolean;
  /**
   * A run before the check: these checks, in this order, as a conformance run runs them with the health sentinel on
   * (baseline first, a probe after each disturbing check and before each timing check; test/proofs.test.ts). For a
   * check that judges a run (health.sentinel). `waitS`: the sentinel's wait for a recovery (the run's is 60 s).
   */
  run?: { checks: string[]; waitS: number };
}

const RAW: readonly string[] = ['pass', 'fail', 'warn', 'inconclusive', 'skip'] satisfies RawOutcome[];

export function passProof(check: string, extra: Partial<Proof> = {}): Proof {
  const expected = extra.expect ?? 'pass';
  return {
    check,
    expect: 'pass',
    raw: extra.raw ?? (RAW.includes(expected) ? (expected as RawOutcome) : undefined),
    ...extra,
  };
}

export function faultProof(
  check: string,
  fault: string | string[],
  messageIncludes: Array<string | RegExp>,
  extra: Partial<Proof> = {},
): Proof {
  return {
    check,
    faults: Array.isArray(fault) ? fault : [fault],
    expect: 'fail',
    raw: 'fail',
    messageIncludes,
    ...extra,
  };
}

/** A fault proof whose check must skip (a capability the faulty server lacks), saying why. */
export function skipProof(check: string, fault: string, says: string): Proof {
  return { check, faults: [fault], expect: 'skip', raw: 'skip', messageIncludes: [says] };
}

/** The graded outcome a proof expects under strict mode: its own `strict`, else the rule (a MUST/SHOULD warn fails). */
export function strictExpectation(p: Proof, level: 'MUST' | 'SHOULD' | 'INFO'): Outcome {
  if (p.strict) return p.strict;
  return p.expect === 'warn' && level !== 'INFO' ? 'fail' : p.expect;
}

/**
 * A server that tells nothing but /v1/models max_model_len (reference server `--persona plain`), run with nothing
 * declared: window from the generic places, slots unknown. What a user pointing `env` at an unknown server gets.
 */
const PLAIN_UNDECLARED: Pick<Proof, 'serverArgs' | 'profile'> = {
  serverArgs: ['--persona', 'plain'],
  profile: { slots: undefined, context: { discovery: 'auto' } },
};

/** A proof on the plain, undeclared server (PLAIN_UNDECLARED); extra serverArgs are appended. */
export function plainProof(
  check: string,
  fault: string | string[] | undefined,
  messageIncludes: Array<string | RegExp>,
  extra: Partial<Proof> = {},
): Proof {
  const expected = extra.expect ?? (fault ? 'fail' : 'pass');
  return {
    check,
    expect: fault ? 'fail' : 'pass',
    raw: RAW.includes(expected) ? (expected as RawOutcome) : undefined,
    messageIncludes,
    ...extra,
    ...(fault ? { faults: Array.isArray(fault) ? fault : [fault] } : {}),
    serverArgs: [...PLAIN_UNDECLARED.serverArgs!, ...(extra.serverArgs ?? [])],
    profile: { ...PLAIN_UNDECLARED.profile, ...extra.profile },
    note: `plain server, nothing declared${extra.note ? `: ${extra.note}` : ''}`,
  };
}
