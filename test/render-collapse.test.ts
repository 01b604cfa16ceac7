// Reports that read well when things go wrong: repeated identical errors fold into one row.
import { expect, test } from 'vitest';
import { collapseErrors, renderConsole, renderMarkdown, toColumns } from '../reporters/render.ts';
import type { CheckResult, ResultsFile } from '../reporters/results-types.ts';

const c = (id: string, outcome: CheckResult['outcome'], message: string): CheckResult => ({
  id,
  title: id,
  family: id.split('.')[0]!,
  level: 'MUST',
  outcome,
  message,
  rationale: 'r',
  reference: 'ref',
});

function file(checks: CheckResult[]): ResultsFile {
  return {
    header: {
      suite: { name: 'llm-server-conformance', version: '0.1.0' },
      date: '2026-12-01T00:00:00.000Z',
      project: 'p',
      profile: { id: 'p' },
      server: { baseUrl: 'http://127.0.0.1:1' },
      machine: { label: 'm', platform: 'linux', arch: 'x64', cpus: 2, memGiB: 24, node: 'v20' },
      tier: 'quick',
      strict: false,
    },
    checks,
    finished: { date: '2026-12-01T00:01:00.000Z', reason: 'failed' },
  };
}

test('a server that never answered is one row: "nothing answers at …; N checks not run"', () => {
  const msg = 'setup error: nothing answers at http://127.0.0.1:1 (connect ECONNREFUSED).';
  const checks = ['setup.server-ready', 'api.chat-basic', 'sse.content-type', 'stream.spread'].map((id) =>
    c(id, 'error', msg),
  );
  const rows = collapseErrors(checks);
  expect(rows).toHaveLength(1);
  expect(rows[0]!.id).toBe('all 4 checks');
  expect(rows[0]!.message).toBe('nothing answers at http://127.0.0.1:1 (connect ECONNREFUSED); 4 checks not run');
  const verbose = renderConsole(toColumns([file(checks)]), { verbose: true });
  expect(verbose.match(/^ERROR/gm)).toHaveLength(1);
  // A person's console: one row across the families too.
  const text = renderConsole(toColumns([file(checks)]));
  expect(text.match(/ERROR/g)).toHaveLength(1);
  expect(text).toContain('setup.server-ready … stream.spread (4 checks)');
  const md = renderMarkdown(toColumns([file(checks)]));
  expect(md).toContain('4 checks not run');
  expect(md.match(/\| 💥 \*\*error\*\* \|/g)).toHaveLength(1);
});

test('checks after the server stopped answering fold; the check in flight and different errors stay their own rows', () => {
  const stopped = 'stopped answering after api.max-tokens: a 1-token generation got no complete answer';
  const checks = [
    c('api.chat-basic', 'pass', 'ok'),
    c('api.max-tokens', 'fail', 'no response headers within 15000 ms'),
    ...['api.stop-sequence', 'sse.content-type', 'sse.done-terminator'].map((id) => c(id, 'error', stopped)),
    c('x.one', 'error', 'harness error A'),
    c('x.two', 'error', 'harness error B'),
  ];
  const rows = collapseErrors(checks);
  expect(rows.map((r) => r.id)).toEqual([
    'api.chat-basic',
    'api.max-tokens',
    'api.stop-sequence … sse.done-terminator (3 checks)',
    'x.one',
    'x.two',
  ]);
  expect(rows[2]!.message).toBe(`${stopped}; 3 checks not run`);
});
