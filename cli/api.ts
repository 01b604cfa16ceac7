// What the package exports (index.mjs, typed by index.d.ts): one stable entry, never lib/ paths.
export { runConformance, type RunOptions, type RunResult, type Gate } from './run.ts';
export { EXIT, UsageError } from './args.ts';
export type { ResultsFile, ResultsHeader, CheckResult, RunError } from '../reporters/results-types.ts';
