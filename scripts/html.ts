// npm run html -- reports/*/results.json [--out reports/index.html] [--title "…"]
// Builds the self-contained HTML report from results files without rerunning anything. With no files given it
// reads every reports/<project>/results*.json (and reports/<project>/shard-*/results*.json). Unreadable files are named in the report and make the exit code 1.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { renderHtml } from '../reporters/html.ts';

const USAGE = 'usage: npm run html -- [results.json ...] [--out reports/index.html] [--title "…"]';

// reports/<project>/results*.json and, for sharded runs, reports/<project>/shard-<i>-of-<n>/results*.json.
function defaultFiles(dir = 'reports', depth = 2): string[] {
  if (!existsSync(dir) || depth === 0) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...defaultFiles(p, depth - 1));
    else if (dir !== 'reports' && /^results.*\.json$/.test(name)) out.push(p);
  }
  return out;
}

const argv = process.argv.slice(2);
let out = join('reports', 'index.html');
let title: string | undefined;
const files: string[] = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  if (a === '--out') out = argv[++i] ?? out;
  else if (a.startsWith('--out=')) out = a.slice('--out='.length);
  else if (a === '--title') title = argv[++i];
  else if (a.startsWith('--title=')) title = a.slice('--title='.length);
  else if (a === '-h' || a === '--help') {
    console.log(USAGE);
    process.exit(0);
  } else if (a.startsWith('--')) {
    console.error(`unknown option ${a}\n${USAGE}`);
    process.exit(2);
  } else files.push(a);
}
const inputs = files.length ? files : defaultFiles();
if (!inputs.length) {
  console.error(`html: no results files given and none found under reports/*/results*.json\n${USAGE}`);
  process.exit(2);
}

const results: unknown[] = [];
const sources: string[] = [];
const notes: string[] = [];
for (const f of inputs) {
  try {
    results.push(JSON.parse(readFileSync(f, 'utf8')));
    sources.push(relative(process.cwd(), f) || f);
  } catch (e) {
    notes.push(`could not read ${f}: ${(e as Error).message}`);
  }
}
const html = renderHtml(results, { title, generatedAt: new Date().toISOString(), sources, notes });
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, html);
console.log(`html: wrote ${out} (${(html.length / 1024).toFixed(0)} KiB) from ${sources.length} results file${sources.length === 1 ? '' : 's'}`);
for (const n of notes) console.error(`html: ${n}`);
process.exit(notes.length ? 1 : 0);
