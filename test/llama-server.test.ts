// lib/server/llama-server.ts without running llama-server: where the bundle is looked for, why it cannot run, what argv
// starts it. (test/real-llama runs the real server.)

import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { ROOT } from '../lib/config/profile.ts';
import {
  DEFAULT_LLAMA_DIR,
  findLlamaBundle,
  LLAMA_DIR_ENV,
  llamaBundlePlaces,
  llamaRunnable,
  llamaServerArgv,
  llamaThreads,
  taskset,
} from '../lib/server/llama-server.ts';
import { llamaAvailability, llamaRequired, REQUIRE_LLAMA_ENV } from './real-llama/harness.ts';

function fakeBundle(script: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'fake-llama-'));
  mkdirSync(join(dir, 'bin'));
  mkdirSync(join(dir, 'vocab'));
  writeFileSync(join(dir, 'vocab', 'ggml-vocab-phi-3.gguf'), '');
  writeFileSync(join(dir, 'make-model.mjs'), '');
  writeFileSync(join(dir, 'bin', 'llama-server'), `#!/bin/sh\n${script}\n`);
  chmodSync(join(dir, 'bin', 'llama-server'), 0o755);
  return dir;
}

test('the env var names the only place looked in; without it, llama.cpp/ beside the checkout', () => {
  expect(llamaBundlePlaces('/x/y')).toEqual(['/x/y']);
  expect(llamaBundlePlaces()).toEqual([DEFAULT_LLAMA_DIR]);
  expect(DEFAULT_LLAMA_DIR).toBe(join(ROOT, '..', 'llama.cpp'));
  expect(findLlamaBundle('/nonexistent/llama')).toEqual({ searched: ['/nonexistent/llama'] });
});

test('a missing bundle skips with one line naming where it looked; only CONFORMANCE_REQUIRE_LLAMA makes it required, not CI=true', async () => {
  const a = await llamaAvailability({ [LLAMA_DIR_ENV]: '/nonexistent/llama' });
  expect(a).toEqual({ skip: expect.stringContaining('/nonexistent/llama'), missing: true });
  expect(llamaRequired({ CI: 'true' })).toBe(false);
  expect(llamaRequired({ CI: 'true', [REQUIRE_LLAMA_ENV]: '1' })).toBe(true);
  expect(llamaRequired({ [REQUIRE_LLAMA_ENV]: '0' })).toBe(false);
});

test.skipIf(process.platform !== 'linux' || process.arch !== 'x64')(
  'a binary that cannot run is a skip naming why (old glibc), never a CI failure',
  async () => {
    const dir = fakeBundle(
      `echo "$0: /lib/x86_64-linux-gnu/libc.so.6: version \\\`GLIBC_2.38' not found (required by $0)" >&2; exit 1`,
    );
    const r = await llamaRunnable(findLlamaBundle(dir).bundle!);
    expect(r).toEqual({ ok: false, reason: expect.stringMatching(/C library is too old.*GLIBC_2\.38/) });
    const a = await llamaAvailability({ [LLAMA_DIR_ENV]: dir });
    expect(a).toMatchObject({ missing: false, skip: expect.stringContaining('GLIBC_2.38') });
    const ok = fakeBundle('echo "version: 4747 (abc)"; exit 0');
    expect(await llamaRunnable(findLlamaBundle(ok).bundle!)).toEqual({
      ok: true,
      version: '4747 (abc)',
    });
  },
);

test('argv: one thread per slot on all cores but one, pinned to the last cores with taskset where it exists', () => {
  const bundle = { dir: '/b', binary: '/b/bin/llama-server', vocab: '/b/v', makeModel: '/b/m' };
  const cores = availableParallelism();
  expect(llamaThreads({ slots: 1 })).toBe(1);
  expect(llamaThreads({ slots: 64 })).toBe(Math.max(1, cores - 1));
  expect(llamaThreads({ slots: 4, threads: 3 })).toBe(3);
  const argv = llamaServerArgv({ bundle, model: '/m.gguf', alias: 'a', slots: 4, ctxPerSlot: 2048 }, '{port}');
  const at = argv.indexOf(bundle.binary);
  expect(argv.slice(at)).toEqual(
    expect.arrayContaining([
      '--alias',
      'a',
      '--port',
      '{port}',
      '--ctx-size',
      '8192',
      '--parallel',
      '4',
      '--slots',
      '--metrics',
    ]),
  );
  const t = String(llamaThreads({ slots: 4 }));
  expect(argv.slice(argv.indexOf('--threads'), argv.indexOf('--threads') + 2)).toEqual(['--threads', t]);
  if (taskset()) expect(argv.slice(0, 3)).toEqual([taskset(), '-c', `${cores - Number(t)}-${cores - 1}`]);
  else expect(at).toBe(0);
  expect(
    llamaServerArgv({ bundle, model: '/m.gguf', slots: 1, ctxPerSlot: 512, pin: false, monitoring: false }, 8080),
  ).toEqual([
    bundle.binary,
    '-m',
    '/m.gguf',
    '--host',
    '127.0.0.1',
    '--port',
    '8080',
    '--ctx-size',
    '512',
    '--parallel',
    '1',
    '--n-predict',
    '2048',
    '--flash-attn',
    '--no-context-shift',
    '--threads',
    '1',
    '--threads-batch',
    '1',
  ]);
});
