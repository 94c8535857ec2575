import type { CursorPages } from './use-cursor-pages.ts';

/**
 * Previous / Next through a cursor-paged list (and back to its first page from deep in it).
 * No page numbers and no total: the API pages by cursor and counts nothing (the fleet
 * summary has the counts). Nothing when the list fits one page.
 */
export function Pager({ pages, nextCursor, noun }: { pages: CursorPages; nextCursor: string | null; noun: string }) {
  if (pages.before === 0 && nextCursor === null) return null;
  return (
    <nav class="pager" aria-label={`${noun} pages`}>
      <button type="button" disabled={pages.before === 0} onClick={pages.previous}>
        ← Previous
      </button>
      {pages.before > 1 ? (
        <button type="button" onClick={pages.first}>
          First page
        </button>
      ) : (
        <span />
      )}
      <button type="button" disabled={nextCursor === null} onClick={() => nextCursor !== null && pages.next(nextCursor)}>
        Next →
      </button>
    </nav>
  );
}
