// One root cause, one failure (lib/check/blocked.ts, docs/grading.md "Blocked checks"): the rule on its own, the
// reports that show the cause once with its count, and the whole catalogue against a reference server that answers
// every streamed chat request HTTP 500 (fault stream-500): exactly one check fails, every other it touched is
// inconclusive "blocked by" that check, and no SHOULD or INFO check is "not met" for want of evidence.
import { afterAll, describe, expect, test } from 'vitest';
import { type ReferenceHandle, startReference } from '../fixtures/reference-server/spawn.ts';
import { resolveBlocked, rootCauses } from '../lib/check/blocked.ts';
import { grade, runCheck, skipReason } from '../lib/check/check.ts';
import { FAMILY_ORDER } from '../lib/check/family-order.ts';
import { blockedOn, requestPrecondition } from '../lib/grading/preconditions.ts';
import { resetConnections } from '../lib/http/recorder.ts';
import { freshMemory } from '../lib/model/memory.ts';
import type { Level, Precondition, Recording } from '../lib/model/types.ts';
import { fail, inconclusive, warn } from '../lib/model/verdict.ts';
import { renderConsole, renderMarkdown, toColumns } from '../reporters/render.ts';
import type { CheckResult, ResultsFile } from '../reporters/results-types.ts';
import { families } from '../suites/catalogue.ts';

const P: Precondition = {
  key: 'streamed POST /v1/chat/completions → HTTP 500',
  detail: 'streamed POST /v1/chat/completions answered HTTP 500',
};
const failed = fail({ requirement: 'A streamed chat request MUST be answered.', expected: '200', actual: '500' });
/** A check as declared: every one here but the reporter itself depends on sse.content-type. */
const c = (id: string, level: Level = 'MUST') => ({
  id,
  level,
  ...(id === 'sse.content-type' ? {} : { dependsOn: ['sse.content-type'] }),
});

describe('resolveBlocked', () => {
  test('the first MUST check to meet a failed precondition reports it; later ones are blocked by it', () => {
    const store = rootCauses(freshMemory());
    const first = resolveBlocked(c('sse.content-type'), blockedOn(failed, P), store);
    expect(first.outcome).toBe('fail');
    const later = resolveBlocked(c('stream.spread'), blockedOn(failed, P), store);
    expect(later.outcome).toBe('inconclusive');
    expect(later.blockedBy).toBe('sse.content-type');
    expect(later.message).toMatch(/^blocked by sse\.content-type: streamed POST/);
    // The reporter itself, judged again in the same run (a repeat), keeps its failure.
    expect(resolveBlocked(c('sse.content-type'), blockedOn(failed, P), store).outcome).toBe('fail');
  });
  test('a SHOULD or INFO check is never "not met" for want of evidence, even first', () => {
    for (const level of ['SHOULD', 'INFO'] as const) {
      const v = resolveBlocked(c('sse.no-lone-cr', level), blockedOn(warn('not met'), P), rootCauses(freshMemory()));
      expect(v.outcome).toBe('inconclusive');
      expect(v.message).toContain('blocked by sse.content-type');
    }
  });
  test('a check to which the request is only a means never reports it (mayReport false)', () => {
    const v = resolveBlocked(
      c('api.stop-sequence'),
      blockedOn(failed, { ...P, mayReport: false }),
      rootCauses(freshMemory()),
    );
    expect(v.outcome).toBe('inconclusive');
    expect(v.blockedBy).toBe('sse.content-type');
  });
  test("an own finding stays the check's own until the run has reported the cause", () => {
    const store = rootCauses(freshMemory());
    const own = { ...P, ownFinding: true };
    expect(resolveBlocked(c('errors.no-server-error'), blockedOn(failed, own), store).outcome).toBe('fail');
    resolveBlocked(c('sse.content-type'), blockedOn(failed, P), store);
    expect(resolveBlocked(c('errors.no-server-error'), blockedOn(failed, own), store).blockedBy).toBe(
      'sse.content-type',
    );
  });
  test('the check named is the one the blocked check declares it depends on; with none, the check itself', () => {
    const store = rootCauses(freshMemory());
    const stalls = { id: 'cycles.no-stalls', level: 'SHOULD' as const, dependsOn: ['cycles.no-slowdown'] };
    expect(resolveBlocked(stalls, blockedOn(warn('not met'), P), store).blockedBy).toBe('cycles.no-slowdown');
    const alone = resolveBlocked({ id: 'x.info', level: 'INFO' }, blockedOn(warn('not met'), P), store);
    expect(alone.blockedBy).toBe('x.info');
    // A MUST check that declares none is the reporter: it fails and records the cause.
    expect(resolveBlocked({ id: 'cycles.no-slowdown', level: 'MUST' }, blockedOn(failed, P), store).outcome).toBe(
      'fail',
    );
    expect(resolveBlocked(stalls, blockedOn(warn('not met'), P), store).message).toMatch(
      /^blocked by cycles\.no-slowdown: /,
    );
  });
  test('another answer is another cause; a verdict without a precondition is untouched', () => {
    const store = rootCauses(freshMemory());
    resolveBlocked(c('sse.content-type'), blockedOn(failed, P), store);
    const other = { ...P, key: 'streamed POST /v1/chat/completions → HTTP 503' };
    expect(resolveBlocked(c('parallel.no-starvation'), blockedOn(failed, other), store).outcome).toBe('fail');
    const plain = inconclusive('too short');
    expect(resolveBlocked(c('stream.spread'), plain, store)).toBe(plain);
  });
});

test('one cause is one kind of request answered alike: the same status and error text, numbers aside', () => {
  const rec = (stream: boolean, status: number, message: string): Recording => ({
    method: 'POST',
    url: 'http://127.0.0.1:1/v1/chat/completions',
    requestBody: JSON.stringify({ model: 'm', stream }),
    t0Abs: 0,
    status,
    headers: {},
    reads: [],
    tEnd: 1,
    body: new TextEncoder().encode(JSON.stringify({ error: { message, type: 'server_error' } })),
    truncated: false,
  });
  const key = (r: Recording) => requestPrecondition(r).key;
  const mock = (at: number) => rec(true, 500, `Bad control character in string literal in JSON at position ${at}`);
  expect(key(mock(97))).toBe(key(mock(212)));
  expect(key(mock(97))).toMatch(/^streamed POST \/v1\/chat\/completions → HTTP 500 "Bad control character/);
  expect(key(rec(true, 500, 'Cannot use tools with stream'))).not.toBe(key(mock(97)));
  expect(key(rec(false, 500, 'Bad control character in string literal in JSON at position 97'))).not.toBe(
    key(mock(97)),
  );
  expect(key(rec(true, 503, 'Bad control character in string literal in JSON at position 97'))).not.toBe(key(mock(97)));
});

// ---- the whole catalogue against one fault ------------------------------------------------------------------

let ref: ReferenceHandle | undefined;
afterAll(async () => {
  await ref?.stop();
});

/** Every check of the catalogue, in run order, against one server, as one run (one runId: one record of causes). */
async function catalogue(h: ReferenceHandle): Promise<CheckResult[]> {
  const runId = `rootcause-${Date.now().toString(36)}`;
  const memory = freshMemory();
  const out: CheckResult[] = [];
  for (const fam of FAMILY_ORDER) {
    const mod = families[fam];
    // Capacity is a run mode a run asks for (--capacity): not part of the catalogue's run.
    if (!mod || fam === 'capacity') continue;
    await resetConnections(); // as between the files of a real run
    const ordered = [...mod.checks.filter((k) => !k.destructive), ...mod.checks.filter((k) => k.destructive)];
    // A check that reads the run's own state (health.sentinel) has none here: its proofs run it in a real sequence.
    for (const check of ordered.filter((k) => !k.readsRun)) {
      const base = { id: check.id, title: check.title, family: fam, level: check.level } as const;
      const meta = { rationale: check.rationale, reference: check.reference };
      const skipped = skipReason(check, h.profile, h.info, 'quick');
      if (skipped) {
        out.push({ ...base, ...meta, outcome: 'skip', message: skipped });
        continue;
      }
      const { verdict } = await runCheck(check, {
        memory,
        profile: h.profile,
        server: h.info,
        tier: 'quick',
        strict: false,
        runId,
        log: () => undefined,
      });
      const g = grade(check, verdict, h.profile, false);
      out.push({
        ...base,
        ...meta,
        outcome: g.outcome,
        message: g.message,
        ...(verdict.blockedBy ? { blockedBy: verdict.blockedBy } : {}),
      });
    }
  }
  return out;
}

test('every stream a 500 (fault stream-500): one failure for it, every check it blocked named as such', {
  timeout: 120_000,
}, async () => {
  ref = await startReference(['--fault', 'stream-500']);
  const t0 = performance.now();
  const results = await catalogue(ref);
  const ms = performance.now() - t0;
  const table = results.map((r) => `${r.id} ${r.outcome}: ${r.message.split('\n')[0]!.slice(0, 160)}`).join('\n');
  const by = (o: string) => results.filter((r) => r.outcome === o).map((r) => r.id);
  expect(by('fail'), `one failure, for the root cause:\n${table}`).toEqual(['sse.content-type']);
  expect(by('warn'), `no SHOULD or INFO check "not met" for want of evidence:\n${table}`).toEqual([]);
  expect(by('error'), table).toEqual([]);
  const blocked = results.filter((r) => r.blockedBy);
  // Every inconclusive check is one the cause blocked, and says so.
  expect(by('inconclusive'), table).toEqual(blocked.map((r) => r.id));
  for (const r of blocked) {
    expect(r.blockedBy, r.id).toBe('sse.content-type');
    expect(r.message, r.id).toMatch(
      /^blocked by sse\.content-type: streamed POST \/v1\/chat\/completions answered HTTP 500/,
    );
  }
  // What blocks: the whole streaming side of the catalogue (families that stream chat), the rest unaffected.
  const blockedFamilies = new Set(blocked.map((r) => r.family));
  for (const f of ['sse', 'stream', 'metrics', 'parallel', 'cycles'])
    expect(blockedFamilies.has(f), `${f} blocked`).toBe(true);
  expect(blocked.length).toBeGreaterThanOrEqual(30);
  expect(results.find((r) => r.id === 'completions.framing')?.outcome).toBe('pass'); // not chat: served
  console.log(
    `stream-500: ${results.length} checks in ${Math.round(ms)} ms; 1 fail (sse.content-type), ${blocked.length} blocked by it; ${by('pass').length} pass, ${by('skip').length} skip`,
  );

  // The reports show the cause once, with the count of checks it blocked.
  const file: ResultsFile = {
    header: {
      suite: { name: 'llm-server-conformance', version: '0' },
      date: new Date().toISOString(),
      project: 'reference-stream-500',
      profile: { id: 'reference' },
      server: { baseUrl: ref.baseUrl, identity: {} },
      machine: { label: 'test', platform: 'linux', arch: 'x64', cpus: 2, memGiB: 1, node: process.version },
      tier: 'quick',
      strict: false,
    },
    checks: results,
    finished: { date: new Date().toISOString(), reason: 'failed' },
  } as ResultsFile;
  const cols = toColumns([file]);
  const text = renderConsole(cols, { verbose: true });
  const md = renderMarkdown(cols);
  const n = blocked.length;
  expect(text.match(/ROOT CAUSE /g)?.length, text).toBe(1);
  expect(text).toMatch(
    /ROOT CAUSE sse\.content-type \(FAIL\): A streamed chat request MUST be answered.*\[streamed POST \/v1\/chat\/completions answered HTTP 500: .*Bad control character/,
  );
  expect(text).toContain(`blocked ${n} checks (inconclusive): ${blocked.map((r) => r.id).join(', ')}`);
  // A person's console: the cause once, and per family one row for the checks it blocked.
  const person = renderConsole(cols);
  expect(person.match(/ROOT CAUSE /g)?.length, person).toBe(1);
  expect(person).toContain(`blocked ${n} checks (inconclusive)`);
  const families = new Set(blocked.map((r) => r.family));
  expect(person.match(/blocked by sse\.content-type \(root cause below\)/g)?.length, person).toBe(families.size);
  expect(md.match(/\*\*Root cause `sse\.content-type`\*\*/g)?.length, md).toBe(1);
  expect(md).toContain(`blocked ${n} checks (inconclusive)`);
  expect(md).toContain(`- ${n} checks blocked by \`sse.content-type\`:`);
});
