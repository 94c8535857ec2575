import { useCallback, useEffect, useRef, useState } from 'preact/hooks';

export interface Resource<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /** Loads again, keeping the shown data until the answer arrives. */
  reload: () => void;
}

/**
 * The answer of `load` (an API client call), loaded again when `keys` change, and every
 * `refreshMs` when given (a refresh keeps the data on screen: no flash of "Loading").
 * An answer that arrives after a newer request was made is dropped.
 */
export function useResource<T>(load: () => Promise<T>, keys: unknown[], refreshMs?: number): Resource<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const generation = useRef(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  const reload = useCallback(() => {
    const mine = ++generation.current;
    setState((previous) => ({ ...previous, loading: true }));
    loadRef.current().then(
      (data) => mine === generation.current && setState({ data, error: undefined, loading: false }),
      (error: unknown) => mine === generation.current && setState((previous) => ({ data: previous.data, error, loading: false })),
    );
  }, []);

  useEffect(() => {
    setState({ data: undefined, error: undefined, loading: true });
    reload();
    if (refreshMs === undefined) return undefined;
    const timer = setInterval(reload, refreshMs);
    return () => {
      clearInterval(timer);
      generation.current++;
    };
  }, keys);

  return { ...state, reload };
}
