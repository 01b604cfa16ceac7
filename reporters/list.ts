// The conformance reporters, in the order they run (results first: the others read what it wrote; interrupt writes
// them all on Ctrl-C). One list for vitest.config.ts and the CLI, which puts its own progress reporter in place of
// Vitest's default one.
export const CONFORMANCE_REPORTERS: readonly string[] = [
  'reporters/results.ts',
  'reporters/console.ts',
  'reporters/summary.ts',
  'reporters/badges.ts',
  'reporters/html-run.ts',
  'reporters/junit.ts',
  'reporters/interrupt.ts',
];
