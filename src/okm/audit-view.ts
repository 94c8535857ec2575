import type { AuditAction } from '../audit/actions.ts';
import { changedMembers } from '../audit/changed-members.ts';
import type { Change } from '../audit/trail.ts';

/** An OKM as the audit trail records it: whose it is, and its desired configuration as the API shows it. */
export interface OkmAuditState {
  customer: string | null;
  configuration: Record<string, unknown>;
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
  const changed = changedMembers({ customer: before.customer, ...before.configuration }, { customer: after.customer, ...after.configuration });
  return okmChange('okm.configured', serialNumber, after.customer, changed);
}

/** okm.deleted: the configuration the OKM had. */
export const okmDeleted = (serialNumber: string, before: OkmAuditState): Change => okmChange('okm.deleted', serialNumber, before.customer, { before: before.configuration });
