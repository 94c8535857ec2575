import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { stringify } from 'csv-stringify/sync';
import { Type } from 'typebox';
import { MAX_PAGE_LIMIT, type CursorPage } from '../db/cursor-pages.ts';
import type { OperationDocumentation } from './openapi.ts';

/**
 * CSV exports of cursor-paged lists: the list's filters, every page of it, streamed as the pages
 * are read (a page of at most MAX_PAGE_LIMIT rows at a time, each the bounded query the list
 * itself runs), so an export of 100 000 rows never holds more than one page.
 */

/** One CSV row as spreadsheets open it: a cell that starts like a formula (= + - @, tab, CR) is written as text, never run. */
export const csvLine = (cells: readonly unknown[]): string => stringify([cells.map((cell) => (cell === null || cell === undefined ? '' : cell))], { escape_formulas: true, record_delimiter: '\r\n' });

/** Every item of a cursor-paged list, page after page: `pageAt` reads the page after a cursor (none: the first) of MAX_PAGE_LIMIT rows. */
export async function* everyItem<T>(pageAt: (cursor: string | undefined, limit: number) => Promise<CursorPage<T>>): AsyncGenerator<T> {
  let cursor: string | undefined;
  do {
    const page = await pageAt(cursor, MAX_PAGE_LIMIT);
    yield* page.items;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}

/** The OpenAPI answer of a CSV export. */
export const csvExportDocumentation = (description: string): OperationDocumentation => ({
  responses: { 200: { description, content: { 'text/csv': Type.String() } } },
});

/**
 * Sends a header row, then one row per item, as an attachment named `fileName`. The first page
 * is read before the answer starts, so that its errors (a 404, a bad cursor) are the API's
 * ordinary answers rather than a cut-off download.
 */
export async function sendCsv<T>(reply: FastifyReply, fileName: string, columns: readonly string[], items: AsyncGenerator<T>, row: (item: T) => readonly unknown[]) {
  const first = await items.next();
  async function* lines(): AsyncGenerator<string> {
    yield csvLine(columns);
    if (first.done) return;
    yield csvLine(row(first.value));
    for await (const item of items) yield csvLine(row(item));
  }
  void reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="${fileName}"`);
  return reply.send(Readable.from(lines()));
}
