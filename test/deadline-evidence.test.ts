// Deadlines sized from this run's evidence (lib/measure/deadline-evidence.ts): once a request of a kind got no headers,
// no body after its headers, or a stream past max_tokens, later requests of that kind get a deadline sized from that
// evidence, and a cut says so. Proven both ways over real HTTP: the hostile server (never answers, streams forever)
// shrinks them; a correct server at 3 tok/s, cut by our own short budget, shrinks nothing.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { startHostile } from '../fixtures/hostile-server/spawn.ts';
import { startReference } from '../fixtures/reference-server/spawn.ts';
import { makeContext, runCheck } from '../lib/check/check.ts';
import { chat, generationBody, uniquePrompt } from '../lib/exchange/exchange.ts';
import { blockedOn, requestPrecondition } from '../lib/grading/preconditions.ts';
import { evidenceFor, requestKind } from '../lib/measure/deadline-evidence.ts';
import { BUDGET_FACTOR, requestDeadlines } from '../lib/measure/deadlines.ts';
import { paceOf } from '../lib/measure/pace.ts';
import type { CheckContext, CheckDef, RunMemory } from '../lib/model/check.ts';
import { freshMemory } from '../lib/model/memory.ts';
import type { Deadlines, Profile, Verdict } from '../lib/model/types.ts';
import { fail, inconclusive, pass } from '../lib/model/verdict.ts';

const BASE: Deadlines = { connectMs: 2_000, headersMs: 15_000, tokenIdleMs: 5_000, totalMs: 30_000 };
const KIND = 'POST /v1/chat/completions (whole)';

describe('sizing from evidence', () => {
  test('no headers: the headers floor becomes the stall floor; the message names the request and the check', () => {
    const d = requestDeadlines(
      BASE,
      undefined,
      { maxTokens: 8 },
      {},
      {
        kind: 'no-headers',
        request: 'POST /v1/chat/completions (whole)',
        check: 'api.chat-basic',
        ms: 15_004,
      },
    );
    expect(d.headersMs).toBe(5_000);
    expect(d.totalMs).toBe(30_000);
    expect(d.sizedBy).toBe(
      "sized from this run's evidence: POST /v1/chat/completions (whole) in api.chat-basic got no response headers in 15004 ms",
    );
  });

  test('silent after the headers: the total floor too; endless: BUDGET_FACTOR times a whole answer at its own pace', () => {
    const silent = requestDeadlines(BASE, undefined, {}, {}, { kind: 'silent', request: 'r', ms: 30_000 });
    expect([silent.headersMs, silent.totalMs]).toEqual([5_000, 5_000]);
    const endless = { kind: 'endless' as const, request: 'r', ms: 900, gapMs: 10, ttftMs: 5 };
    expect(requestDeadlines(BASE, undefined, { maxTokens: 24 }, {}, endless).totalMs).toBe(5_000);
    // A slower endless stream (a token event every 200 ms) gets the time 24 tokens need at that pace, times 4.
    expect(requestDeadlines(BASE, undefined, { maxTokens: 24 }, {}, { ...endless, gapMs: 200 }).totalMs).toBe(
      BUDGET_FACTOR * (5 + 24 * 200),
    );
  });

  test('past the 16 MiB read cap once: later answers of the kind are cut where no answer of their size reaches', () => {
    const e = {
      kind: 'oversized' as const,
      request: 'POST /v1/chat/completions (stream)',
      check: 'api.x',
      ms: 900,
      bytes: 16 * 2 ** 20 + 65536,
    };
    const d = requestDeadlines(BASE, undefined, { maxTokens: 24 }, {}, e);
    expect(d.readCapBytes).toBe(2 * 2 ** 20); // at least twice the line cap, so an endless line is named as one
    expect(requestDeadlines(BASE, undefined, { maxTokens: 256 }, {}, e).readCapBytes).toBe((4 * 256 + 64) * 4096);
    expect([d.headersMs, d.totalMs]).toEqual([15_000, 30_000]);
    expect(d.sizedBy).toMatch(/in api\.x went on past 16 MiB without ending$/);
    expect(requestDeadlines(BASE, undefined, { maxTokens: 24 }).readCapBytes).toBeUndefined();
  });

  test('what the pace says a request needs is never cut: a 3 tok/s server keeps its deadlines', () => {
    const slow = paceOf([{ at: 0, tokens: 32, tokenSource: 'usage', e2eMs: 10_800, ttftMs: 100, promptTokens: 20 }]);
    const plain = requestDeadlines(BASE, slow, { maxTokens: 32, promptChars: 300 });
    const e = { kind: 'silent' as const, request: 'r', ms: 30_000 };
    const sized = requestDeadlines(BASE, slow, { maxTokens: 32, promptChars: 300 }, {}, e);
    expect(sized.headersMs).toBe(plain.headersMs);
    expect(sized.totalMs).toBe(plain.totalMs);
    expect(sized.sizedBy).toBeUndefined();
  });

  test("a memory that is not a run's keeps nothing (self-tests, proofs)", () => {
    const memory = freshMemory();
    memory
      .shared({ name: 'deadline-evidence', initial: {} })
      .update(() => ({ [KIND]: { kind: 'silent', request: KIND, ms: 1 } }));
    expect(evidenceFor(memory, KIND)).toBeUndefined();
    expect(evidenceFor(freshMemory(undefined, { ofRun: true }), KIND)).toBeUndefined();
  });

  test('the kind of a request: path, stream or not (Ollama streams unless told not to)', () => {
    expect(requestKind('POST', 'http://h:1/v1/chat/completions', { stream: true })).toBe(
      'POST /v1/chat/completions (stream)',
    );
    expect(requestKind('POST', 'http://h:1/api/chat', '{"model":"m"}')).toBe('POST /api/chat (stream)');
    expect(requestKind('POST', 'http://h:1/api/chat', { stream: false })).toBe('POST /api/chat (whole)');
    expect(requestKind('GET', 'http://h:1/v1/models', undefined)).toBeUndefined();
  });
});

describe('over real HTTP', () => {
  const dir = mkdtempSync(join(tmpdir(), 'deadline-evidence-'));
  const otherLog = join(dir, 'other.log');
  writeFileSync(otherLog, '');
  const stops: Array<() => Promise<void>> = [];
  /** Each test is one run: its own memory, kept as a run keeps it. */
  const runOf = () => freshMemory(undefined, { ofRun: true });
  afterAll(async () => {
    for (const s of stops) await s();
  });

  const ctxFor = (memory: RunMemory, baseUrl: string, deadlines: Deadlines, checkId = 'x.evidence'): CheckContext => {
    const check = { id: checkId } as CheckDef;
    const profile: Profile = {
      id: 'p',
      baseUrl,
      model: 'reference-model',
      apis: ['openai-chat'],
      readiness: { kind: 'completion' },
      startTimeoutMs: 1000,
      slots: 1,
      deterministic: true,
      context: { discovery: 'none' },
      deadlines,
    };
    return makeContext(
      check,
      { memory, profile, server: { baseUrl, identity: {} } },
      new AbortController().signal,
      () => ({ p99Ms: 0, maxMs: 0 }),
    );
  };
  const body = (ctx: CheckContext, stream: boolean, maxTokens = 1) =>
    generationBody(ctx, 'openai-chat', { prompt: uniquePrompt(ctx, 'Say hello.'), maxTokens, stream });

  test('a server that never answers: the second request of the kind waits the stall floor, and says why', async () => {
    const memory = runOf();
    const h = await startHostile('never-answers', otherLog);
    stops.push(() => h.server.stop());
    // 3 s of silence for a 1-token answer (0.33 s at 3 tok/s; evidence from twice that): evidence.
    const deadlines = { connectMs: 2_000, headersMs: 3_000, tokenIdleMs: 500, totalMs: 4_000 };
    const ctx = ctxFor(memory, h.url, deadlines, 'x.first');
    const first = await chat(ctx, body(ctx, false));
    expect(first.rec.failure?.message).toBe('no response headers within 3000 ms');
    const ctx2 = ctxFor(memory, h.url, deadlines, 'x.second');
    const second = await chat(ctx2, body(ctx2, false));
    expect(second.rec.failure?.kind).toBe('headers-timeout');
    expect(second.rec.tEnd).toBeLessThan(2_000); // the stall floor, or what the prompt needs at the assumed prefill rate
    expect(second.rec.failure?.message).toMatch(
      /^no response headers within \d+ ms \(sized from this run's evidence: POST \/v1\/chat\/completions \(whole\) in x\.first got no response headers in 30\d\d ms\)/,
    );
    // Another kind (a stream) has no evidence yet: the profile's floor.
    expect(evidenceFor(memory, requestKind('POST', `${h.url}/v1/chat/completions`, { stream: true }))).toBeUndefined();
  }, 20_000);

  test('a stream past max_tokens: later streams of the kind get a total sized from its own pace', async () => {
    const memory = runOf();
    const h = await startHostile('infinite-stream', otherLog);
    stops.push(() => h.server.stop());
    const ctx = ctxFor(
      memory,
      h.url,
      { connectMs: 2_000, headersMs: 2_000, tokenIdleMs: 500, totalMs: 20_000 },
      'x.endless',
    );
    const first = await chat(ctx, body(ctx, true));
    expect(first.rec.failure?.kind).toBe('overflow');
    const e = evidenceFor(memory, requestKind('POST', `${h.url}/v1/chat/completions`, { stream: true }));
    expect(e).toMatchObject({ kind: 'endless', check: 'x.endless' });
    expect(e!.gapMs!).toBeGreaterThan(5);
    const d = requestDeadlines(ctx.deadlines, undefined, { maxTokens: 24 }, {}, e);
    expect(d.totalMs).toBeLessThan(20_000);
    expect(d.sizedBy).toMatch(/streamed past its max_tokens without end \(a token event every [\d.]+ ms\)/);
    // A later stream of the kind that needs a whole answer, in another check, is not sent: it would only run away again.
    const ctx2 = ctxFor(memory, h.url, ctx.deadlines, 'x.later');
    const again = await chat(ctx2, body(ctx2, true));
    expect(again.rec.failure).toEqual({
      kind: 'overflow',
      message: expect.stringMatching(
        /^not sent: this run has seen POST \/v1\/chat\/completions \(stream\) in x\.endless streamed past its max_tokens without end .*a request of this kind that needs a complete answer would not get one$/,
      ),
    });
    expect(again.rec.status).toBeUndefined();
    // One that stops after its first tokens still goes (it needs no end), and so does a whole answer (another kind).
    const few = await chat(ctx, body(ctx, true), { stopAfterTokens: 2 });
    expect(few.rec.status).toBe(200);
    expect(few.events?.tokenTimes.length).toBe(2);
    expect((await chat(ctx, body(ctx, false))).rec.status).toBe(200);
  }, 20_000);

  test('one finding: the check that failed on a stream without end reports it; a later check not sent such a stream is blocked by it, unless that check did not fail', async () => {
    const h = await startHostile('infinite-stream', otherLog);
    stops.push(() => h.server.stop());
    const profile = ctxFor(freshMemory(), h.url, BASE).profile;
    const deadlines = { connectMs: 2_000, headersMs: 2_000, tokenIdleMs: 500, totalMs: 20_000 };
    /** A check that streams one answer: `judge` decides on a failed request; a request not sent is a precondition. */
    const streaming = (id: string, judge: (message: string) => Verdict): CheckDef => ({
      id,
      title: id,
      level: 'MUST',
      rationale: 'test',
      reference: 'test',
      requires: ['openai-chat'],
      run: async (ctx) => {
        const x = await chat(ctx, body(ctx, true, 8), { deadlines });
        if (!x.rec.failure) return pass('answered');
        return x.rec.notSent
          ? blockedOn(judge(x.rec.failure.message), requestPrecondition(x.rec))
          : judge(x.rec.failure.message);
      },
    });
    const failing = (m: string) => fail({ requirement: 'A stream MUST end.', expected: 'an end', actual: m });
    const run = async (observer: (m: string) => Verdict) => {
      const memory = freshMemory(undefined, { ofRun: true });
      const o = { memory, profile: { ...profile, deadlines }, server: { baseUrl: h.url, identity: {} } };
      const first = await runCheck(streaming('x.observes', observer), o);
      const later = await runCheck(streaming('x.later', failing), o);
      const third = await runCheck(streaming('y.third', failing), o);
      return { first: first.verdict, later: later.verdict, third: third.verdict };
    };
    // The observer failed: it is the one report; the others are blocked by it, naming what it saw.
    const a = await run(failing);
    expect(a.first.outcome).toBe('fail');
    expect(a.first.message).toMatch(/kept streaming past max_tokens/);
    for (const v of [a.later, a.third]) {
      expect(v.outcome).toBe('inconclusive');
      expect(v.blockedBy).toBe('x.observes');
      expect(v.message).toMatch(
        /^blocked by x\.observes: not sent: this run has seen POST \/v1\/chat\/completions \(stream\) in x\.observes streamed past its max_tokens without end/,
      );
    }
    // The observer did not fail (its verdict was about something else): the first check not sent one reports it.
    const b = await run((m) => inconclusive(`not judged: ${m}`));
    expect(b.first.outcome).toBe('inconclusive');
    expect(b.later.outcome).toBe('fail');
    expect(b.later.message).toMatch(/not sent: this run has seen .* in x\.observes/);
    expect(b.third.outcome).toBe('inconclusive');
    expect(b.third.blockedBy).toBe('x.later');
  }, 30_000);

  test("a correct server at 3 tok/s: a stream cut by our own budget is no evidence; an answer that outlasted a floor still gets a whole answer's time", async () => {
    const memory = runOf();
    const ref = await startReference(['--decode-tps', '3']);
    stops.push(() => ref.stop());
    const ctx = ctxFor(memory, ref.baseUrl, { connectMs: 2_000, headersMs: 2_000, tokenIdleMs: 1_000, totalMs: 2_500 });
    const cut = await chat(ctx, body(ctx, true, 40));
    expect(cut.rec.failure?.kind).toBe('total-timeout');
    expect(cut.rec.reads.length).toBeGreaterThan(2); // tokens were flowing: our budget, not the server's silence
    expect(
      evidenceFor(memory, requestKind('POST', `${ref.baseUrl}/v1/chat/completions`, { stream: true })),
    ).toBeUndefined();
    // A whole answer of 40 tokens needs 13 s: no headers within the 2 s floor, and no evidence (slow, not silent)...
    const long = await chat(ctx, body(ctx, false, 40));
    expect(long.rec.failure?.kind).toBe('headers-timeout');
    expect(
      evidenceFor(memory, requestKind('POST', `${ref.baseUrl}/v1/chat/completions`, { stream: false })),
    ).toBeUndefined();
    // ...so the next whole answer (3 tokens, 1 s at 3 tok/s) keeps the profile's floor and completes.
    const short = await chat(ctx, body(ctx, false, 3));
    expect(short.rec.failure).toBeUndefined();
    expect(short.rec.status).toBe(200);
  }, 40_000);
});
