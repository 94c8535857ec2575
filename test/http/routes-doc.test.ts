import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { buildTestApp } from '../helpers/app.ts';

const ROUTES_DOC = new URL('../../docs/routes.md', import.meta.url);

/** `METHOD /path` of every row of the doc's first table, the one that mirrors the OpenAPI document. */
function documentedRows(markdown: string): string[] {
  const firstTable = markdown.split(/^## /m)[0]!;
  return [...firstTable.matchAll(/^\| ([A-Z]+) \| `([^`]+)` \|/gm)].map(([, method, path]) => `${method} ${path}`);
}

test('docs/routes.md lists every operation of the OpenAPI document, once, and none the document lacks', async () => {
  const subject = await buildTestApp('sqlite');
  let operations: string[];
  try {
    const document = JSON.parse((await subject.app.inject({ method: 'GET', url: '/openapi.json' })).body) as { paths: Record<string, Record<string, unknown>> };
    operations = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
  } finally {
    await subject.close();
  }
  const rows = documentedRows(readFileSync(ROUTES_DOC, 'utf8'));
  assert.deepEqual(
    operations.filter((operation) => !rows.includes(operation)),
    [],
    'operations missing from docs/routes.md (its table is generated from /openapi.json: add a row for each)',
  );
  assert.deepEqual(rows.filter((row) => !operations.includes(row)), [], 'rows of docs/routes.md that the document has no operation for');
  assert.deepEqual(rows.filter((row, index) => rows.indexOf(row) !== index), [], 'rows listed twice');
});
