/**
 * Cursor paging (contract §5) below HTTP: what a repository reads a page with and what it answers.
 * A cursor is the sort key of the last row of the page it ended, so the next page starts
 * strictly after that row, over the list's ordinary index (afterKey, src/db/cursor.ts), and
 * stays right while rows are inserted or deleted (nothing is skipped or repeated but the rows
 * that moved across the cursor). Clients treat it as opaque: it is base64url JSON today.
 *
 * The query schema (`?limit=1–500`, default 50, and `?cursor=`), the answer's `next_cursor`
 * and its `Link: <…>; rel="next"` header are HTTP's: src/http/cursor-paging.ts.
 */
export const MAX_PAGE_LIMIT = 500;
export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_CURSOR_LENGTH = 1024;

/** What a caller asks of a cursor-paged list: the page size and the cursor of the previous page. */
export interface CursorPageQuery {
  limit?: number;
  cursor?: string;
}

/** A value of a sort key. Keys are of NOT NULL columns, unique together (a serial number, an id, a time and an id). */
export type CursorValue = string | number;
export type CursorKind = 'string' | 'integer';

/**
 * A cursor that no page of this list handed out: of another list, or altered by hand. The
 * caller gave it, so it is the caller's mistake: the API answers 400 with this message, the
 * command line a usage error (src/http/error-handler.ts, src/cli/main.ts).
 */
export class InvalidCursorError extends Error {
  constructor() {
    super('cursor: not a cursor of this list; pass the next_cursor of its previous page unchanged');
    this.name = 'InvalidCursorError';
  }
}

const fits = (value: unknown, kind: CursorKind): value is CursorValue =>
  kind === 'string' ? typeof value === 'string' && value.length <= MAX_CURSOR_LENGTH : Number.isSafeInteger(value);

/**
 * `list` names the list the cursor belongs to: it travels in the cursor, so that a cursor of
 * one list handed to another whose key has the same shape (a serial number of the OKM list
 * given to the pending OKMs, an id of an oldest-first list given to a newest-first one) is
 * refused rather than read as a position it never was.
 */
export function encodeCursor(key: readonly CursorValue[], list?: string): string {
  return Buffer.from(JSON.stringify(list === undefined ? key : { list, key }), 'utf8').toString('base64url');
}

/**
 * The sort key a cursor holds, checked against the list's key shape (and its name, when the
 * cursor was made with one); undefined without a cursor (the first page). A cursor of
 * another list, or one altered by hand, is an InvalidCursorError.
 */
export function decodeCursor<Key extends readonly CursorValue[]>(cursor: string | undefined, shape: readonly CursorKind[], list?: string): Key | undefined {
  if (cursor === undefined) return undefined;
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    payload = undefined;
  }
  const key = list === undefined ? payload : ofList(payload, list);
  if (!Array.isArray(key) || key.length !== shape.length || !key.every((value, index) => fits(value, shape[index]!))) {
    throw new InvalidCursorError();
  }
  return key as unknown as Key;
}

const ofList = (payload: unknown, list: string): unknown =>
  typeof payload === 'object' && payload !== null && !Array.isArray(payload) && (payload as { list?: unknown }).list === list ? (payload as { key?: unknown }).key : undefined;

export interface CursorPage<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * A page from the rows a repository read with `limit + 1`: the extra row, if any, says that
 * another page follows, whose cursor is the key of this page's last row.
 */
export function cursorPageOf<T>(rows: readonly T[], limit: number, keyOf: (row: T) => readonly CursorValue[], list?: string): CursorPage<T> {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, nextCursor: rows.length > limit && last !== undefined ? encodeCursor(keyOf(last), list) : null };
}

/**
 * One cursor-paged list: its name, carried in its cursors, and the shape of its sort key. A
 * repository decodes the request's cursor with it and builds the page with it.
 */
export interface CursorList<Key extends readonly CursorValue[]> {
  readonly name: string;
  decode(cursor: string | undefined): Key | undefined;
  /** The page from the rows read with `limit + 1`. */
  page<T>(rows: readonly T[], limit: number, keyOf: (row: T) => Key): CursorPage<T>;
}

export function cursorList<Key extends readonly CursorValue[]>(name: string, shape: readonly CursorKind[]): CursorList<Key> {
  return {
    name,
    decode: (cursor) => decodeCursor<Key>(cursor, shape, name),
    page: (rows, limit, keyOf) => cursorPageOf(rows, limit, keyOf, name),
  };
}

/** Items a page's cursor was read after, for a repository: the key to start after (none: the first page) and the page size. */
export interface CursorPageRequest<Key extends readonly CursorValue[]> {
  after: Key | undefined;
  limit: number;
}

export const cursorPageRequest = <Key extends readonly CursorValue[]>(list: CursorList<Key>, query: CursorPageQuery): CursorPageRequest<Key> => ({
  after: list.decode(query.cursor),
  limit: query.limit ?? DEFAULT_PAGE_LIMIT,
});

export const mapCursorPage = <T, U>(page: CursorPage<T>, map: (item: T) => U): CursorPage<U> => ({ items: page.items.map(map), nextCursor: page.nextCursor });
