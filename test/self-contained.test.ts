// The repository is self-contained: a user of the published package has only what is tracked here, so no tracked
// file may point at documents or folders outside it, and every `docs/<name>.md` a file cites (with the section it
// quotes) must exist. The forbidden strings are assembled from parts so this file does not match itself.

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { ROOT } from '../lib/config/profile.ts';

const SHARED = 'shared';
/** Paths outside the checkout that our own machines use. */
const OUTSIDE_PATHS = [`../${SHARED}`, `/work/${SHARED}`];
/** Documents that are not part of the repository; a citation of one is allowed only as a path inside docs/. */
const NOTES = ['servers', 'notes'].join('-');
const OUTSIDE_DOCS = ['design', NOTES, 'style'];
/** Our own CI scripts: they may look for the llama.cpp bundle outside the checkout. */
const MAY_POINT_OUTSIDE = new Set(['.ci/run', '.ci/run-deps.sh']);

function trackedTextFiles(): Array<{ path: string; text: string }> {
  const paths = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 })
    .split('\0')
    .filter((p) => p && p !== 'package-lock.json');
  const files: Array<{ path: string; text: string }> = [];
  for (const path of paths) {
    const abs = join(ROOT, path);
    if (!existsSync(abs)) continue; // deleted in the work tree, not yet committed
    const buf = readFileSync(abs);
    if (buf.includes(0)) continue; // binary
    files.push({ path, text: buf.toString('utf8') });
  }
  return files;
}

const files = trackedTextFiles();
const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

test('no tracked file points at a folder outside the repository', () => {
  const found: string[] = [];
  for (const { path, text } of files) {
    if (MAY_POINT_OUTSIDE.has(path)) continue;
    for (const p of OUTSIDE_PATHS) {
      let i = text.indexOf(p);
      while (i !== -1) {
        found.push(`${path}:${lineOf(text, i)}: ${p}`);
        i = text.indexOf(p, i + 1);
      }
    }
  }
  expect(found, 'paths outside the repository (the package has only what is tracked)').toEqual([]);
});

test('documents outside the repository are not cited: only docs/<name>.md', () => {
  // A name with the path before it: anything but docs/ (or a path ending in /docs/) is outside the repository.
  const cite = new RegExp(`([\\w./-]*?)\\b(${OUTSIDE_DOCS.join('|')})(\\.md\\b|\\b)`, 'g');
  const found: string[] = [];
  for (const { path, text } of files) {
    for (const m of text.matchAll(cite)) {
      const [whole, dir, name, ext] = m;
      if (!ext && name !== NOTES) continue; // "design" and "style" are ordinary words
      if (ext && (dir === 'docs/' || dir.endsWith('/docs/'))) continue;
      found.push(`${path}:${lineOf(text, m.index!)}: ${whole}`);
    }
  }
  expect(found, "cite the project's own docs/ instead").toEqual([]);
});

test('every cited docs/<name>.md exists, with the section a citation quotes', () => {
  // a docs page with a quoted heading, also JSON-escaped and in single quotes; not a path inside
  // another repository or a URL (`…/ollama/blob/main/docs/api.md`).
  const cite = /(?<![\w/.-])docs\/([\w.-]+\.md)(?:[ ]+(?:\\?"([^"\\\n]+)\\?"|'([^'\n]+)'))?/g;
  const headings = new Map<string, Set<string> | undefined>();
  const headingsOf = (doc: string) => {
    if (!headings.has(doc)) {
      const abs = join(ROOT, 'docs', doc);
      headings.set(
        doc,
        existsSync(abs)
          ? new Set([...readFileSync(abs, 'utf8').matchAll(/^#+[ \t]+(.+?)[ \t]*$/gm)].map((h) => h[1]!))
          : undefined,
      );
    }
    return headings.get(doc);
  };
  const missing: string[] = [];
  let cited = 0;
  for (const { path, text } of files) {
    for (const m of text.matchAll(cite)) {
      cited++;
      const doc = m[1]!;
      const section = m[2] ?? m[3];
      const h = headingsOf(doc);
      const at = `${path}:${lineOf(text, m.index!)}`;
      if (!h) missing.push(`${at}: docs/${doc} does not exist`);
      else if (section && !h.has(section)) missing.push(`${at}: docs/${doc} has no section "${section}"`);
    }
  }
  expect(cited, 'the code cites its docs').toBeGreaterThan(0);
  expect(missing).toEqual([]);
});
