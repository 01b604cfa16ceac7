// Real results files for reporter self-tests: the captured runs under fixtures/results/ (written by
// reporters/results.ts against the reference server, with and without faults), plus whatever a local run left in
// reports/<project>/results*.json (and shard directories). Read as plain JSON: the reporters must cope with them as
// they are.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../lib/config/profile.ts';

export const FIXTURE_DIR = join(ROOT, 'fixtures', 'results');

function jsonFiles(dir: string, pattern: RegExp, depth: number): string[] {
  if (!existsSync(dir) || depth < 0) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...jsonFiles(p, pattern, depth - 1));
    else if (pattern.test(name)) out.push(p);
  }
  return out;
}

export interface RealResults {
  path: string;
  data: unknown;
}

/** Captured fixtures first, then local reports (files that do not parse are left out: a run may be writing them). */
export function realResultsFiles(opts: { includeReports?: boolean } = {}): RealResults[] {
  const paths = [
    ...jsonFiles(FIXTURE_DIR, /\.json$/, 0),
    ...(opts.includeReports === false
      ? []
      : jsonFiles(join(ROOT, 'reports'), /^results.*\.json$/, 2).filter(
          (p) => !p.startsWith(join(ROOT, 'reports', 'results')),
        )),
  ];
  const out: RealResults[] = [];
  for (const path of paths) {
    try {
      out.push({ path, data: JSON.parse(readFileSync(path, 'utf8')) });
    } catch {
      // half-written or foreign: not a results file we can test against
    }
  }
  return out;
}
