// npm run html -- [results.json ...] [--out reports/index.html] [--title "…"]
// Builds the self-contained HTML report from results files without rerunning anything. With no files given it reads
// reports/<project>/results*.json and reports/<project>/shard-<i>-of-<n>/results*.json (the same discovery and the
// same loading, schema check included, as `npm run report`). Files that cannot be read are named in the report and
// make the exit code 1; bad usage exits 2. The page itself is reporters/html.ts (pure).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { renderHtml } from '../reporters/html.ts';
import { defaultResultsFiles, loadResultsFiles } from './report.ts';

const USAGE = 'usage: npm run html -- [results.json ...] [--out reports/index.html] [--title "…"]';

export interface HtmlReportResult {
  out: string;
  bytes: number;
  sources: string[];
  notes: string[];
}

/** Read the files, render, write `out`. Never throws on a bad results file (it becomes a note in the page). */
export function writeHtmlReport(
  files: readonly string[],
  out: string,
  opts: { title?: string; generatedAt?: string } = {},
): HtmlReportResult {
  const { loaded, notes } = loadResultsFiles(files);
  const sources = loaded.map((l) => l.source);
  const html = renderHtml(
    loaded.map((l) => l.file),
    { title: opts.title, generatedAt: opts.generatedAt ?? new Date().toISOString(), sources, notes },
  );
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, html);
  return { out, bytes: Buffer.byteLength(html), sources, notes };
}

export function main(argv: readonly string[] = process.argv.slice(2)): number {
  let out: string | undefined;
  let title: string | undefined;
  const files: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const value = (name: string) => (a.startsWith(`${name}=`) ? a.slice(name.length + 1) : argv[++i]);
    if (a === '-h' || a === '--help') {
      console.log(USAGE);
      return 0;
    } else if (a === '--out' || a.startsWith('--out=')) {
      out = value('--out');
      if (!out) {
        console.error(`html: --out needs a file name\n${USAGE}`);
        return 2;
      }
    } else if (a === '--title' || a.startsWith('--title=')) title = value('--title');
    else if (a.startsWith('--')) {
      console.error(`html: unknown option ${a}\n${USAGE}`);
      return 2;
    } else files.push(a);
  }
  const inputs = files.length ? files : defaultResultsFiles('reports');
  if (!inputs.length) {
    console.error(`html: no results files given and none found under reports/*/results*.json\n${USAGE}`);
    return 2;
  }
  const r = writeHtmlReport(inputs, out ?? join('reports', 'index.html'), { title });
  console.log(
    `html: wrote ${r.out} (${Math.ceil(r.bytes / 1024)} KiB) from ${r.sources.length} results file${r.sources.length === 1 ? '' : 's'}`,
  );
  for (const n of r.notes) console.error(`html: ${n}`);
  return r.notes.length ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = main();
}
