/**
 * The pages of a cursor-paged list the console has shown, as a stack of their cursors: the
 * first page's (none) at the bottom, the page on screen on top. Next pushes the next_cursor
 * the API gave, Previous pops; the API pages forwards only, so the way back is what the
 * browser remembers. Pure: unit-tested.
 */
export type CursorStack = readonly (string | undefined)[];

export const FIRST_PAGE: CursorStack = [undefined];

/** The cursor of the page on screen; undefined: the first page. */
export const shownCursor = (stack: CursorStack): string | undefined => stack[stack.length - 1];

export const nextPage = (stack: CursorStack, nextCursor: string): CursorStack => [...stack, nextCursor];

/** The page before; the first page has none before it. */
export const previousPage = (stack: CursorStack): CursorStack => (stack.length > 1 ? stack.slice(0, -1) : stack);

/** How many pages came before the one on screen. */
export const pagesBefore = (stack: CursorStack): number => stack.length - 1;
