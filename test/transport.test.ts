// Transport robustness of the recorder against servers that misbehave at the HTTP level, over real loopback sockets:
// fresh vs reused socket resets, gzip event streams, Content-Length shorter or longer than the body, redirects to
// another origin, and the caps that bound memory against a server that never stops sending.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createGzip, gzipSync, constants as zc } from 'node:zlib';
import { expect, test } from 'vitest';
import { decodeSse } from '../lib/decode/stream-decoder.ts';
import { openaiChatEvents } from '../lib/decode/stream-events.ts';
import { bodyJson, bodyText, record } from '../lib/http/recorder.ts';
import { CAPS, chunkDecoder, describeRequest, recentRequests } from '../lib/http/transport.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A loopback server that counts connections and hands each request to `handle`. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse, nOnSocket: number) => void | Promise<void>) {
  const perSocket = new WeakMap<Socket, number>();
  const stats = { connections: 0, requests: 0 };
  const s = createServer(async (req, res) => {
    for await (const _ of req) void _;
    stats.requests++;
    const n = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, n);
    await handle(req, res, n);
  });
  s.on('connection', () => stats.connections++);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  return {
    url,
    stats,
    close: async () => {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    },
  };
}

const event = (content: string) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`;

test("a reset on a fresh connection is the server's failure: reported, not retried", async () => {
  const s = await serve(() => undefined);
  const raw = createServer();
  raw.on('connection', (sock) => sock.resetAndDestroy());
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
  let connections = 0;
  raw.on('connection', () => connections++);
  try {
    const rec = await record({
      url: `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1/chat/completions`,
      body: { x: 1 },
    });
    expect(rec.status).toBeUndefined();
    expect(rec.failure?.kind).toBe('reset');
    expect(rec.failure?.message).toMatch(/fresh connection.*not retried/);
    expect(rec.retriedAfter).toBeUndefined();
    expect(connections).toBe(1);
  } finally {
    await s.close();
    await new Promise((r) => raw.close(r));
  }
});

test('a reset on a reused keep-alive socket is retried once on a fresh connection, and the retry says so', async () => {
  const s = await serve((req, res, n) => {
    if (n >= 2) return void req.socket.destroy(); // the keep-alive race: dropped as it was reused
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  try {
    await record({ url: s.url, body: { n: 1 } });
    await sleep(50);
    const second = await record({ url: s.url, body: { n: 2 } });
    expect(second.status).toBe(200);
    expect(second.retriedAfter).toMatch(/other side closed|reset|socket/i);
    expect(s.stats.connections).toBe(2);
    expect(s.stats.requests).toBe(3); // exactly one retry
  } finally {
    await s.close();
  }
});

test('a gzip event stream flushed per event is decoded as it arrives, each event keeping its own read time', async () => {
  const s = await serve(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
    const gz = createGzip();
    gz.pipe(res);
    for (const w of ['a', 'b', 'c']) {
      gz.write(event(w));
      await new Promise<void>((r) => gz.flush(zc.Z_SYNC_FLUSH, () => r()));
      await sleep(40);
    }
    gz.end('data: [DONE]\n\n');
  });
  try {
    const rec = await record({ url: s.url });
    expect(rec.failure).toBeUndefined();
    expect(bodyText(rec)).toBe(`${event('a')}${event('b')}${event('c')}data: [DONE]\n\n`);
    const ev = openaiChatEvents(decodeSse(rec.reads));
    expect(ev.tokens.map((t) => t.text)).toEqual(['a', 'b', 'c']);
    const times = ev.tokens.map((t) => t.t);
    expect(times[2]! - times[0]!).toBeGreaterThan(40); // decoded per read, not at the end
    expect(rec.wireBytes).toBeLessThan(rec.body.length + 200);
  } finally {
    await s.close();
  }
});

test('a whole gzip body and a corrupt one: decoded, or a failure that says decoding failed', async () => {
  const good = chunkDecoder('gzip')!;
  const bytes = gzipSync(Buffer.from('{"ok":true}'));
  const out = Buffer.concat([
    await good.push(bytes.subarray(0, 5)),
    await good.push(bytes.subarray(5)),
    await good.end(),
  ]);
  expect(out.toString()).toBe('{"ok":true}');
  const s = await serve(
    (_req, res) => void res.writeHead(200, { 'content-encoding': 'gzip' }).end(Buffer.from('not gzip at all')),
  );
  try {
    const rec = await record({ url: s.url });
    expect(rec.failure?.message).toMatch(/gzip decoding failed/);
  } finally {
    await s.close();
  }
});

test('Content-Length shorter than the body: the body stops there, the next request on the connection is not corrupted nor retried away', async () => {
  const full = JSON.stringify({ ok: true, text: 'x'.repeat(64) });
  const s = await serve((req, res) => {
    if (req.url === '/short') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(full.length - 16) });
      return void res.end(full); // strictContentLength is off: node sends every byte
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"next":true}');
  });
  try {
    const a = await record({ url: `${s.url}/short`, body: {} });
    expect(a.status).toBe(200);
    expect(bodyJson(a).error).toMatch(/Content-Length/);
    await sleep(30);
    const b = await record({ url: `${s.url}/next`, body: {} });
    expect(b.failure).toBeUndefined();
    expect(bodyJson(b).json).toEqual({ next: true });
    expect(b.retriedAfter).toBeUndefined();
    expect(s.stats.requests).toBe(2);
  } finally {
    await s.close();
  }
});

test('Content-Length longer than the body, then the connection closes: a failure naming both lengths', async () => {
  const s = await serve((_req, res) => {
    const sock = res.socket;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
    res.end('{"ok":true}');
    setTimeout(() => sock?.end(), 50);
  });
  try {
    const rec = await record({ url: s.url, body: {} });
    expect(rec.status).toBe(200);
    expect(rec.failure?.kind).toBe('reset');
    expect(rec.failure?.message).toMatch(/after 11 of the 100 bytes its Content-Length announced/);
  } finally {
    await s.close();
  }
});

test('a redirect to another origin is not followed and the key never goes there', async () => {
  const key = 'sk-canary-redirect-0123456789';
  const seen: string[] = [];
  const other = await serve((req, res) => {
    seen.push(JSON.stringify(req.headers));
    res.writeHead(200).end('{}');
  });
  const s = await serve((req, res) => void res.writeHead(307, { location: `${other.url}${req.url}` }).end('moved'));
  try {
    const rec = await record({
      url: `${s.url}/v1/chat/completions`,
      headers: { authorization: `Bearer ${key}` },
      body: { a: 1 },
      secrets: [key],
    });
    expect(rec.status).toBe(307);
    expect(rec.headers.location).toContain(other.url);
    expect(seen).toEqual([]);
  } finally {
    await s.close();
    await other.close();
  }
});

test('a response that never ends is cut at the read cap; what is kept stays within the record caps', async () => {
  const block = Buffer.alloc(1 << 20, 0x61);
  const s = await serve(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    for (let i = 0; i < 200 && !res.destroyed; i++)
      if (!res.write(block)) await new Promise((r) => res.once('drain', r));
    res.end();
  });
  try {
    const rec = await record({ url: s.url, deadlines: { totalMs: 60_000 } });
    expect(rec.failure?.kind).toBe('overflow');
    expect(rec.failure?.message).toMatch(/read cap/);
    expect(rec.wireBytes).toBeGreaterThan(CAPS.readBytesPerStream);
    expect(rec.wireBytes).toBeLessThan(CAPS.readBytesPerStream + 4 * block.length);
    expect(rec.body.length).toBeLessThanOrEqual(CAPS.recordedBytesPerStream);
    expect(rec.reads.length).toBeLessThanOrEqual(CAPS.recordedReadsPerStream);
    expect(rec.truncated).toBe(true);
  } finally {
    await s.close();
  }
});

test('the journal names the last requests, redacted', async () => {
  const key = 'sk-canary-journal-0123456789';
  const s = await serve((_req, res) => void res.writeHead(200).end('{}'));
  try {
    await record({ url: `${s.url}/v1/chat/completions`, body: { max_tokens: -1, note: key }, secrets: [key] });
    const last = recentRequests().at(-1)!;
    const line = describeRequest(last);
    expect(line).toMatch(/^POST \/v1\/chat\/completions \{"max_tokens":-1/);
    expect(line).toMatch(/→ HTTP 200$/);
    expect(line).not.toContain(key);
  } finally {
    await s.close();
  }
});

test('stream guards: a line past the line cap and a stream far past max_tokens are cut as overflow', async () => {
  const { streamGuards, runawayLimit } = await import('../lib/http/stream-guards.ts');
  const calls: string[] = [];
  const control = { progress: () => undefined, abort: () => undefined, overflow: (r: string) => calls.push(r) };
  const g = streamGuards({ max_tokens: 10 });
  let passed = 0;
  const onRead = g.wrap(() => passed++);
  onRead(0, new Uint8Array(512 * 1024).fill(0x78), control);
  onRead(1, new TextEncoder().encode('x\n'), control); // a newline resets the count
  onRead(2, new Uint8Array(CAPS.lineBytes - 1).fill(0x78), control);
  expect(calls).toEqual([]);
  onRead(3, new Uint8Array(2).fill(0x78), control);
  expect(calls[0]).toMatch(/one line of the stream went on past 1 MiB without a newline/);
  expect(passed).toBe(3); // the read past the cap never reaches the parser
  for (let n = 1; n <= runawayLimit(10); n++) g.onToken(n);
  expect(calls).toHaveLength(1);
  g.onToken(runawayLimit(10) + 1);
  expect(calls[1]).toMatch(/kept streaming past max_tokens: 105 token events for max_tokens 10/);
});

test('a whole answer is decided at its first byte: an endless SSE body or HTML is cut at once (not-json), an error body is read whole', async () => {
  const s = await serve(async (req, res) => {
    if (req.url === '/sse') {
      // A non-streamed request answered with an SSE body that never ends.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 500 && !res.destroyed; i++) {
        res.write(event(`t${i}`));
        await sleep(10);
      }
      res.end();
    } else if (req.url === '/html') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('\n  <!DOCTYPE html><html><body>Bad gateway</body></html>');
    } else if (req.url === '/error') {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('Internal Server Error');
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(' \r\n{"ok":true}');
    }
  });
  try {
    const sse = await record({ url: `${s.url}/sse`, body: { stream: false }, wholeJson: true });
    expect(sse.failure?.kind).toBe('not-json');
    expect(sse.failure?.message).toMatch(
      /^answered a non-streamed request with an SSE body \(Content-Type text\/event-stream\), not JSON: .*first bytes "data: \{/,
    );
    expect(sse.tEnd).toBeLessThan(1_000); // the server would have gone on for 5 s
    const html = await record({ url: `${s.url}/html`, body: { stream: false }, wholeJson: true });
    expect(html.failure?.message).toMatch(
      /with an HTML page \(Content-Type text\/html\), not JSON: .*"<!DOCTYPE html>/,
    );
    const error = await record({ url: `${s.url}/error`, body: { stream: false }, wholeJson: true });
    expect(error.failure).toBeUndefined();
    expect(bodyText(error)).toBe('Internal Server Error');
    const ok = await record({ url: `${s.url}/ok`, body: { stream: false }, wholeJson: true });
    expect(ok.failure).toBeUndefined();
    expect(bodyJson(ok).json).toEqual({ ok: true });
  } finally {
    await s.close();
  }
});

test('a whole answer that has begun must end within the stall floor: a JSON body that keeps growing is cut', async () => {
  const s = await serve(async (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"choices":[{"message":{"content":"');
    for (let i = 0; i < 300 && !res.destroyed; i++) {
      res.write('aaaaaaaa');
      await sleep(10);
    }
    res.end('"}}]}');
  });
  try {
    const rec = await record({
      url: s.url,
      body: { stream: false },
      wholeJson: true,
      deadlines: { tokenIdleMs: 300, totalMs: 10_000 },
    });
    expect(rec.failure?.kind).toBe('token-idle');
    expect(rec.failure?.message).toMatch(
      /^the body of a non-streamed answer began and had not ended 300 ms later .*\(\d+ bytes in \d+ reads had arrived/,
    );
    expect(rec.tEnd).toBeLessThan(2_000);
  } finally {
    await s.close();
  }
});
