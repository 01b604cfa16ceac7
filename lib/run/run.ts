// The run: what a conformance run knows, built once by its global setup from the settings and the profile, and handed
// to every worker as one snapshot (Vitest's provide('run')). A worker adds the memory it remembers with
// (lib/run/memory.ts); everything that changes during the run lives there, in the run's state file.
import type { FidelityPreflight, Profile, RunSettings, ServerInfo } from '../model/types.ts';

export interface RunSnapshot {
  /** Unique per run: every prompt starts with text unique to the request and the run. */
  runId: string;
  settings: RunSettings;
  /** The profile as setup resolved it ({port} filled in). */
  profile: Profile;
  /** What setup found (credentials removed); a restart of the server updates it. */
  server: ServerInfo;
  /** What stopped the run before its checks, as setup printed it; '' when nothing did. */
  setupError: string;
  /** The run's shared state: root causes, deadline evidence, the sentinel's and the breaker's (lib/run/memory.ts). */
  stateFile: string;
  /** Our own client's lag on this machine now (lib/run/preflight.ts); absent when the preflight did not run. */
  fidelity?: FidelityPreflight;
  /** The supervisor's URL (it restarts a server the suite started); '' when there is none. */
  supervisor: string;
  /** Epoch ms after which no check starts and the check in flight is cut (RunSettings.deadlineS); 0: none. */
  deadlineAt: number;
}
