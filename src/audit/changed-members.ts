import { canonicalJson } from '../shared/canonical-json.ts';

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * What an update changed, before and after, and only that (the before and after of an audit
 * entry): a nested object member by member, so that one of an OKM's firmware pins changed reads
 * as that pin; an array (asset lists, event types) or a value whole. Key order is no change.
 */
export function changedMembers(before: Record<string, unknown>, after: Record<string, unknown>): { before: Record<string, unknown>; after: Record<string, unknown> } {
  const was: Record<string, unknown> = {};
  const is: Record<string, unknown> = {};
  for (const member of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const from = before[member];
    const to = after[member];
    if (isPlainObject(from) && isPlainObject(to)) {
      const inner = changedMembers(from, to);
      if (Object.keys(inner.before).length === 0) continue;
      was[member] = inner.before;
      is[member] = inner.after;
    } else if (canonicalJson(from ?? null) !== canonicalJson(to ?? null)) {
      was[member] = from ?? null;
      is[member] = to ?? null;
    }
  }
  return { before: was, after: is };
}
