import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface MorePages<T> {
  /** Every row loaded so far, the first page's first. */
  rows: T[];
  /** Whether the API has rows after these. */
  hasMore: boolean;
  error: unknown;
  /** A page is on its way (the first, or more). */
  loading: boolean;
  /** Loads the next page and adds its rows below. */
  more: () => void;
  /** Starts again from the first page, keeping the rows on screen until it arrives. */
  reload: () => void;
}

/**
 * A cursor-paged list that grows: the first page, then each "more" adds the next one below, as a
 * log is read. New `keys` (other filters) start again at the first page; an answer that
 * arrives after a newer request was made is dropped.
 */
export function useMorePages<T>(load: (cursor: string | undefined) => Promise<{ data: T[]; next_cursor: string | null }>, keys: unknown[]): MorePages<T> {
  const [state, setState] = useState<{ rows: T[]; next: string | null; error: unknown; loading: boolean }>({ rows: [], next: null, error: undefined, loading: true });
  const generation = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  const fetchPage = useCallback((cursor: string | undefined, keep: T[]) => {
    const mine = ++generation.current;
    setState((previous) => ({ ...previous, error: undefined, loading: true }));
    loadRef.current(cursor).then(
      (page) => mine === generation.current && setState({ rows: [...keep, ...page.data], next: page.next_cursor, error: undefined, loading: false }),
      (error: unknown) => mine === generation.current && setState((previous) => ({ ...previous, error, loading: false })),
    );
  }, []);

  useEffect(() => {
    setState({ rows: [], next: null, error: undefined, loading: true });
    fetchPage(undefined, []);
    return () => void generation.current++;
  }, keys);

  return {
    rows: state.rows,
    hasMore: state.next !== null,
    error: state.error,
    loading: state.loading,
    more: () => state.next !== null && fetchPage(state.next, state.rows),
    reload: () => fetchPage(undefined, []),
  };
}
