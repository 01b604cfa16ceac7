// The instrument first: the recorder over real loopback HTTP, with writes we control byte by byte.

import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { decodeSse } from '../lib/decode/stream-decoder.ts';
import { openaiChatEvents } from '../lib/decode/stream-events.ts';
import { bodyText, record } from '../lib/http/recorder.ts';

type Script = (res: ServerResponse) => Promise<void>;
const scripts = new Map<string, Script>();
let server: Server;
let base: string;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  server = createServer((req, res) => {
    res.socket?.setNoDelay(true);
    const s = scripts.get(req.url ?? '');
    if (!s) {
      res.writeHead(404).end();
      return;
    }
    s(res).catch(() => res.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream' });
const chunk = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;

test('every body read gets its own timestamp, in order, taken on arrival', async () => {
  scripts.set('/three', async (res) => {
    sse(res);
    for (const w of ['a', 'b', 'c']) {
      res.write(chunk(w));
      await sleep(40);
    }
    res.end('data: [DONE]\n\n');
  });
  const rec = await record({ url: `${base}/three` });
  expect(rec.status).toBe(200);
  expect(rec.reads.length).toBeGreaterThanOrEqual(3);
  const ts = rec.reads.map((r) => r.t);
  expect([...ts].sort((a, b) => a - b)).toEqual(ts);
  // 40 ms apart on the server: the recorder must see them as separate, later reads (ordering, not absolute time).
  expect(ts[2]! - ts[0]!).toBeGreaterThan(0);
  expect(rec.tHeaders).toBeLessThanOrEqual(ts[0]!);
  expect(rec.tEnd).toBeGreaterThanOrEqual(ts[ts.length - 1]!);
});

test('a multibyte character split across two reads decodes intact', async () => {
  const bytes = Buffer.from(chunk('café 🙂'), 'utf8');
  const cut = bytes.indexOf(Buffer.from('🙂')) + 2; // inside the 4-byte emoji
  scripts.set('/split-char', async (res) => {
    sse(res);
    res.write(bytes.subarray(0, cut));
    await sleep(30);
    res.write(bytes.subarray(cut));
    res.end('data: [DONE]\n\n');
  });
  const rec = await record({ url: `${base}/split-char` });
  expect(rec.reads.length).toBeGreaterThanOrEqual(2);
  const ev = openaiChatEvents(decodeSse(rec.reads));
  expect(ev.text).toBe('café 🙂');
  expect(ev.text).not.toContain('\uFFFD');
});

test('an SSE event split across reads is one event, stamped with the read that completed it', async () => {
  const ev = chunk('hello');
  scripts.set('/split-event', async (res) => {
    sse(res);
    res.write(ev.slice(0, 10));
    await sleep(30);
    res.write(ev.slice(10));
    res.end('data: [DONE]\n\n');
  });
  const rec = await record({ url: `${base}/split-event` });
  const d = decodeSse(rec.reads);
  expect(d.events.map((e) => e.data)).toEqual([ev.slice(6, -2), '[DONE]']);
  expect(d.events[0]!.t).toBe(rec.reads[1]!.t);
});

test('several events in one read share that read’s timestamp', async () => {
  scripts.set('/together', async (res) => {
    sse(res);
    res.end(chunk('a') + chunk('b') + 'data: [DONE]\n\n');
  });
  const rec = await record({ url: `${base}/together` });
  const d = decodeSse(rec.reads);
  expect(d.events).toHaveLength(3);
  expect(new Set(d.events.map((e) => e.t)).size).toBe(1);
});

test('token-inactivity deadline: pings keep bytes flowing but are not progress', async () => {
  scripts.set('/pings', async (res) => {
    sse(res);
    res.write(chunk('first'));
    for (let i = 0; i < 40; i++) {
      res.write(': ping\n\n');
      await sleep(20);
      if (res.destroyed || res.writableEnded) return;
    }
    res.end('data: [DONE]\n\n');
  });
  let tokens = 0;
  const rec = await record({
    url: `${base}/pings`,
    tokenProgress: true,
    deadlines: { tokenIdleMs: 200, totalMs: 5_000 },
    onRead: (_t, bytes, control) => {
      if (Buffer.from(bytes).toString().includes('"content"')) {
        tokens++;
        control.progress();
      }
    },
  });
  expect(tokens).toBe(1);
  expect(rec.failure?.kind).toBe('token-idle');
  expect(rec.failure?.message).toMatch(/pings and comments do not count/);
});

test('headers deadline and total deadline bound a hung server', async () => {
  scripts.set('/hang', async () => {
    await sleep(10_000);
  });
  const a = await record({ url: `${base}/hang`, deadlines: { headersMs: 150, totalMs: 5_000 } });
  expect(a.failure?.kind).toBe('headers-timeout');
  scripts.set('/slow-body', async (res) => {
    sse(res);
    for (let i = 0; i < 100 && !res.destroyed; i++) {
      res.write(chunk('x'));
      await sleep(20);
    }
    res.end();
  });
  const b = await record({ url: `${base}/slow-body`, deadlines: { totalMs: 200 } });
  expect(b.failure?.kind).toBe('total-timeout');
  expect(b.reads.length).toBeGreaterThan(0);
});

test('nothing listening is a connect failure, not a hang', async () => {
  const rec = await record({ url: 'http://127.0.0.1:9/v1/models', deadlines: { connectMs: 1_000, totalMs: 3_000 } });
  expect(rec.failure?.kind).toBe('connect');
  expect(rec.status).toBeUndefined();
});

test('the caller can stop reading after N tokens (the server sees a disconnect)', async () => {
  let closed = false;
  scripts.set('/long', async (res) => {
    res.on('close', () => (closed = true));
    sse(res);
    for (let i = 0; i < 200 && !res.destroyed; i++) {
      res.write(chunk(`t${i}`));
      await sleep(5);
    }
    res.end();
  });
  let n = 0;
  const rec = await record({
    url: `${base}/long`,
    onRead: (_t, _b, control) => {
      if (++n >= 3) control.abort('enough');
    },
  });
  expect(rec.failure?.kind).toBe('aborted');
  await sleep(100);
  expect(closed).toBe(true);
});

test('recorded bytes are capped and say so', async () => {
  scripts.set('/big', async (res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('x'.repeat(5_000));
  });
  const rec = await record({ url: `${base}/big`, maxBytes: 1_000 });
  expect(rec.body.length).toBe(1_000);
  expect(rec.truncated).toBe(true);
  expect(bodyText(rec)).toBe('x'.repeat(1_000));
});

test('secrets in the request body are not recorded', async () => {
  scripts.set('/echo', async (res) => {
    res.writeHead(200).end('{}');
  });
  const rec = await record({
    url: `${base}/echo`,
    body: { key: 'sk-canary-123456789' },
    secrets: ['sk-canary-123456789'],
  });
  expect(rec.requestBody).not.toContain('sk-canary-123456789');
});

test('a reset on a reused keep-alive socket is retried once on a fresh connection', async () => {
  const perSocket = new WeakMap<object, number>();
  let sockets = 0;
  let destroyed = 0;
  const s = createServer(async (req, res) => {
    for await (const _ of req) void _;
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    if (n === 1) sockets++;
    // The uvicorn race: the server drops an idle keep-alive socket just as the client reuses it.
    if (n >= 2) {
      destroyed++;
      req.socket.destroy();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', connection: 'keep-alive' }).end('{"ok":true}');
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}/`;
  try {
    // POST: undici replays idempotent requests itself, never a POST (a generation request).
    const first = await record({ url, body: { n: 1 } });
    await sleep(50); // let the pool take the socket back, so the next request reuses it
    const second = await record({ url, body: { n: 2 } });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.failure).toBeUndefined();
    expect(destroyed).toBe(1); // the second request really went out on the reused socket and was reset
    expect(sockets).toBe(2);
  } finally {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

test('a stream cut mid-body (socket destroyed after two events): a reset, with what arrived kept', async () => {
  scripts.set('/cut', async (res) => {
    sse(res);
    res.write(chunk('a'));
    await sleep(30);
    res.write(chunk('b'));
    await sleep(30);
    res.socket?.destroy();
  });
  const rec = await record({ url: `${base}/cut`, body: {} });
  expect(rec.status).toBe(200);
  expect(rec.failure?.kind).toBe('reset');
  // Two reads unless a loaded machine let both writes arrive before we read.
  expect(rec.reads.length).toBeGreaterThanOrEqual(1);
  expect(bodyText(rec)).toBe(chunk('a') + chunk('b'));
});
