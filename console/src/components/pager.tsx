import { pageCount } from '../format.ts';
import type { Pagination } from '../api/client.ts';

/** "Page 3 of 120 (3 571 OKMs)" with previous/next buttons. */
export function Pager({ pagination, noun, onPage }: { pagination: Pagination; noun: string; onPage: (page: number) => void }) {
  const pages = pageCount(pagination);
  const page = pagination.page;
  const total = Number(pagination.total_results);
  return (
    <nav class="pager" aria-label={`${noun} pages`}>
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        ← Previous
      </button>
      <span>
        Page {page} of {pages.toLocaleString()} ({total.toLocaleString()} {noun})
      </span>
      <button type="button" disabled={page >= pages} onClick={() => onPage(page + 1)}>
        Next →
      </button>
    </nav>
  );
}
