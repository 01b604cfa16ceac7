// Slots when nobody declared them and the server does not report them: parallel.speedup-2 measures whether two
// requests really run together, and clear batching enables the multi-slot checks at that concurrency. Also the
// client's own CPU share during a measurement: on a small machine our client competes with the server for cores.
import { availableParallelism } from 'node:os';
import type { LocalSlice, Requester } from '../model/check.ts';
import { measuredServing } from './serving.ts';

interface BatchingEvidence {
  /** Concurrency at which batching was measured. */
  concurrency: number;
  speedup: number;
  /** Lower confidence bound of the speedup. */
  low?: number;
  source: string;
}

/** Per server: measured batching, or null when the measurement found none (this run's, in its memory). */
const BATCHING: LocalSlice<Map<string, BatchingEvidence | null>> = { name: 'batching', create: () => new Map() };
const keyOf = (ctx: Requester) => `${ctx.runId}|${ctx.baseUrl}|${ctx.profile.id}`;

export function recordBatching(ctx: Requester, evidence: BatchingEvidence | null): void {
  ctx.memory.local(BATCHING).set(keyOf(ctx), evidence);
}

/** What parallel.speedup-2 measured in this run: evidence, null (none found), or undefined (not measured). */
function measuredBatching(ctx: Requester): BatchingEvidence | null | undefined {
  return ctx.memory.local(BATCHING).get(keyOf(ctx));
}

/**
 * The slots the server has: declared or reported, else the serving concurrency this run measured
 * (lib/exchange/serving.ts: requests served at once, from stream.cancel-frees-slot); undefined when none of these.
 */
export function knownSlots(
  ctx: Pick<Requester, 'memory' | 'runId' | 'baseUrl' | 'profile' | 'server'>,
): { value: number; source: string; measured?: true } | undefined {
  // ctx.profile carries the declared or reported slots (lib/server/discovery.ts effectiveProfile).
  if (ctx.profile.slots !== undefined)
    return { value: ctx.profile.slots, source: ctx.server.slots?.source ?? 'declared in profile (slots)' };
  const s = measuredServing(ctx);
  return s ? { value: s.concurrency, source: `serving concurrency ${s.how}`, measured: true } : undefined;
}

/**
 * How many concurrent requests a multi-slot check may count on: the declared, reported or measured slots (knownSlots),
 * else the concurrency at which batching was measured; otherwise why there is no such figure (the check skips with it).
 */
export function usableSlots(ctx: Requester): { value: number; source: string } | { value?: undefined; why: string } {
  const known = knownSlots(ctx);
  if (known) return known;
  const b = measuredBatching(ctx);
  if (b) return { value: b.concurrency, source: b.source };
  if (b === null)
    return {
      why: 'slots unknown (neither declared nor reported) and parallel.speedup-2 measured no batching at 2 concurrent: requests look serialised, so there are no parallel slots to test (declare "slots" if there are)',
    };
  return {
    why: 'slots unknown (neither declared nor reported) and batching not measured in this run (parallel.speedup-2 did not run): declare "slots"',
  };
}

interface CpuShare {
  /** CPU time our process used (user + system), ms. */
  cpuMs: number;
  wallMs: number;
  cores: number;
  /** cpuMs / (wallMs × cores): the fraction of the machine's CPU our client took. */
  share: number;
}

/** Accumulates our own process's CPU time over the intervals between start() and stop(). */
export class CpuMeter {
  private cpuUs = 0;
  private wall = 0;
  private open?: { cpu: NodeJS.CpuUsage; t: number };
  start(): void {
    this.open = { cpu: process.cpuUsage(), t: performance.now() };
  }
  stop(): void {
    if (!this.open) return;
    const d = process.cpuUsage(this.open.cpu);
    this.cpuUs += d.user + d.system;
    this.wall += performance.now() - this.open.t;
    this.open = undefined;
  }
  result(): CpuShare | undefined {
    if (this.wall <= 0) return undefined;
    const cores = availableParallelism();
    const cpuMs = this.cpuUs / 1000;
    return { cpuMs, wallMs: this.wall, cores, share: Math.min(1, cpuMs / (this.wall * cores)) };
  }
}
