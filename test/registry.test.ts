// The catalogue lints itself (test262-style metadata lint): unique ids, rationale, reference,
// and a pass proof and a fault proof for every check.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { ROOT } from '../lib/config/profile.ts';
import { allChecks, allProofs, families } from '../suites/catalogue.ts';

test('every family file exports checks and proofs, ids are family.slug and start with the family', () => {
  expect(Object.keys(families).length).toBeGreaterThan(0);
  for (const [family, mod] of Object.entries(families)) {
    expect(Array.isArray(mod.checks), `${family}.checks`).toBe(true);
    expect(Array.isArray(mod.proofs), `${family}.proofs`).toBe(true);
    for (const c of mod.checks) {
      expect(c.id, `id of a check in suites/${family}.ts`).toMatch(/^[a-z0-9-]+\.[a-z0-9-]+$/);
      expect(
        c.id.startsWith(`${family}.`) || (family === 'api-last' && c.id.startsWith('api.')),
        `${c.id} lives in suites/${family}.ts`,
      ).toBe(true);
    }
  }
});

test('check ids are unique', () => {
  const ids = allChecks.map((c) => c.id);
  const dupes = ids.filter((id, i) => ids.indexOf(id) !== i);
  expect(dupes).toEqual([]);
});

test('every check has a title, a level, a one-line rationale and a reference', () => {
  const problems: string[] = [];
  for (const c of allChecks) {
    if (!c.title.trim()) problems.push(`${c.id}: no title`);
    if (!['MUST', 'SHOULD', 'INFO'].includes(c.level)) problems.push(`${c.id}: level ${c.level}`);
    if (!c.rationale.trim() || c.rationale.includes('\n')) problems.push(`${c.id}: rationale must be one line`);
    if (c.reference.trim().length < 8) problems.push(`${c.id}: no reference`);
    for (const [name, t] of Object.entries(c.thresholds ?? {}))
      if (!t.why.trim()) problems.push(`${c.id}: threshold ${name} has no reason`);
  }
  expect(problems).toEqual([]);
});

test('every check has a pass proof and a fault proof, and every proof names a real check', () => {
  const ids = new Set(allChecks.map((c) => c.id));
  const missing: string[] = [];
  for (const c of allChecks) {
    const mine = allProofs.filter((p) => p.check === c.id);
    if (!mine.some((p) => !p.faults?.length)) missing.push(`${c.id}: no pass proof`);
    // INFO checks never fail: their counterpart is a proof on a server variant (a fault or extra server flags)
    // whose message must name what was measured there.
    const infoVariant = (p: (typeof mine)[number]) =>
      c.level === 'INFO' && !!(p.faults?.length || p.serverArgs?.length) && !!p.messageIncludes?.length;
    if (
      !mine.some(
        (p) =>
          (p.faults?.length && (p.expect === 'fail' || (c.level !== 'MUST' && p.expect === 'warn'))) || infoVariant(p),
      )
    )
      missing.push(`${c.id}: no fault proof`);
  }
  for (const p of allProofs) if (!ids.has(p.check)) missing.push(`proof for unknown check ${p.check}`);
  for (const p of allProofs)
    if (p.faults?.length && !p.messageIncludes?.length)
      missing.push(`fault proof ${p.check}/${p.faults} does not say what the message must name`);
  expect(missing).toEqual([]);
});

test('every proof states the raw verdict and what its message must say, consistently with the level', () => {
  // A graded outcome alone hides a detection that stopped firing (a SHOULD check's fail and a borderline warn both
  // grade to warn): every proof, pass proofs too, names the check's own verdict and text its message must contain.
  const byId = new Map(allChecks.map((c) => [c.id, c]));
  const graded = (raw: string, level: string) => (raw === 'fail' ? (level === 'MUST' ? 'fail' : 'warn') : raw);
  const problems: string[] = [];
  for (const p of allProofs) {
    const what = `${p.check}${p.faults?.length ? ` --fault ${p.faults.join(',')}` : ''}${p.serverArgs?.length ? ` ${p.serverArgs.join(' ')}` : ''}`;
    if (!p.raw) problems.push(`${what}: no raw verdict (raw)`);
    if (!p.messageIncludes?.length) problems.push(`${what}: no message expectation (messageIncludes)`);
    const c = byId.get(p.check);
    if (c && p.raw && !p.profile?.knownIssues && graded(p.raw, c.level) !== p.expect)
      problems.push(`${what}: raw ${p.raw} of a ${c.level} check grades to ${graded(p.raw, c.level)}, not ${p.expect}`);
    if (p.strict && p.raw !== 'warn')
      problems.push(`${what}: a strict expectation other than the rule only makes sense for a raw warn (borderline)`);
  }
  expect(problems).toEqual([]);
});

test("checks do not read ctx.strict: strict mode is grading's business (the proofs grade one verdict both ways)", () => {
  const offenders = readdirSync(join(ROOT, 'suites')).filter(
    (f) => f.endsWith('.ts') && /\bctx\.strict\b/.test(readFileSync(join(ROOT, 'suites', f), 'utf8')),
  );
  expect(offenders).toEqual([]);
});

test('destructive checks run after every check that only observes (family order, then order within a family)', async () => {
  const { FAMILY_ORDER } = await import('../vitest.config.ts');
  const { runOrder } = await import('../suites/support/register.ts');
  for (const family of Object.keys(families))
    expect(FAMILY_ORDER, `suites/${family}.ts is in FAMILY_ORDER`).toContain(family);
  const order = FAMILY_ORDER.flatMap((f) => runOrder(families[f]?.checks ?? []));
  const firstDestructive = order.findIndex((c) => c.destructive);
  expect(firstDestructive).toBeGreaterThan(0);
  const late = order
    .slice(firstDestructive)
    .filter((c) => !c.destructive && !c.readsRun)
    .map((c) => c.id);
  expect(late, 'observing checks that would run after a destructive one').toEqual([]);
  for (const id of [
    'errors.required-shape',
    'errors.optional-types',
    'errors.no-server-error',
    'context.over-window-400',
  ])
    expect(order.find((c) => c.id === id)?.destructive, id).toBe(true);
});

test('every dependsOn names a MUST check that runs no later than the dependent, in every tier it runs in', async () => {
  const { FAMILY_ORDER } = await import('../vitest.config.ts');
  const { runOrder } = await import('../suites/support/register.ts');
  const order = FAMILY_ORDER.flatMap((f) => runOrder(families[f]?.checks ?? []));
  const at = new Map(order.map((c, i) => [c.id, i]));
  // Checks whose dependency runs after them, each with why that is right. api.stop-sequence: its streamed half is only
  // a means (mayReport: false), so it never reports a stream not served; it names the check that will, later.
  const LATER: Record<string, string> = { 'api.stop-sequence': 'sse.content-type' };
  const problems: string[] = [];
  for (const c of order)
    for (const id of c.dependsOn ?? []) {
      const dep = order.find((d) => d.id === id);
      if (!dep) problems.push(`${c.id} depends on ${id}, which is no check`);
      else if (id === c.id) problems.push(`${c.id} depends on itself (a check that declares none reports its cause)`);
      else if (dep.level !== 'MUST')
        problems.push(`${c.id} depends on ${id}, a ${dep.level} check: only a MUST one reports`);
      else if (at.get(id)! > at.get(c.id)! && LATER[c.id] !== id)
        problems.push(`${c.id} depends on ${id}, which runs after it`);
      else if (dep.tier === 'full' && c.tier !== 'full')
        problems.push(`${c.id} runs in the quick tier, ${id} only in full`);
    }
  expect(problems).toEqual([]);
  // The lint itself: at least the streamed-chat dependents are declared.
  expect(order.filter((c) => c.dependsOn?.includes('sse.content-type')).length).toBeGreaterThanOrEqual(30);
});
