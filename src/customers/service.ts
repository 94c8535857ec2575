import { changedMembers } from '../audit/changed-members.ts';
import { recordChange, type ChangeSource } from '../audit/trail.ts';
import type { Db } from '../db/database.ts';
import { badRequest, conflict, notFound } from '../http/errors.ts';
import { CUSTOMER_NAME_PATTERN } from '../shared/identifiers.ts';
import { retryPolicyToWire, type RetryPolicy, type RetryPolicyWire } from '../shared/retry-policy.ts';
import { isTimeZone } from '../shared/time-zone.ts';
import { insertCustomer, setCustomerRetryPolicy, setCustomerTimeZone, type Customer } from './repository.ts';

/** A customer's settings as the audit trail records them (the retry policy as the API writes it, null: the fleet's). */
interface CustomerSettings {
  time_zone: string | null;
  firmware_retry_policy: RetryPolicyWire | null;
}

/** What a settings update asks for: an absent member stays as it is. */
export interface CustomerSettingsUpdate {
  timeZone?: string | null;
  retryPolicy?: RetryPolicy | null;
}

const customerEntity = (name: string) => ({ type: 'customer' as const, id: name });

const CUSTOMER_NAME = new RegExp(CUSTOMER_NAME_PATTERN);

/** A time zone that is not IANA's is a 400. */
function checkTimeZone(timeZone: string | null): void {
  if (timeZone !== null && !isTimeZone(timeZone)) throw badRequest(`time_zone: expected an IANA time zone such as Europe/Berlin, got "${timeZone}"`);
}

const customerNotFound = (name: string) => notFound(`customer ${name} not found`);

/** Creates a customer; a malformed name or time zone is a 400, a name already taken a 409. */
export async function createCustomer(db: Db, name: string, timeZone: string | null = null): Promise<Customer> {
  if (!CUSTOMER_NAME.test(name)) {
    throw badRequest(`name: expected 1-64 characters of A-Z a-z 0-9 . _ -, got "${name}"`);
  }
  checkTimeZone(timeZone);
  const created = await insertCustomer(db, name, timeZone);
  if (!created) throw conflict(`customer ${name} already exists`);
  return created;
}

/** createCustomer with its audit entry, in one transaction. */
export function createCustomerRecorded(db: Db, source: ChangeSource, name: string, timeZone: string | null = null): Promise<Customer> {
  return db.transaction().execute(async (trx) => {
    const customer = await createCustomer(trx, name, timeZone);
    await recordChange(trx, source, { action: 'customer.created', customer: customer.name, entity: customerEntity(customer.name), after: { name: customer.name, time_zone: timeZone } });
    return customer;
  });
}

/** The customer's settings as stored, its row locked for the rest of the transaction (a no-op update, portable to every database); 404 when there is none. */
async function lockCustomerSettings(trx: Db, name: string): Promise<CustomerSettings> {
  const row = await trx
    .updateTable('customers')
    .set((eb) => ({ time_zone: eb.ref('time_zone') }))
    .where('name', '=', name)
    .returning(['time_zone', 'firmware_retry_policy'])
    .executeTakeFirst();
  if (!row) throw customerNotFound(name);
  return { time_zone: row.time_zone, firmware_retry_policy: row.firmware_retry_policy === null ? null : (JSON.parse(row.firmware_retry_policy) as RetryPolicyWire) };
}

/**
 * Changes a customer's settings, all or none, with one audit entry whose before and after hold
 * the settings whose value changed (none, for an update that sets what was there).
 */
export async function updateCustomerSettings(db: Db, source: ChangeSource, name: string, update: CustomerSettingsUpdate): Promise<void> {
  // Before the customer is looked up: a bad time zone is a 400 whether or not the customer exists.
  if (update.timeZone !== undefined) checkTimeZone(update.timeZone);
  await db.transaction().execute(async (trx) => {
    const before = await lockCustomerSettings(trx, name);
    const after: CustomerSettings = { ...before };
    if (update.timeZone !== undefined) {
      if (!(await setCustomerTimeZone(trx, name, update.timeZone))) throw customerNotFound(name);
      after.time_zone = update.timeZone;
    }
    if (update.retryPolicy !== undefined) {
      if (!(await setCustomerRetryPolicy(trx, name, update.retryPolicy))) throw customerNotFound(name);
      after.firmware_retry_policy = update.retryPolicy === null ? null : retryPolicyToWire(update.retryPolicy);
    }
    await recordChange(trx, source, { action: 'customer.updated', customer: name, entity: customerEntity(name), ...changedMembers({ ...before }, { ...after }) });
  });
}
