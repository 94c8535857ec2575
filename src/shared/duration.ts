const DURATION = /^(\d{1,9})(ms|s|m|h|d)$/;
const MS_PER_UNIT: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "200ms", "5s", "30m", "2h", "1d" → milliseconds; undefined for anything else. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text.trim());
  return match ? Number(match[1]) * MS_PER_UNIT[match[2]!]! : undefined;
}

/** Milliseconds → the largest unit that divides them exactly: 3 600 000 → "1h", 90 000 → "90s"; parseDuration reads it back. */
export function formatDuration(ms: number): string {
  const [unit, size] = Object.entries(MS_PER_UNIT)
    .sort(([, a], [, b]) => b - a)
    .find(([, perUnit]) => ms % perUnit === 0)!;
  return `${ms / size}${unit}`;
}
