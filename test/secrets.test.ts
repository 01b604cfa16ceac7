// Secrets never appear in any output. A REAL run against the reference server started with `--api-key <canary>`,
// through a profile that names the key's environment variable (apiKeyEnv) and carries credentials in its base URL;
// then EVERY file written under the reports directory (results.json with its raw wire excerpts, summary, badges,
// JUnit) and everything the run printed is searched for the canaries in every form they could leak in.

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, expect, test } from 'vitest';
import { loadServers, ROOT } from '../lib/config/profile.ts';
import type { ResultsFile } from '../reporters/results-types.ts';

const KEY = `canarykey${randomBytes(8).toString('hex')}`;
const USER = `canaryuser${randomBytes(4).toString('hex')}`;
const PASS = `canarypass${randomBytes(8).toString('hex')}`;

/** Every form a canary could take in a file or a log line. */
function forms(secret: string): string[] {
  return [
    secret,
    encodeURIComponent(secret),
    Buffer.from(secret).toString('base64'),
    JSON.stringify(secret).slice(1, -1),
  ];
}
const NEEDLES = [
  ...new Set([...forms(KEY), ...forms(PASS), ...forms(USER), Buffer.from(`${USER}:${PASS}`).toString('base64')]),
];

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

const dir = mkdtempSync(join(tmpdir(), 'secrets-'));
const reports = join(dir, 'reports');
const serversFile = join(dir, 'servers.json');
let out = '';
let code: number | null = null;

beforeAll(async () => {
  const ref = loadServers().find((p) => p.id === 'reference')!;
  const canary = {
    ...ref,
    id: 'canary',
    description: 'reference server behind an API key (secrets self-test)',
    baseUrl: `http://${USER}:${PASS}@127.0.0.1:{port}`,
    apiKeyEnv: 'CANARY_API_KEY',
    start: { command: [...ref.start!.command, '--api-key', KEY] },
  };
  writeFileSync(serversFile, JSON.stringify({ servers: [canary] }, null, 2));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NO_COLOR: '1',
    FORCE_COLOR: '0',
    SERVERS_FILE: serversFile,
    CANARY_API_KEY: KEY,
    CONFORMANCE_REPORTS_DIR: reports,
  };
  delete env.GITHUB_STEP_SUMMARY;
  await new Promise<void>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--project',
        'canary',
        'suites/setup.test.ts',
        'suites/api.test.ts',
        'suites/metrics.test.ts',
      ],
      { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const limit = setTimeout(() => child.kill('SIGKILL'), 100_000);
    child.on('error', reject);
    child.on('exit', (c) => {
      clearTimeout(limit);
      code = c;
      resolve();
    });
  });
}, 110_000);

test('the canaries are real: the servers file holds them and the key was needed and used', () => {
  expect(readFileSync(serversFile, 'utf8')).toContain(KEY);
  expect(readFileSync(serversFile, 'utf8')).toContain(PASS);
  const results = JSON.parse(readFileSync(join(reports, 'canary', 'results.json'), 'utf8')) as ResultsFile;
  // The reference server answers 401 without the key: a passing API check proves the key travelled (in the header).
  const models = results.checks.find((c) => c.id === 'api.models-lists-model');
  expect(models?.outcome, `${models?.message}\n${out.slice(-2000)}`).toBe('pass');
  // Where the key was in the profile (the start command), the results file says so instead.
  const cmd = (results.header.profile as { start?: { command?: string[] } }).start?.command ?? [];
  expect(cmd).toContain('[REDACTED]');
  expect((results.header.profile as { baseUrl?: string }).baseUrl).toBe('http://127.0.0.1:{port}');
  expect(code === 0 || results.checks.some((c) => c.outcome === 'fail' || c.outcome === 'error')).toBe(true);
});

test('no file written under the reports directory contains a canary, raw recordings included', () => {
  const files = walk(reports);
  // results.json (with wire excerpts), summary.md, badges (json + svg), junit.xml.
  expect(files.some((f) => f.endsWith('results.json'))).toBe(true);
  expect(files.some((f) => f.endsWith('junit.xml'))).toBe(true);
  expect(files.some((f) => f.endsWith('summary.md'))).toBe(true);
  // Badges only for what ran (api → conformance, metrics → streaming), each as JSON and SVG.
  const badges = files.filter((f) => f.includes('badges')).map((f) => f.slice(f.lastIndexOf('/') + 1));
  expect(badges.sort()).toEqual(['conformance.json', 'conformance.svg', 'streaming.json', 'streaming.svg']);
  const results = readFileSync(join(reports, 'canary', 'results.json'), 'utf8');
  expect(results).toContain('"wire"'); // the raw recordings are in there and were searched
  const leaks: string[] = [];
  for (const f of files) {
    const text = readFileSync(f, 'latin1');
    for (const n of NEEDLES) if (text.includes(n)) leaks.push(`${f}: contains ${n.slice(0, 12)}…`);
  }
  expect(leaks).toEqual([]);
});

test('nothing the run printed contains a canary', () => {
  expect(out).toContain('[canary]');
  const leaks = NEEDLES.filter((n) => out.includes(n));
  expect(leaks).toEqual([]);
});

test('credentials are stripped from templated base URLs too (profiles use {port} before a port is chosen)', async () => {
  const { stripUrlCredentials } = await import('../lib/config/secrets.ts');
  expect(stripUrlCredentials('http://us%40er:p%3Ass@127.0.0.1:{port}/v1')).toEqual({
    url: 'http://127.0.0.1:{port}/v1',
    secrets: ['us@er', 'p:ss'],
  });
  expect(stripUrlCredentials('http://127.0.0.1:{port}')).toEqual({ url: 'http://127.0.0.1:{port}', secrets: [] });
  expect(stripUrlCredentials('http://u:p%ZZ@h:{port}').secrets).toEqual(['u', 'p%ZZ']);
});
