import { findCustomerByName, type Customer } from '../customers/repository.ts';
import { badRequest, conflict, forbidden } from '../http/errors.ts';
import { findOwnedOkm, lockOkm, matchingSerialNumbers } from './admin-repository.ts';
import {
  assignLockedOkm,
  checkMessagePayload,
  listFilterOf,
  patchLockedOkm,
  queueMessageLocked,
  removeStatusUrlLocked,
  type OkmChangeRequest,
  type OkmFilterQuery,
  type OkmRequest,
} from './admin-service.ts';
import type { OkmPatchBody } from './schemas.ts';

/** What a bulk action does to each OKM it selects. */
export type BulkAction =
  | { type: 'configure'; settings: OkmPatchBody }
  | { type: 'assign'; customer: string | null }
  | { type: 'queue_message'; message: { type: string; payloadJson: string } }
  | { type: 'remove_subscriber_url'; url: string };

export interface BulkSelection {
  /** The OKMs selected, by serial number (all of them: a selection is at most `limit`). */
  serialNumbers: string[];
  /** Most OKMs one bulk action may change (BULK_ACTION_MAX). */
  limit: number;
  /** The selection holds more than `limit` OKMs: serialNumbers holds the first `limit`, and applying is refused. */
  overLimit: boolean;
  applied: boolean;
}

/**
 * The filter an action selects with: the list's filters, and for remove_subscriber_url only
 * the OKMs holding that URL (the list's subscriber_url filter, which the action's URL sets).
 */
function filterQueryOf(filter: OkmFilterQuery, action: BulkAction): OkmFilterQuery {
  if (action.type !== 'remove_subscriber_url') return filter;
  if (filter.subscriber_url !== undefined && filter.subscriber_url !== action.url) {
    throw badRequest('filter.subscriber_url: must be the action\'s url, or absent (remove_subscriber_url selects the OKMs holding its url)');
  }
  return { ...filter, subscriber_url: action.url };
}

/** Only an admin moves OKMs between customers (contract §10); the customer named must exist. */
async function checkAction(request: OkmRequest, action: BulkAction): Promise<Customer | null> {
  if (action.type === 'queue_message') checkMessagePayload(action.message.payloadJson);
  if (action.type !== 'assign') return null;
  if (!request.principal.isAdmin) throw forbidden('action.type: only an admin token may assign OKMs to a customer');
  if (action.customer === null) return null;
  const customer = await findCustomerByName(request.db, action.customer);
  if (!customer) throw badRequest(`action.customer: unknown customer ${action.customer}`);
  return customer;
}

async function select(request: OkmRequest, filter: OkmFilterQuery, action: BulkAction, limit: number): Promise<{ serialNumbers: string[]; overLimit: boolean }> {
  const selected = await matchingSerialNumbers(request.db, await listFilterOf(request, filterQueryOf(filter, action)), limit);
  return { serialNumbers: selected.slice(0, limit), overLimit: selected.length > limit };
}

/** The preview: which OKMs the action would change now (the first `limit`, and whether there are more); nothing changes. */
export async function previewBulkAction(request: OkmRequest, filter: OkmFilterQuery, action: BulkAction, limit: number): Promise<BulkSelection> {
  await checkAction(request, action);
  return { ...(await select(request, filter, action, limit)), limit, applied: false };
}

/**
 * Applies the action to every OKM the filter selects, in one transaction: all of them change
 * or none does. Each OKM's change is recorded as the single-OKM route records it
 * (okm.configured, okm.assigned, okm.message_queued). A selection of more than `limit` OKMs is
 * refused with 409; so is one that is not exactly `expected` (the preview's serial numbers),
 * when given. The OKMs' row locks are taken in serial-number order, as every multi-OKM writer does.
 */
export async function applyBulkAction(request: OkmChangeRequest, filter: OkmFilterQuery, action: BulkAction, limit: number, expected?: readonly string[]): Promise<BulkSelection> {
  const customer = await checkAction(request, action);
  const listFilter = await listFilterOf(request, filterQueryOf(filter, action));
  return request.db.transaction().execute(async (trx) => {
    const selected = await matchingSerialNumbers(trx, listFilter, limit);
    if (selected.length > limit) throw conflict(`filter: selects more than ${limit} OKMs (BULK_ACTION_MAX); narrow it, or apply the action to part of them at a time`);
    if (expected !== undefined) {
      const wanted = [...expected].sort();
      const same = wanted.length === selected.length && wanted.every((serial, index) => serial === selected[index]);
      if (!same) throw conflict(`serial_numbers: the filter now selects ${selected.length} OKMs, not the ${wanted.length} previewed; preview again`);
    }
    const changed: string[] = [];
    const changeRequest: OkmChangeRequest = { ...request, db: trx };
    for (const serialNumber of selected) {
      if (!(await lockOkm(trx, serialNumber))) continue;
      const current = await findOwnedOkm(trx, serialNumber);
      // Read again under its lock: an OKM that left the selection meanwhile is passed over.
      if (!current || (listFilter.customerId !== undefined && current.okm.customerId !== listFilter.customerId)) continue;
      switch (action.type) {
        case 'configure':
          await patchLockedOkm(changeRequest, trx, current, action.settings);
          break;
        case 'assign':
          await assignLockedOkm(changeRequest, trx, serialNumber, customer);
          break;
        case 'queue_message':
          await queueMessageLocked(changeRequest, trx, current, action.message.type, action.message.payloadJson);
          break;
        case 'remove_subscriber_url':
          if (!(await removeStatusUrlLocked(changeRequest, trx, current, action.url))) continue;
          break;
      }
      changed.push(serialNumber);
    }
    return { serialNumbers: changed, limit, overLimit: false, applied: true };
  });
}
