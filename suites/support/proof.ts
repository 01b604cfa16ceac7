// Proofs: every check passes on the correct reference server and fails, with a message naming the
// fault, on the reference server with exactly one fault switched on. Families export these as data;
// test/proofs.test.ts runs them through real HTTP.
import type { Outcome, Profile } from '../../lib/types.ts';

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
  /** For fault proofs: the message must name the fault. */
  messageIncludes?: Array<string | RegExp>;
  /** Environment for the check (e.g. CONFORMANCE_TIER). */
  tier?: 'quick' | 'full';
  note?: string;
  /** The proof leaves the server's state as it found it: the next proof with the same flags may reuse the server. */
  shareServer?: boolean;
}

export function passProof(check: string, extra: Partial<Proof> = {}): Proof {
  return { check, expect: 'pass', ...extra };
}

export function faultProof(check: string, fault: string | string[], messageIncludes: Array<string | RegExp>, extra: Partial<Proof> = {}): Proof {
  return { check, faults: Array.isArray(fault) ? fault : [fault], expect: 'fail', messageIncludes, ...extra };
}

/**
 * A server that tells nothing but /v1/models max_model_len (reference server `--persona plain`), run with nothing
 * declared: window from the generic places, slots unknown. What a user pointing `env` at an unknown server gets.
 */
export const PLAIN_UNDECLARED: Pick<Proof, 'serverArgs' | 'profile'> = {
  serverArgs: ['--persona', 'plain'],
  profile: { slots: undefined, context: { discovery: 'auto' } },
};

/** A proof on the plain, undeclared server (PLAIN_UNDECLARED); extra serverArgs are appended. */
export function plainProof(check: string, fault: string | string[] | undefined, messageIncludes: Array<string | RegExp>, extra: Partial<Proof> = {}): Proof {
  return {
    check,
    expect: fault ? 'fail' : 'pass',
    messageIncludes,
    ...extra,
    ...(fault ? { faults: Array.isArray(fault) ? fault : [fault] } : {}),
    serverArgs: [...PLAIN_UNDECLARED.serverArgs!, ...(extra.serverArgs ?? [])],
    profile: { ...PLAIN_UNDECLARED.profile, ...extra.profile },
    note: `plain server, nothing declared${extra.note ? `: ${extra.note}` : ''}`,
  };
}
