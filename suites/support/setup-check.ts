// What setup.server-ready is: registered by suites/setup.test.ts, listed by the CLI's catalogue.
import type { FamilySpec } from '../../lib/model/family-spec.ts';

export const SETUP_CHECK = {
  id: 'setup.server-ready',
  title: 'server reachable and ready',
  level: 'MUST',
  rationale: 'Nothing can be checked on a server that is not there; this is a setup error, never a check failure.',
  reference: 'docs/grading.md "Outcomes": error',
} as const;

/**
 * The `setup` family: first, always run, one check. It has no suite file: its Vitest entry suites/setup.test.ts is
 * written by hand (scripts/families.ts generates no stub for it) and registers SETUP_CHECK.
 */
export const SETUP_FAMILY: FamilySpec = {
  name: 'setup',
  order: 0,
  what: 'the server was started or reached and answered its readiness probe (a setup error, never a check failure, when not)',
};
