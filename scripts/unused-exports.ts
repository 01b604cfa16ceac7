// Unused exports across files: neither Biome nor a per-file linter sees an export that no other file imports.
// One TypeScript program over the project (tsconfig.json's files, plus cli/, the package's .mjs entries and
// index.d.mts), then one symbol walk: every import/export specifier, namespace member (`ns.x`) and, in files with an
// import(...), every identifier is resolved through its alias chain (import → re-export → declaration) and each
// symbol on the way is marked as used by that file. An export of a file under lib/ suites/ reporters/ cli/ scripts/
// fixtures/ is unused when no other file marks it.
//
// Used by definition (entry points): files whose exports a tool or a caller outside the program loads by name —
// cli/api.ts (index.mjs, the package's API), vitest configs, *.test.ts and *.bench.ts, fixtures/*/main.ts, scripts
// that run as mains (a main guard on process.argv[1], or named in package.json, action.yml or .ci/), files named by a
// string literal in code (the reporters of reporters/list.ts, cli/progress-reporter.ts, Vitest's globalSetup), and
// the `checks`, `proofs` and `family` of each family file of suites/ (cli/catalogue.ts, scripts/families.ts and
// test/proofs.test.ts load them by listing the folder), and the `faults` of each file of the reference server's
// faults/ folder (faults.ts lists it). Exports used only by test/ or bench/ count as used.
//
// Prints `path:line name` per unused export and exits 1 when there is any. `--json` prints them as JSON instead.
// `--fix [folder…]` drops the `export` keyword of each finding (only in files under the folders given, when any);
// a declaration then used nowhere is left for Biome's noUnusedVariables to point at (delete it by hand).
// Usage: node --import tsx scripts/unused-exports.ts [--json] [--fix [folder…]]
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const EXAMINED = ['lib/', 'suites/', 'reporters/', 'cli/', 'scripts/', 'fixtures/'];
/** Files outside the program that name scripts to run (their mains' exports count as used). */
const RUNNERS = ['package.json', 'action.yml', '.ci/run', '.ci/run-deps.sh'];

interface UnusedExport {
  file: string;
  line: number;
  name: string;
}

const rel = (f: string): string => relative(ROOT, f).split(sep).join('/');

function createProgram(): ts.Program {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!parsed) throw new Error('tsconfig.json: cannot be read');
  const extra = [
    ...ts.sys.readDirectory(join(ROOT, 'cli'), ['.ts']),
    ...ts.sys.readDirectory(join(ROOT, 'bin'), ['.mjs']),
    ...ts.sys.readDirectory(join(ROOT, 'scripts'), ['.mjs']),
    join(ROOT, 'index.mjs'),
    join(ROOT, 'index.d.mts'),
  ].filter((f) => existsSync(f));
  const options: ts.CompilerOptions = { ...parsed.options, allowJs: true, checkJs: false, noEmit: true };
  // Packages' declarations are read as empty modules: only the project's own symbols matter here, and parsing the
  // SDKs' and @types/node's declarations would take most of the time. The default library (Promise, …) is kept.
  const host = ts.createCompilerHost(options);
  const libDir = dirname(host.getDefaultLibFileName(options));
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) =>
    fileName.includes('/node_modules/') && !fileName.startsWith(libDir)
      ? ts.createSourceFile(fileName, 'export {};', languageVersion)
      : getSourceFile(fileName, languageVersion, onError, shouldCreate);
  return ts.createProgram({ rootNames: [...new Set([...parsed.fileNames, ...extra])], options, host });
}

/** Exports of these files are used by definition. */
function isEntry(file: string, text: string, namedByRunners: string, namedInCode: Set<string>): boolean {
  if (file === 'cli/api.ts' || file.startsWith('bin/') || /^[^/]+\.(m?ts|mjs)$/.test(file)) return true;
  if (/\.(test|bench)\.ts$/.test(file) || /^fixtures\/[^/]+\/main\.ts$/.test(file)) return true;
  if (namedInCode.has(file) || namedByRunners.includes(file)) return true;
  return /process\.argv\[1\]/.test(text) && /import\.meta\.url/.test(text);
}

/** Project files named by a string literal other than an import specifier (`'reporters/console.ts'`, `'main.ts'`). */
function namedInCode(files: readonly ts.SourceFile[], projectFiles: readonly string[]): Set<string> {
  const out = new Set<string>();
  const visit = (node: ts.Node): void => {
    if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && /\.(m?ts|mjs)$/.test(node.text)) {
      const p = node.parent;
      const isSpecifier = (ts.isImportDeclaration(p) || ts.isExportDeclaration(p)) && p.moduleSpecifier === node;
      const isDynamicImport = ts.isCallExpression(p) && p.expression.kind === ts.SyntaxKind.ImportKeyword;
      if (!isSpecifier && !isDynamicImport) {
        const tail = node.text.replace(/^(\.\.?\/)+/, '');
        for (const f of projectFiles) if (f === tail || f.endsWith(`/${tail}`)) out.add(f);
      }
    }
    ts.forEachChild(node, visit);
  };
  for (const sf of files) visit(sf);
  return out;
}

function findUnusedExports(): UnusedExport[] {
  const program = createProgram();
  const checker = program.getTypeChecker();
  const isProject = (sf: ts.SourceFile): boolean =>
    sf.fileName.startsWith(ROOT) &&
    !sf.fileName.includes('/node_modules/') &&
    (!sf.isDeclarationFile || /\.d\.mts$/.test(sf.fileName));
  const files = program.getSourceFiles().filter(isProject);

  // Symbol → files (other than nothing) whose identifiers resolve to it, directly or through an alias chain.
  const usedBy = new Map<ts.Symbol, Set<string>>();
  const mark = (start: ts.Symbol, file: string): void => {
    let s: ts.Symbol | undefined = start;
    for (let hops = 0; s && hops < 16; hops++) {
      for (const t of [s, checker.getExportSymbolOfSymbol(s)]) {
        let set = usedBy.get(t);
        if (!set) usedBy.set(t, (set = new Set()));
        set.add(file);
      }
      if (!(s.flags & ts.SymbolFlags.Alias)) break;
      const next: ts.Symbol | undefined = checker.getImmediateAliasedSymbol(s);
      if (!next || next === s) break;
      s = next;
    }
  };
  // Another file's export is reached only through an import or export specifier, a namespace import (`ns.x`), a
  // dynamic import or an import type: only those nodes are resolved (resolving every identifier costs 3x the time),
  // except in files with an import(...), which are walked whole.
  for (const sf of files) {
    const file = sf.fileName;
    const whole = sf.text.includes('import(');
    const namespaces = new Set<string>();
    const markAt = (node: ts.Node): void => {
      const s = checker.getSymbolAtLocation(node);
      if (s) mark(s, file);
    };
    const visit = (node: ts.Node): void => {
      if (ts.isIdentifier(node)) {
        if (whole) markAt(node);
        else if (
          ts.isImportSpecifier(node.parent) ||
          ts.isExportSpecifier(node.parent) ||
          ts.isImportClause(node.parent)
        ) {
          if (node.parent.name === node) markAt(node);
        } else if (ts.isNamespaceImport(node.parent)) namespaces.add(node.text);
        else if (
          (ts.isPropertyAccessExpression(node.parent) &&
            node.parent.name === node &&
            ts.isIdentifier(node.parent.expression) &&
            namespaces.has(node.parent.expression.text)) ||
          (ts.isQualifiedName(node.parent) &&
            node.parent.right === node &&
            ts.isIdentifier(node.parent.left) &&
            namespaces.has(node.parent.left.text))
        )
          markAt(node);
        else if (ts.isExportAssignment(node.parent)) markAt(node);
      } else if (whole && ts.isBindingElement(node) && ts.isObjectBindingPattern(node.parent)) {
        // const { main: report } = await import('../scripts/report.ts'): the property, not the local.
        const key = node.propertyName ?? node.name;
        if (ts.isIdentifier(key)) {
          const p = checker.getTypeAtLocation(node.parent).getProperty(key.text);
          if (p) mark(p, file);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  const isUsedElsewhere = (s: ts.Symbol, file: string): boolean => [...(usedBy.get(s) ?? [])].some((f) => f !== file);

  const relFiles = files.map((sf) => rel(sf.fileName));
  const inCode = namedInCode(files, relFiles);
  const runners = RUNNERS.map((f) => (existsSync(join(ROOT, f)) ? readFileSync(join(ROOT, f), 'utf8') : '')).join('\n');

  const out: UnusedExport[] = [];
  for (const sf of files) {
    const file = rel(sf.fileName);
    if (!EXAMINED.some((d) => file.startsWith(d)) || sf.isDeclarationFile || !/\.ts$/.test(file)) continue;
    if (isEntry(file, sf.text, runners, inCode)) continue;
    const moduleSymbol = checker.getSymbolAtLocation(sf);
    if (!moduleSymbol) continue;
    for (const exp of checker.getExportsOfModule(moduleSymbol)) {
      const decls = (exp.declarations ?? []).filter((d) => d.getSourceFile() === sf);
      if (decls.length === 0) continue; // export * from another file: judged there
      // Family files: cli/catalogue.ts, scripts/families.ts and test/proofs.test.ts load these by listing suites/.
      if (/^suites\/[^/]+\.ts$/.test(file) && (exp.name === 'checks' || exp.name === 'proofs' || exp.name === 'family'))
        continue;
      // Fault files: the reference server's faults.ts loads every file of its faults/ folder by listing it.
      if (/^fixtures\/reference-server\/faults\/[^/]+\.ts$/.test(file) && exp.name === 'faults') continue;
      if (isUsedElsewhere(exp, sf.fileName)) continue;
      if (exp.flags & ts.SymbolFlags.Alias) {
        // export { a } / export default a: a use of the local `a` from another file came through this export.
        const target = checker.getAliasedSymbol(exp);
        const local = (target.declarations ?? []).some((d) => d.getSourceFile() === sf);
        if (local && isUsedElsewhere(target, sf.fileName)) continue;
      }
      const decl = decls[0]!;
      const named = ts.getNameOfDeclaration(decl);
      const at = (named ?? decl).getStart(sf);
      const line = sf.getLineAndCharacterOfPosition(at).line + 1;
      const name = exp.name === 'default' && named && ts.isIdentifier(named) ? `default (${named.text})` : exp.name;
      out.push({ file, line, name });
    }
  }
  return out.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

/** Drops `export ` at the start of each finding's line (plain `export <declaration>` only); returns how many. */
function dropExportKeywords(found: readonly UnusedExport[], folders: readonly string[]): number {
  let n = 0;
  const byFile = new Map<string, UnusedExport[]>();
  for (const u of found) {
    if (folders.length && !folders.some((d) => u.file.startsWith(d.replace(/\/?$/, '/')))) continue;
    byFile.set(u.file, [...(byFile.get(u.file) ?? []), u]);
  }
  for (const [file, list] of byFile) {
    const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
    for (const u of list) {
      const before = lines[u.line - 1]!;
      lines[u.line - 1] = before.replace(/^(\s*)export (?!default\b|\{|\*)/, '$1');
      if (lines[u.line - 1] !== before) n++;
      else console.error(`${u.file}:${u.line} ${u.name}: not a plain export declaration, left as is`);
    }
    writeFileSync(join(ROOT, file), lines.join('\n'));
  }
  return n;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  const found = findUnusedExports();
  if (args.includes('--fix')) {
    const folders = args.filter((a) => !a.startsWith('--'));
    console.error(`dropped ${dropExportKeywords(found, folders)} export keyword(s); now run npm run lint`);
  } else if (args.includes('--json')) console.log(JSON.stringify(found, null, 2));
  else {
    for (const u of found) console.log(`${u.file}:${u.line} ${u.name}`);
    console.error(found.length ? `${found.length} unused export(s)` : 'no unused exports');
    process.exitCode = found.length ? 1 : 0;
  }
}
