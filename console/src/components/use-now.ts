import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<(now: number) => void>();
let timer: ReturnType<typeof setInterval> | undefined;

/** The current time, re-rendering every second: one shared timer for every ticking time on the page. */
export function useNow(): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    listeners.add(setNow);
    timer ??= setInterval(() => {
      const tick = Date.now();
      listeners.forEach((listener) => listener(tick));
    }, 1000);
    return () => {
      listeners.delete(setNow);
      if (listeners.size === 0) {
        clearInterval(timer);
        timer = undefined;
      }
    };
  }, []);
  return now;
}
