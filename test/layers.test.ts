// lib/ is a stack of floors, in the order a request goes through them: a folder imports only folders below it (and
// itself), never one above. The model (types and the constructors of its values) imports nothing; the check core and
// the run sit on top, and nothing beneath imports them. process.env is read only by config/ (lib/config/env.ts).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { expect, test } from 'vitest';
import { ROOT } from '../lib/config/profile.ts';

/** Bottom to top. A top-level file of lib/ (json.ts, lazy.ts) stands on the floor of the model. */
const FLOORS: readonly string[] = [
  'model',
  'config',
  'http',
  'decode',
  'measure',
  'grading',
  'exchange',
  'server',
  'clients',
  'capacity',
  'check',
  'run',
];

const LIB = join(ROOT, 'lib');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

/** The folder of lib/ a file belongs to ('model' for a top-level file). */
function floorOf(file: string): string {
  const rel = relative(LIB, file).split(/[\\/]/);
  return rel.length === 1 ? 'model' : rel[0]!;
}

/** Every relative import of every lib/ file: from, to, and the line. */
function importsOf(): Array<{ from: string; to: string; line: string }> {
  const out: Array<{ from: string; to: string; line: string }> = [];
  const spec = /(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g;
  for (const f of tsFiles(LIB)) {
    for (const line of readFileSync(f, 'utf8').split('\n')) {
      for (const m of line.matchAll(spec)) {
        const target = resolve(dirname(f), m[1]!);
        if (relative(LIB, target).startsWith('..')) continue;
        out.push({ from: f, to: target, line: line.trim() });
      }
    }
  }
  return out;
}

test('every lib/ folder is on a floor, and none imports a folder above it', () => {
  const folders = readdirSync(LIB).filter((n) => statSync(join(LIB, n)).isDirectory());
  expect(
    folders.filter((f) => !FLOORS.includes(f)),
    'folders of lib/ with no floor in FLOORS',
  ).toEqual([]);
  const up = importsOf()
    .filter((i) => FLOORS.indexOf(floorOf(i.to)) > FLOORS.indexOf(floorOf(i.from)))
    .map((i) => `${relative(ROOT, i.from)} (${floorOf(i.from)}) imports ${relative(ROOT, i.to)} (${floorOf(i.to)})`);
  expect(up, 'imports that point up the stack').toEqual([]);
});

test('the model imports nothing else in lib/; nothing below check/ imports check/ or run/', () => {
  const bad = importsOf()
    .filter(
      (i) =>
        (floorOf(i.from) === 'model' && floorOf(i.to) !== 'model') ||
        (FLOORS.indexOf(floorOf(i.from)) < FLOORS.indexOf('check') && ['check', 'run'].includes(floorOf(i.to))),
    )
    .map((i) => `${relative(ROOT, i.from)}: ${i.line}`);
  expect(bad).toEqual([]);
});

test('process.env is read only in lib/config/', () => {
  const readers = tsFiles(LIB)
    .filter((f) => floorOf(f) !== 'config')
    .filter((f) => /process\.env/.test(readFileSync(f, 'utf8').replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, '')))
    .map((f) => relative(ROOT, f));
  expect(readers).toEqual([]);
});

/**
 * Module-level mutable state left in lib/, each with why it belongs to the process rather than to a run: what a run
 * remembers lives in its memory (lib/run/memory.ts), never here. A new entry needs a reason as good as these.
 */
const PROCESS_STATE: Record<string, string> = {
  'lib/config/schemas.ts cache': 'compiled JSON Schemas: a pure function of the schema, the same for every run',
  'lib/decode/tool-calls.ts compiled': 'compiled tool-argument schemas: a pure function of the schema',
  'lib/http/transport.ts urlParts': 'parsed URLs: a pure function of the URL, bounded to 256',
  'lib/http/transport.ts runBytes': "the process's memory budget for recorded bytes (every recording of the process)",
  'lib/http/transport.ts runReads': "the process's memory budget for recorded reads",
  'lib/http/transport.ts tagging': "undici's diagnostics channel is per process: which socket a request went out on",
  'lib/http/transport.ts tags': "undici's diagnostics channel is per process",
  'lib/http/transport.ts socketRequests': "requests per socket of this process's connection pool",
  'lib/http/transport.ts subscribed': 'the diagnostics channel is subscribed once per process',
  'lib/http/transport.ts journal':
    "the last requests this process's sockets carried (what a dead server was sent last)",
  'lib/http/recorder.ts sharedAgent': "this process's connection pool",
  'lib/config/secrets.ts registered': 'secrets are redacted from everything the process writes, whatever wrote it',
  'lib/server/lifecycle.ts live': 'children this process started, stopped by its exit hook',
  'lib/server/lifecycle.ts exitHookInstalled': 'the exit hook is installed once per process',
  'lib/server/llama-server.ts tasksetPath': "where this machine's taskset is: looked up once",
};

test('no module-level registry in lib/ but the process state listed, each with its reason', () => {
  const mutable =
    /^(?:let\s+([A-Za-z_$][\w$]*)|const\s+([A-Za-z_$][\w$]*)\s*(?::[^=]+)?=\s*(?:new\s+(?:Map|Set|WeakMap|WeakSet)\s*(?:<[^>]*>)?\(\s*\)|\[\s*\]))/;
  const found = tsFiles(LIB).flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .map((l) => mutable.exec(l))
      .filter((m) => m !== null)
      .map((m) => `${relative(ROOT, f)} ${m![1] ?? m![2]}`),
  );
  expect(
    found.filter((k) => !(k in PROCESS_STATE)),
    'module-level state not listed in PROCESS_STATE',
  ).toEqual([]);
  expect(
    Object.keys(PROCESS_STATE).filter((k) => !found.includes(k)),
    'listed but gone: take it out',
  ).toEqual([]);
});

/** Lines a source file of lib/, suites/ or reporters/ may have: past it, a module holds more than one concern. */
const MAX_FILE_LINES = 700;
/** Lines a check's run() may have: a check declares and drives; its rules live in lib/grading. */
const MAX_RUN_LINES = 80;

function sources(): string[] {
  return ['lib', 'suites', 'reporters'].flatMap((d) => tsFiles(join(ROOT, d)));
}

test(`no source file in lib/, suites/ or reporters/ over ${MAX_FILE_LINES} lines`, () => {
  const long = sources()
    .map((f) => ({ f: relative(ROOT, f), n: readFileSync(f, 'utf8').split('\n').length }))
    .filter(({ n }) => n > MAX_FILE_LINES)
    .map(({ f, n }) => `${f}: ${n} lines`);
  expect(long).toEqual([]);
});

test(`no check's run() over ${MAX_RUN_LINES} lines`, () => {
  const long: string[] = [];
  for (const f of tsFiles(join(ROOT, 'suites'))) {
    const lines = readFileSync(f, 'utf8').split('\n');
    lines.forEach((l, i) => {
      if (!/^\s*(?:async\s+)?run\s*[(:]/.test(l)) return;
      const indent = l.length - l.trimStart().length;
      // The body ends at the first closing line at the opening line's indent.
      const end = lines.findIndex(
        (m, j) => j > i && m.trim().startsWith('}') && m.length - m.trimStart().length <= indent,
      );
      const n = (end < 0 ? lines.length : end) - i + 1;
      if (n > MAX_RUN_LINES) long.push(`${relative(ROOT, f)}:${i + 1}: run() of ${n} lines`);
    });
  }
  expect(long).toEqual([]);
});
