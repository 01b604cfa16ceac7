// The pure grading functions of the cycles and parallel families live in lib/cycles-grading.ts,
// lib/parallel-grading.ts and lib/isolation-grading.ts, one module per family as for context grading. This module
// only re-exports them, so code written against the old path keeps compiling; new code imports the family modules.
export * from './cycles-grading.ts';
export * from './parallel-grading.ts';
export * from './isolation-grading.ts';
