// Vitest reporter: reports/<project>/badges/<name>.json (shields.io endpoint format) and <name>.svg (badge-maker),
// with the same stable names for every profile: conformance ("27/30"), streaming ("real"), batching ("2.17x"),
// long-context ("400 ok"), each but conformance only when its family ran. A README points shields.io at the JSON or
// embeds the SVG.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { makeBadge } from 'badge-maker';
import { redact } from '../lib/config/secrets.ts';
import { BADGE_NAMES, type BadgeSpec, badgeSpecs, type Column, shieldsEndpoint, toColumns } from './render.ts';
import { dirOfResults, writeJsonAtomic, writeTextAtomic } from './results.ts';
import type { ResultsFile } from './results-types.ts';
import { RunEndReporter } from './run-end.ts';

/**
 * Write every badge of a column into <dir>/badges; returns the files written. The badge of a family that did not run
 * is not written, and its file from an earlier run in the same folder is removed: a README must not show it as current.
 */
export function writeBadges(col: Column, dir: string): string[] {
  const written: string[] = [];
  const specs = badgeSpecs(col);
  for (const name of BADGE_NAMES)
    if (!specs.some((b) => b.name === name))
      for (const ext of ['json', 'svg']) rmSync(join(dir, 'badges', `${name}.${ext}`), { force: true });
  for (const spec of specs) {
    const b: BadgeSpec = { ...spec, label: redact(spec.label), message: redact(spec.message) };
    const json = join(dir, 'badges', `${b.name}.json`);
    const svg = join(dir, 'badges', `${b.name}.svg`);
    writeJsonAtomic(json, shieldsEndpoint(b));
    writeTextAtomic(svg, makeBadge({ label: b.label, message: b.message, color: b.color }));
    written.push(json, svg);
  }
  return written;
}

export default class BadgesReporter extends RunEndReporter {
  protected readonly name = 'badges';
  protected render(file: ResultsFile, root: string): void {
    for (const col of toColumns([file])) writeBadges(col, dirOfResults(root, file));
  }
}
