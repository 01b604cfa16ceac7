// One shared recording cache with one abort policy: several checks of a family
// read the same recorded exchanges (the sse streams, the long streams of `stream`, the metrics sample, the cycles
// run), recorded once per run and server.
//
// The policy, the same for every family:
//  - The recording runs under the signal of the check that asked first, with our client's lateness sampled while it
//    runs (the stall allowance of every check that reads it: lib/measure/client-lag.ts).
//  - A recording our side cut short (that check's bound ran out, our total deadline: lib/measure/deadlines.ts `endedByUs`) is
//    no evidence about the server. It is returned marked `incomplete`, with the reason and the measured speed, so a
//    reader grades it inconclusive (never fail, never error); it is dropped from the cache, so the next check records
//    it again, once, under its own bound (a second cut-short recording stays: no check pays the bound a third time).
//  - A recording that threw (our harness, an unreachable server) is dropped too, and the error goes to the caller.

import { type ClientLag, startLagSampler } from '../measure/client-lag.ts';
import { budgetText, endingOf } from '../measure/deadlines.ts';
import { observations, type Pace, paceKey, paceOf } from '../measure/pace.ts';
import type { LocalSlice, Requester } from '../model/check.ts';
import type { Recording, Verdict } from '../model/types.ts';
import { inconclusive, NotMeasurable } from '../model/verdict.ts';
import { decodeExchange } from './exchange.ts';

export interface SharedRecording<T> {
  value: T;
  /** Our client's event-loop lateness while the recording ran. */
  lag: ClientLag;
  /** Set when our side ended one of its requests while the server was still working: no evidence either way. */
  incomplete?: string;
  /** The server's pace when the recording finished (what messages name). */
  pace?: Pace;
  /** Wall time of the recording (ms). */
  ms: number;
  /** The check that recorded it. */
  recordedBy: string;
}

/**
 * This run's shared recordings, and the keys recorded again once after a cut: the memory of the process the checks of
 * a family run in (each family's worker records its own).
 */
const RECORDINGS: LocalSlice<{ cache: Map<string, Promise<SharedRecording<unknown>>>; retried: Set<string> }> = {
  name: 'shared-recordings',
  create: () => ({ cache: new Map(), retried: new Set() }),
};

function keyOf(ctx: Requester, name: string): string {
  return `${name}|${ctx.runId}|${ctx.baseUrl}|${ctx.profile.id}|${ctx.profile.model}`;
}

async function run<T>(
  ctx: Requester,
  record: () => Promise<T>,
  recordingsOf: (t: T) => ReadonlyArray<Recording | undefined>,
): Promise<SharedRecording<T>> {
  const sampler = startLagSampler();
  const t0 = performance.now();
  try {
    const value = await record();
    const cut = recordingsOf(value)
      .map((r, i) => (r ? { i, r, e: endingOf(r) } : undefined))
      .find((x) => x?.e.by === 'us' && x.e.kind === 'budget');
    const pace = paceOf(observations(ctx.memory, paceKey(ctx.baseUrl, ctx.profile.model)));
    return {
      value,
      lag: sampler.stop(),
      pace,
      ms: performance.now() - t0,
      recordedBy: ctx.owner,
      ...(cut && cut.e.by === 'us'
        ? {
            incomplete: `request ${cut.i + 1} of the shared recording was cut short by our side (${cut.e.detail})${progressOf(cut.r)}`,
          }
        : {}),
    };
  } finally {
    sampler.stop();
  }
}

/** How far a cut-short stream had come and how fast it was going then: the speed the budget ran out at. */
function progressOf(rec: Recording): string {
  try {
    const tokens = decodeExchange('openai-chat', rec, true).events?.tokens ?? [];
    if (tokens.length < 2) return `; ${tokens.length} token event(s) had arrived after ${Math.round(rec.tEnd)} ms`;
    const window = tokens[tokens.length - 1]!.t - tokens[0]!.t;
    if (!(window > 0))
      return `; ${tokens.length} token events had arrived, in one read, after ${Math.round(rec.tEnd)} ms`;
    const rate = ((tokens.length - 1) / window) * 1000;
    return `; it had streamed ${tokens.length} token events in ${Math.round(rec.tEnd)} ms, at ${rate >= 100 ? rate.toFixed(0) : rate.toFixed(1)} events/s when it was cut`;
  } catch {
    return '';
  }
}

/**
 * The recording `name` for this run and server: recorded once, shared by every check that asks. `recordingsOf` lists
 * the raw recordings inside the value, so the policy can tell a recording our side cut short.
 */
export async function shared<T>(
  ctx: Requester,
  name: string,
  record: () => Promise<T>,
  recordingsOf: (t: T) => ReadonlyArray<Recording | undefined>,
): Promise<SharedRecording<T>> {
  const key = keyOf(ctx, name);
  const { cache, retried: retriedKeys } = ctx.memory.local(RECORDINGS);
  let retried = false;
  for (;;) {
    let p = cache.get(key) as Promise<SharedRecording<T>> | undefined;
    const mine = !p;
    if (!p) {
      p = run(ctx, record, recordingsOf);
      cache.set(key, p);
    }
    let r: SharedRecording<T>;
    try {
      r = await p;
    } catch (e) {
      if (cache.get(key) === p) cache.delete(key);
      throw e;
    }
    if (!r.incomplete) return r;
    // A cut-short recording is recorded again once, by the next check that asks, under its own bound; after that
    // it stays (every later reader is inconclusive at once instead of paying the bound again).
    const again = !retriedKeys.has(key);
    if (again && cache.get(key) === p) {
      cache.delete(key);
      retriedKeys.add(key);
    }
    if (mine || retried || !again || ctx.signal.aborted) return r;
    retried = true;
  }
}

/** The inconclusive verdict for a reader of an incomplete shared recording (our budget, never the server's fault). */
export function incompleteVerdict(r: SharedRecording<unknown>, what: string): Verdict {
  return inconclusive(budgetText(what, r.pace, r.incomplete));
}

/**
 * The shared value itself, for families that read one exchange: an incomplete recording throws NotMeasurable, which
 * the runner grades inconclusive with the reason and the measured speed (never the server's failure).
 */
export async function sharedValue<T>(
  ctx: Requester,
  name: string,
  record: () => Promise<T>,
  recordingsOf: (t: T) => ReadonlyArray<Recording | undefined>,
): Promise<T> {
  const r = await shared(ctx, name, record, recordingsOf);
  if (r.incomplete) throw new NotMeasurable(incompleteVerdict(r, `the shared ${name} request was recorded`).message);
  return r.value;
}
