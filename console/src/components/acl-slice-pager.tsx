import type { Slice } from '../acl-matrix.ts';

/** "Users 51–100 of 5 000" with previous/next: one axis of the ACL matrix. */
export function AclSlicePager({ slice, noun, onPage }: { slice: Slice; noun: string; onPage: (page: number) => void }) {
  const last = slice.first === 0 ? 0 : slice.first + slice.shown.length - 1;
  return (
    <div class="acl-slice-pager" role="group" aria-label={`${noun} shown`}>
      <button type="button" disabled={slice.page <= 1} onClick={() => onPage(slice.page - 1)} aria-label={`Previous ${noun}`}>
        ←
      </button>
      <span>
        {noun[0]!.toUpperCase() + noun.slice(1)} {slice.first.toLocaleString()}–{last.toLocaleString()} of {slice.total.toLocaleString()}
      </span>
      <button type="button" disabled={slice.page >= slice.pages} onClick={() => onPage(slice.page + 1)} aria-label={`Next ${noun}`}>
        →
      </button>
    </div>
  );
}
