// The instrument of the clients family: tolerant wire reading, comparison with a client's report, the incremental
// judge, the trigger chunk, the teeing fetch (over real HTTP to a local server) and the server × client matrix.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { compareFacts, judgeIncremental, triggerOf } from '../lib/clients/compare.ts';
import { DRIVERS, emptyObservation, errorText } from '../lib/clients/drivers.ts';
import { teeFetch } from '../lib/clients/tee-fetch.ts';
import {
  jsonFacts,
  payloadsOf,
  reasoningFieldsOf,
  streamFacts,
  tolerantStream,
  wireLines,
} from '../lib/clients/wire.ts';
import { DEFAULT_DEADLINES } from '../lib/http/recorder.ts';
import { freshMemory } from '../lib/model/memory.ts';
import type { BodyRead, Recording } from '../lib/model/types.ts';
import { clientMatrix, clientMatrixHtml, clientMatrixLines } from '../reporters/clients-matrix.ts';
import { textTable } from '../reporters/render.ts';
import type { CheckResult } from '../reporters/results-types.ts';

const enc = new TextEncoder();
const reads = (...parts: Array<[number, string]>): BodyRead[] => parts.map(([t, s]) => ({ t, bytes: enc.encode(s) }));
const chunk = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: 'c1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
    ...extra,
  });
const driver = (id: string) => DRIVERS.find((d) => d.id === id)!;

describe('wire reading', () => {
  test('lines end at LF, CRLF or a lone CR, also when a CRLF is split across reads; offsets are bytes', () => {
    const ls = wireLines(reads([1, 'a: é\r'], [2, '\nb\rc\n'], [3, 'd']));
    expect(ls.map((l) => [l.text, l.offset, l.t])).toEqual([
      ['a: é', 0, 2],
      ['b', 7, 2],
      ['c', 9, 2],
      ['d', 11, 3],
    ]);
  });

  test('payloads: data with or without the space, bare JSON, values run together, [DONE]; comments and other fields are not payloads', () => {
    expect(payloadsOf('data: {"a":1}')).toEqual(['{"a":1}']);
    expect(payloadsOf('data:{"a":1}')).toEqual(['{"a":1}']);
    expect(payloadsOf('{"a":1}')).toEqual(['{"a":1}']);
    expect(payloadsOf('data: {"a":1}{"b":2}')).toEqual(['{"a":1}', '{"b":2}']);
    expect(payloadsOf('data: [DONE]')).toEqual(['[DONE]']);
    expect(payloadsOf(': ping')).toEqual([]);
    expect(payloadsOf('event: message_start')).toEqual([]);
    expect(payloadsOf('data: {"broken')).toEqual([]);
  });

  test('a stream without blank lines still yields its text to the tolerant reader (the client is judged on what the wire carried)', () => {
    const r = reads(
      [5, `data: ${chunk('Hel')}\n`],
      [
        9,
        `data: ${chunk('lo')}\ndata: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n`,
      ],
    );
    const f = streamFacts(tolerantStream('openai-chat', r).events);
    expect(f).toMatchObject({ text: 'Hello', finish: 'stop', usage: { input: 3, output: 2 }, contentTimes: [5, 9] });
  });

  test('non-stream facts per API, and the reasoning field the wire used', () => {
    expect(
      jsonFacts('openai-chat', {
        choices: [{ message: { content: 'x', reasoning: 'r' }, finish_reason: 'length' }],
        usage: { prompt_tokens: 1, completion_tokens: 2 },
      }),
    ).toMatchObject({ text: 'x', reasoning: 'r', finish: 'length', usage: { input: 1, output: 2 } });
    expect(
      jsonFacts('anthropic-messages', {
        content: [
          { type: 'thinking', thinking: 't' },
          { type: 'text', text: 'a' },
        ],
        stop_reason: 'end_turn',
        usage: { input_tokens: 4, output_tokens: 5 },
      }),
    ).toMatchObject({ text: 'a', reasoning: 't', finish: 'end_turn', usage: { input: 4, output: 5 } });
    expect(
      jsonFacts('ollama-native', {
        message: { content: 'o', thinking: 'h' },
        done_reason: 'stop',
        prompt_eval_count: 6,
        eval_count: 7,
      }),
    ).toMatchObject({ text: 'o', reasoning: 'h', finish: 'stop', usage: { input: 6, output: 7 } });
    expect(
      reasoningFieldsOf('openai-chat', [`data: ${JSON.stringify({ choices: [{ delta: { reasoning: 'r' } }] })}`]),
    ).toEqual(['reasoning']);
  });
});

describe('comparison with the client', () => {
  const wire = {
    text: 'Hello',
    reasoning: '',
    finish: 'length',
    finishes: ['length'],
    usage: { input: 3, output: 2 },
    contentTimes: [],
  };

  test('an exact report passes; a thrown error is the finding, and an error both emitted and thrown is said once', () => {
    expect(
      compareFacts(
        driver('openai'),
        'c 1',
        wire,
        { ...emptyObservation(), text: 'Hello', finish: 'length', usage: { input: 3, output: 2 } },
        [],
      ).problems,
    ).toEqual([]);
    const e = new SyntaxError('Unexpected token');
    const f = compareFacts(
      driver('openai'),
      'c 1',
      wire,
      { ...emptyObservation(), thrown: e, reported: [errorText(e)] },
      [],
    );
    expect(f.problems).toEqual(['c 1 threw SyntaxError: Unexpected token']);
    expect(f.error).toBe('threw SyntaxError: Unexpected token');
  });

  test('silent loss, a finish reason merged twice, usage lost: each named with client and wire values', () => {
    const f = compareFacts(
      driver('langchain'),
      'lc',
      { ...wire, finishes: ['length', 'length'] },
      { ...emptyObservation(), text: '', finish: 'lengthlength' },
      [],
    );
    expect(f.problems[0]).toContain('reported no text and no error, although the wire carried 5 characters');
    expect(f.problems[1]).toContain('reported finish reason "lengthlength"; the wire said "length" (sent 2 times');
    expect(f.problems[2]).toContain('reported usage input none (wire 3), output none (wire 2)');
  });

  test("finish reasons go through the client's documented mapping (AI SDK: unknown values are 'other')", () => {
    const obs = { ...emptyObservation(), text: 'Hello', finish: 'other', usage: { input: 3, output: 2 } };
    expect(
      compareFacts(driver('ai-sdk'), 'ai', { ...wire, finish: 'done', finishes: ['done'] }, obs, []).problems,
    ).toEqual([]);
    expect(compareFacts(driver('ai-sdk'), 'ai', wire, obs, []).problems[0]).toContain(
      'which this client reports as "length"',
    );
  });

  test('reasoning in a field the client does not read is a note, not a failure; in a field it reads, it is compared', () => {
    const w = { ...wire, reasoning: 'think' };
    const obs = {
      ...emptyObservation(),
      text: 'Hello',
      reasoning: '',
      finish: 'length',
      usage: { input: 3, output: 2 },
    };
    const lc = compareFacts(driver('langchain'), 'lc', w, obs, ['reasoning']);
    expect(lc.problems).toEqual([]);
    expect(lc.notes[0]).toContain('does not surface');
    expect(compareFacts(driver('openai'), 'oa', w, obs, ['reasoning']).problems[0]).toContain(
      'reported reasoning that differs',
    );
  });
});

describe('incremental surfacing', () => {
  const wireT = [10, 20, 30, 40, 50, 110];
  test('first text within the first half of the wire spread passes; after it, the client held text back', () => {
    expect(judgeIncremental(wireT, [12, 60, 111], 5).kind).toBe('ok');
    const b = judgeIncremental(wireT, [112], 5);
    expect(b.kind).toBe('buffered');
    expect(b.note).toContain('after 100 % of the content events had arrived');
  });
  test('a burst on the wire, too few events, or our own starved loop are not held against the client', () => {
    expect(judgeIncremental([10, 11, 12], [12], 0).kind).toBe('not-judged');
    expect(judgeIncremental([10, 90], [95], 0).kind).toBe('not-judged');
    expect(judgeIncremental(wireT, [112], 80).kind).toBe('starved');
  });
});

describe('trigger chunk', () => {
  const rec = (rs: BodyRead[]): Recording => {
    const body = new Uint8Array(rs.reduce((n, r) => n + r.bytes.length, 0));
    let o = 0;
    for (const r of rs) {
      body.set(r.bytes, o);
      o += r.bytes.length;
    }
    return { method: 'POST', url: 'u', t0Abs: 0, status: 200, headers: {}, reads: rs, tEnd: 0, body, truncated: false };
  };
  test('the lines of the last read the client had been handed (a read may hold the culprit and the next event)', () => {
    const r = rec(reads([1, 'data: {"a":1}\n\n'], [2, 'data: {"b":\n\ndata: 2}\n\n'], [3, 'data: [DONE]\n\n']));
    const t = triggerOf(r, 15 + 23, true);
    expect(t.where).toContain('bytes 15–38 of 52');
    expect(t.bytes).toBe('data: {"b":\\ndata: 2}');
    expect(triggerOf(r, 52, true).where).toContain('the end of the stream');
  });
});

describe('teeing fetch over real HTTP', () => {
  let server: Server;
  let base = '';
  const seen: Array<{ url?: string; auth?: string; xkey?: string }> = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push({
        url: req.url,
        auth: req.headers.authorization,
        xkey: req.headers['x-api-key'] as string | undefined,
      });
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://127.0.0.2:9/elsewhere' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      setTimeout(() => {
        res.write('data: two\n\n');
        res.end();
      }, 30);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  const tee = (max = 2) =>
    teeFetch({
      baseUrl: base,
      authHeaders: { authorization: 'Bearer profile-key-123' },
      deadlines: DEFAULT_DEADLINES,
      signal: new AbortController().signal,
      secrets: ['profile-key-123'],
      maxRequests: max,
    });

  test("the client's credentials are replaced by the profile's; bytes reach the client and the recording alike", async () => {
    const t = tee();
    const res = await t.fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer placeholder', 'x-api-key': 'placeholder' },
      body: '{"stream":true}', // a stream: a whole answer would be cut at its first byte, "d" (not JSON)
    });
    expect(await res.text()).toBe('data: one\n\ndata: two\n\n');
    const [rec] = await t.settle();
    expect(seen.at(-1)).toEqual({ url: '/v1/chat/completions', auth: 'Bearer profile-key-123', xkey: undefined });
    // Read boundaries depend on scheduling; the bytes do not.
    expect(new TextDecoder().decode(rec!.body)).toBe('data: one\n\ndata: two\n\n');
    expect(t.exchanges[0]!.delivered).toBe(rec!.body.length);
    expect(rec!.requestBody).toBe('{"stream":true}');
  });

  test('another origin is refused (no request leaves, nothing is sent with the key); the request count is bounded', async () => {
    const t = tee(1);
    const before = seen.length;
    await expect(t.fetch('http://127.0.0.2:9/tokenizer.json')).rejects.toThrow(/refused: only the profile's origin/);
    expect(seen.length).toBe(before);
    await (await t.fetch(`${base}/a`)).text();
    await expect(t.fetch(`${base}/b`)).rejects.toThrow(/at most 1 request/);
    expect(t.refused).toHaveLength(2);
  });

  test('a redirect is handed to the client, never followed', async () => {
    const t = tee();
    const res = await t.fetch(`${base}/redirect`);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('http://127.0.0.2:9/elsewhere');
    await t.settle();
  });

  test('a client that stops reading early does not cut the recording: the wire is kept whole', async () => {
    const t = tee();
    const res = await t.fetch(`${base}/stream`);
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    const [rec] = await t.settle();
    expect(new TextDecoder().decode(rec!.body)).toBe('data: one\n\ndata: two\n\n');
    expect(rec!.failure).toBeUndefined();
  });
});

describe('server × client matrix', () => {
  const result = (id: string, outcome: CheckResult['outcome'], client?: unknown): CheckResult => ({
    id,
    title: id,
    family: 'clients',
    level: 'SHOULD',
    outcome,
    message: outcome === 'pass' ? 'ok' : 'SHOULD not met: boom',
    rationale: '',
    reference: '',
    ...(client ? { metrics: { client } } : {}),
  });
  const ok = {
    packages: { openai: '6.49.0' },
    stream: { outcome: 'pass', mustBroken: [] },
    nonStream: { outcome: 'pass', mustBroken: [] },
  };
  const bad = {
    packages: { openai: '6.49.0' },
    stream: { outcome: 'fail', error: 'threw SyntaxError: x', mustBroken: ['sse.one-json-per-event'] },
    nonStream: { outcome: 'pass', mustBroken: [] },
  };

  test('rows per client, columns per run, first error and the MUST rules the wire broke; odd metrics render as n/a', () => {
    const m = clientMatrix([
      { label: 'a', checks: [result('clients.openai', 'pass', ok)] },
      { label: 'b', checks: [result('clients.openai', 'warn', bad), result('clients.ollama', 'skip')] },
    ]);
    expect(m.rows.map((r) => r.id)).toEqual(['clients.openai', 'clients.ollama']);
    expect(m.rows[0]!.cells[1]).toMatchObject({
      outcome: 'warn',
      version: 'openai@6.49.0',
      stream: 'fail',
      nonStream: 'pass',
      firstError: 'threw SyntaxError: x',
      mustBroken: ['sse.one-json-per-event'],
    });
    expect(m.rows[1]!.cells[0]).toBeUndefined();
    expect(m.rows[1]!.cells[1]).toMatchObject({ stream: 'skip', nonStream: 'skip', version: '?' });
    const lines = clientMatrixLines([{ label: 'b', checks: [result('clients.openai', 'warn', bad)] }], textTable).join(
      '\n',
    );
    expect(lines).toContain('openai  openai@6.49.0  fail    pass        threw SyntaxError: x');
    expect(clientMatrixLines([{ label: 'x', checks: [result('sse.content-type', 'pass')] }], textTable)).toEqual([]);
    const html = clientMatrixHtml(
      [
        {
          label: 'run <1>',
          checks: [result('clients.openai', 'warn', { ...bad, stream: { ...bad.stream, error: 'threw <script>' } })],
        },
      ],
      (o, l) => `[${o}:${l ?? o}]`,
    );
    expect(html).toContain('id="client-matrix"');
    expect(html).toContain('run &lt;1&gt;');
    expect(html).toContain('threw &lt;script&gt;');
    expect(html).toContain('stream [fail:fail] non-stream [pass:pass]');
    expect(clientMatrixHtml([{ label: 'x', checks: [] }], (o) => o)).toBe('');
  });
});

describe('every client against a server that requires a key', () => {
  test("the profile's key reaches the server in the Authorization header only, whatever the client sends, and appears in no result", async () => {
    const { startReference } = await import('../fixtures/reference-server/spawn.ts');
    const { checks } = await import('../suites/clients.ts');
    const { runCheck, grade } = await import('../lib/check/check.ts');
    const key = 'sk-clients-test-0123456789';
    process.env.CLIENTS_TEST_KEY = key;
    const ref = await startReference(['--api-key', key]);
    try {
      const profile = { ...ref.profile, apiKeyEnv: 'CLIENTS_TEST_KEY' };
      for (const check of checks) {
        const { verdict } = await runCheck(check, {
          memory: freshMemory(),
          profile,
          server: ref.info,
          log: () => undefined,
        });
        const g = grade(check, verdict, profile, false);
        expect(g.outcome, `${check.id}: ${g.message}`).toBe('pass');
        expect(JSON.stringify({ m: g.message, x: verdict.metrics, e: verdict.evidence })).not.toContain(key);
      }
    } finally {
      delete process.env.CLIENTS_TEST_KEY;
      await ref.stop();
    }
  }, 90_000);
});
