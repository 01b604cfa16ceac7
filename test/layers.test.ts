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
