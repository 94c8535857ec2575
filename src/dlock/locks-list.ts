import type { Db } from '../db/database.ts';
import type { KeyCertificate } from './key-certificate.ts';

/** An enrolled DLock as the locks list shows it: never its key. */
export interface LockSummary {
  serialNo: string;
  lockType: string;
  certificateName: string;
  customerName: string;
  enrolledAt: number;
}

/** One page (from 1) of the enrolled DLocks, by serial number, and how many there are in all; customerId undefined: every customer's. */
export async function listLocks(db: Db, customerId: number | undefined, page: number, perPage: number): Promise<{ locks: LockSummary[]; total: number }> {
  let rows = db
    .selectFrom('dlocks')
    .innerJoin('customers', 'customers.id', 'dlocks.customer_id')
    .select(['dlocks.serial_no', 'dlocks.certificate_name', 'dlocks.certificate_json', 'dlocks.created_at', 'customers.name as customer_name'])
    .orderBy('dlocks.serial_no')
    .limit(perPage)
    .offset((page - 1) * perPage);
  let count = db.selectFrom('dlocks').select((eb) => eb.fn.countAll<number | string>().as('total'));
  if (customerId !== undefined) {
    rows = rows.where('dlocks.customer_id', '=', customerId);
    count = count.where('dlocks.customer_id', '=', customerId);
  }
  const [found, counted] = await Promise.all([rows.execute(), count.executeTakeFirstOrThrow()]);
  return {
    locks: found.map((row) => ({
      serialNo: row.serial_no,
      // The stored certificate has no key member; only its lock type is read from it.
      lockType: (JSON.parse(row.certificate_json) as Omit<KeyCertificate, 'key'>).data.lock_type,
      certificateName: row.certificate_name,
      customerName: row.customer_name,
      enrolledAt: row.created_at,
    })),
    total: Number(counted.total),
  };
}
