import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { FIRST_PAGE, nextPage, pagesBefore, previousPage, shownCursor, type CursorStack } from '../../console/src/cursor-stack.ts';

test('the first page has no cursor and nothing before it; Previous there stays there', () => {
  assert.equal(shownCursor(FIRST_PAGE), undefined);
  assert.equal(pagesBefore(FIRST_PAGE), 0);
  assert.deepEqual(previousPage(FIRST_PAGE), FIRST_PAGE);
});

test('Next then Previous comes back to the page before, with the cursor it was shown with, at any depth', () => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom<'next' | 'previous'>('next', 'previous'), { maxLength: 40 }), (moves) => {
      let stack: CursorStack = FIRST_PAGE;
      let served = 0;
      // What a server would hand out: a fresh cursor per Next.
      for (const move of moves) {
        if (move === 'previous') {
          stack = previousPage(stack);
          continue;
        }
        const before = stack;
        stack = nextPage(stack, `c${++served}`);
        assert.equal(shownCursor(stack), `c${served}`);
        assert.deepEqual(previousPage(stack), before);
      }
      assert.equal(pagesBefore(stack), stack.length - 1);
      assert.equal(stack[0], undefined);
    }),
  );
});
