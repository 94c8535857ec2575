import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { cursorPageOf, decodeCursor, encodeCursor, InvalidCursorError, type CursorKind } from '../../src/db/cursor-pages.ts';

const keyValue = (kind: CursorKind) => (kind === 'string' ? fc.string({ maxLength: 64 }) : fc.maxSafeInteger().filter((value) => value >= Number.MIN_SAFE_INTEGER));
const shapes = fc.array(fc.constantFrom<CursorKind>('string', 'integer'), { minLength: 1, maxLength: 3 });

test('a cursor decodes to the key it was made of, for any key of its shape', () => {
  fc.assert(
    fc.property(
      shapes.chain((shape) => fc.tuple(fc.constant(shape), fc.tuple(...shape.map(keyValue)))),
      ([shape, key]) => {
        const cursor = encodeCursor(key);
        assert.match(cursor, /^[A-Za-z0-9_-]+$/);
        assert.deepEqual(decodeCursor(cursor, shape), key);
      },
    ),
  );
});

test('a cursor of another shape, of non-safe numbers, or not made by encodeCursor at all is an InvalidCursorError naming the cursor', () => {
  const refused = (cursor: string, shape: CursorKind[]) =>
    assert.throws(() => decodeCursor(cursor, shape), (error: unknown) => error instanceof InvalidCursorError && /^cursor: /.test(error.message));
  refused(encodeCursor(['OKM-1']), ['integer']);
  refused(encodeCursor(['OKM-1', 3]), ['string']);
  refused(encodeCursor([3]), ['string']);
  refused(Buffer.from('[1e400]').toString('base64url'), ['integer']);
  refused(Buffer.from('[1.5]').toString('base64url'), ['integer']);
  refused(Buffer.from('[null]').toString('base64url'), ['string']);
  refused(Buffer.from('{"a":1}').toString('base64url'), ['string']);
  refused('not-json', ['string']);
  fc.assert(
    fc.property(fc.string({ minLength: 1, maxLength: 40 }), shapes, (text, shape) => {
      try {
        const key = decodeCursor(text, shape);
        assert.equal(key?.length, shape.length);
      } catch (error) {
        assert.ok(error instanceof InvalidCursorError);
      }
    }),
  );
});

test('no cursor is the first page', () => {
  assert.equal(decodeCursor(undefined, ['string']), undefined);
});

test('a page of limit + 1 rows has the key of its last row as the next cursor; a shorter one is the last page', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 0, max: 25 }), (limit, count) => {
      const rows = Array.from({ length: Math.min(count, limit + 1) }, (_, index) => ({ id: index }));
      const page = cursorPageOf(rows, limit, (row) => [row.id]);
      assert.deepEqual(page.items, rows.slice(0, limit));
      if (rows.length > limit) assert.deepEqual(decodeCursor(page.nextCursor ?? undefined, ['integer']), [limit - 1]);
      else assert.equal(page.nextCursor, null);
    }),
  );
});
