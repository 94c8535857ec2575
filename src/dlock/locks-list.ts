import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import type { KeyCertificate } from './key-certificate.ts';

/** An enrolled DLock as the locks list shows it: never its key. */
export interface LockSummary {
  serialNo: string;
  lockType: string;
  certificateName: string;
  customerName: string;
  enrolledAt: number;
}

/** The locks list pages by serial number, the primary key, which dlocks_customer_idx ends with. */
export const LOCK_PAGES = cursorList<[serialNo: string]>('locks', ['string']);

/**
 * One page of the enrolled DLocks, by serial number, after the cursor's; customerId
 * undefined: every customer's. The page's serial numbers are a range of an index entered at
 * the cursor (dlocks_customer_idx (customer_id, serial_no) for a customer, the primary key for
 * every customer), and only their rows are read.
 */
export async function listLocks(db: Db, customerId: number | undefined, page: CursorPageRequest<[string]>): Promise<CursorPage<LockSummary>> {
  let pageSerials = db.selectFrom('dlocks').select('serial_no').orderBy('serial_no').limit(page.limit + 1);
  if (customerId !== undefined) pageSerials = pageSerials.where('customer_id', '=', customerId);
  if (page.after !== undefined) pageSerials = pageSerials.where(afterKey(['serial_no'], page.after));
  const found = await db
    .selectFrom('dlocks')
    .innerJoin('customers', 'customers.id', 'dlocks.customer_id')
    .select(['dlocks.serial_no', 'dlocks.certificate_name', 'dlocks.certificate_json', 'dlocks.created_at', 'customers.name as customer_name'])
    .where('dlocks.serial_no', 'in', pageSerials)
    .orderBy('dlocks.serial_no')
    .execute();
  const locks = found.map((row) => ({
    serialNo: row.serial_no,
    // The stored certificate has no key member; only its lock type is read from it.
    lockType: (JSON.parse(row.certificate_json) as Omit<KeyCertificate, 'key'>).data.lock_type,
    certificateName: row.certificate_name,
    customerName: row.customer_name,
    enrolledAt: row.created_at,
  }));
  return LOCK_PAGES.page(locks, page.limit, (lock) => [lock.serialNo]);
}
