// What setup.server-ready is: registered by suites/setup.test.ts, listed by the CLI's catalogue.
export const SETUP_CHECK = {
  id: 'setup.server-ready',
  title: 'server reachable and ready',
  level: 'MUST',
  rationale: 'Nothing can be checked on a server that is not there; this is a setup error, never a check failure.',
  reference: 'docs/grading.md "Outcomes": error',
} as const;
