// Lifecycle: bounded start, clear errors with the server's last lines, nothing left running.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { referenceProfile } from '../fixtures/reference-server/spawn.ts';
import { requestAuth } from '../lib/config/request-auth.ts';
import { settingsFromEnv } from '../lib/config/settings.ts';
import { freePort, NeverReadyError, SetupError, spawnServer, waitBoundMs, waitReady } from '../lib/server/lifecycle.ts';

const dir = mkdtempSync(join(tmpdir(), 'lifecycle-'));

test('a start command that never becomes ready fails within its timeout, quoting what it printed', async () => {
  const script = join(dir, 'never-ready.mjs');
  writeFileSync(
    script,
    `console.log('loading weights 1/3'); console.error('warming up kernels'); setInterval(() => {}, 1000);`,
  );
  const port = await freePort();
  const server = spawnServer(['node', script]);
  const profile = referenceProfile({ id: 'never', startTimeoutMs: 1_500 });
  const t0 = performance.now();
  try {
    const err = await waitReady(profile, `http://127.0.0.1:${port}`, {}, server).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SetupError);
    expect((err as Error).message).toMatch(/server "never" was not ready within 1\.5 s/);
    expect((err as Error).message).toContain('loading weights 1/3');
    expect((err as Error).message).toContain('warming up kernels');
    expect(performance.now() - t0).toBeLessThan(15_000); // bounded (generous: a loaded machine)
  } finally {
    await server.stop();
  }
  expect(server.exited()).toBeDefined();
});

test('a start command that exits early is reported with its exit code and last lines', async () => {
  const script = join(dir, 'crash.mjs');
  writeFileSync(script, `console.error('error: model file not found'); process.exit(3);`);
  const server = spawnServer(['node', script]);
  const err = await waitReady(
    referenceProfile({ id: 'crashy', startTimeoutMs: 10_000 }),
    `http://127.0.0.1:${await freePort()}`,
    {},
    server,
  ).catch((e: unknown) => e);
  expect((err as Error).message).toMatch(/server "crashy" exited before it was ready \(code 3/);
  expect((err as Error).message).toContain('model file not found');
});

test('a dead base URL is polled until the wait bound, with progress lines naming what the probe got', async () => {
  const port = await freePort();
  const lines: string[] = [];
  const t0 = performance.now();
  const err = await waitReady(referenceProfile({ id: 'dead' }), `http://127.0.0.1:${port}`, {}, undefined, {
    boundMs: 2_500,
    progressEveryMs: 500,
    onProgress: (l) => lines.push(l),
  }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(NeverReadyError);
  // Requirement / expected / actual, each its own field (printed as one line: nothing else to show).
  expect((err as NeverReadyError).failure).toMatchObject({
    kind: 'never-ready',
    summary: expect.stringMatching(/^server "dead" was not ready within 2\.5 s at http:\/\/127\.0\.0\.1:\d+$/),
    expected: 'GET /health → 200 within 2.5 s',
    actual: expect.stringMatching(/^\d+ probe\(s\), the last: connect/),
  });
  expect(performance.now() - t0).toBeGreaterThanOrEqual(2_500);
  expect(performance.now() - t0).toBeLessThan(15_000);
  expect(lines.length).toBeGreaterThan(0);
  expect(lines[0]).toMatch(
    /waiting for http:\/\/127\.0\.0\.1:\d+ to be ready: connect.*ECONNREFUSED.*\(\d\.\d s of 2\.5 s\)/,
  );
});

test('a server that binds its port late, then answers 503 while loading, is waited for', async () => {
  const port = await freePort();
  let loaded = false;
  const srv = createServer((_req, res) => {
    res.writeHead(loaded ? 200 : 503, { 'content-type': 'application/json' });
    res.end(loaded ? '{"object":"list","data":[]}' : '{"error":"loading model"}');
  });
  const bind = setTimeout(() => srv.listen(port, '127.0.0.1'), 800);
  const load = setTimeout(() => (loaded = true), 1_600);
  const lines: string[] = [];
  try {
    const r = await waitReady(
      referenceProfile({ id: 'late', readiness: { kind: 'http', path: '/v1/models' } }),
      `http://127.0.0.1:${port}`,
      {},
      undefined,
      { boundMs: 20_000, progressEveryMs: 300, onProgress: (l) => lines.push(l) },
    );
    expect(r.waitedMs).toBeGreaterThan(1_500);
    expect(lines.some((l) => /ECONNREFUSED/.test(l))).toBe(true);
    expect(lines.some((l) => /HTTP 503/.test(l))).toBe(true);
  } finally {
    clearTimeout(bind);
    clearTimeout(load);
    srv.close();
  }
});

test('the wait bound: CONFORMANCE_WAIT_S wins over the profile, a bad value is named', () => {
  const wait = (env: NodeJS.ProcessEnv) => waitBoundMs({ startTimeoutMs: 20_000 }, settingsFromEnv(env).waitS);
  expect(wait({})).toBe(20_000);
  expect(wait({ CONFORMANCE_WAIT_S: '45' })).toBe(45_000);
  expect(() => wait({ CONFORMANCE_WAIT_S: 'soon' })).toThrow(/CONFORMANCE_WAIT_S must be a number of seconds/);
});

test('stop() ends the server and the children it spawned (process group)', async () => {
  const child = join(dir, 'child.mjs');
  writeFileSync(child, `setInterval(() => {}, 1000);`);
  const parent = join(dir, 'parent.mjs');
  writeFileSync(
    parent,
    `import { spawn } from 'node:child_process'; const c = spawn(process.execPath, [${JSON.stringify(child)}], { stdio: 'ignore' }); console.log('CHILD ' + c.pid); setInterval(() => {}, 1000);`,
  );
  const server = spawnServer(['node', parent]);
  let childPid: number | undefined;
  for (let i = 0; i < 100 && childPid === undefined; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const line = server.lastLines().find((l) => l.startsWith('CHILD '));
    if (line) childPid = Number(line.slice(6));
  }
  expect(childPid).toBeGreaterThan(0);
  await server.stop();
  await new Promise((r) => setTimeout(r, 200));
  // A zombie (exited, not yet reaped by init in a container) counts as gone.
  const alive = (() => {
    try {
      process.kill(childPid!, 0);
    } catch {
      return false;
    }
    const state = spawnSync('ps', ['-o', 'stat=', '-p', String(childPid)], { encoding: 'utf8' }).stdout.trim();
    return state !== '' && !state.startsWith('Z');
  })();
  expect(alive).toBe(false);
});

test('readiness probes carry the same credentials as the checks: a key variable as Bearer, credentials in the URL as Basic', async () => {
  const port = await freePort();
  const seen: string[] = [];
  const srv = createServer((req, res) => {
    seen.push(req.headers.authorization ?? '(none)');
    const ok = req.headers.authorization === `Basic ${Buffer.from('user:s3cret-pass').toString('base64')}`;
    res
      .writeHead(ok ? 200 : 401, { 'content-type': 'application/json' })
      .end(ok ? '{"object":"list","data":[]}' : '{"error":"unauthorized"}');
  });
  await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r));
  try {
    const profile = referenceProfile({
      id: 'basic',
      baseUrl: `http://user:s3cret-pass@127.0.0.1:${port}`,
      apiKeyEnv: undefined,
      readiness: { kind: 'http', path: '/v1/models' },
    });
    const auth = requestAuth(profile, {});
    expect(auth.secrets).toEqual(['user', 's3cret-pass']);
    await waitReady(profile, `http://127.0.0.1:${port}`, auth.headers, undefined, { boundMs: 3_000 });
    expect(seen).toEqual([`Basic ${Buffer.from('user:s3cret-pass').toString('base64')}`]);
    // A key variable wins over URL credentials, as in every check.
    expect(requestAuth({ ...profile, apiKeyEnv: 'K' }, { K: 'sk-test-123456' }).headers).toEqual({
      authorization: 'Bearer sk-test-123456',
    });
    expect(requestAuth({ baseUrl: 'http://127.0.0.1:1' }, {}).headers).toEqual({});
  } finally {
    srv.close();
  }
});
