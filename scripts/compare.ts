// llm-server-conformance compare old.json new.json [--tolerance 0.3] [--min-effect 0.2] [--min-delta-ms 50] [--alpha 0.05] [--json] [--all]
// (in a checkout: npm run compare -- …)
// Lists checks that changed outcome and figures that moved beyond noise; exit 1 on a regression, 2 on bad usage
// or an unreadable file, 0 otherwise. The comparison itself is reporters/compare.ts (pure).
import { pathToFileURL } from 'node:url';
import { type OptionTable, optionHelp, parseSubcommand } from '../cli/options.ts';
import { readJsonFile } from '../lib/config/json-file.ts';
import { type CompareOptions, compareResults, formatComparison } from '../reporters/compare.ts';

const COMPARE_OPTIONS: OptionTable = {
  tolerance: { type: 'string', value: 'X', help: 'relative change of a figure reported beyond noise (default 0.3)' },
  'min-effect': { type: 'string', value: 'X', help: 'smallest relative effect that counts (default 0.2)' },
  'min-delta-ms': { type: 'string', value: 'MS', help: 'smallest change of a time that counts (default 50)' },
  alpha: { type: 'string', value: 'A', help: 'significance level of the intervals (default 0.05: 95 %)' },
  iterations: { type: 'string', value: 'N', help: 'bootstrap resamples' },
  seed: { type: 'string', value: 'N', help: 'bootstrap seed (the same files give the same answer)' },
  json: { type: 'boolean', help: 'the comparison as JSON' },
  all: { type: 'boolean', help: 'every check and figure, not only the changed ones' },
  help: { type: 'boolean', short: 'h', help: 'this help' },
};
const USAGE = `usage: llm-server-conformance compare OLD.json NEW.json [options]

Checks that changed outcome and figures that moved beyond noise between two results files (e.g. the base branch's
and this one's). Exit 1 on a regression, 2 on bad usage or an unreadable file, else 0.

${optionHelp(COMPARE_OPTIONS)}`;

const NUMERIC: Record<string, keyof CompareOptions> = {
  tolerance: 'tolerance',
  'min-effect': 'minEffect',
  'min-delta-ms': 'minDeltaMs',
  alpha: 'alpha',
  iterations: 'iterations',
  seed: 'seed',
};

function parseArgs(
  argv: string[],
): { files: string[]; options: CompareOptions; json: boolean; all: boolean } | { help: true } | { error: string } {
  const parsed = parseSubcommand(COMPARE_OPTIONS, argv, 'compare');
  if ('error' in parsed) return parsed;
  const v = parsed.values;
  if (v.help) return { help: true };
  const options: CompareOptions = {};
  for (const [flag, key] of Object.entries(NUMERIC)) {
    if (v[flag] === undefined) continue;
    const n = Number(v[flag]);
    if (!v[flag]!.trim() || !Number.isFinite(n) || n < 0) return { error: `--${flag} needs a non-negative number` };
    if (flag === 'alpha' && !(n > 0 && n < 1))
      return { error: '--alpha must be between 0 and 1 (0.05 for a 95 % interval)' };
    (options as Record<string, number>)[key] = n;
  }
  const files = parsed.positionals;
  if (files.length !== 2)
    return { error: `expected two results files, got ${files.length} (llm-server-conformance compare --help)` };
  return { files, options, json: !!v.json, all: !!v.all };
}

/** The compare command: prints the comparison; 1 on a regression, 2 on bad usage or an unreadable file, else 0. */
export function main(argv: readonly string[] = process.argv.slice(2)): number {
  const args = parseArgs([...argv]);
  if ('help' in args) {
    console.log(USAGE);
    return 0;
  }
  if ('error' in args) {
    console.error(`compare: ${args.error}`);
    return 2;
  }
  let oldFile: unknown;
  let newFile: unknown;
  try {
    oldFile = readJsonFile(args.files[0]!);
    newFile = readJsonFile(args.files[1]!);
  } catch (e) {
    console.error(`compare: ${(e as Error).message}`);
    return 2;
  }
  const result = compareResults(oldFile, newFile, args.options);
  console.log(
    args.json
      ? JSON.stringify(result, null, 2)
      : formatComparison(result, { old: args.files[0], new: args.files[1], all: args.all }),
  );
  return result.regressions > 0 ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = main();
}
