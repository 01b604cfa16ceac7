// vitest.config.ts end to end: project selection by name, unknown names, setup errors as `error`.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { ROOT } from '../lib/config/profile.ts';
import { freePort } from '../lib/server/lifecycle.ts';

function vitest(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...env },
    encoding: 'utf8',
    timeout: 90_000,
  });
  return { code: r.status, out: `${r.stdout}\n${r.stderr}` };
}

test('an unknown project name fails with a message listing the known ones', () => {
  const r = vitest(['--project', 'no-such-server']);
  expect(r.code).not.toBe(0);
  expect(r.out).toContain('Unknown project "no-such-server"');
  expect(r.out).toMatch(/Known projects: self, reference, .*omlx/);
});

test('a server that is not running is one setup error, not a wall of failed checks', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'config-'));
  const port = await freePort();
  const file = join(dir, 'servers.json');
  writeFileSync(
    file,
    JSON.stringify({
      servers: [{ id: 'dead', baseUrl: `http://127.0.0.1:${port}`, model: 'm', startTimeoutMs: 2000 }],
    }),
  );
  const r = vitest(
    [
      '--project',
      'dead',
      'suites/setup.test.ts',
      'suites/api.test.ts',
      '--reporter=json',
      `--outputFile=${join(dir, 'out.json')}`,
    ],
    { SERVERS_FILE: file },
  );
  expect(r.code).not.toBe(0);
  expect(r.out).toContain(`server "dead" was not ready within 2.0 s at http://127.0.0.1:${port}`);
  expect(r.out).toContain('connection refused (ECONNREFUSED)');
  const json = JSON.parse(readFileSync(join(dir, 'out.json'), 'utf8')) as {
    testResults: Array<{
      name: string;
      assertionResults: Array<{
        title: string;
        status: string;
        failureMessages: string[];
        meta?: { conformance?: { outcome: string } };
      }>;
    }>;
  };
  // The sequencer runs the setup file alone once setup failed: api.test.ts is never imported, no ERROR row per check.
  const results = json.testResults.flatMap((f) => f.assertionResults);
  expect(results.map((a) => `${a.title.split(' ')[0]} ${a.status}`)).toEqual(['setup.server-ready failed']);
  expect(results[0]!.failureMessages.join('\n')).toMatch(
    /SERVER NEVER READY: server "dead" was not ready within 2\.0 s at http:\/\/127\.0\.0\.1:\d+; expected GET \/v1\/models → 200 within 2\.0 s; actual: \d+ probe\(s\), the last: connection refused/,
  );
  expect(results[0]!.meta?.conformance?.outcome).toBe('error');
  expect(json.testResults.map((f) => f.name.replace(/^.*suites\//, ''))).toEqual(['setup.test.ts']);
});

test('a bad servers file stops the run with a message naming the server and field', () => {
  const dir = mkdtempSync(join(tmpdir(), 'config-'));
  const file = join(dir, 'servers.json');
  writeFileSync(
    file,
    JSON.stringify({ servers: [{ id: 'broken', baseUrl: 'http://127.0.0.1:1', model: 'm', slots: -1 }] }),
  );
  const r = vitest(['--project', 'broken'], { SERVERS_FILE: file });
  expect(r.code).not.toBe(0);
  expect(r.out).toMatch(/server "broken" \(servers\[0\]\): field "slots" must be >= 1/);
});

interface Conformance {
  status: string;
  id: string;
  outcome: string;
  message: string;
}
interface Restart {
  after: string;
  request: string;
  process: string;
  ok: boolean;
}

/**
 * The errors family and the api family's last file against the reference server with `fault`, started by the suite
 * as project `id`: each check's result, and the restarts in results.json.
 */
function runStarted(id: string, fault: string, more: object = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'config-'));
  const file = join(dir, 'servers.json');
  const reference = (
    JSON.parse(readFileSync(join(ROOT, 'servers.json'), 'utf8')) as {
      servers: Array<{ id: string; start: { command: string[] } }>;
    }
  ).servers.find((s) => s.id === 'reference')!;
  const server = { ...reference, id, start: { command: [...reference.start.command, '--fault', fault] }, ...more };
  writeFileSync(file, JSON.stringify({ servers: [server] }));
  const out = join(dir, 'out.json');
  const reports = join(dir, 'reports');
  const r = vitest(
    [
      '--project',
      id,
      'suites/errors.test.ts',
      'suites/api-last.test.ts',
      '--reporter=json',
      '--reporter=./reporters/results.ts',
      `--outputFile.json=${out}`,
    ],
    { SERVERS_FILE: file, CONFORMANCE_REPORTS_DIR: reports },
  );
  const json = JSON.parse(readFileSync(out, 'utf8')) as {
    testResults: Array<{
      assertionResults: Array<{ status: string; meta?: { conformance?: Omit<Conformance, 'status'> } }>;
    }>;
  };
  const results: Conformance[] = json.testResults
    .flatMap((f) => f.assertionResults)
    .map((a) => ({ status: a.status, ...a.meta!.conformance! }));
  const header = (
    JSON.parse(readFileSync(join(reports, id, 'results.json'), 'utf8')) as {
      header: { server: { restarts?: Restart[] } };
    }
  ).header;
  const check = (checkId: string) => results.find((c) => c.id === checkId)!;
  return { code: r.code, check, restarts: header.server.restarts ?? [] };
}

test('a server the suite started that dies mid-run is restarted (bounded), the request that killed it recorded; then later checks report "server died during <id>"', () => {
  const r = runStarted('crashy', 'errors-crash-on-invalid');
  expect(r.code).not.toBe(0);
  const first = r.check('errors.malformed-json');
  expect(first.status).toBe('failed');
  expect(first.outcome).toMatch(/fail|error/);
  expect(first.message).toMatch(
    /stopped answering during this check — exited \(code 1\) — after POST \/v1\/chat\/completions .*The suite restarted it: restart 1 of at most 3/s,
  );
  const later = r.check('api.unknown-model');
  expect(later.outcome).toBe('error');
  expect(later.message).toMatch(
    /server died during errors\.[a-z-]+; the process exited \(code 1\); not restarted: already restarted 3 times .*the first request without an answer: POST \/v1\/chat\/completions/,
  );
  expect(r.restarts.length).toBe(3);
  expect(r.restarts[0]).toMatchObject({ after: 'errors.malformed-json', ok: true });
});

test('a server the suite started that goes silent but stays alive is restarted once; silent again before anything was answered, it is not restarted again: the breaker opens saying why', () => {
  // Short floors: every silence costs a floor, and what is proven is the count of restarts, not the floors.
  const r = runStarted('frozen', 'errors-freeze-on-invalid', {
    deadlines: { connectMs: 2000, headersMs: 3000, tokenIdleMs: 2000, totalMs: 5000 },
  });
  expect(r.code).not.toBe(0);
  expect(r.check('errors.malformed-json').message).toMatch(
    /stopped answering during this check — alive .*restart 1 of at most 3/s,
  );
  const later = r.check('api.unknown-model');
  expect(later.outcome).toBe('error');
  expect(later.message).toMatch(
    /stopped answering after errors\.[a-z-]+: .*not restarted: the restart after errors\.malformed-json did not help \(no request answered since, and the process is alive but silent again\)/s,
  );
  expect(r.restarts).toHaveLength(1);
  expect(r.restarts[0]).toMatchObject({ after: 'errors.malformed-json', ok: true });
  expect(r.restarts[0]!.process).toMatch(/^alive/);
});
