import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import ts from 'typescript';

/**
 * Migrations are frozen: a migration builds the same schema today as on the day it ran, so it
 * must not import live code, whose later edits would rewrite what an old migration does (and
 * what a database migrated today gets, unlike one migrated before). Every file under
 * src/db/migrations/ may import npm packages and other files of that folder, nothing else.
 */
const MIGRATIONS_DIR = fileURLToPath(new URL('../../src/db/migrations/', import.meta.url));
const PACKAGE_NAME = (JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8')) as { name: string }).name;

/** Every module a source text names: static and type-only imports, re-exports, import(), import types, require(); null for a dynamic one whose specifier is not a literal. */
function moduleSpecifiers(fileName: string, text: string): (string | null)[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: (string | null)[] = [];
  const literal = (node: ts.Node | undefined) => (node !== undefined && ts.isStringLiteralLike(node) ? node.text : null);
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      found.push(literal(node.moduleSpecifier));
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      found.push(literal(node.moduleReference.expression));
    } else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
      found.push(literal(node.arguments[0]));
    } else if (ts.isImportTypeNode(node)) {
      found.push(ts.isLiteralTypeNode(node.argument) ? literal(node.argument.literal) : null);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Why the file may not import the specifier, or undefined when it may. */
function violation(file: string, specifier: string | null): string | undefined {
  if (specifier === null) return 'a dynamic import whose module is not a string literal';
  if (specifier.startsWith('.') || path.isAbsolute(specifier) || specifier.startsWith('file:')) {
    const target = specifier.startsWith('file:') ? fileURLToPath(specifier) : path.resolve(path.dirname(file), specifier);
    const relative = path.relative(MIGRATIONS_DIR, target);
    const outside = relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative);
    return outside ? `${specifier} resolves outside src/db/migrations/` : undefined;
  }
  // Subpath imports (#…) and the package's own name lead back into the project's live code.
  if (specifier.startsWith('#')) return `${specifier} is a subpath import of this package`;
  if (specifier === PACKAGE_NAME || specifier.startsWith(`${PACKAGE_NAME}/`)) return `${specifier} imports this package itself`;
  return undefined;
}

function violations(file: string, text: string): string[] {
  return moduleSpecifiers(file, text).flatMap((specifier) => {
    const reason = violation(file, specifier);
    return reason === undefined ? [] : [`${path.relative(process.cwd(), file)}: ${reason}`];
  });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.[cm]?[jt]sx?$/.test(entry.name))
    .map((entry) => path.join(entry.parentPath, entry.name))
    .sort();
}

test('no file under src/db/migrations/ imports anything outside that folder but npm packages', () => {
  const files = sourceFiles(MIGRATIONS_DIR);
  assert.ok(files.some((file) => path.basename(file).startsWith('0001_')), `no migrations found in ${MIGRATIONS_DIR}`);
  assert.deepEqual(
    files.flatMap((file) => violations(file, readFileSync(file, 'utf8'))),
    [],
  );
});

test('the check sees every form of import', () => {
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
  for (const text of outside) assert.equal(violations(file, text).length, 1, text);
  const inside = [
    `import { sql, type Kysely } from 'kysely';`,
    `import type { AnyDb, MigrationContext } from './migration-context.ts';`,
    `import { pageBucketTriggers } from './frozen/page-buckets.ts';`,
    `export * from './frozen/paged-lists.ts';`,
    `const done = import('./frozen/page-buckets.ts');`,
    // Not imports: text that only looks like one.
    `// import { x } from '../page-buckets.ts';\nconst s = "import('../page-buckets.ts')";`,
  ];
  for (const text of inside) assert.deepEqual(violations(file, text), [], text);
  assert.equal(violations(path.join(MIGRATIONS_DIR, 'frozen', 'lists.ts'), `import { x } from '../0014_list_paging.ts';`).length, 0);
  assert.equal(violations(path.join(MIGRATIONS_DIR, 'frozen', 'lists.ts'), `import { x } from '../../paged-lists.ts';`).length, 1);
});
