import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { DEFAULT_PAGE_LIMIT, MAX_CURSOR_LENGTH, MAX_PAGE_LIMIT, type CursorPage } from '../db/cursor-pages.ts';
import { Nullable } from './schemas.ts';

/**
 * Cursor paging (contract §5) as HTTP shows it, for every list but the ACL list of contract §0.6:
 * `?limit=1–500` (default 50) and `?cursor=<opaque>`; the answer has `next_cursor` (null on the
 * last page) and a `Link: <…>; rel="next"` header. What a cursor holds, how a page is read and
 * the page itself are below HTTP, in src/db/cursor-pages.ts, where repositories take them from.
 */

/** The query properties of a cursor-paged list. */
export const cursorPageQueryProperties = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT, description: `rows per page, 1–${MAX_PAGE_LIMIT}` })),
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: MAX_CURSOR_LENGTH, pattern: '^[A-Za-z0-9_-]+$', description: 'opaque: the next_cursor of the previous page' }),
  ),
};

/** Why a list has no total, for its description, unless it says otherwise. */
export const NO_TOTAL = 'No total: counting would read every matching entry on each page.';

/**
 * The response schema of a cursor-paged list; `description` says what the list holds, in
 * which order, and why it has no total (NO_TOTAL).
 */
export const cursorPageResponse = <T extends TSchema>(item: T, description?: string) =>
  Type.Object(
    {
      message: Type.String(),
      data: Type.Array(item),
      next_cursor: Nullable(Type.String({ description: 'pass as ?cursor= for the next page; null on the last page' })),
    },
    description === undefined ? {} : { description },
  );

/** The request's own URL (path and query, as received) with `cursor` set to the next page's. */
function nextPageUrl(request: FastifyRequest, nextCursor: string): string {
  const url = new URL(request.url, 'http://keyfleet.invalid');
  url.searchParams.set('cursor', nextCursor);
  return `${url.pathname}${url.search}`;
}

/** The `Link` header (RFC 8288) of the next page, relative to the request, when another page follows. */
export function linkNextPage(request: FastifyRequest, reply: FastifyReply, nextCursor: string | null): void {
  if (nextCursor !== null) void reply.header('link', `<${nextPageUrl(request, nextCursor)}>; rel="next"`);
}

/** Sends a page: `{message, data, next_cursor}` and, when another page follows, the `Link` header of the next page. */
export function sendCursorPage<T>(request: FastifyRequest, reply: FastifyReply, message: string, page: CursorPage<T>) {
  linkNextPage(request, reply, page.nextCursor);
  return { message, data: page.items, next_cursor: page.nextCursor };
}
