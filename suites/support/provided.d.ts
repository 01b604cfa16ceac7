// Values handed from vitest.config.ts / globalSetup to the checks (provide/inject).
import type { CheckRecord, Profile } from '../../lib/model/types.ts';
import type { RunSnapshot } from '../../lib/run/run.ts';

export {};

declare module 'vitest' {
  export interface ProvidedContext {
    /** The profile a project runs, from vitest.config.ts: the global setup's input. */
    profile: Profile;
    /** The run as its global setup built it (lib/run/run.ts): what every check and reporter reads. */
    run: RunSnapshot;
  }
}

/** What each check attaches to its task; reporters read only this. */
export interface ConformanceMeta extends CheckRecord {
  profileId: string;
}

declare module '@vitest/runner' {
  interface TaskMeta {
    conformance?: ConformanceMeta;
  }
}
