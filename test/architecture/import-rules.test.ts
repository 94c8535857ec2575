import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import ts from 'typescript';

/**
 * The layers of src/ hold, read from the sources themselves:
 *
 * - no runtime import cycle between the top-level folders of src/ (the files directly in src/
 *   are one more node, the app layer that assembles the capabilities);
 * - the foundation (config/, db/, http/, shared/) imports only the foundation, so every
 *   capability may use it and it never depends on one;
 * - only cli/ imports the app layer, which assembles every capability: a capability that
 *   imported it would depend on all the others;
 * - a repository (a file whose name holds `repository`, and every file in db/) imports nothing
 *   from http/: what it reads and answers, cursors and pages included (db/cursor-pages.ts), is
 *   below HTTP, so it serves the CLI and the background loops as it serves a route;
 * - inside a capability folder imports go routes → service → repository: a repository imports
 *   no service or routes file of its folder, a service no routes file. A file's part is read
 *   from its name, as the folders name them: `routes.ts` and `*-routes.ts` are routes, and so
 *   are `plugin.ts` and `*-plugin.ts`, which register them; `service.ts` and `*-service.ts` are
 *   services; a name holding `repository` is a repository. Other files (models, schemas,
 *   helpers) have no part and are free of this rule;
 * - a migration imports nothing outside src/db/migrations/ but npm packages, not even types:
 *   migrations are frozen (docs/adr/0007-migrations-are-frozen.md), so a later edit of live code
 *   must not rewrite what an old migration does.
 *
 * An import counts at run time unless it is written `import type`, `export type` or names only
 * `type` specifiers: the lint rule consistent-type-imports makes every import used only as a type
 * say so, and nothing else is elided, so the syntax alone tells what Node loads.
 *
 * Type imports: every rule of direction counts them as well (the foundation, the app layer,
 * repositories and http/, routes → service → repository). A type ties the importer to the
 * module that defines it as surely as a value does: a repository whose signature names a
 * Fastify type, or a db/ file that names a capability's row type, cannot be read, changed or
 * reused without that module. Only the cycle rule counts run time alone: capabilities may share
 * types (acl/ names customers/' Customer), which impose no order of loading between them.
 */
const SRC_DIR = fileURLToPath(new URL('../../src/', import.meta.url));
const MIGRATIONS_DIR = path.join(SRC_DIR, 'db', 'migrations');
const PACKAGE_NAME = (JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { name: string }).name;

/** The folders every capability builds on; they must not reach back into a capability. */
const FOUNDATION = new Set(['config', 'db', 'http', 'shared']);
/** The node standing for the files directly in src/ (server.ts, app.ts). */
const APP_LAYER = 'src/*.ts';
/** The folder of HTTP: routes and services may import it, repositories may not. */
const HTTP_LAYER = 'http';

/**
 * Runtime cycles between folders that are known and accepted, each with why; an entry names the
 * folders of the cycle in sorted order, joined by ' ↔ '.
 */
const ALLOWED_CYCLES = new Map<string, string>([]);

interface ModuleImport {
  /** The module named; null for a dynamic import whose specifier is not a literal. */
  specifier: string | null;
  /** False for an import or re-export that only names types, which Node never loads. */
  runtime: boolean;
}

/** Every module a source text names: static and type-only imports, re-exports, import(), import types, require(). */
function moduleImports(fileName: string, text: string): ModuleImport[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: ModuleImport[] = [];
  const literal = (node: ts.Node | undefined) => (node !== undefined && ts.isStringLiteralLike(node) ? node.text : null);
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      found.push({ specifier: literal(node.moduleSpecifier), runtime: !importNamesOnlyTypes(node) });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier) {
      const onlyTypes = node.isTypeOnly || (node.exportClause !== undefined && ts.isNamedExports(node.exportClause) && node.exportClause.elements.length > 0 && node.exportClause.elements.every((element) => element.isTypeOnly));
      found.push({ specifier: literal(node.moduleSpecifier), runtime: !onlyTypes });
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      found.push({ specifier: literal(node.moduleReference.expression), runtime: !node.isTypeOnly });
    } else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
      found.push({ specifier: literal(node.arguments[0]), runtime: true });
    } else if (ts.isImportTypeNode(node)) {
      found.push({ specifier: ts.isLiteralTypeNode(node.argument) ? literal(node.argument.literal) : null, runtime: false });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `import type …` or `import { type A, type B } …`; a bare `import './x'` loads the module. */
function importNamesOnlyTypes(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (clause === undefined) return false;
  if (clause.isTypeOnly) return true;
  if (clause.name !== undefined) return false;
  const bindings = clause.namedBindings;
  return bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((element) => element.isTypeOnly);
}

/** The file a relative, absolute or file: specifier names; undefined for an npm package or a builtin. */
function resolveLocal(file: string, specifier: string): string | undefined {
  if (specifier.startsWith('file:')) return fileURLToPath(specifier);
  if (path.isAbsolute(specifier)) return specifier;
  if (specifier.startsWith('.')) return path.resolve(path.dirname(file), specifier);
  return undefined;
}

function isInside(dir: string, target: string): boolean {
  const relative = path.relative(dir, target);
  return relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative);
}

/** Subpath imports (#…) and the package's own name lead back into the project's live code. */
function selfReference(specifier: string): string | undefined {
  if (specifier.startsWith('#')) return `${specifier} is a subpath import of this package`;
  if (specifier === PACKAGE_NAME || specifier.startsWith(`${PACKAGE_NAME}/`)) return `${specifier} imports this package itself`;
  return undefined;
}

/** The layer node of a file under src/: its top-level folder, or the app layer for a file directly in src/. */
function layerOf(file: string): string {
  const [first, ...rest] = path.relative(SRC_DIR, file).split(path.sep);
  return rest.length === 0 ? APP_LAYER : first!;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.[cm]?[jt]sx?$/.test(entry.name) && !entry.name.endsWith('.d.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}

const display = (file: string) => path.relative(SRC_DIR, file).split(path.sep).join('/');

// --- migrations ------------------------------------------------------------------------------

/** Why a migration may not import the specifier, or undefined when it may. */
function migrationViolation(file: string, specifier: string | null): string | undefined {
  if (specifier === null) return 'a dynamic import whose module is not a string literal';
  const target = resolveLocal(file, specifier);
  if (target !== undefined) return isInside(MIGRATIONS_DIR, target) ? undefined : `${specifier} resolves outside src/db/migrations/`;
  return selfReference(specifier);
}

function migrationViolations(file: string, text: string): string[] {
  return moduleImports(file, text).flatMap(({ specifier }) => {
    const reason = migrationViolation(file, specifier);
    return reason === undefined ? [] : [`${display(file)}: ${reason}`];
  });
}

// --- the runtime graph between layers ----------------------------------------------------------

interface Edge {
  from: string;
  to: string;
  /** The importing file and the file it loads, relative to src/. */
  file: string;
  target: string;
}

/** One import of a file under src/ by another, both relative to src/. */
interface FileImport {
  file: string;
  target: string;
  /** False for an import that only names types. */
  runtime: boolean;
}

/** Every import of one file under src/ by another, type-only ones too, plus what could not be read. */
function fileImports(files: { file: string; text: string }[]): { imports: FileImport[]; unreadable: string[] } {
  const imports: FileImport[] = [];
  const unreadable: string[] = [];
  for (const { file, text } of files) {
    for (const { specifier, runtime } of moduleImports(file, text)) {
      if (specifier === null) {
        unreadable.push(`${display(file)}: a dynamic import whose module is not a string literal`);
        continue;
      }
      const self = selfReference(specifier);
      if (self !== undefined) unreadable.push(`${display(file)}: ${self}; import src/ files by relative path`);
      const target = resolveLocal(file, specifier);
      if (target !== undefined && isInside(SRC_DIR, target)) imports.push({ file: display(file), target: display(target), runtime });
    }
  }
  return { imports, unreadable };
}

/** The imports between different layers, one edge per importing file and file imported. */
function layerEdges(imports: FileImport[]): Edge[] {
  const edges: Edge[] = [];
  for (const { file, target } of imports) {
    const edge = { from: layerOf(path.join(SRC_DIR, file)), to: layerOf(path.join(SRC_DIR, target)), file, target };
    if (edge.from !== edge.to && !edges.some((seen) => seen.file === edge.file && seen.target === edge.target)) edges.push(edge);
  }
  return edges;
}

/** Every runtime import from one file under src/ of another, plus what could not be read. */
function runtimeEdges(files: { file: string; text: string }[]): { edges: Edge[]; unreadable: string[] } {
  const { imports, unreadable } = fileImports(files);
  return { edges: layerEdges(imports.filter(({ runtime }) => runtime)), unreadable };
}

/** Strongly connected sets of layers with more than one member (Tarjan), each sorted. */
function cycles(edges: Edge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (!next.has(from)) next.set(from, new Set());
    if (!next.has(to)) next.set(to, new Set());
    next.get(from)!.add(to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node)!) {
      if (!index.has(to)) {
        connect(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const members: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        members.push(member);
      } while (member !== node);
      if (members.length > 1) found.push(members.sort());
    }
  };
  for (const node of [...next.keys()].sort()) if (!index.has(node)) connect(node);
  return found.sort((a, b) => a.join().localeCompare(b.join()));
}

/** The shortest way from one layer back to itself inside a set, as layers: [a, b, …, a]. */
function shortestLoop(start: string, members: Set<string>, edges: Edge[]): string[] {
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const { from, to } of edges) {
      if (from !== node || !members.has(to)) continue;
      if (to === start) {
        const between: string[] = [];
        for (let at = node; at !== start; at = previous.get(at)!) between.unshift(at);
        return [start, ...between, start];
      }
      if (!previous.has(to)) {
        previous.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start];
}

/** A cycle told as its shortest loop, then every import between its members that closes it. */
function describeCycle(members: string[], edges: Edge[]): string {
  const inside = new Set(members);
  const within = edges.filter(({ from, to }) => inside.has(from) && inside.has(to));
  const lines = [`cycle ${members.join(' ↔ ')}, e.g. ${shortestLoop(members[0]!, inside, within).join(' → ')}:`];
  for (const { file, target } of within.sort((a, b) => `${a.file} ${a.target}`.localeCompare(`${b.file} ${b.target}`))) {
    lines.push(`  ${file} → ${target}`);
  }
  return lines.join('\n');
}

function foundationViolations(edges: Edge[]): string[] {
  return edges
    .filter(({ from, to }) => FOUNDATION.has(from) && !FOUNDATION.has(to))
    .map(({ file, target }) => `${file} → ${target}`)
    .sort();
}

function appLayerViolations(edges: Edge[]): string[] {
  return edges
    .filter(({ from, to }) => to === APP_LAYER && from !== 'cli')
    .map(({ file, target }) => `${file} → ${target}`)
    .sort();
}

// --- repositories and the parts of a capability folder -----------------------------------------

const describeImport = ({ file, target, runtime }: FileImport) => `${file} → ${target}${runtime ? '' : ' (import type)'}`;

/** A file under src/ (relative to it) that reads and writes the database. */
const isRepository = (file: string) => file.startsWith('db/') || path.posix.basename(file).includes('repository');

/** Imports of http/ by a repository, as `file → target`. */
function repositoryHttpViolations(imports: FileImport[]): string[] {
  return imports
    .filter(({ file, target }) => isRepository(file) && layerOf(path.join(SRC_DIR, target)) === HTTP_LAYER)
    .map(describeImport)
    .sort();
}

/** A file's part in its folder, read from its name; undefined for a file with none. */
type Part = 'routes' | 'service' | 'repository';
const PART_RANK: Record<Part, number> = { routes: 2, service: 1, repository: 0 };
function partOf(file: string): Part | undefined {
  const name = path.posix.basename(file);
  if (/^(?:.+-)?(?:routes|plugin)\.[cm]?[jt]sx?$/.test(name)) return 'routes';
  if (/^(?:.+-)?service\.[cm]?[jt]sx?$/.test(name)) return 'service';
  if (name.includes('repository')) return 'repository';
  return undefined;
}

/** Imports inside a capability folder that go up routes → service → repository, each with the parts it joins. */
function partViolations(imports: FileImport[]): string[] {
  return imports
    .flatMap((found) => {
      const layer = layerOf(path.join(SRC_DIR, found.file));
      if (layer === APP_LAYER || FOUNDATION.has(layer) || layer !== layerOf(path.join(SRC_DIR, found.target))) return [];
      const from = partOf(found.file);
      const to = partOf(found.target);
      return from !== undefined && to !== undefined && PART_RANK[from] < PART_RANK[to] ? [`${describeImport(found)}: a ${from} imports a ${to} file`] : [];
    })
    .sort();
}

function readSources(dir: string) {
  return sourceFiles(dir).map((file) => ({ file, text: readFileSync(file, 'utf8') }));
}

let srcImports: FileImport[] | undefined;
/** Every import of a file under src/ by another, type-only ones too, read once for the rules below. */
function importsOfSrc(): FileImport[] {
  if (srcImports === undefined) {
    const { imports, unreadable } = fileImports(readSources(SRC_DIR));
    assert.deepEqual(unreadable, [], 'imports the check cannot follow');
    srcImports = imports;
  }
  return srcImports;
}

/** The runtime imports between the folders of src/. */
const edgesOfSrc = (): Edge[] => layerEdges(importsOfSrc().filter(({ runtime }) => runtime));
/** The imports between the folders of src/, type-only ones too. */
const edgesOfSrcWithTypes = (): Edge[] => layerEdges(importsOfSrc());

// --- the rules ---------------------------------------------------------------------------------

test('no runtime import cycle between the top-level folders of src/', () => {
  const edges = edgesOfSrc();
  const found = cycles(edges);
  const unexpected = found.filter((members) => !ALLOWED_CYCLES.has(members.join(' ↔ ')));
  assert.ok(unexpected.length === 0, `runtime import cycles between folders of src/:\n${unexpected.map((members) => describeCycle(members, edges)).join('\n')}`);
  const stale = [...ALLOWED_CYCLES.keys()].filter((key) => !found.some((members) => members.join(' ↔ ') === key));
  assert.deepEqual(stale, [], 'allowed cycles that no longer exist: drop them from ALLOWED_CYCLES');
});

test('config/, db/, http/ and shared/ import no capability, not even its types', () => {
  const found = foundationViolations(edgesOfSrcWithTypes());
  assert.ok(found.length === 0, `foundation imports of a capability:\n${found.map((line) => `  ${line}`).join('\n')}`);
});

test('only cli/ imports the files directly in src/, types included', () => {
  const found = appLayerViolations(edgesOfSrcWithTypes());
  assert.ok(found.length === 0, `imports of the app layer from below it:\n${found.map((line) => `  ${line}`).join('\n')}`);
});

test('repositories (*repository* files and db/) import nothing from http/, types included', () => {
  const found = repositoryHttpViolations(importsOfSrc());
  assert.ok(found.length === 0, `repository imports of http/ (take cursors and pages from db/cursor-pages.ts; statuses are the service's):\n${found.map((line) => `  ${line}`).join('\n')}`);
});

test('inside a capability folder imports go routes → service → repository, types included', () => {
  const found = partViolations(importsOfSrc());
  assert.ok(found.length === 0, `imports against routes → service → repository:\n${found.map((line) => `  ${line}`).join('\n')}`);
  const parts = importsOfSrc().map(({ file }) => partOf(file));
  for (const part of Object.keys(PART_RANK)) assert.ok(parts.includes(part as Part), `no ${part} file found: the rule reads names that src/ no longer uses`);
});

test('no file under src/db/migrations/ imports anything outside that folder but npm packages', () => {
  const files = sourceFiles(MIGRATIONS_DIR);
  assert.ok(files.some((file) => path.basename(file).startsWith('0001_')), `no migrations found in ${MIGRATIONS_DIR}`);
  assert.deepEqual(
    files.flatMap((file) => migrationViolations(file, readFileSync(file, 'utf8'))),
    [],
  );
});

// --- the checks themselves -------------------------------------------------------------------

test('the migration check sees every form of import', () => {
  const file = path.join(MIGRATIONS_DIR, '0099_example.ts');
  const outside = [
    `import { sql } from '../page-buckets.ts';`,
    `import type { AnyDb } from '../migrate.ts';`,
    `import { type DialectStrategy } from '../dialects/strategy.ts';`,
    `import * as lists from '../paged-lists.ts';`,
    `import '../../okm/fleet-summary-counts.ts';`,
    `export { GROUP_COLUMNS } from '../../okm/fleet-summary-counts.ts';`,
    `export type { BucketedList } from '../page-buckets.ts';`,
    `export * from '../paged-lists.ts';`,
    `export async function up() { await import('../paged-lists.ts'); }`,
    `const name = '../paged-lists.ts'; export const load = () => import(name);`,
    `type List = import('../page-buckets.ts').BucketedList;`,
    `import lists = require('../paged-lists.ts');`,
    `import { x } from '/work/src/db/page-buckets.ts';`,
    `import { x } from './frozen/../../page-buckets.ts';`,
    `import { x } from '#db/page-buckets';`,
    `import { x } from '${PACKAGE_NAME}/src/db/page-buckets.ts';`,
  ];
  for (const text of outside) assert.equal(migrationViolations(file, text).length, 1, text);
  const inside = [
    `import { sql, type Kysely } from 'kysely';`,
    `import type { AnyDb, MigrationContext } from './migration-context.ts';`,
    `import { pageBucketTriggers } from './frozen/page-buckets.ts';`,
    `export * from './frozen/paged-lists.ts';`,
    `const done = import('./frozen/page-buckets.ts');`,
    // Not imports: text that only looks like one.
    `// import { x } from '../page-buckets.ts';\nconst s = "import('../page-buckets.ts')";`,
  ];
  for (const text of inside) assert.deepEqual(migrationViolations(file, text), [], text);
  assert.equal(migrationViolations(path.join(MIGRATIONS_DIR, 'frozen', 'lists.ts'), `import { x } from '../0014_list_paging.ts';`).length, 0);
  assert.equal(migrationViolations(path.join(MIGRATIONS_DIR, 'frozen', 'lists.ts'), `import { x } from '../../paged-lists.ts';`).length, 1);
});

test('the runtime graph counts what Node loads and leaves out what only names types', () => {
  const file = path.join(SRC_DIR, 'db', 'example.ts');
  const targets = (text: string) => runtimeEdges([{ file, text }]).edges.map(({ to }) => to);
  const loaded = [
    `import { a } from '../okm/a.ts';`,
    `import { a, type B } from '../okm/a.ts';`,
    `import a from '../okm/a.ts';`,
    `import * as a from '../okm/a.ts';`,
    `import '../okm/a.ts';`,
    `export { a } from '../okm/a.ts';`,
    `export * from '../okm/a.ts';`,
    `export const load = () => import('../okm/a.ts');`,
    `import a = require('../okm/a.ts');`,
  ];
  for (const text of loaded) assert.deepEqual(targets(text), ['okm'], text);
  const typesOnly = [
    `import type { A } from '../okm/a.ts';`,
    `import { type A, type B } from '../okm/a.ts';`,
    `export type { A } from '../okm/a.ts';`,
    `export { type A } from '../okm/a.ts';`,
    `type A = import('../okm/a.ts').A;`,
    `import { a } from 'kysely';`,
    `import { a } from './dialects/a.ts';`,
  ];
  for (const text of typesOnly) assert.deepEqual(targets(text), [], text);
  assert.deepEqual(targets(`import { a } from '../app.ts';`), [APP_LAYER]);
  assert.deepEqual(runtimeEdges([{ file, text: `const name = 'x'; export const load = () => import(name);` }]).unreadable.length, 1);
});

test('the cycle check finds every loop and names the imports that close it', () => {
  const edge = (from: string, to: string): Edge => ({ from, to, file: `${from}/x.ts`, target: `${to}/y.ts` });
  const edges = [edge('okm', 'acl'), edge('acl', 'okm'), edge('db', 'shared'), edge('rollouts', 'webhooks'), edge('webhooks', 'customers'), edge('customers', 'rollouts'), edge('okm', 'db')];
  assert.deepEqual(cycles(edges), [['acl', 'okm'], ['customers', 'rollouts', 'webhooks']]);
  assert.equal(
    describeCycle(['customers', 'rollouts', 'webhooks'], edges),
    ['cycle customers ↔ rollouts ↔ webhooks, e.g. customers → rollouts → webhooks → customers:', '  customers/x.ts → rollouts/y.ts', '  rollouts/x.ts → webhooks/y.ts', '  webhooks/x.ts → customers/y.ts'].join('\n'),
  );
  assert.deepEqual(foundationViolations(edges), []);
  assert.deepEqual(foundationViolations([edge('http', 'okm'), edge('db', 'shared')]), ['http/x.ts → okm/y.ts']);
  assert.deepEqual(appLayerViolations([edge('cli', APP_LAYER), edge('simulator', APP_LAYER)]), [`simulator/x.ts → ${APP_LAYER}/y.ts`]);
});

test('type-only imports are read, marked, and count for the foundation rule', () => {
  const file = path.join(SRC_DIR, 'db', 'example.ts');
  const { imports } = fileImports([{ file, text: `import type { Okm } from '../okm/model.ts';\nimport { x } from './cursor.ts';\ntype A = import('../acl/model.ts').A;` }]);
  assert.deepEqual(imports, [
    { file: 'db/example.ts', target: 'okm/model.ts', runtime: false },
    { file: 'db/example.ts', target: 'db/cursor.ts', runtime: true },
    { file: 'db/example.ts', target: 'acl/model.ts', runtime: false },
  ]);
  assert.deepEqual(foundationViolations(layerEdges(imports)), ['db/example.ts → acl/model.ts', 'db/example.ts → okm/model.ts']);
  assert.deepEqual(runtimeEdges([{ file, text: `import type { Okm } from '../okm/model.ts';` }]).edges, []);
});

test('the repository check finds http/ imports of repositories and of db/, type-only ones too', () => {
  const imported = (file: string, target: string, runtime = true): FileImport => ({ file, target, runtime });
  assert.deepEqual(
    repositoryHttpViolations([
      imported('okm/admin-repository.ts', 'http/cursor-paging.ts'),
      imported('customers/repository.ts', 'http/errors.ts', false),
      imported('db/cursor-pages.ts', 'http/schemas.ts'),
      imported('okm/admin-service.ts', 'http/errors.ts'),
      imported('okm/admin-routes.ts', 'http/cursor-paging.ts'),
      imported('okm/admin-repository.ts', 'db/cursor-pages.ts'),
    ]),
    ['customers/repository.ts → http/errors.ts (import type)', 'db/cursor-pages.ts → http/schemas.ts', 'okm/admin-repository.ts → http/cursor-paging.ts'],
  );
});

test('the parts check reads each part from the file name and refuses every upward import inside a folder', () => {
  assert.deepEqual(
    ['okm/routes.ts', 'okm/admin-routes.ts', 'okm/plugin.ts', 'fleet/fleet-pass-plugin.ts', 'okm/service.ts', 'okm/pending-service.ts', 'okm/repository.ts', 'okm/queue-repository.ts', 'okm/schemas.ts', 'okm/model.ts', 'okm/routes-helpers.ts'].map(partOf),
    ['routes', 'routes', 'routes', 'routes', 'service', 'service', 'repository', 'repository', undefined, undefined, undefined],
  );
  const imported = (file: string, target: string, runtime = true): FileImport => ({ file, target, runtime });
  assert.deepEqual(
    partViolations([
      imported('okm/admin-repository.ts', 'okm/admin-service.ts'),
      imported('okm/repository.ts', 'okm/routes.ts', false),
      imported('okm/pending-service.ts', 'okm/pending-routes.ts', false),
      imported('okm/service.ts', 'okm/plugin.ts'),
      // Downward, across folders, or between files without a part: not this rule's.
      imported('okm/admin-routes.ts', 'okm/admin-service.ts'),
      imported('okm/admin-service.ts', 'okm/admin-repository.ts'),
      imported('okm/admin-routes.ts', 'okm/admin-repository.ts'),
      imported('okm/admin-service.ts', 'okm/pending-service.ts'),
      imported('device/drift-service.ts', 'okm/admin-routes.ts', false),
      imported('okm/schemas.ts', 'okm/routes.ts'),
      imported('okm/repository.ts', 'okm/model.ts'),
    ]),
    [
      'okm/admin-repository.ts → okm/admin-service.ts: a repository imports a service file',
      'okm/pending-service.ts → okm/pending-routes.ts (import type): a service imports a routes file',
      'okm/repository.ts → okm/routes.ts (import type): a repository imports a routes file',
      'okm/service.ts → okm/plugin.ts: a service imports a routes file',
    ],
  );
});

// --- the README's folder list ----------------------------------------------------------------

test("the README's folder list names every folder and file of src/ once, each above what it imports, the foundation last", () => {
  const readme = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
  const heading = 'Folders, top to bottom';
  const section = readme.split(/^## /m).find((part) => part.startsWith(heading));
  assert.ok(section !== undefined, `README.md has no "## ${heading}" section`);
  // A list item opens with the names it is about: "- `okm/` …", "- `server.ts` `app.ts` …".
  const listed = section.split('\n').flatMap((line) => {
    const names = /^- ((?:`[^`]+`[ ,]*)+)/.exec(line)?.[1];
    return names === undefined ? [] : [...names.matchAll(/`([^`]+)`/g)].map(([, name]) => name!.replace(/\/$/, ''));
  });
  const entries = readdirSync(SRC_DIR, { withFileTypes: true });
  const expected = entries.filter((entry) => entry.isDirectory() || /\.[cm]?[jt]sx?$/.test(entry.name)).map((entry) => entry.name);
  assert.deepEqual([...listed].sort(), expected.sort(), "the README's folder list against src/ (each folder and each file directly in src/, once)");

  const node = (name: string) => (name.includes('.') ? APP_LAYER : name);
  const positions = new Map<string, number[]>();
  listed.forEach((name, index) => positions.set(node(name), [...(positions.get(node(name)) ?? []), index]));
  const upward = edgesOfSrc()
    .filter(({ from, to }) => Math.max(...positions.get(from)!) > Math.min(...positions.get(to)!))
    .map(({ file, target }) => `${file} → ${target}`);
  assert.deepEqual(upward, [], 'runtime imports of something the README lists above the importer: move it below, or the import down');
  const lastCapability = Math.max(...listed.flatMap((name, index) => (FOUNDATION.has(name) ? [] : [index])));
  const foundationAbove = listed.filter((name, index) => FOUNDATION.has(name) && index < lastCapability);
  assert.deepEqual(foundationAbove, [], 'foundation folders the README lists above a capability');
});
