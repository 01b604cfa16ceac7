// A profile's start.cwd is relative to its servers file's folder (absolute kept): a server's repository keeps its
// servers file and start script together, while the suite runs from its own checkout (the PR-gate action).

import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { loadServers, parseServers, ROOT, startCwd } from '../lib/config/profile.ts';

const servers = (start: Record<string, unknown>) =>
  JSON.stringify({ servers: [{ id: 'cwd-srv', baseUrl: 'http://127.0.0.1:{port}', model: 'm', start }] });

test("a relative start.cwd resolves against the servers file's folder; an absolute one is kept; none stays none", () => {
  const dir = mkdtempSync(join(tmpdir(), 'start-cwd-'));
  const file = join(dir, 'conf', 'servers.json');
  mkdirSync(join(dir, 'conf'));
  writeFileSync(file, servers({ command: ['./serve.sh'], cwd: '../server' }));
  expect(loadServers(file)[0]!.start!.cwd).toBe(join(dir, 'server'));
  expect(parseServers(servers({ command: ['x'], cwd: '/opt/srv' }), file)[0]!.start!.cwd).toBe('/opt/srv');
  expect(parseServers(servers({ command: ['x'], cwd: '.' }), file)[0]!.start!.cwd).toBe(join(dir, 'conf'));
  expect(parseServers(servers({ command: ['x'] }), file)[0]!.start!.cwd).toBeUndefined();
  // Start and restart spawn in the same folder (a restart once joined the absolute cwd onto the suite's root).
  expect(startCwd(loadServers(file)[0]!.start!)).toBe(join(dir, 'server'));
  expect(startCwd({ command: ['x'] })).toBe(ROOT);
});

test('a real run starts the server in that folder: a start script found only there gets the server ready', async () => {
  // The "server": a relative script in <servers dir>/srv that answers the readiness probe. Run from the suite's
  // root (as the action does), it is found only if start.cwd resolved against the servers file's folder.
  const dir = mkdtempSync(join(tmpdir(), 'start-cwd-run-'));
  mkdirSync(join(dir, 'srv'));
  writeFileSync(
    join(dir, 'srv', 'tiny-server.mjs'),
    [
      "import { createServer } from 'node:http';",
      "import { writeFileSync } from 'node:fs';",
      "writeFileSync('started-here.txt', process.cwd());",
      "createServer((req, res) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model' }] })); })",
      "  .listen(Number(process.argv[2]), '127.0.0.1');",
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'servers.json'),
    servers({ command: [process.execPath, 'tiny-server.mjs', '{port}'], cwd: 'srv' }),
  );
  const reports = join(dir, 'reports');
  const out = await new Promise<{ code: number | null; text: string }>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--project', 'cwd-srv', 'suites/setup.test.ts'],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          NO_COLOR: '1',
          SERVERS_FILE: join(dir, 'servers.json'),
          CONFORMANCE_REPORTS_DIR: reports,
          GITHUB_STEP_SUMMARY: '',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let text = '';
    child.stdout.on('data', (d: Buffer) => {
      text += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      text += d.toString();
    });
    const limit = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(limit);
      resolve({ code, text });
    });
  });
  expect(out.code, out.text).toBe(0);
  expect(readFileSync(join(dir, 'srv', 'started-here.txt'), 'utf8')).toBe(join(dir, 'srv'));
  const results = JSON.parse(readFileSync(join(reports, 'cwd-srv', 'results.json'), 'utf8')) as {
    checks: Array<{ id: string; outcome: string }>;
  };
  expect(results.checks.find((c) => c.id === 'setup.server-ready')?.outcome).toBe('pass');
}, 100_000);
