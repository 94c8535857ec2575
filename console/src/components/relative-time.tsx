import { localTime, relativeTime } from '../format.ts';
import { useNow } from './use-now.ts';

/** "12 seconds ago", ticking; the local time and the ISO value on hover. */
export function RelativeTime({ value, never = '—' }: { value: string | null | undefined; never?: string }) {
  const now = useNow();
  if (value === null || value === undefined) return <span class="muted">{never}</span>;
  return (
    <time dateTime={value} title={`${localTime(value)}\n${value}`}>
      {relativeTime(value, now)}
    </time>
  );
}

/** A time in the browser's zone, the ISO value on hover. */
export function LocalTime({ value }: { value: string | null | undefined }) {
  if (value === null || value === undefined) return <span class="muted">—</span>;
  return (
    <time dateTime={value} title={value}>
      {localTime(value)}
    </time>
  );
}
