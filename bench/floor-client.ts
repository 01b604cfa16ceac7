// The floor of the fidelity benchmark: the least a Node client can do to receive a stream. node:net, the request
// written by hand, no HTTP parser, no SSE parser; each `data` event is timestamped and its bytes kept, nothing else.
// Stamps are read from the kept bytes after the stream ended (lib/run/fidelity.ts stampedArrivalsInBytes).
import { connect } from 'node:net';
import type { BodyRead } from '../lib/model/types.ts';

/** POST a streaming chat completion and record every read until the server closes the connection. */
export function rawStream(baseUrl: string, body: unknown, timeoutMs = 120_000): Promise<BodyRead[]> {
  const u = new URL(baseUrl);
  const payload = Buffer.from(JSON.stringify(body));
  const head =
    `POST /v1/chat/completions HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\n` +
    `Accept: text/event-stream\r\nContent-Length: ${payload.length}\r\nConnection: close\r\n\r\n`;
  return new Promise((resolve, reject) => {
    const reads: BodyRead[] = [];
    const sock = connect({ host: u.hostname, port: Number(u.port), noDelay: true });
    const timer = setTimeout(
      () => sock.destroy(new Error(`raw stream not finished within ${timeoutMs} ms`)),
      timeoutMs,
    );
    sock.on('connect', () => sock.write(Buffer.concat([Buffer.from(head), payload])));
    sock.on('data', (bytes: Buffer) => {
      reads.push({ t: performance.now(), bytes });
    });
    sock.on('end', () => {
      clearTimeout(timer);
      resolve(reads);
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}
