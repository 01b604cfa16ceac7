// npm run matrix -- [--projects a,b,…] [--out reports/matrix] [--budget-min 15] [--readme] [--no-real]
// npm run matrix -- --from results.json … [--out dir] [--readme]     (no run: merge results files, e.g. of several machines)
// --readme: also regenerate the study's table in docs/seed-matrix.md (between its matrix markers).
//
// Runs the seed study's servers (the emu-* emulations, plus a real llama-server when the llama.cpp bundle is found) one
// after another, each as its own `vitest run --project <id>` writing reports/matrix/runs/<id>/results.json, with
// progress on the console and one overall time budget (a project still running when it is spent is stopped: its
// results file keeps what it measured and its row says "interrupted"). Then builds the seed-style comparison from the
// results files alone (reporters/seed-matrix.ts): Markdown (matrix.md, and the table of docs/seed-matrix.md with
// --readme) and the HTML report (index.html, the matrix on top), and checks every emulation's verdicts against those
// pinned in fixtures/seed-study.ts. Exit status: 0; 1 when a pinned verdict moved or a results file could not be read; 2 on bad usage.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { EMULATIONS, matrixEnv, pinnedDeviations, studyMarkdown } from '../fixtures/seed-study.ts';
import { ROOT } from '../lib/config/profile.ts';
import { renderHtml } from '../reporters/html.ts';
import { normaliseResults } from '../reporters/report-data.ts';
import { type MatrixRow, matrixMarkdown, matrixRows } from '../reporters/seed-matrix.ts';
import { type RealColumn, realLlamaColumn } from './matrix-real.ts';
import { defaultResultsFiles, loadResultsFiles } from './report.ts';

const USAGE =
  "usage: npm run matrix -- [--projects a,b] [--out reports/matrix] [--budget-min 15] [--readme] [--no-real] | --from results.json … [--out dir] [--readme]\n  --readme: also regenerate the study's table in docs/seed-matrix.md (between its matrix markers)";

export interface MatrixArgs {
  projects?: string[];
  from?: string[];
  out: string;
  budgetMin: number;
  readme: boolean;
  real: boolean;
}

export function parseArgs(argv: readonly string[]): MatrixArgs | { error: string } | { help: true } {
  const a: MatrixArgs = { out: join('reports', 'matrix'), budgetMin: 15, readme: false, real: true };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (name: string) => (arg.startsWith(`${name}=`) ? arg.slice(name.length + 1) : argv[++i]);
    if (arg === '-h' || arg === '--help') return { help: true };
    if (arg === '--projects' || arg.startsWith('--projects='))
      a.projects = (value('--projects') ?? '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    else if (arg === '--out' || arg.startsWith('--out=')) {
      const v = value('--out');
      if (!v) return { error: '--out needs a directory' };
      a.out = v;
    } else if (arg === '--budget-min' || arg.startsWith('--budget-min=')) {
      const v = Number(value('--budget-min'));
      if (!(v > 0)) return { error: '--budget-min needs a positive number of minutes' };
      a.budgetMin = v;
    } else if (arg === '--readme') a.readme = true;
    else if (arg === '--no-real') a.real = false;
    else if (arg === '--from') a.from = [];
    else if (arg.startsWith('--')) return { error: `unknown option ${arg}` };
    else if (a.from) a.from.push(arg);
    else return { error: `unexpected argument ${arg} (results files go after --from)` };
  }
  if (a.from && a.projects) return { error: '--from and --projects exclude each other' };
  return a;
}

const mmss = (ms: number) => `${Math.floor(ms / 60_000)}:${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')}`;

/** One `vitest run --project id`: progress lines through, stopped (SIGTERM, then SIGKILL) at the deadline. */
function runProject(
  id: string,
  env: NodeJS.ProcessEnv,
  deadline: number,
  prefix: string,
): Promise<{ code: number | null; stopped: boolean; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolveRun) => {
    const child = spawn(
      process.execPath,
      [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--project', id],
      {
        cwd: ROOT,
        env: { ...env, NO_COLOR: '1', FORCE_COLOR: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    let stopped = false;
    const tail: string[] = [];
    const onLine = (line: string) => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      // A family finished (one line per test file), or a long check's own progress line.
      const file = /^\s*[✓×↓]\s+\|[^|]+\|\s+suites\/([a-z-]+)\.test\.ts\s+\((\d+) tests?[^)]*\)\s*(\d+\s*m?s)?/.exec(
        line,
      );
      if (file)
        console.log(`${prefix} ${file[1]} (${file[2]} checks) ${file[3] ?? ''} — ${mmss(Date.now() - t0)} elapsed`);
      else if (/^\[(cycles|context|parallel)\.[a-z0-9-]+\] (cycle \d|warm-up|concurrency|\d+ × |trend)/.test(line))
        console.log(`${prefix}   ${line.slice(0, 160)}`);
      else if (/SETUP ERROR|starting:|ready at/.test(line)) console.log(`${prefix} ${line.trim().slice(0, 200)}`);
    };
    const pipe = (s: NodeJS.ReadableStream) => {
      let buf = '';
      s.setEncoding('utf8');
      s.on('data', (d: string) => {
        buf += d;
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          onLine(buf.slice(0, nl));
          buf = buf.slice(nl + 1);
        }
      });
    };
    pipe(child.stdout!);
    pipe(child.stderr!);
    const kill = (sig: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, sig); // the whole group: vitest, its workers and the server it started
      } catch {
        /* already gone */
      }
    };
    // Detached (its own process group, so the deadline can stop vitest, its workers and the server together): a
    // Ctrl-C of `npm run matrix` no longer reaches it by itself, so forward it.
    const onSignal = (sig: NodeJS.Signals) => {
      kill('SIGTERM');
      setTimeout(() => kill('SIGKILL'), 5_000).unref();
      process.exitCode = 130;
      console.log(`${prefix} ${sig}: stopping`);
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    const timer = setTimeout(
      () => {
        stopped = true;
        console.log(`${prefix} time budget spent: stopping (its results file keeps what was measured)`);
        kill('SIGTERM');
        setTimeout(() => kill('SIGKILL'), 10_000).unref();
      },
      Math.max(1_000, deadline - Date.now()),
    );
    child.on('close', (code) => {
      clearTimeout(timer);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      if (code !== 0 && code !== 1 && !stopped)
        console.log(`${prefix} vitest exited with ${code}; last lines:\n${tail.slice(-15).join('\n')}`);
      resolveRun({ code, stopped, ms: Date.now() - t0 });
    });
  });
}

/** The page whose generated table --readme regenerates (between the matrix markers). */
export const MATRIX_PAGE = 'docs/seed-matrix.md';

/** Replace the part of a Markdown page (docs/seed-matrix.md) between the matrix markers; pure. */
export function spliceMatrixBlock(page: string, generated: string): string {
  const begin = '<!-- matrix:begin -->';
  const end = '<!-- matrix:end -->';
  const i = page.indexOf(begin);
  const j = page.indexOf(end);
  if (i < 0 || j < i) throw new Error(`${MATRIX_PAGE} has no ${begin} … ${end} section`);
  return `${page.slice(0, i + begin.length)}\n${generated.trim()}\n${page.slice(j)}`;
}

export interface Built {
  rows: MatrixRow[];
  markdown: string;
  deviations: string[];
  notes: string[];
  sources: string[];
}

/** Rows, Markdown and pinned-verdict deviations from results files (no run). */
/** Results files in the study's order (EMULATIONS), then the others as given: the HTML report keeps the file order. */
export function studyOrder(files: readonly string[], projectOf: (f: string) => string | undefined): string[] {
  const order = EMULATIONS.map((e) => e.project);
  const rank = (f: string) => {
    const i = order.indexOf(projectOf(f) ?? '');
    return i === -1 ? order.length : i;
  };
  return files
    .map((f, i) => ({ f, i }))
    .sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i)
    .map((x) => x.f);
}

export function buildMatrix(files: readonly string[], intro: string[] = []): Built {
  const { loaded, notes } = loadResultsFiles(files);
  const raw = loaded.map((l) => l.file);
  const order = EMULATIONS.map((e) => e.project);
  const rows = matrixRows(raw, order);
  const markdown = [matrixMarkdown(rows, { level: 0, intro }), '', studyMarkdown(rows)].join('\n');
  const deviations = pinnedDeviations(raw.map(normaliseResults));
  return { rows, markdown, deviations, notes, sources: loaded.map((l) => l.source) };
}

export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<number> {
  const args = parseArgs(argv);
  if ('help' in args) {
    console.log(USAGE);
    return 0;
  }
  if ('error' in args) {
    console.error(`matrix: ${args.error}\n${USAGE}`);
    return 2;
  }
  const t0 = Date.now();
  const out = resolve(args.out);
  mkdirSync(out, { recursive: true });
  let files: string[];
  const intro: string[] = [];
  if (args.from) {
    if (!args.from.length) {
      console.error(`matrix: --from needs results files\n${USAGE}`);
      return 2;
    }
    files = args.from;
    intro.push(
      `Generated by \`npm run matrix -- --from …\` from ${files.length} results file${files.length === 1 ? '' : 's'} (no run).`,
    );
  } else {
    const runs = join(out, 'runs');
    const known = EMULATIONS.map((e) => e.project);
    const projects = args.projects ?? known;
    let real: RealColumn | undefined;
    if (args.real && !args.projects) real = await realLlamaColumn(out);
    const all = [...projects, ...(real?.project ? [real.project] : [])];
    const deadline = t0 + args.budgetMin * 60_000;
    console.log(`matrix: ${all.length} servers, one after another, within ${args.budgetMin} min: ${all.join(', ')}`);
    if (real?.note) console.log(`matrix: ${real.note}`);
    try {
      for (const [i, id] of all.entries()) {
        const prefix = `[${i + 1}/${all.length} ${id}]`;
        if (process.exitCode === 130) break;
        if (Date.now() >= deadline) {
          console.log(`${prefix} not run: the time budget is spent`);
          continue;
        }
        const env: NodeJS.ProcessEnv = {
          ...process.env,
          CONFORMANCE_REPORTS_DIR: runs,
          ...matrixEnv(id),
          ...(id === real?.project ? real.env : {}),
        };
        console.log(`${prefix} running (${mmss(Date.now() - t0)} into the budget)`);
        const r = await runProject(id, env, deadline, prefix);
        console.log(`${prefix} done in ${mmss(r.ms)}${r.stopped ? ' (stopped at the budget)' : ''}`);
      }
    } finally {
      await real?.stop();
    }
    files = defaultResultsFiles(runs).filter((f) => all.some((p) => relative(runs, f).split(/[\\/]/)[0] === p));
    intro.push(
      `Generated by \`npm run matrix\` on ${new Date().toISOString().slice(0, 10)} in ${mmss(Date.now() - t0)} (${all.length} servers, quick tier).`,
    );
  }

  files = studyOrder(files, (f) => {
    try {
      return (JSON.parse(readFileSync(f, 'utf8')) as { header?: { project?: string } }).header?.project;
    } catch {
      return undefined;
    }
  });
  const built = buildMatrix(files, intro);
  const mdFile = join(out, 'matrix.md');
  writeFileSync(mdFile, `${built.markdown}\n`);
  const html = renderHtml(files.length ? loadResultsFiles(files).loaded.map((l) => l.file) : [], {
    title: 'The seed study, reproduced: LLM server conformance matrix',
    matrixHeading: "The seed study's comparison",
    generatedAt: new Date().toISOString(),
    sources: built.sources,
    notes: built.notes,
  });
  const htmlFile = join(out, 'index.html');
  writeFileSync(htmlFile, html);
  console.log(`\n${built.markdown}\n`);
  if (args.readme) {
    const pageFile = join(ROOT, MATRIX_PAGE);
    writeFileSync(pageFile, spliceMatrixBlock(readFileSync(pageFile, 'utf8'), built.markdown));
    console.log(`matrix: ${MATRIX_PAGE} table regenerated`);
  }
  for (const n of built.notes) console.error(`matrix: ${n}`);
  if (built.deviations.length) {
    console.error(`matrix: ${built.deviations.length} verdict(s) differ from those pinned in fixtures/seed-study.ts:`);
    for (const d of built.deviations) console.error(`  - ${d}`);
  } else console.log('matrix: every pinned verdict of fixtures/seed-study.ts holds');
  console.log(
    `matrix: wrote ${relative(process.cwd(), mdFile)} and ${relative(process.cwd(), htmlFile)} in ${mmss(Date.now() - t0)}`,
  );
  return built.deviations.length || built.notes.length ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      console.error(`matrix: ${(e as Error).stack ?? e}`);
      process.exitCode = 1;
    },
  );
}
