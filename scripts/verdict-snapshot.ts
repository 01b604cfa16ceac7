// A record of the catalogue's verdicts, taken through the public command (the CLI and its Vitest run), so that a change
// to the harness's insides can be held to "the same verdicts, check by check, before and after":
//   - the whole quick catalogue on the correct reference server;
//   - for every fault the proofs name (with the proof's server flags and profile overrides), every check of the
//     families whose proofs use it, on the reference server with that fault on.
// Not in CI (it takes about an hour). Outcomes are compared; messages are kept (numbers stripped) to read a difference.
//
//   node --import tsx scripts/verdict-snapshot.ts --out before.json [--jobs 2] [--cases N] [--only-case SUBSTRING]
//   node --import tsx scripts/verdict-snapshot.ts --diff before.json after.json
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadServers, ROOT } from '../lib/config/profile.ts';
import type { Profile } from '../lib/model/types.ts';
import type { Proof } from '../suites/support/proof.ts';

interface Case {
  key: string;
  faults: string[];
  serverArgs: string[];
  profile: Partial<Profile>;
  tier: 'quick' | 'full';
  /** Families to run; empty = the whole catalogue. */
  families: string[];
}

interface CaseResult {
  key: string;
  seconds: number;
  exitCode: number | null;
  outcomes: Record<string, string>;
  /** First line of each non-pass message, digits replaced: what to read when an outcome differs. */
  messages: Record<string, string>;
  error?: string;
}

async function loadProofs(): Promise<Array<Proof & { family: string }>> {
  const dir = join(ROOT, 'suites');
  const out: Array<Proof & { family: string }> = [];
  for (const f of readdirSync(dir).sort()) {
    if (!f.endsWith('.ts') || f.endsWith('.test.ts') || f.endsWith('.d.ts') || f === 'catalogue.ts') continue;
    const mod = (await import(pathToFileURL(join(dir, f)).href)) as { proofs?: Proof[] };
    for (const p of mod.proofs ?? []) out.push({ ...p, family: p.check.split('.')[0]! });
  }
  return out;
}

/** One case per distinct server (faults + flags + profile overrides + tier), with the families its proofs prove. */
function casesOf(proofs: Array<Proof & { family: string }>): Case[] {
  const byKey = new Map<string, Case>();
  byKey.set('reference', {
    key: 'reference',
    faults: [],
    serverArgs: [],
    profile: {},
    tier: 'quick',
    families: [],
  });
  for (const p of proofs) {
    if (!p.faults?.length && !p.serverArgs?.length && !p.profile) continue;
    const c: Omit<Case, 'key' | 'families'> = {
      faults: p.faults ?? [],
      serverArgs: p.serverArgs ?? [],
      profile: p.profile ?? {},
      tier: p.tier ?? 'quick',
    };
    const key = JSON.stringify(c);
    const had = byKey.get(key) ?? { ...c, key, families: [] };
    if (!had.families.includes(p.family)) had.families.push(p.family);
    byKey.set(key, had);
  }
  return [...byKey.values()];
}

function runCli(args: string[], timeoutMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'llm-server-conformance.mjs'), ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'ignore'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

async function runCase(c: Case, base: Profile): Promise<CaseResult> {
  const dir = mkdtempSync(join(tmpdir(), 'verdict-snapshot-'));
  const t0 = Date.now();
  try {
    const profile: Profile = {
      ...base,
      ...c.profile,
      id: 'snapshot',
      context: { ...base.context, ...c.profile.context },
      start: {
        command: [
          process.execPath,
          '--import',
          'tsx',
          join(ROOT, 'fixtures', 'reference-server', 'main.ts'),
          '--port',
          '{port}',
          ...c.faults.flatMap((f) => ['--fault', f]),
          ...c.serverArgs,
        ],
        cwd: ROOT,
      },
    };
    // A profile override that removes a declared value (slots: undefined) must remove it from the file too.
    for (const [k, v] of Object.entries(c.profile))
      if (v === undefined) delete (profile as unknown as Record<string, unknown>)[k];
    const servers = join(dir, 'servers.json');
    writeFileSync(servers, JSON.stringify({ servers: [profile] }));
    const args = ['--servers', servers, '--server', 'snapshot', '--reports', dir, '--tier', c.tier, '--quiet'];
    if (c.families.length) args.push('--only', [...new Set(c.families.map(familyOf))].join(','));
    const exitCode = await runCli(args, 30 * 60_000);
    const outcomes: Record<string, string> = {};
    const messages: Record<string, string> = {};
    try {
      const r = JSON.parse(readFileSync(join(dir, 'snapshot', 'results.json'), 'utf8')) as {
        checks: Array<{ id: string; outcome: string; message: string }>;
      };
      for (const x of r.checks) {
        outcomes[x.id] = x.outcome;
        if (x.outcome !== 'pass') messages[x.id] = (x.message ?? '').split('\n')[0]!.replace(/\d+/g, '#').slice(0, 200);
      }
    } catch (e) {
      return { key: c.key, seconds: (Date.now() - t0) / 1000, exitCode, outcomes, messages, error: String(e) };
    }
    return { key: c.key, seconds: (Date.now() - t0) / 1000, exitCode, outcomes, messages };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** api-last's checks belong to the api family on the command line (--only api runs both files). */
const familyOf = (f: string) => (f === 'api-last' ? 'api' : f);

function diff(a: string, b: string): number {
  const before = JSON.parse(readFileSync(a, 'utf8')) as { cases: CaseResult[] };
  const after = JSON.parse(readFileSync(b, 'utf8')) as { cases: CaseResult[] };
  const afterBy = new Map(after.cases.map((c) => [c.key, c]));
  let changed = 0;
  let compared = 0;
  for (const c of before.cases) {
    const d = afterBy.get(c.key);
    if (!d) {
      console.log(`MISSING case ${c.key}`);
      changed++;
      continue;
    }
    for (const id of new Set([...Object.keys(c.outcomes), ...Object.keys(d.outcomes)])) {
      compared++;
      if (c.outcomes[id] === d.outcomes[id]) continue;
      changed++;
      console.log(
        `${c.key === 'reference' ? 'reference' : c.key}\n  ${id}: ${c.outcomes[id] ?? '(absent)'} -> ${d.outcomes[id] ?? '(absent)'}\n    before: ${c.messages[id] ?? ''}\n    after:  ${d.messages[id] ?? ''}`,
      );
    }
  }
  console.log(`${compared} verdicts compared in ${before.cases.length} cases: ${changed} differ`);
  return changed ? 1 : 0;
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      out: { type: 'string' },
      jobs: { type: 'string', default: '1' },
      cases: { type: 'string' },
      'only-case': { type: 'string' },
      'families-in': { type: 'string' },
      diff: { type: 'boolean' },
    },
  });
  if (values.diff) return diff(positionals[0]!, positionals[1]!);
  if (!values.out) throw new Error('--out FILE (or --diff A B)');
  const base = loadServers().find((p) => p.id === 'reference')!;
  let cases = casesOf(await loadProofs());
  if (values['only-case']) cases = cases.filter((c) => c.key.includes(values['only-case']!));
  if (values['families-in']) {
    // Only the cases whose families are all in this list (the reference case runs the whole catalogue: kept).
    const keep = new Set(values['families-in'].split(','));
    cases = cases.filter((c) => c.families.length === 0 || c.families.every((f) => keep.has(f)));
  }
  if (values.cases) cases = cases.slice(0, Number(values.cases));
  const results: CaseResult[] = [];
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const c = cases[next++]!;
      const r = await runCase(c, base);
      results.push(r);
      const counts: Record<string, number> = {};
      for (const o of Object.values(r.outcomes)) counts[o] = (counts[o] ?? 0) + 1;
      console.log(
        `[${results.length}/${cases.length}] ${r.seconds.toFixed(0)} s exit ${r.exitCode} ${c.key.slice(0, 120)}: ${JSON.stringify(counts)}${r.error ? ` ERROR ${r.error}` : ''}`,
      );
      writeFileSync(values.out!, JSON.stringify({ takenAt: new Date().toISOString(), cases: results }, null, 1));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Number(values.jobs)) }, worker));
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(e);
    process.exit(2);
  },
);
