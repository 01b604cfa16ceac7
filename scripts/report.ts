// llm-server-conformance report [results.json ...] [--out DIR] [--only console,summary,badges,html,junit] [--verbose]
// (in a checkout: npm run report -- …; npm run badges = --only badges)
//
// Rebuilds the console table, the Markdown summary, the badges, <out>/junit.xml and reports/index.html from one or more results files, without
// rerunning anything. Files of several machines merge: each column is "<project> @ <machine>"; shards of the same
// project and machine merge into one column. With no files given it reads reports/<project>/results.json and
// reports/<project>/shard-*/results.json. Per column, the summary and badges go where the live reporters put them
// (<out>/<project>/summary.md, <out>/<project>/badges/); with several columns a matrix summary goes to <out>/summary.md.
// Each summary is also appended to $GITHUB_STEP_SUMMARY when that is set.
// Exit code: 0, or 1 when a file could not be read or does not match fixtures/schemas/results.schema.json
// (the readable ones are still reported), 2 on bad usage.
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type OptionTable, optionHelp, parseSubcommand } from '../cli/options.ts';
import { readJsonFile } from '../lib/config/json-file.ts';
import { compileSchema, schemaErrors } from '../lib/config/schemas.ts';
import { redact } from '../lib/config/secrets.ts';
import { writeBadges } from '../reporters/badges.ts';
import { renderHtml } from '../reporters/html.ts';
import { writeJunit } from '../reporters/junit.ts';
import { type Column, renderConsole, toColumns } from '../reporters/render.ts';
import { projectDir } from '../reporters/results.ts';
import type { ResultsFile } from '../reporters/results-types.ts';
import { summaryOf, writeSummary } from '../reporters/summary.ts';

export type ReportPart = 'console' | 'summary' | 'badges' | 'html' | 'junit';
export const ALL_PARTS: readonly ReportPart[] = ['console', 'summary', 'badges', 'html', 'junit'];

export interface LoadedResults {
  /** The path as given (relative to cwd where possible). */
  source: string;
  /** The parsed file, exactly as stored. */
  file: ResultsFile;
  /** Schema violations (empty when valid). A file with violations is still loaded when it has a header and checks. */
  problems: string[];
}

/** reports/<project>/results*.json and reports/<project>/shard-<i>-of-<n>/results*.json, sorted. */
export function defaultResultsFiles(root = 'reports'): string[] {
  const out: string[] = [];
  if (!existsSync(root)) return out;
  for (const project of readdirSync(root).sort()) {
    const dir = join(root, project);
    if (!statSync(dir).isDirectory()) continue;
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (/^results.*\.json$/.test(name) && statSync(p).isFile()) out.push(p);
      else if (/^shard-\d+-of-\d+$/.test(name) && statSync(p).isDirectory()) {
        for (const n2 of readdirSync(p).sort()) if (/^results.*\.json$/.test(n2)) out.push(join(p, n2));
      }
    }
  }
  return out;
}

/** Read and validate results files. Unreadable ones are returned in `notes`, never thrown. */
export function loadResultsFiles(paths: readonly string[]): { loaded: LoadedResults[]; notes: string[] } {
  const validate = compileSchema('results.schema.json');
  const loaded: LoadedResults[] = [];
  const notes: string[] = [];
  for (const p of paths) {
    const source = relative(process.cwd(), p) || p;
    let data: unknown;
    try {
      data = readJsonFile(p, source);
    } catch (e) {
      // "<file>:<line>:<column>: not valid JSON: …" or "<file> could not be read (…)".
      notes.push((e as Error).message.split('\n')[0]!);
      continue;
    }
    const problems = validate(data) ? [] : schemaErrors(validate);
    const f = data as Partial<ResultsFile>;
    if (
      !f ||
      typeof f !== 'object' ||
      !f.header ||
      !Array.isArray(f.checks) ||
      !f.header.machine ||
      typeof f.header.project !== 'string'
    ) {
      notes.push(`${source} is not a results file (${problems.slice(0, 3).join('; ') || 'no header/checks'})`);
      continue;
    }
    if (problems.length)
      notes.push(
        `${source} does not match results.schema.json: ${problems.slice(0, 5).join('; ')}${problems.length > 5 ? ` (+${problems.length - 5} more)` : ''}`,
      );
    loaded.push({ source, file: f as ResultsFile, problems });
  }
  return { loaded, notes };
}

export interface ReportOptions {
  files: readonly string[];
  /** Reports root for per-project outputs. Default: reports. */
  out?: string;
  parts?: readonly ReportPart[];
  env?: NodeJS.ProcessEnv;
  /** Where console text goes (default stdout). */
  print?: (text: string) => void;
  /** Every check, the workloads and the client matrix on the console (default: what did not pass). */
  verbose?: boolean;
}

/**
 * Everything a report is built from; returned so further outputs (the HTML report) are made from the same data:
 * `raw` is each file's parsed content in input order, `sources` their paths, `notes` what could not be read.
 */
export interface ReportResult {
  columns: Column[];
  loaded: LoadedResults[];
  raw: ResultsFile[];
  sources: string[];
  notes: string[];
  written: string[];
  ok: boolean;
}

export function runReport(o: ReportOptions): ReportResult {
  const env = o.env ?? process.env;
  const out = resolve(o.out ?? 'reports');
  const parts = new Set(o.parts ?? ALL_PARTS);
  const print = o.print ?? ((s: string) => process.stdout.write(`${s}\n`));
  const { loaded, notes } = loadResultsFiles(o.files);
  const columns = toColumns(loaded.map((l) => l.file));
  const written: string[] = [];

  if (parts.has('console'))
    print(
      redact(
        renderConsole(columns, {
          color: !env.NO_COLOR && process.stdout.isTTY === true,
          verbose: o.verbose,
          ...(parts.has('html') ? { reports: join(out, 'index.html') } : {}),
        }),
      ),
    );
  if (parts.has('summary')) {
    if (columns.length > 1) written.push(writeSummary(summaryOf(columns), out, env));
    else for (const c of columns) written.push(writeSummary(summaryOf([c]), projectDir(out, c.project), env));
  }
  if (parts.has('badges')) for (const c of columns) written.push(...writeBadges(c, projectDir(out, c.project)));
  // One test suite per column (shards of a project on one machine merged), as the live reporter writes it.
  if (parts.has('junit') && columns.length) {
    written.push(
      writeJunit(
        columns.map((c) => ({
          header: c.header,
          checks: c.checks,
          errors: c.errors,
          ...(c.finished ? { finished: { date: c.header.date, reason: 'passed' } } : {}),
        })),
        out,
      ),
    );
  }
  if (parts.has('html')) {
    // The same loaded files as every other part, so the page and the table can never disagree.
    const html = renderHtml(
      loaded.map((l) => l.file),
      { generatedAt: new Date().toISOString(), sources: loaded.map((l) => l.source), notes },
    );
    const file = join(out, 'index.html');
    mkdirSync(out, { recursive: true });
    writeFileSync(file, html);
    written.push(file);
  }

  for (const n of notes) process.stderr.write(`report: ${n}\n`);
  return {
    columns,
    loaded,
    raw: loaded.map((l) => l.file),
    sources: loaded.map((l) => l.source),
    notes,
    written,
    ok: notes.length === 0,
  };
}

const REPORT_OPTIONS: OptionTable = {
  out: { type: 'string', value: 'DIR', help: 'reports root (the CLI: ./conformance-reports; a checkout: reports)' },
  only: { type: 'string', value: 'PARTS', help: `some of ${ALL_PARTS.join(',')} (default: all)` },
  verbose: { type: 'boolean', help: 'every check on the console, with the workloads and the client matrix' },
  help: { type: 'boolean', short: 'h', help: 'this help' },
};
const USAGE = `usage: llm-server-conformance report [results.json …] [--out DIR] [--only ${ALL_PARTS.join(',')}]

The console table, summary.md, badges, junit.xml and index.html rebuilt from results files, nothing rerun. With no
file given: every DIR/<project>/results.json.

${optionHelp(REPORT_OPTIONS)}`;

export function parseArgs(
  argv: readonly string[],
): { files: string[]; out: string; parts: ReportPart[]; verbose?: true } | { error: string } | { help: true } {
  const parsed = parseSubcommand(REPORT_OPTIONS, argv, 'report');
  if ('error' in parsed) return parsed;
  const v = parsed.values;
  if (v.help) return { help: true };
  if (v.out === '') return { error: '--out needs a directory' };
  let parts: ReportPart[] = [...ALL_PARTS];
  if (v.only !== undefined) {
    const list = v.only
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    const bad = list.filter((x) => !ALL_PARTS.includes(x as ReportPart));
    if (!list.length || bad.length)
      return { error: `--only takes ${ALL_PARTS.join(',')}${bad.length ? ` (not ${bad.join(',')})` : ''}` };
    parts = list as ReportPart[];
  }
  return {
    files: parsed.positionals,
    out: v.out ?? 'reports',
    parts,
    ...(v.verbose ? { verbose: true as const } : {}),
  };
}

export function main(argv: readonly string[] = process.argv.slice(2)): number {
  const args = parseArgs(argv);
  if ('help' in args) {
    console.log(USAGE);
    return 0;
  }
  if ('error' in args) {
    console.error(`report: ${args.error}`);
    return 2;
  }
  const files = args.files.length ? args.files : defaultResultsFiles(args.out);
  if (!files.length) {
    console.error(
      `report: no results files given and none found under ${args.out}/*/results.json (llm-server-conformance report --help)`,
    );
    return 2;
  }
  const r = runReport({ files, out: args.out, parts: args.parts, verbose: args.verbose });
  if (r.written.length)
    console.error(`report: wrote ${r.written.length} file(s) from ${r.loaded.length} results file(s) into ${args.out}`);
  return r.ok ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = main();
}
