// npm run client-compat [-- --fault NAME ...] [--out reports/client-compat.md]
//
// The compatibility table of the `clients` family: every client check run against the reference server with each
// fault (and each valid variation) switched on, one server per fault. Per client and version: which faults break it
// (with the client's own first error) and which it tolerates, and whether the wire broke a MUST rule too.
// Writes Markdown (default reports/client-compat.md) and the same data as JSON beside it; prints the Markdown.
// Bounded: one reference server at a time, each check under its own timeout.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { FAULTS } from '../fixtures/reference-server/faults.ts';
import { startReference } from '../fixtures/reference-server/spawn.ts';
import { grade, runCheck } from '../lib/check/check.ts';
import { freshMemory } from '../lib/model/memory.ts';
import type { ClientCell } from '../suites/clients.ts';
import { checks } from '../suites/clients.ts';

/** Fault families whose faults touch a single valid generation request (the others need load, time or bad input). */
const FAMILIES = new Set(['sse', 'wire', 'wire-extra', 'stream', 'api', 'metrics', 'clients']);
const NOT_ONE_REQUEST = new Set([
  'api-models-missing-model',
  'api-unknown-model-500',
  'api-unknown-model-200',
  'stream-continue-after-disconnect',
  'stream-headers-after-prefill',
]);

interface Row {
  fault: string;
  description: string;
  client: string;
  label: string;
  outcome: string;
  stream: string;
  nonStream: string;
  first: string;
  mustBroken: string[];
}

function arg(name: string): string[] {
  const out: string[] = [];
  process.argv.forEach((a, i) => {
    if (a === name && process.argv[i + 1]) out.push(process.argv[i + 1]!);
  });
  return out;
}

/** The Actual line of a failure (else the first line), without the call's name and the client label the table already gives. */
const firstLine = (s: string, label: string) =>
  (/^\s*Actual:\s*(.*)$/m.exec(s)?.[1] ?? s.split('\n')[0] ?? '')
    .replace(/^(stream|non-stream) \(.*?\): /, '$1: ')
    .split(`${label} `)
    .join('');

async function main(): Promise<void> {
  const chosen = arg('--fault');
  const faults = chosen.length
    ? chosen
    : [
        '(none)',
        ...[...FAULTS.values()]
          .filter((f) => FAMILIES.has(f.family) && !NOT_ONE_REQUEST.has(f.name))
          .map((f) => f.name),
      ];
  const out = resolve(arg('--out')[0] ?? 'reports/client-compat.md');
  const rows: Row[] = [];
  const t0 = performance.now();
  for (const fault of faults) {
    const ref = await startReference(fault === '(none)' ? [] : ['--fault', fault]);
    try {
      for (const check of checks) {
        const { verdict } = await runCheck(check, {
          memory: freshMemory(),
          profile: ref.profile,
          server: ref.info,
          log: () => undefined,
        });
        const g = grade(check, verdict, ref.profile, false);
        const cell = (verdict.metrics as { client?: ClientCell } | undefined)?.client;
        rows.push({
          fault,
          description: fault === '(none)' ? 'the correct reference server' : FAULTS.get(fault)!.description,
          client: check.id,
          label: cell?.label ?? check.id,
          outcome: g.outcome,
          stream: cell?.stream.outcome ?? '-',
          nonStream: cell?.nonStream.outcome ?? '-',
          first: g.outcome === 'pass' ? '' : firstLine(verdict.message, cell?.label ?? '').slice(0, 220),
          mustBroken: [...new Set([...(cell?.stream.mustBroken ?? []), ...(cell?.nonStream.mustBroken ?? [])])],
        });
      }
    } finally {
      await ref.stop();
    }
    process.stderr.write(
      `${fault}: ${rows
        .filter((r) => r.fault === fault)
        .map((r) => `${r.client.replace('clients.', '')} ${r.outcome}`)
        .join(', ')}\n`,
    );
  }
  const md: string[] = [
    `# Client compatibility against the reference server`,
    '',
    `${faults.length} server variants × ${checks.length} clients in ${((performance.now() - t0) / 1000).toFixed(0)} s. ` +
      '"breaks" = the client threw, reported an error, or reported other text/finish/usage than the wire (SHOULD not met); "MUST" names the rules the wire broke as well.',
    '',
  ];
  for (const check of checks) {
    const mine = rows.filter((r) => r.client === check.id);
    md.push(`## ${check.id}: ${mine[0]?.label ?? ''}`, '');
    md.push(
      "| fault | outcome | stream / non-stream | MUST rules the wire broke | client's first error or difference |",
      '|---|---|---|---|---|',
    );
    for (const r of mine)
      md.push(
        `| \`${r.fault}\` | ${r.outcome === 'pass' ? 'tolerates' : r.outcome === 'warn' ? '**breaks**' : r.outcome} | ${r.stream} / ${r.nonStream} | ${r.mustBroken.join(', ') || '-'} | ${r.first.replace(/\|/g, '\\|')} |`,
      );
    md.push('');
  }
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, md.join('\n'));
  writeFileSync(out.replace(/\.md$/, '.json'), JSON.stringify(rows, null, 2));
  process.stdout.write(md.join('\n') + '\n');
}

main().catch((e) => {
  process.stderr.write(`client-compat: ${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
