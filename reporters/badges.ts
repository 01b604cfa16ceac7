// Vitest reporter: reports/<project>/badges/<name>.json (shields.io endpoint format) and <name>.svg (badge-maker),
// with the same stable names for every profile: conformance ("27/30"), streaming ("real"), batching ("2.17x"),
// long-context ("400 ok"). A README points shields.io at the JSON or embeds the SVG.
import { join } from 'node:path';
import { makeBadge } from 'badge-maker';
import { redact } from '../lib/config/secrets.ts';
import { type BadgeSpec, badgeSpecs, type Column, shieldsEndpoint, toColumns } from './render.ts';
import { dirOfResults, writeJsonAtomic, writeTextAtomic } from './results.ts';
import type { ResultsFile } from './results-types.ts';
import { RunEndReporter } from './run-end.ts';

/** Write every badge of a column into <dir>/badges; returns the files written. */
export function writeBadges(col: Column, dir: string): string[] {
  const written: string[] = [];
  for (const spec of badgeSpecs(col)) {
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
