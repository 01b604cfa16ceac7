// The package's programmatic entry: runConformance(options) → the gate and the results. The implementation is
// TypeScript, loaded through tsx without registering a loader for the caller's own imports.
import { tsImport } from 'tsx/esm/api';

const api = await tsImport('./cli/api.ts', import.meta.url);

export const runConformance = api.runConformance;
export const EXIT = api.EXIT;
export const UsageError = api.UsageError;
