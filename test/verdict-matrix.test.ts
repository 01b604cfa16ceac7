// The seed study's findings as a regression guard: every emulation of fixtures/seed-study.ts is started from its
// servers.json profile (real process, real HTTP) and its focused subset of checks runs; the checks documenting the
// study's finding must reach their pinned verdict with the cause named in the message, and every other check that
// ran must pass or be listed there with its reason. A change to a check that stops it catching a finding fails here.
//
// Checks run in family order; between families the client's connections are closed, as they are when a family's
// Vitest worker ends in a real run — so emu-mlx-vlm's decay (memory held until the connection closes) must show in
// the cycles family although another family's generations ran before it.
import { afterAll, describe, expect, test } from 'vitest';
import { type ReferenceHandle, startReference } from '../fixtures/reference-server/spawn.ts';
import { deviationsOf, EMULATIONS, outcomeOf } from '../fixtures/seed-study.ts';
import { rootCauses } from '../lib/check/blocked.ts';
import { grade, runCheck, skipReason } from '../lib/check/check.ts';
import { loadServers } from '../lib/config/profile.ts';
import { record, resetConnections } from '../lib/http/recorder.ts';
import { freshMemory } from '../lib/model/memory.ts';
import type { Profile } from '../lib/model/types.ts';
import { FAMILY_ORDER } from '../reporters/report-data.ts';
import { families } from '../suites/catalogue.ts';

const checkDef = (id: string) =>
  Object.values(families)
    .flatMap((f) => f.checks)
    .find((c) => c.id === id);

/** The emulation's reference-server flags: its profile's start command after `--port {port}`. */
function serverArgs(p: Profile): string[] {
  const cmd = p.start?.command ?? [];
  const i = cmd.indexOf('--port');
  if (!cmd.includes('fixtures/reference-server/main.ts') || i < 0)
    throw new Error(`${p.id}: not an emulation of the reference server`);
  return [...cmd.slice(i + 2)];
}

const running = new Set<ReferenceHandle>();
afterAll(async () => {
  await Promise.all([...running].map((s) => s.stop()));
});

const profiles = new Map(loadServers().map((p) => [p.id, p]));

describe("verdict matrix: the seed study's findings, pinned", () => {
  for (const emu of EMULATIONS) {
    const ids = [...emu.ci].sort(
      (a, b) => FAMILY_ORDER.indexOf(a.split('.')[0]!) - FAMILY_ORDER.indexOf(b.split('.')[0]!),
    );
    const findings = new Set(emu.findings.map((f) => f.check));
    const budget =
      ids.reduce((s, id) => s + (checkDef(id)?.timeoutMs ?? 60_000) * (findings.has(id) ? 2 : 1), 0) + 30_000;
    test(`${emu.project} (${emu.server}): ${emu.study}`, { timeout: budget }, async () => {
      const profile = profiles.get(emu.project);
      expect(profile, `servers.json has ${emu.project}`).toBeDefined();
      const { start: _start, baseUrl: _baseUrl, ...overrides } = profile!;
      const ref = await startReference(serverArgs(profile!), overrides);
      running.add(ref);
      const results = new Map<string, { outcome: ReturnType<typeof outcomeOf>; message: string }>();
      try {
        if (emu.before) {
          // Another family's traffic first (emu.before.why), on connections closed before the checks run.
          const body = {
            model: ref.profile.model,
            messages: [{ role: 'user', content: 'Say something.' }],
            max_tokens: emu.before.maxTokens,
            stream: true,
            temperature: 0,
          };
          // As many at once as the server has slots: the count is what matters (a decay keyed on requests since
          // start), and the held memory is released only when the connections close, whichever carried them.
          const lanes = Math.max(1, ref.profile.slots ?? 1);
          let sent = 0;
          await Promise.all(
            Array.from({ length: lanes }, async () => {
              while (sent < emu.before!.requests) {
                const i = sent++;
                const rec = await record({
                  method: 'POST',
                  url: `${ref.baseUrl}/v1/chat/completions`,
                  body,
                  deadlines: { connectMs: 5_000, headersMs: 10_000, tokenIdleMs: 10_000, totalMs: 20_000 },
                });
                expect(rec.status, `warm-up request ${i + 1} of ${emu.before!.requests}`).toBe(200);
              }
            }),
          );
          await resetConnections();
        }
        const memory = freshMemory();
        let family = '';
        for (const id of ids) {
          const check = checkDef(id);
          expect(check, `check ${id} exists`).toBeDefined();
          if (id.split('.')[0] !== family) {
            family = id.split('.')[0]!;
            await resetConnections();
          }
          const skipped = skipReason(check!, ref.profile, ref.info, 'quick');
          if (skipped) {
            results.set(id, { outcome: 'skip', message: skipped });
            continue;
          }
          const measure = async () => {
            const { verdict } = await runCheck(check!, {
              // One memory per emulation (the server's pace carries over, as within a run), each check its own run
              // id (no shared recordings) and its own root causes (each judged alone).
              memory,
              causes: rootCauses(freshMemory()),
              profile: ref.profile,
              server: ref.info,
              tier: 'quick',
              strict: false,
              log: () => undefined,
            });
            return grade(check!, verdict, ref.profile, false);
          };
          let g = await measure();
          // Inconclusive is no evidence either way (our own client was starved on a shared machine): a finding is
          // measured once more, on fresh connections, rather than called lost.
          if (g.outcome === 'inconclusive' && emu.findings.some((f) => f.check === id)) {
            await resetConnections();
            g = await measure();
          }
          results.set(id, { outcome: outcomeOf(g), message: g.message });
        }
      } finally {
        await resetConnections();
        running.delete(ref);
        await ref.stop();
      }
      const deviations = deviationsOf(emu, results);
      expect(
        deviations,
        `verdicts of ${emu.project}:\n${[...results].map(([id, r]) => `${id}: ${r.outcome} — ${r.message.split('\n')[0]}`).join('\n')}`,
      ).toEqual([]);
      for (const f of emu.findings)
        if (ids.includes(f.check))
          expect(f.outcomes, `${f.check} on ${emu.project}`).toContain(results.get(f.check)!.outcome);
    });
  }
});
