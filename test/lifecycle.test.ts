// Lifecycle: bounded start, clear errors with the server's last lines, nothing left running.
import { test, expect } from 'vitest';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { spawnServer, waitReady, assertSomethingAnswers, freePort, SetupError } from '../lib/lifecycle.ts';
import { referenceProfile } from './support/reference.ts';

const dir = mkdtempSync(join(tmpdir(), 'lifecycle-'));

test('a start command that never becomes ready fails within its timeout, quoting what it printed', async () => {
  const script = join(dir, 'never-ready.mjs');
  writeFileSync(script, `console.log('loading weights 1/3'); console.error('warming up kernels'); setInterval(() => {}, 1000);`);
  const port = await freePort();
  const server = spawnServer(['node', script]);
  const profile = referenceProfile({ id: 'never', startTimeoutMs: 1_500 });
  const t0 = performance.now();
  try {
    const err = await waitReady(profile, `http://127.0.0.1:${port}`, {}, server).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SetupError);
    expect((err as Error).message).toMatch(/server "never" was not ready within 1500 ms/);
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
  const err = await waitReady(referenceProfile({ id: 'crashy', startTimeoutMs: 10_000 }), `http://127.0.0.1:${await freePort()}`, {}, server).catch((e: unknown) => e);
  expect((err as Error).message).toMatch(/server "crashy" exited before it was ready \(code 3/);
  expect((err as Error).message).toContain('model file not found');
});

test('a dead base URL gives "nothing answers at <url>"', async () => {
  const port = await freePort();
  const err = await assertSomethingAnswers(`http://127.0.0.1:${port}`, {}).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(SetupError);
  expect((err as Error).message).toContain(`nothing answers at http://127.0.0.1:${port}`);
});

test('stop() ends the server and the children it spawned (process group)', async () => {
  const child = join(dir, 'child.mjs');
  writeFileSync(child, `setInterval(() => {}, 1000);`);
  const parent = join(dir, 'parent.mjs');
  writeFileSync(parent, `import { spawn } from 'node:child_process'; const c = spawn(process.execPath, [${JSON.stringify(child)}], { stdio: 'ignore' }); console.log('CHILD ' + c.pid); setInterval(() => {}, 1000);`);
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
