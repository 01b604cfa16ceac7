// Values handed from vitest.config.ts / globalSetup to the checks (provide/inject).
import type { Profile, ServerInfo } from '../../lib/types.ts';
import type { CheckRecord } from '../../lib/types.ts';
import type { FidelityPreflight } from '../../lib/fidelity.ts';

export {};

declare module 'vitest' {
  export interface ProvidedContext {
    profile: Profile;
    server: ServerInfo;
    /** Set when the server could not be started or reached: every check reports `error`, not `fail`. */
    setupError: string;
    runId: string;
    /** Directory for cross-file state of this project's run (e.g. "server died during <id>"). */
    stateDir: string;
    /** The run's fidelity preflight (lib/preflight.ts): our client's own lag on this machine now; absent when skipped. */
    fidelity?: FidelityPreflight;
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
