// Compile-time only (tsc -p .): the hand-written types of the package's root export (index.d.mts) match the
// implementation: whatever a user passes in is accepted, whatever the run hands back fits what is declared.

import type * as Impl from '../cli/api.ts';
import type * as Declared from '../index.mjs';

type Fits<A, B> = [A] extends [B] ? true : false;
type Same<A, B> = Fits<A, B> extends true ? Fits<B, A> : false;

export const typesInStep: [
  Same<Declared.RunOptions, Impl.RunOptions>,
  // Optional fields would pass the two above unseen: the field names must match too.
  Same<keyof Declared.RunOptions, keyof Impl.RunOptions>,
  Same<keyof Declared.RunResult, keyof Impl.RunResult>,
  Fits<Impl.RunResult, Declared.RunResult>,
  Fits<Impl.ResultsFile, Declared.ResultsFile>,
  Same<Declared.Gate, Impl.Gate>,
  Same<typeof Declared.EXIT, typeof Impl.EXIT>,
  Fits<typeof Impl.runConformance, typeof Declared.runConformance>,
] = [true, true, true, true, true, true, true, true];
