// context.healthy-after's normal requests: one request shape, sized from the server's pace, timed in sets before and
// after the long prompts with the machine's CPU use beside each set. The verdict is lib/grading/healthy-after.ts's.

import type { NormalRequest } from '../grading/healthy-after.ts';
import { type CpuUse, cpuSnapshot, cpuUse } from '../measure/machine-load.ts';
import { sizedFrom, tokensAt } from '../measure/pace.ts';
import type { Requester } from '../model/check.ts';
import type { Evidence } from '../model/types.ts';
import { chat, describeExchange, type Exchange, generationBody, measurePace, uniquePrompt } from './exchange.ts';
import { exchangeEvidence, STREAM_USAGE } from './long-prompts.ts';
import { served } from './served.ts';

/** Tokens of each normal request: about `requestMs` of decoding at the measured speed, else `maxTokens`. */
export async function normalSize(
  req: Requester,
  window: number | undefined,
  o: { requestMs: number; maxTokens: number },
): Promise<{ maxTokens: number; sizing: string }> {
  const pace = await measurePace(req);
  const maxTokens = pace
    ? tokensAt(pace, {
        targetMs: o.requestMs,
        min: 8,
        max: Math.min(1024, window ? Math.floor(window / 2) : 1024),
        wallCapMs: 5_000,
      })
    : o.maxTokens;
  return { maxTokens, sizing: `${sizedFrom(pace)}: ${maxTokens} tokens per normal request` };
}

/** A normal streamed request, the same before and after the long ones. */
function normalRequest(req: Requester, maxTokens: number): Promise<Exchange> {
  return chat(
    req,
    generationBody(req, 'openai-chat', {
      prompt: uniquePrompt(req, 'Write a short paragraph about rivers and stones.'),
      maxTokens,
      stream: true,
      exactLength: true,
      extra: STREAM_USAGE,
    }),
  );
}

/**
 * A timed set of normal requests, and who used the CPUs during it (where the suite started the server): a neighbour
 * that arrives between the sets slows a CPU-bound server exactly like a degradation would (lib/grading/cycles.ts
 * contention).
 */
async function timedNormalSet(
  req: Requester,
  reps: number,
  label: string,
  normal: (label: string) => Promise<Exchange>,
): Promise<{ xs: Exchange[]; cpu?: CpuUse }> {
  const pid = req.server.startedPid;
  const a = cpuSnapshot(pid);
  const xs: Exchange[] = [];
  for (let i = 0; i < reps; i++) xs.push(await normal(`${label} ${i + 1}`));
  const b = cpuSnapshot(pid);
  return { xs, cpu: a && b ? cpuUse(a, b) : undefined };
}

/** The normal requests of one check: one at a time, or a timed set of `reps`; each in the evidence (up to 24 there). */
export function normalSets(
  req: Requester,
  maxTokens: number,
  reps: number,
  ev: Evidence[],
): { one(label: string): Promise<Exchange>; timed(label: string): Promise<{ xs: Exchange[]; cpu?: CpuUse }> } {
  const one = async (label: string) => {
    const x = await normalRequest(req, maxTokens);
    if (ev.length < 24) ev.push(exchangeEvidence(label, x));
    return x;
  };
  return { one, timed: (label) => timedNormalSet(req, reps, label, one) };
}

/** A normal request as lib/grading/healthy-after.ts judges it. */
export function normalOf(x: Exchange): NormalRequest {
  return { rec: x.rec, metrics: x.metrics, served: served(x), described: describeExchange(x) };
}
