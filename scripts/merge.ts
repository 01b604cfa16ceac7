// llm-server-conformance merge a/results.json b/results.json [--out merged.json] (npm run merge -- …)
// Capacity tables of several load generators (one results file each, run with their own --machine label against one
// server on the same start schedule) merged into one results file: every machine's levels kept with their machine,
// and one merged level per scheduled level (lib/capacity/merge.ts states the rule; docs/capacity-machines.md the how).
// Exit 0 written, 2 bad usage or an input that cannot merge.
import { pathToFileURL } from 'node:url';
import { type OptionTable, optionHelp, parseSubcommand } from '../cli/options.ts';
import { mergeCapacity, mergedLabel, serverLevels } from '../lib/capacity/merge.ts';
import { readCapacity } from '../lib/capacity/read.ts';
import { readJsonFile } from '../lib/config/json-file.ts';
import { isJsonObject } from '../lib/json.ts';
import { writeTextAtomic } from '../reporters/results.ts';

const MERGE_OPTIONS: OptionTable = {
  out: { type: 'string', value: 'FILE', help: 'write the merged results file here (default: standard output)' },
  help: { type: 'boolean', short: 'h', help: 'this help' },
};
const USAGE = `usage: llm-server-conformance merge A/results.json B/results.json […] [--out merged.json]

The capacity tables of several load machines (each run with its own --machine against one server on the same
schedule) merged into one results file: docs/capacity-machines.md.

${optionHelp(MERGE_OPTIONS)}`;

function read(path: string): Record<string, unknown> {
  const data = readJsonFile(path);
  if (!isJsonObject(data) || !isJsonObject(data.header)) throw new Error(`${path} is not a results file (no header)`);
  return data;
}

/** The merged results file: the first file's header relabelled, no checks (they stay in each machine's file), the table. */
export function mergeResultsFiles(
  files: ReadonlyArray<{ path: string; data: Record<string, unknown> }>,
): Record<string, unknown> {
  const inputs = files.map(({ path, data }) => {
    const table = readCapacity(data.capacity);
    if (!table || !table.levels.length) throw new Error(`${path} has no capacity table (run it with --capacity)`);
    if (table.machines && table.machines.length > 1)
      throw new Error(`${path} is already a merge of ${table.machines.join(', ')}: merge the machines' own files`);
    const header = data.header as Record<string, unknown>;
    const m = isJsonObject(header.machine) ? header.machine : {};
    const machine = table.machines?.[0] ?? (typeof m.label === 'string' && m.label ? m.label : path);
    return { machine, table, header };
  });
  const capacity = mergeCapacity(inputs);
  const first = inputs[0]!.header;
  const projects = new Set(inputs.map((i) => String(i.header.project ?? '')));
  if (projects.size > 1)
    throw new Error(`merge: the files name different projects (${[...projects].join(', ')}): one server only`);
  return {
    header: {
      ...first,
      machine: { ...(isJsonObject(first.machine) ? first.machine : {}), label: mergedLabel(capacity.machines!) },
    },
    checks: [],
    finished: { date: new Date().toISOString(), reason: `merged from ${files.map((f) => f.path).join(', ')}` },
    capacity,
  };
}

export function main(argv: readonly string[] = process.argv.slice(2)): number {
  const parsed = parseSubcommand(MERGE_OPTIONS, argv, 'merge');
  if ('error' in parsed) {
    console.error(`merge: ${parsed.error}`);
    return 2;
  }
  if (parsed.values.help) {
    console.log(USAGE);
    return 0;
  }
  const paths = parsed.positionals;
  const out = parsed.values.out;
  if (paths.length < 2 || out === '') {
    console.error(
      `merge: give at least two results files${out === '' ? ' and a path after --out' : ''} (llm-server-conformance merge --help)`,
    );
    return 2;
  }
  try {
    const merged = mergeResultsFiles(paths.map((path) => ({ path, data: read(path) })));
    const text = `${JSON.stringify(merged, null, 2)}\n`;
    const t = merged.capacity as ReturnType<typeof mergeCapacity>;
    const levels = serverLevels(t);
    if (out) writeTextAtomic(out, text);
    else process.stdout.write(text);
    const flagged = levels.filter((l) => l.flags.length).length;
    (out ? console.log : console.error)(
      `merge: ${t.machines!.join(', ')} → ${levels.length} merged level${levels.length === 1 ? '' : 's'}${flagged ? ` (${flagged} flagged)` : ''}${out ? `, wrote ${out}` : ''}`,
    );
    return 0;
  } catch (e) {
    console.error(`merge: ${(e as Error).message}`);
    return 2;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = main();
}
