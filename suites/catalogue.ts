// Every check family, found by file name (suites/<family>.ts exporting `family`, `checks` and `proofs`).
// Vite's import.meta.glob keeps this list true without anyone editing it.
/// <reference types="vite/client" />
import type { CheckDef } from '../lib/model/check.ts';
import type { FamilySpec } from '../lib/model/family-spec.ts';
import type { Proof } from './support/proof.ts';

export interface FamilyModule {
  /** Its declaration (scripts/families.ts derives the rest from it; test/families.test.ts lints it). */
  family: FamilySpec;
  checks: CheckDef[];
  proofs: Proof[];
}

const modules = import.meta.glob<FamilyModule>(['./*.ts', '!./catalogue.ts', '!./*.test.ts'], { eager: true });

export const families: Record<string, FamilyModule> = Object.fromEntries(
  Object.entries(modules).map(([path, mod]) => [path.replace(/^\.\/|\.ts$/g, ''), mod]),
);

export const allChecks: CheckDef[] = Object.values(families).flatMap((f) => f.checks);
export const allProofs: Proof[] = Object.values(families).flatMap((f) => f.proofs);
