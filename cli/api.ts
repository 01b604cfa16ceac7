// What the package exports (index.mjs, typed by index.d.ts): one stable entry, never lib/ paths.

export type { CheckResult, ResultsFile, ResultsHeader, RunError } from '../reporters/results-types.ts';
export { EXIT, UsageError } from './args.ts';
export { type Gate, type RunOptions, type RunResult, runConformance } from './run.ts';
