// Our own client's starvation, as the timing verdicts of the cycles and parallel families read it: a client whose
// event loop was late at p99 by more than a check's `starvedLoopP99Ms` cannot grade a server's timing.
import { fmt } from '../model/verdict.ts';

export interface LoopDelay {
  p99Ms: number;
  maxMs: number;
}

/** Why the client was too starved to grade timing, or undefined. */
export function starvedReason(loop: LoopDelay | undefined, limitMs: number): string | undefined {
  if (!loop || !(loop.p99Ms > limitMs)) return undefined;
  return `our client was starved (event-loop delay p99 ${fmt(loop.p99Ms)} ms, max ${fmt(loop.maxMs)} ms > ${fmt(limitMs)} ms): its timestamps cannot grade the server`;
}
