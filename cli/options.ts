// Option tables and their parsing for every command: node:util parseArgs (no dependency, ~2 ms to load; commander
// 15 took 50-70 ms on the same machine and writes its own errors), plus what it lacks: "did you mean" for an unknown
// flag, and help lines generated from the same table, so a flag is declared once.
import { parseArgs } from 'node:util';

/** A bad command line: a message naming the problem (exit 2), never a stack trace. */
export class UsageError extends Error {}

interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** The value's placeholder in the help (`URL`, `SECONDS`); string options only. */
  value?: string;
  /** One line (continued lines are indented in the help). */
  help: string;
  /** Help section; options without one are listed under "Options". */
  group?: string;
}
export type OptionTable = Record<string, OptionSpec>;

/** Edit distance (insert, delete, replace, swap of neighbours), bounded: enough to tell a typo from another word. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  return d[a.length]![b.length]!;
}

/** The known word closest to `word` when it is plausibly a typo of it (or a prefix of exactly one), else undefined. */
export function closest(word: string, known: readonly string[]): string | undefined {
  const prefixed = known.filter((k) => k.startsWith(word));
  if (word.length >= 3 && prefixed.length === 1) return prefixed[0];
  let best: string | undefined;
  let bestD = Number.POSITIVE_INFINITY;
  for (const k of known) {
    const dist = distance(word, k);
    if (dist < bestD) [best, bestD] = [k, dist];
  }
  return best !== undefined && bestD <= Math.max(1, Math.min(3, Math.floor(word.length / 3))) ? best : undefined;
}

/** "--modle" → "unknown option --modle; did you mean --model? (llm-server-conformance --help lists them)". */
function unknownOption(flag: string, table: OptionTable, helpCommand: string): UsageError {
  const name = flag.replace(/^-+/, '').split('=')[0]!;
  const near = closest(name, Object.keys(table));
  return new UsageError(
    `unknown option ${flag.split('=')[0]}${near ? `; did you mean --${near}?` : ''} (${helpCommand} lists them)`,
  );
}

/**
 * parseArgs with the table, strict, errors rewritten as UsageError: an unknown flag gets its nearest known one, a
 * missing value names the flag and what it takes.
 */
export function parseOptions(
  table: OptionTable,
  argv: readonly string[],
  o: { positionals?: boolean; helpCommand: string },
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  const options = Object.fromEntries(
    Object.entries(table).map(([k, s]) => [k, { type: s.type, ...(s.short ? { short: s.short } : {}) }]),
  );
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options,
      strict: true,
      allowPositionals: o.positionals ?? false,
    });
    return { values: values as Record<string, string | boolean | undefined>, positionals };
  } catch (e) {
    const err = e as Error & { code?: string };
    const unknown = /Unknown option '([^']+)'/.exec(err.message)?.[1];
    if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && unknown) throw unknownOption(unknown, table, o.helpCommand);
    const missing = /Option '(?:-\w, )?--([\w-]+) <value>' argument missing/.exec(err.message)?.[1];
    if (missing) {
      const spec = table[missing];
      throw new UsageError(
        `--${missing} needs a value${spec?.value ? ` (${spec.value})` : ''}: ${(spec?.help ?? '').replace(/\s*\n\s*/g, ' ')}`,
      );
    }
    const positional = /Unexpected argument '([^']+)'/.exec(err.message)?.[1];
    if (positional)
      throw new UsageError(`unexpected argument "${positional}" (${o.helpCommand} says what this command takes)`);
    throw new UsageError(err.message);
  }
}

/**
 * A subcommand's options and files (report, compare, merge): parsed, or the usage error as text. Boolean options are
 * only tested for truth, so one record type serves both kinds.
 */
export function parseSubcommand(
  table: OptionTable,
  argv: readonly string[],
  command: string,
): { values: Record<string, string | undefined>; positionals: string[] } | { error: string } {
  try {
    const p = parseOptions(table, argv, { positionals: true, helpCommand: `llm-server-conformance ${command} --help` });
    return { values: p.values as Record<string, string | undefined>, positionals: p.positionals };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

/** The table as help lines, grouped in first-seen order: `  --wait SECONDS   help…`. */
export function optionHelp(table: OptionTable): string {
  const rows = Object.entries(table).map(([name, s]) => ({
    group: s.group ?? 'Options',
    flag: `${s.short ? `-${s.short}, ` : ''}--${name}${s.value ? ` ${s.value}` : ''}`,
    help: s.help,
  }));
  const width = Math.min(24, Math.max(...rows.map((r) => r.flag.length))) + 2;
  const groups = [...new Set(rows.map((r) => r.group))];
  return groups
    .map((g) => {
      const lines = rows
        .filter((r) => r.group === g)
        .map((r) => {
          const [first, ...rest] = r.help.split('\n');
          const head =
            r.flag.length < width ? `  ${r.flag.padEnd(width)}${first}` : `  ${r.flag}\n  ${' '.repeat(width)}${first}`;
          return [head, ...rest.map((l) => `  ${' '.repeat(width)}${l}`)].join('\n');
        });
      return `${g}:\n${lines.join('\n')}`;
    })
    .join('\n\n');
}
