// Values handed from vitest.config.ts / globalSetup to the checks (provide/inject).
import type { RunSettings } from '../../lib/config/settings.ts';
import type { CheckRecord, FidelityPreflight, Profile, ServerInfo } from '../../lib/model/types.ts';

export {};

declare module 'vitest' {
  export interface ProvidedContext {
    profile: Profile;
    /** The run's settings (lib/config/settings.ts), read once by the global setup. */
    settings: RunSettings;
    server: ServerInfo;
    /** Set when the server could not be started or reached: every check reports `error`, not `fail`. */
    setupError: string;
    runId: string;
    /** Directory for cross-file state of this project's run (e.g. "server died during <id>"). */
    stateDir: string;
    /** The run's fidelity preflight (lib/run/preflight.ts): our client's own lag on this machine now; absent when skipped. */
    fidelity?: FidelityPreflight;
    /** Supervisor URL (restart a server the suite started that stopped answering); '' when there is none. */
    supervisor: string;
    /** Epoch ms after which no check starts and the check in flight is cut (CONFORMANCE_DEADLINE_S); 0: none. */
    runDeadline: number;
    runDeadlineS: number;
    /** vitest.config.ts FAMILY_ORDER: the files still to come after a file (each costs a worker start and imports). */
    familyOrder: string[];
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
