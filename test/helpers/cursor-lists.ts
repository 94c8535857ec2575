/**
 * What every cursor-paged list promises (contract §5.3), as tests any list's file runs against it:
 * pages walked by cursor hold every row once, in the list's order; rows inserted or deleted
 * during a walk appear or not by where they fall against the cursor, and nothing is repeated
 * or skipped; `Link` is there exactly when `next_cursor` is, and leads to the next page; a
 * cursor of another list, or none at all, is a 400, and so is a limit outside 1–500.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeCursor } from '../../src/db/cursor-pages.ts';
import type { TestApp } from './app.ts';

export type ListKey = string | number;

/** One list, with a scope of its own (a fresh customer, OKM or endpoint) that holds only what the test stores. */
export interface CursorListFixture {
  t: TestApp;
  /** The list's path and filters, without limit or cursor. */
  url: string;
  token: string;
  /** The key of a listed item: the column the list pages by. */
  keyOf: (item: Record<string, unknown>) => ListKey;
  /**
   * The key at a position of the list (0–99 999): positions in list order, with room between
   * consecutive ones, so that a test can store a row between two others.
   */
  keyAt: (position: number) => ListKey;
  /** Stores rows of the list with these keys (and any the filter leaves out, as the fixture likes). */
  add: (keys: readonly ListKey[]) => Promise<void>;
  remove: (key: ListKey) => Promise<void>;
}

interface PageBody {
  message: string;
  data: Record<string, unknown>[];
  next_cursor: string | null;
}

export interface FetchedPage {
  statusCode: number;
  body: PageBody;
  link: string | undefined;
}

export async function fetchPage(fixture: Pick<CursorListFixture, 't' | 'token'>, url: string): Promise<FetchedPage> {
  const response = await fixture.t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${fixture.token}` } });
  assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
  const link = response.headers.link;
  return { statusCode: response.statusCode, body: response.json() as PageBody, link: typeof link === 'string' ? link : undefined };
}

/** `url` with these query values added (or replaced). */
export function withQuery(url: string, values: Record<string, string | number>): string {
  const parsed = new URL(url, 'http://list.invalid');
  for (const [name, value] of Object.entries(values)) parsed.searchParams.set(name, String(value));
  return `${parsed.pathname}${parsed.search}`;
}

/** The URL a `Link: <…>; rel="next"` header points at. */
export function nextLinkOf(link: string): string {
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  assert.ok(match, `Link header: ${link}`);
  return match[1]!;
}

/** Every key of the list, walked by cursor `limit` at a time; `between` runs after each page but the last, with the page's number (from 1). */
export async function walkKeys(fixture: Pick<CursorListFixture, 't' | 'token' | 'url' | 'keyOf'>, limit: number, between?: (page: number) => Promise<void>): Promise<ListKey[]> {
  const keys: ListKey[] = [];
  let cursor: string | null = null;
  for (let page = 1; ; page++) {
    assert.ok(page < 10_000, 'the walk ends');
    const { body } = await fetchPage(fixture, withQuery(fixture.url, cursor === null ? { limit } : { limit, cursor }));
    assert.ok(body.data.length <= limit);
    keys.push(...body.data.map(fixture.keyOf));
    if (body.next_cursor === null) return keys;
    assert.equal(body.data.length, limit, 'a page with a next page is full');
    cursor = body.next_cursor;
    await between?.(page);
  }
}

const positions = (from: number, count: number, step: number) => Array.from({ length: count }, (_, index) => from + index * step);

/** The tests every cursor-paged list passes; `fixture` makes a fresh, empty list for each. */
export function cursorListContract(name: string, fixture: () => Promise<CursorListFixture>): void {
  test(`${name}: pages walked by cursor return every row exactly once, in the list's order`, async () => {
    const list = await fixture();
    const keys = positions(10, 25, 10).map(list.keyAt);
    await list.add([...keys].reverse());

    for (const limit of [1, 5, 7, 25, 500]) assert.deepEqual(await walkKeys(list, limit), keys, `limit ${limit}`);
  });

  test(`${name}: a row stored after the cursor's position during a walk appears later, one deleted is not returned, none is repeated or skipped`, async () => {
    const list = await fixture();
    const stored = positions(10, 20, 10);
    await list.add(stored.map(list.keyAt));

    // After the first page (positions 10–40): one row before the cursor, one after it, one deleted after it and one already seen.
    const keys = await walkKeys(list, 4, async (page) => {
      if (page !== 1) return;
      await list.add([list.keyAt(5), list.keyAt(75)]);
      await list.remove(list.keyAt(60));
      await list.remove(list.keyAt(20));
    });

    const expected = [...stored.slice(0, 4), ...stored.slice(4).filter((position) => position !== 60), 75].sort((a, b) => a - b).map(list.keyAt);
    assert.deepEqual(keys, expected);
  });

  test(`${name}: Link is sent exactly when next_cursor is set, and following it gives the next page`, async () => {
    const list = await fixture();
    await list.add(positions(10, 9, 10).map(list.keyAt));

    const pages: FetchedPage[] = [await fetchPage(list, withQuery(list.url, { limit: 3 }))];
    while (pages.at(-1)!.body.next_cursor !== null) {
      const previous = pages.at(-1)!;
      assert.ok(previous.link !== undefined, 'Link with a next page');
      const byLink = await fetchPage(list, nextLinkOf(previous.link));
      const byCursor = await fetchPage(list, withQuery(list.url, { limit: 3, cursor: previous.body.next_cursor! }));
      assert.deepEqual(byLink.body, byCursor.body);
      pages.push(byLink);
    }

    assert.equal(pages.length, 3);
    assert.equal(pages.at(-1)!.link, undefined);
    for (const page of pages) assert.deepEqual(Object.keys(page.body).sort(), ['data', 'message', 'next_cursor']);
    assert.equal(pages[0]!.body.message, 'Resource fetched successfully');
    const empty = await fixture();
    const none = await fetchPage(empty, empty.url);
    assert.deepEqual([none.body.data, none.body.next_cursor, none.link], [[], null, undefined]);
  });

  test(`${name}: a malformed cursor, or one of another list, is a 400; so is a limit of 0, 501, 1.5 or 1e400`, async () => {
    const list = await fixture();
    await list.add([list.keyAt(10), list.keyAt(20)]);
    const { body } = await fetchPage(list, withQuery(list.url, { limit: 1 }));
    const key = list.keyAt(10);
    const otherShape = typeof key === 'number' ? 'OKM-1' : 1;
    const refused = {
      'not base64url': 'a+b/c',
      'not JSON': 'bm90LWpzb24',
      'an untagged key': encodeCursor([key]),
      'another list\'s': encodeCursor([key], 'another-list'),
      'a key of another shape': encodeCursor([otherShape], JSON.parse(Buffer.from(body.next_cursor!, 'base64url').toString('utf8')).list as string),
      'an altered one': `${body.next_cursor!.slice(0, -2)}__`,
      empty: '',
    };
    for (const [what, cursor] of Object.entries(refused)) {
      const response = await list.t.app.inject({ method: 'GET', url: withQuery(list.url, { cursor }), headers: { authorization: `Bearer ${list.token}` } });
      assert.equal(response.statusCode, 400, `${what} cursor: ${response.body}`);
      assert.equal(response.json().error_code, 'BAD_REQUEST', what);
      assert.match(response.json().error_msg, /cursor/, what);
    }
    for (const limit of ['0', '501', '1.5', '1e400', '-1', 'ten']) {
      const response = await list.t.app.inject({ method: 'GET', url: withQuery(list.url, { limit }), headers: { authorization: `Bearer ${list.token}` } });
      assert.equal(response.statusCode, 400, `limit ${limit}: ${response.body}`);
      assert.match(response.json().error_msg, /limit/, `limit ${limit}`);
    }
    assert.equal((await fetchPage(list, withQuery(list.url, { limit: 500 }))).body.data.length, 2);
  });

  test(`${name}: 50 a page without a limit`, async () => {
    const list = await fixture();
    await list.add(positions(1, 51, 1).map(list.keyAt));

    const { body } = await fetchPage(list, list.url);

    assert.deepEqual(body.data.map(list.keyOf), positions(1, 50, 1).map(list.keyAt));
    assert.notEqual(body.next_cursor, null);
  });
}

/** Keys of a list ordered by a text key, ascending: `prefix` and the zero-padded position. */
export const textKeyAt = (prefix: string) => (position: number) => `${prefix}${String(position).padStart(5, '0')}`;

/** Keys of a list ordered by an integer id: ascending from `base`, or descending (newest first) below base + 100 000. */
export const idKeyAt = (base: number, direction: 'asc' | 'desc') => (position: number) => (direction === 'asc' ? base + position : base + 100_000 - position);
