import type { AuditAction } from '../audit/actions.ts';
import type { Change } from '../audit/trail.ts';
import { canonicalJson } from '../shared/canonical-json.ts';

/** An OKM as the audit trail records it: whose it is, and its desired configuration as the API shows it. */
export interface OkmAuditState {
  customer: string | null;
  configuration: Record<string, unknown>;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The members that differ, before and after, and only those: an object (the firmware pins, the
 * checkout window) member by member, so that one pin changed reads as that pin; an array (the
 * asset lists, the status URLs) or a value whole. Key order does not count as a change.
 */
function difference(before: Record<string, unknown>, after: Record<string, unknown>): { before: Record<string, unknown>; after: Record<string, unknown> } {
  const was: Record<string, unknown> = {};
  const is: Record<string, unknown> = {};
  for (const member of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const from = before[member];
    const to = after[member];
    if (isPlainObject(from) && isPlainObject(to)) {
      const inner = difference(from, to);
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

/** A change of the OKM `serialNumber`, of the customer named (null: the OKM belongs to none). */
export const okmChange = (action: AuditAction, serialNumber: string, customer: string | null, states: { before?: unknown; after?: unknown }): Change => ({
  action,
  customer,
  entity: { type: 'okm', id: serialNumber },
  ...states,
});

/**
 * okm.configured: a PUT or PATCH. One that created the OKM (before undefined) records its whole
 * configuration after; any other the fields it changed, with the customer when a PUT also gave
 * the OKM to the customer it acts for.
 */
export function okmConfigured(serialNumber: string, before: OkmAuditState | undefined, after: OkmAuditState): Change {
  if (before === undefined) return okmChange('okm.configured', serialNumber, after.customer, { after: after.configuration });
  const changed = difference({ customer: before.customer, ...before.configuration }, { customer: after.customer, ...after.configuration });
  return okmChange('okm.configured', serialNumber, after.customer, changed);
}

/** okm.deleted: the configuration the OKM had. */
export const okmDeleted = (serialNumber: string, before: OkmAuditState): Change => okmChange('okm.deleted', serialNumber, before.customer, { before: before.configuration });
