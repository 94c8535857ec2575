import { useState } from 'preact/hooks';
import { FIRST_PAGE, nextPage, pagesBefore, previousPage, shownCursor, type CursorStack } from '../cursor-stack.ts';

export interface CursorPages {
  /** The cursor of the page to show; undefined: the first page. */
  cursor: string | undefined;
  /** How many pages came before this one. */
  before: number;
  next(nextCursor: string): void;
  previous(): void;
  first(): void;
}

/**
 * Where a list stands among its pages, kept on the client as the stack of cursors seen. A new
 * `scope` (other filters, another customer, another OKM) starts again at the first page.
 */
export function useCursorPages(scope: string): CursorPages {
  const [state, setState] = useState<{ scope: string; stack: CursorStack }>({ scope, stack: FIRST_PAGE });
  const stack = state.scope === scope ? state.stack : FIRST_PAGE;
  return {
    cursor: shownCursor(stack),
    before: pagesBefore(stack),
    next: (nextCursor) => setState({ scope, stack: nextPage(stack, nextCursor) }),
    previous: () => setState({ scope, stack: previousPage(stack) }),
    first: () => setState({ scope, stack: FIRST_PAGE }),
  };
}
