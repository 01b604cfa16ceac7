/**
 * Families in run order: cheap protocol checks first, then the heavy ones; destructive checks (fuzzing, absurd values,
 * over-long prompts, another model) after every check that only observes, so one bad input cannot cost the
 * performance verdicts (context runs its observing checks before its destructive ones; lint: test/registry.test.ts).
 * One list for the sequencer (vitest.config.ts) and the reports (reporters/report-data.ts): two copies had drifted.
 */
export const FAMILY_ORDER: readonly string[] = ['setup', 'api', 'sse', 'completions', 'anthropic', 'ollama', 'clients', 'tools', 'structured', 'stream', 'metrics', 'parallel', 'cycles', 'context', 'errors', 'api-last'];
