import type { Db } from '../db/database.ts';
import { pagePosition } from '../db/page-buckets.ts';
import { AUDIT_RECORD_LIST } from '../db/paged-lists.ts';

/** One audit record as the OKM sent it (any JSON value), with the time keyfleet received it. */
export interface AuditRecord {
  id: number;
  serialNumber: string;
  receivedAt: number;
  record: unknown;
}

export interface AuditRecordPage {
  records: AuditRecord[];
  total: number;
}

// Three parameters a row: well under SQLite's 32 766 and PostgreSQL's 65 535 bound parameters.
const ROWS_PER_INSERT = 1000;

/**
 * Appends records in one transaction (all or none); returns false, storing nothing, when
 * the OKM does not exist. Records are never updated or deleted here.
 */
export async function appendAuditRecords(db: Db, serialNumber: string, records: unknown[], now: number): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const okm = await trx.selectFrom('okms').select('serial_number').where('serial_number', '=', serialNumber).executeTakeFirst();
    if (!okm) return false;
    for (let start = 0; start < records.length; start += ROWS_PER_INSERT) {
      const rows = records
        .slice(start, start + ROWS_PER_INSERT)
        .map((record) => ({ okm_serial: serialNumber, received_at: now, record: JSON.stringify(record) }));
      await trx.insertInto('okm_audit_records').values(rows).execute();
    }
    return true;
  });
}

/**
 * One page (from 1) of the OKM's audit records in the order they arrived, so that a page
 * keeps its content while new records are appended. The page's ids come from the
 * (okm_serial, id) index, walked from the bucket that holds the page (page-buckets.ts), and
 * only their rows are read; the total is the sum of the OKM's bucket counts.
 */
export async function listAuditRecords(db: Db, serialNumber: string, page: number, perPage: number): Promise<AuditRecordPage> {
  const position = await pagePosition(db, AUDIT_RECORD_LIST, serialNumber, (page - 1) * perPage);
  let pageIds = db.selectFrom('okm_audit_records').select('id').where('okm_serial', '=', serialNumber).orderBy('id').limit(perPage).offset(position.skip);
  if (position.from !== null) pageIds = pageIds.where('id', '>=', Number(position.from));
  const rows = await db.selectFrom('okm_audit_records').selectAll().where('id', 'in', pageIds).orderBy('id').execute();
  return {
    records: rows.map((row) => ({
      id: row.id,
      serialNumber: row.okm_serial,
      receivedAt: row.received_at,
      record: JSON.parse(row.record) as unknown,
    })),
    total: position.total,
  };
}
