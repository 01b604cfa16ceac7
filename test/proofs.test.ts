// Every check, both ways, through real HTTP: PASS on the correct reference server, FAIL (with a message
// naming the fault) on the reference server with exactly one fault switched on.
import { afterAll, describe, expect, test } from 'vitest';
import { type ReferenceHandle, startReference } from '../fixtures/reference-server/spawn.ts';
import { rootCauses } from '../lib/check/blocked.ts';
import { grade, runCheck } from '../lib/check/check.ts';
import { TIMING_FAMILIES } from '../lib/check/family-order.ts';
import { defaultSettings } from '../lib/config/settings.ts';
import type { RunMemory } from '../lib/model/check.ts';
import { freshMemory } from '../lib/model/memory.ts';
import type { Profile, ServerInfo } from '../lib/model/types.ts';
import { discoverServer } from '../lib/server/discovery.ts';
import { measureBaseline, type SentinelContext } from '../lib/server/sentinel.ts';
import { allChecks, families } from '../suites/catalogue.ts';
import { type Proof, strictExpectation } from '../suites/support/proof.ts';
import { runWithSentinel, type SentinelRun } from './support/sentinel-run.ts';

// Protocol families prove their checks concurrently (their proofs wait on the server, not on the CPU); families that
// time the server prove theirs one at a time, on a machine kept quiet for them, and so does clients: it judges when
// text surfaced, which a busy event loop (the concurrent proofs share this process) turns into one burst.
const SEQUENTIAL = new Set([...TIMING_FAMILIES, 'context', 'clients', 'health']);

const flagsOf = (p: Proof) => [...(p.faults ?? []).flatMap((f) => ['--fault', f]), ...(p.serverArgs ?? [])];

// The correct server is one, shared by every proof that needs no flags. A server with flags serves one proof group:
// in a sequential family it is kept for the next proof when both declare they leave it as they found it; in a
// concurrent family every proof gets its own (a fault that crashes or leaks must not reach a neighbour).
const servers = new Map<string, Promise<ReferenceHandle>>();
let ownServers = 0;
function serverFor(p: Proof, concurrent: boolean): { key: string; handle: Promise<ReferenceHandle> } {
  const args = flagsOf(p);
  const key = concurrent && args.length ? `${JSON.stringify(args)}#${++ownServers}` : JSON.stringify(args);
  let s = servers.get(key);
  if (!s) {
    s = startReference(args);
    servers.set(key, s);
  }
  return { key, handle: s };
}
async function release(key: string, p: Proof, next: Proof | undefined, concurrent: boolean): Promise<void> {
  if (!flagsOf(p).length) return;
  if (!concurrent && p.shareServer && next?.shareServer && JSON.stringify(flagsOf(next)) === JSON.stringify(flagsOf(p)))
    return;
  const s = servers.get(key);
  servers.delete(key);
  if (s) await (await s).stop();
}
/** One memory per server, as one run's (the server's pace carries over from proof to proof against it). */
const memories = new Map<string, RunMemory>();
function memoryFor(serverKey: string): RunMemory {
  let m = memories.get(serverKey);
  if (!m) {
    m = freshMemory();
    memories.set(serverKey, m);
  }
  return m;
}
const runIds = new Map<string, string>();
function runIdFor(serverKey: string, p: Proof): string {
  const k = `${serverKey}|${JSON.stringify(p.profile ?? {})}|${p.tier ?? 'quick'}`;
  if (!runIds.has(k)) runIds.set(k, `proof${runIds.size.toString(36)}`);
  return runIds.get(k)!;
}
afterAll(async () => {
  await Promise.all([...servers.values()].map(async (s) => (await s).stop()));
});

/** A proof's run (`run`): its checks in order, with the health sentinel on, as a conformance run runs them. */
async function runSequence(
  p: Proof,
  profile: Profile,
  server: ServerInfo,
  runId: string,
  memory: RunMemory,
): Promise<Array<SentinelRun & { id: string }>> {
  const sc: SentinelContext = { profile, server, memory, runId, waitBoundMs: p.run!.waitS * 1000 };
  await measureBaseline(sc);
  const out: Array<SentinelRun & { id: string }> = [];
  for (const id of p.run!.checks) {
    const check = allChecks.find((c) => c.id === id);
    if (!check) throw new Error(`proof of ${p.check}: its run names an unknown check ${id}`);
    out.push({ id, ...(await runWithSentinel(sc, check, { profile, server, runId, log: () => undefined })) });
  }
  return out;
}

for (const [family, mod] of Object.entries(families)) {
  const concurrent = !SEQUENTIAL.has(family);
  describe(`proofs: ${family}`, { concurrent }, () => {
    for (const [i, proof] of mod.proofs.entries()) {
      const check = mod.checks.find((c) => c.id === proof.check);
      const verb = {
        pass: 'passes',
        fail: 'FAILs',
        warn: 'WARNs',
        inconclusive: 'is INCONCLUSIVE',
        skip: 'skips',
        known: 'is KNOWN',
        'known-passing': 'is KNOWN-PASSING',
        error: 'ERRORs',
      }[proof.expect];
      const label = proof.faults?.length
        ? `${proof.check} ${verb} with --fault ${proof.faults.join(',')}`
        : `${proof.check} ${verb} on the correct server`;
      test(label + (proof.serverArgs?.length ? ` (${proof.serverArgs.join(' ')})` : ''), {
        timeout: (check?.timeoutMs ?? 60_000) + 30_000 + (proof.run ? 120_000 : 0),
      }, async () => {
        expect(check, `check ${proof.check} exists in suites/${family}.ts`).toBeDefined();
        const { key, handle } = serverFor(proof, concurrent);
        const ref = await handle;
        try {
          const profile = {
            ...ref.profile,
            ...proof.profile,
            context: { ...ref.profile.context, ...proof.profile?.context },
          };
          // A proof that changes the profile (declared slots, window, discovery) gets what setup would have discovered for it.
          const server = proof.profile ? await discoverServer(profile, ref.baseUrl, {}, ref.info.startedPid) : ref.info;
          // A proof of a run gets a run's memory of its own (the sentinel's state, kept as a conformance run keeps it).
          const runOwn = proof.run ? freshMemory(undefined, { ofRun: true }) : undefined;
          const ran = runOwn ? await runSequence(proof, profile, server, runIdFor(key, proof), runOwn) : [];
          // A degraded run grades no timing check after the degradation (and has one); a healthy or recovered run
          // grades them all, and they pass.
          const timed = ran.filter((x) => x.timing);
          if (proof.run && proof.expect === 'fail') expect(timed.some((r) => r.afterDegraded)).toBe(true);
          for (const r of timed) {
            if (r.afterDegraded) expect(r.verdict.message, r.id).toContain('not graded: the server is degraded since');
            else expect(r.verdict.outcome, `${r.id}: ${r.verdict.message}`).toBe('pass');
          }
          const { verdict } = await runCheck(check!, {
            memory: runOwn ?? memoryFor(key),
            // The health gate after a timing check waits for a recovery as long as the proof's run says.
            ...(proof.run ? { settings: { ...defaultSettings(), healthWaitMs: proof.run.waitS * 1000 } } : {}),
            profile,
            server,
            // One run per server and profile, as in a real run: the checks of a family read the recordings it shares
            // (the sse streams, the long streams, the metrics sample, the cycles run) once per server, not once each.
            runId: runIdFor(key, proof),
            tier: proof.tier ?? 'quick',
            strict: false,
            log: () => undefined,
            // Each proof judges its check alone: no other proof's failure blocks it (lib/check/blocked.ts).
            causes: rootCauses(freshMemory()),
          });
          // The check's own verdict and its message first: the graded outcome alone hides a detection that stopped
          // firing (a SHOULD check's fail and a borderline warn both grade to warn).
          expect(proof.raw, `proof of ${proof.check} states the raw verdict`).toBeDefined();
          expect(verdict.outcome, `raw verdict of ${proof.check}; message:\n${verdict.message}`).toBe(proof.raw);
          expect(
            proof.messageIncludes?.length,
            `proof of ${proof.check} states what the message must say`,
          ).toBeGreaterThan(0);
          for (const m of proof.messageIncludes ?? []) {
            if (typeof m === 'string') expect(verdict.message).toContain(m);
            else expect(verdict.message).toMatch(m);
          }
          const graded = grade(check!, verdict, profile, false);
          expect(graded.outcome, `outcome of ${proof.check}; message:\n${graded.message}`).toBe(proof.expect);
          // Strict mode grades the same verdict (checks do not read ctx.strict): SHOULD warns fail, a borderline warn
          // stays a warn, inconclusive stays inconclusive.
          const strict = grade(check!, verdict, profile, true);
          expect(
            strict.outcome,
            `outcome of ${proof.check} under CONFORMANCE_STRICT=1; message:\n${strict.message}`,
          ).toBe(strictExpectation(proof, check!.level));
        } finally {
          await release(key, proof, mod.proofs[i + 1], concurrent);
        }
      });
    }
  });
}
