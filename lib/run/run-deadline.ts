// The run deadline (CONFORMANCE_DEADLINE_S, the action's `deadline-seconds` input): a bound on the whole run,
// enforced inside it, so a PR gate ends with every report written instead of being killed by its CI job's timeout.
// Checks stop starting, and the one in flight is cut, a reserve before the deadline: the reporters then have
// time to write results.json, the console table, the summary, badges, JUnit and HTML.

interface RunDeadline {
  seconds: number;
  /** Epoch ms of the deadline itself. */
  endsAt: number;
  /** Epoch ms after which no check runs (deadline minus the reporters' reserve). */
  checksEndAt: number;
}

/** Reserve for reporters and teardown: 10 % of the deadline, between 5 and 15 s. */
function reserveMs(seconds: number): number {
  return Math.min(15_000, Math.max(5_000, seconds * 100));
}

/** The deadline of `seconds` (RunSettings.deadlineS), counted from `start` (epoch ms: readiness); none without. */
export function runDeadline(seconds: number | undefined, start: number): RunDeadline | undefined {
  if (seconds === undefined) return undefined;
  const endsAt = start + seconds * 1000;
  return { seconds, endsAt, checksEndAt: endsAt - reserveMs(seconds) };
}
