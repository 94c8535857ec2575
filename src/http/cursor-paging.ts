import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { badRequest } from './errors.ts';
import { Nullable } from './schemas.ts';

/**
 * Cursor paging (SPEC §5) for every list but the seed's ACL list: `?limit=1–500` (default 50)
 * and `?cursor=<opaque>`; the answer has `next_cursor` (null on the last page) and a
 * `Link: <…>; rel="next"` header. A cursor is the sort key of the last row of the page it
 * ended, so the next page starts strictly after that row, over the list's ordinary index, and
 * stays right while rows are inserted or deleted (nothing is skipped or repeated but the rows
 * that moved across the cursor). Clients treat it as opaque: it is base64url JSON today.
 */
export const MAX_PAGE_LIMIT = 500;
export const DEFAULT_PAGE_LIMIT = 50;
const MAX_CURSOR_LENGTH = 1024;

/** The query properties of a cursor-paged list. */
export const cursorPageQueryProperties = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT, description: `rows per page, 1–${MAX_PAGE_LIMIT}` })),
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: MAX_CURSOR_LENGTH, pattern: '^[A-Za-z0-9_-]+$', description: 'opaque: the next_cursor of the previous page' }),
  ),
};

export interface CursorPageQuery {
  limit?: number;
  cursor?: string;
}

/** A value of a sort key. Keys are of NOT NULL columns, unique together (a serial number, an id, a time and an id). */
export type CursorValue = string | number;
export type CursorKind = 'string' | 'integer';

const fits = (value: unknown, kind: CursorKind): value is CursorValue =>
  kind === 'string' ? typeof value === 'string' && value.length <= MAX_CURSOR_LENGTH : Number.isSafeInteger(value);

export function encodeCursor(key: readonly CursorValue[]): string {
  return Buffer.from(JSON.stringify(key), 'utf8').toString('base64url');
}

/**
 * The sort key a cursor holds, checked against the list's key shape; undefined without a
 * cursor (the first page). A cursor of another list, or one altered by hand, is a 400.
 */
export function decodeCursor<Key extends readonly CursorValue[]>(cursor: string | undefined, shape: readonly CursorKind[]): Key | undefined {
  if (cursor === undefined) return undefined;
  let key: unknown;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    key = undefined;
  }
  if (!Array.isArray(key) || key.length !== shape.length || !key.every((value, index) => fits(value, shape[index]!))) {
    throw badRequest('cursor: not a cursor of this list; pass the next_cursor of its previous page unchanged');
  }
  return key as unknown as Key;
}

export const limitOf = (query: CursorPageQuery) => query.limit ?? DEFAULT_PAGE_LIMIT;

export interface CursorPage<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * A page from the rows a repository read with `limit + 1`: the extra row, if any, says that
 * another page follows, whose cursor is the key of this page's last row.
 */
export function cursorPageOf<T>(rows: readonly T[], limit: number, keyOf: (row: T) => readonly CursorValue[]): CursorPage<T> {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > limit && last !== undefined ? encodeCursor(keyOf(last)) : null };
}

/** The response schema of a cursor-paged list. */
export const cursorPageResponse = <T extends TSchema>(item: T) =>
  Type.Object({
    message: Type.String(),
    data: Type.Array(item),
    next_cursor: Nullable(Type.String({ description: 'pass as ?cursor= for the next page; null on the last page' })),
  });

/** The request's own URL (path and query, as received) with `cursor` set to the next page's. */
function nextPageUrl(request: FastifyRequest, nextCursor: string): string {
  const url = new URL(request.url, 'http://keyfleet.invalid');
  url.searchParams.set('cursor', nextCursor);
  return `${url.pathname}${url.search}`;
}

/**
 * Sends a page: `{message, data, next_cursor}` and, when another page follows, the `Link`
 * header (RFC 8288) of the next page, relative to the request.
 */
export function sendCursorPage<T>(request: FastifyRequest, reply: FastifyReply, message: string, page: CursorPage<T>) {
  if (page.nextCursor !== null) void reply.header('link', `<${nextPageUrl(request, page.nextCursor)}>; rel="next"`);
  return { message, data: page.items, next_cursor: page.nextCursor };
}
