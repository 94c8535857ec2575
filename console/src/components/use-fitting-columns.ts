import type { RefObject } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/** Width of one lock column of the ACL matrix (2.3rem cell and its border), and of the user column, in CSS pixels. */
const COLUMN_PX = 38;
const USER_COLUMN_PX = 130;
const MIN_COLUMNS = 4;
const MAX_COLUMNS = 40;

const fitting = (width: number) => Math.min(MAX_COLUMNS, Math.max(MIN_COLUMNS, Math.floor((width - USER_COLUMN_PX) / COLUMN_PX)));

/**
 * How many lock columns fit the width of `element` (kept up to date as it is resized), so that
 * a page of the matrix never needs a horizontal scroll; never more than 40.
 */
export function useFittingColumns(element: RefObject<HTMLElement | null>): number {
  const [columns, setColumns] = useState(() => fitting(window.innerWidth - 80));
  useEffect(() => {
    const target = element.current;
    if (target === null) return undefined;
    const observer = new ResizeObserver(([entry]) => setColumns(fitting(entry!.contentRect.width)));
    observer.observe(target);
    return () => observer.disconnect();
  }, [element.current]);
  return columns;
}
