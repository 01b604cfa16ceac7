// A family is declared once, in its suite file (`export const family: FamilySpec`); its Vitest entry, its place in
// FAMILY_ORDER, the per-family lists and its docs row are written from the declarations by `npm run families`
// (scripts/families.ts). This test fails when any of them drifts from what the script would write. So is which checks
// provide each headline figure: reporters read figures from the checks that provide them, and name no check id.

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { expect, test } from 'vitest';
import { CHECKS_OF, FAMILY_ORDER, FIGURE_SOURCES, NOT_HEADLINE, TIMING_FAMILIES } from '../lib/check/family-order.ts';
import { ROOT } from '../lib/config/profile.ts';
import { HEADLINE_FIGURES } from '../lib/model/figures.ts';
import { columnsOf, headlineFigure, normaliseResults } from '../reporters/report-data.ts';
import { matrixRows } from '../reporters/seed-matrix.ts';
import {
  DOCS_BEGIN,
  DOCS_END,
  declarations,
  drift,
  figureSources,
  GENERATED,
  isSuiteFile,
  plan,
  renderFamilyOrder,
  type SuiteModule,
} from '../scripts/families.ts';
import { allChecks, families } from '../suites/catalogue.ts';
import { SETUP_CHECK } from '../suites/support/setup-check.ts';

const FIX = 'run npm run families';

test('every suite file declares its family, named after the file, with a place of its own', () => {
  const files = readdirSync(join(ROOT, 'suites'))
    .filter(isSuiteFile)
    .map((f) => f.replace(/\.ts$/, ''))
    .sort();
  expect(
    Object.keys(families).sort(),
    'suites/catalogue.ts (Vite) and scripts/families.ts (readdir) see the same suite files',
  ).toEqual(files);
  expect(declarations(families).problems, `family declarations (fix them, then ${FIX})`).toEqual([]);
});

test('the generated files are what npm run families writes: stubs, lib/check/family-order.ts, the docs table', () => {
  const p = plan(families);
  expect(p.problems, FIX).toEqual([]);
  expect(drift(p), `generated files differ from the declarations: ${FIX}`).toEqual([]);
});

test('FAMILY_ORDER and the per-family lists agree with the declarations; setup first, api-last then health last', async () => {
  const { specs } = declarations(families);
  expect(FAMILY_ORDER, FIX).toEqual(specs.map((s) => s.name));
  expect(FAMILY_ORDER[0]).toBe('setup');
  // api-last is the last to send requests; health (health.sentinel) reports what the sentinel saw over all of them.
  expect(FAMILY_ORDER.at(-2)).toBe('api-last');
  expect(FAMILY_ORDER.at(-1)).toBe('health');
  expect(TIMING_FAMILIES, FIX).toEqual(specs.filter((s) => s.timing).map((s) => s.name));
  expect(NOT_HEADLINE, FIX).toEqual(specs.filter((s) => s.headline === false).map((s) => s.name));
  expect(CHECKS_OF, FIX).toEqual({ 'api-last': 'api' });
  // vitest.config.ts re-exports the same list (the sequencer and the projects' familyOrder use it).
  expect((await import('../vitest.config.ts')).FAMILY_ORDER).toBe(FAMILY_ORDER);
});

test('every check registered by a generated stub belongs to the family the stub names', () => {
  for (const [file, mod] of Object.entries(families)) {
    const family = mod.family.checksOf ?? mod.family.name;
    for (const c of mod.checks)
      expect(c.id.startsWith(`${family}.`), `${c.id} in suites/${file}.ts (family ${family})`).toBe(true);
  }
});

test('the lint catches a missing declaration, a clash of order, a hand-written entry and a left-over stub', () => {
  const mod = (family: SuiteModule['family']): SuiteModule => ({ family, checks: [{ id: 'x.a', level: 'MUST' }] });
  const bad = declarations({
    a: mod(undefined),
    b: mod({ name: 'b', order: 10, what: 'b' }),
    c: mod({ name: 'c', order: 10, what: 'c' }),
    d: mod({ name: 'dd', order: 0 }),
  });
  expect(bad.problems.join('\n')).toMatch(/suites\/a\.ts declares no family/);
  expect(bad.problems.join('\n')).toMatch(/same order 10/);
  expect(bad.problems.join('\n')).toMatch(/name must be the file's, "d"/);
  expect(bad.problems.join('\n')).toMatch(/`what` .* is missing/);
  expect(bad.problems.join('\n')).toMatch(/setup runs first/);

  const root = mkdtempSync(join(tmpdir(), 'families-'));
  try {
    mkdirSync(join(root, 'suites'));
    mkdirSync(join(root, 'docs'));
    writeFileSync(join(root, 'docs/families.md'), `# x\n\n${DOCS_BEGIN}\nold\n${DOCS_END}\n`);
    const b = { name: 'b', order: 10, what: 'b things' };
    writeFileSync(join(root, 'suites/b.test.ts'), plan({ b: mod(b) }, root).write.get('suites/b.test.ts')!);
    writeFileSync(join(root, 'suites/gone.test.ts'), `// ${GENERATED}\n`);
    writeFileSync(join(root, 'suites/hand.test.ts'), 'registerChecks("hand", checks);\n');
    const p = plan({ b: mod(b) }, root);
    expect(p.problems.join('\n')).toMatch(/suites\/hand\.test\.ts is neither generated nor declared/);
    expect(p.remove).toEqual(['suites/gone.test.ts']);
    expect(p.write.get('docs/families.md')).toContain('| `b` | b things | 1 (1 MUST) |');
    const d = drift(p, root);
    expect(d).toContain('docs/families.md differs');
    expect(d).toContain('lib/check/family-order.ts is missing');
    expect(d).not.toContain('suites/b.test.ts differs');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('the reference server finds every faults/<family>.ts by itself (no list to edit), also under Vite', async () => {
  const { FAMILIES, FAULTS } = await import('../fixtures/reference-server/faults.ts');
  const files = readdirSync(join(ROOT, 'fixtures/reference-server/faults'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => f.replace(/\.ts$/, ''))
    .sort();
  expect(Object.keys(FAMILIES)).toEqual(files);
  expect(FAULTS.size).toBe(Object.values(FAMILIES).reduce((n, f) => n + Object.keys(f).length, 0));
});

test('every headline figure has a check that provides it, and FIGURE_SOURCES lists them from the declarations', () => {
  const { specs } = declarations(families);
  expect(FIGURE_SOURCES, FIX).toEqual(figureSources(specs, families));
  const orphans = Object.keys(HEADLINE_FIGURES).filter((f) => !FIGURE_SOURCES[f]?.length);
  expect(orphans, 'figures no check provides (the reports show n/a for them)').toEqual([]);
});

test('a check that feeds a headline figure needs only its own declaration: npm run families and the reports find it', () => {
  // A new metrics check, declared in its family's module and nowhere else, takes over the headline wall_tps_p50.
  const added = { id: 'metrics.added-figure', level: 'INFO', provides: ['wall_tps_p50'] } as const;
  const metrics = families.metrics!;
  const modules: Record<string, SuiteModule> = {
    ...families,
    metrics: { family: metrics.family, checks: [added, ...metrics.checks.map((c) => ({ ...c, provides: [] }))] },
  };
  const { specs } = declarations(modules);
  expect(figureSources(specs, modules).wall_tps_p50).toEqual(['metrics.added-figure']);
  expect(renderFamilyOrder(specs, modules)).toContain("wall_tps_p50: ['metrics.added-figure']");
  // Its results record carries what it provides (suites/support/register.ts → results.json): the reports read it, and
  // no longer the check that provided the figure before (whose record now says it provides none).
  const check = (id: string, provides: string[], wallTps: number) => ({
    id,
    family: 'metrics',
    level: 'INFO',
    outcome: 'pass',
    message: '',
    provides,
    metrics: { workload: { name: '1 stream', wall_tps_p50: wallTps, ttft_p50_ms: 50 } },
  });
  const file = normaliseResults({
    header: { project: 'p', machine: { label: 'm' } },
    checks: [check('metrics.gen-tps-plausible', [], 7), check('metrics.added-figure', ['wall_tps_p50'], 42)],
  });
  const headline = headlineFigure(columnsOf([file])[0]!, 'wallTps');
  expect(headline).toMatchObject({ value: 42, from: 'metrics.added-figure' });
  expect(matrixRows([file])[0]!.wallTps).toMatchObject({ text: '42', from: 'metrics.added-figure' });
  // A file written before records carried `provides`: the catalogue's declarations say who provides what.
  const old = normaliseResults({
    header: { project: 'p', machine: { label: 'm' } },
    checks: [check('metrics.added-figure', [], 42), check('metrics.gen-tps-plausible', [], 7)].map(
      ({ provides: _, ...c }) => c,
    ),
  });
  expect(headlineFigure(columnsOf([old])[0]!, 'wallTps')).toMatchObject({
    value: 7,
    from: 'metrics.gen-tps-plausible',
  });
});

test('reporters name no check id: a figure is found by what provides it', () => {
  const ids = [...allChecks.map((c) => c.id), SETUP_CHECK.id];
  const families = new Set(FAMILY_ORDER);
  const found: string[] = [];
  const dir = join(ROOT, 'reporters');
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
    const source = ts.createSourceFile(f, readFileSync(join(dir, f), 'utf8'), ts.ScriptTarget.Latest);
    const visit = (n: ts.Node): void => {
      if (ts.isStringLiteralLike(n) || ts.isTemplateLiteralToken(n)) {
        // A known id anywhere in a string or template, and any string that is all `family.slug`, known or not.
        for (const id of ids)
          if (new RegExp(`(?<![\\w.-])${id.replace(/\./g, '\\.')}(?![\\w-])`).test(n.text))
            found.push(`reporters/${f}: ${id} in ${JSON.stringify(n.text.slice(0, 80))}`);
        const m = /^([a-z0-9-]+)\.[a-z0-9-]+$/.exec(n.text);
        // (capacity.json and capacity.csv are the capacity mode's files, not ids)
        if (m && families.has(m[1]!) && !/\.(json|csv)$/.test(n.text) && !ids.includes(n.text))
          found.push(`reporters/${f}: ${JSON.stringify(n.text)}`);
      }
      ts.forEachChild(n, visit);
    };
    visit(source);
  }
  expect(
    found,
    'check ids in reporters/: declare `provides` on the check and read it with reporters/figures.ts',
  ).toEqual([]);
});
