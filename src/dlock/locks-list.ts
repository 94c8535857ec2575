import type { Db } from '../db/database.ts';
import { pagePosition } from '../db/page-buckets.ts';
import { ALL_SCOPE, customerScope, DLOCK_LIST } from '../db/paged-lists.ts';
import type { KeyCertificate } from './key-certificate.ts';

/** An enrolled DLock as the locks list shows it: never its key. */
export interface LockSummary {
  serialNo: string;
  lockType: string;
  certificateName: string;
  customerName: string;
  enrolledAt: number;
}

/**
 * One page (from 1) of the enrolled DLocks, by serial number, and how many there are in all;
 * customerId undefined: every customer's. The page's serial numbers come from an index alone,
 * from the bucket that holds the page on (page-buckets.ts).
 */
export async function listLocks(db: Db, customerId: number | undefined, page: number, perPage: number): Promise<{ locks: LockSummary[]; total: number }> {
  const serialsOfScope = (trx: Db) => {
    const serials = trx.selectFrom('dlocks').select('serial_no as key');
    return customerId === undefined ? serials : serials.where('customer_id', '=', customerId);
  };
  const position = await pagePosition(db, DLOCK_LIST, customerId === undefined ? ALL_SCOPE : customerScope(customerId), (page - 1) * perPage);
  let pageSerials = serialsOfScope(db).orderBy('serial_no').limit(perPage).offset(position.skip);
  if (position.from !== null) pageSerials = pageSerials.where('serial_no', '>=', String(position.from));
  const found = await db
    .selectFrom('dlocks')
    .innerJoin('customers', 'customers.id', 'dlocks.customer_id')
    .select(['dlocks.serial_no', 'dlocks.certificate_name', 'dlocks.certificate_json', 'dlocks.created_at', 'customers.name as customer_name'])
    .where('dlocks.serial_no', 'in', pageSerials)
    .orderBy('dlocks.serial_no')
    .execute();
  return {
    locks: found.map((row) => ({
      serialNo: row.serial_no,
      // The stored certificate has no key member; only its lock type is read from it.
      lockType: (JSON.parse(row.certificate_json) as Omit<KeyCertificate, 'key'>).data.lock_type,
      certificateName: row.certificate_name,
      customerName: row.customer_name,
      enrolledAt: row.created_at,
    })),
    total: position.total,
  };
}
