// npm run compare -- old.json new.json [--tolerance 0.3] [--min-effect 0.2] [--min-delta-ms 50] [--alpha 0.05] [--json] [--all]
// Lists checks that changed outcome and figures that moved beyond noise; exit 1 on a regression, 2 on bad usage
// or an unreadable file, 0 otherwise. The comparison itself is reporters/compare.ts (pure).
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { type CompareOptions, compareResults, formatComparison } from '../reporters/compare.ts';

const USAGE =
  'usage: npm run compare -- <old results.json> <new results.json> [--tolerance 0.3] [--min-effect 0.2] [--min-delta-ms 50] [--alpha 0.05] [--json] [--all]';

function parseArgs(argv: string[]): { files: string[]; options: CompareOptions; json: boolean; all: boolean } | string {
  const files: string[] = [];
  const options: CompareOptions = {};
  let json = false;
  let all = false;
  const numeric: Record<string, keyof CompareOptions> = {
    '--tolerance': 'tolerance',
    '--min-effect': 'minEffect',
    '--min-delta-ms': 'minDeltaMs',
    '--alpha': 'alpha',
    '--iterations': 'iterations',
    '--seed': 'seed',
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const [flag, inline] =
      a.startsWith('--') && a.includes('=')
        ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]
        : [a, undefined];
    if (flag === '--json') json = true;
    else if (flag === '--all') all = true;
    else if (flag === '-h' || flag === '--help') return USAGE;
    else if (flag in numeric) {
      const v = Number(inline ?? argv[++i]);
      if (!Number.isFinite(v) || v < 0) return `${flag} needs a non-negative number\n${USAGE}`;
      if (flag === '--alpha' && !(v > 0 && v < 1))
        return `--alpha must be between 0 and 1 (0.05 for a 95 % interval)\n${USAGE}`;
      (options as Record<string, number>)[numeric[flag]!] = v;
    } else if (flag.startsWith('--')) return `unknown option ${flag}\n${USAGE}`;
    else files.push(a);
  }
  if (files.length !== 2) return `expected two results files, got ${files.length}\n${USAGE}`;
  return { files, options, json, all };
}

function read(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${path}: ${(e as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${path} is not JSON: ${(e as Error).message}`);
  }
}

/** The compare command: prints the comparison; 1 on a regression, 2 on bad usage or an unreadable file, else 0. */
export function main(argv: readonly string[] = process.argv.slice(2)): number {
  const args = parseArgs([...argv]);
  if (typeof args === 'string') {
    if (args === USAGE) {
      console.log(USAGE);
      return 0;
    }
    console.error(args);
    return 2;
  }
  let oldFile: unknown;
  let newFile: unknown;
  try {
    oldFile = read(args.files[0]!);
    newFile = read(args.files[1]!);
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
