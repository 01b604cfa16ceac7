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
