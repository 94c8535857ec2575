import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import { JsonText } from '../shared/raw-json.ts';

/** One audit record as the OKM sent it (any JSON value), with the time keyfleet received it. */
export interface AuditRecord {
  id: number;
  serialNumber: string;
  receivedAt: number;
  /** The record as JSON.parse reads it. */
  readonly record: unknown;
  /** The record's JSON text as stored: as the OKM sent it. */
  recordJson: string;
}

/** An OKM's audit records page by id, the order they arrived in. */
export const AUDIT_RECORD_PAGES = cursorList<[id: number]>('okm-audit-records', ['integer']);

// Three parameters a row: well under SQLite's 32 766 and PostgreSQL's 65 535 bound parameters.
const ROWS_PER_INSERT = 1000;

/**
 * Appends records in one transaction (all or none); returns false, storing nothing, when
 * the OKM does not exist. Records are never updated or deleted here. A JsonText record is
 * stored as its text (as the OKM sent it); any other value as JSON.stringify writes it.
 */
export async function appendAuditRecords(db: Db, serialNumber: string, records: unknown[], now: number): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const okm = await trx.selectFrom('okms').select('serial_number').where('serial_number', '=', serialNumber).executeTakeFirst();
    if (!okm) return false;
    for (let start = 0; start < records.length; start += ROWS_PER_INSERT) {
      const rows = records
        .slice(start, start + ROWS_PER_INSERT)
        .map((record) => ({ okm_serial: serialNumber, received_at: now, record: record instanceof JsonText ? record.text : JSON.stringify(record) }));
      await trx.insertInto('okm_audit_records').values(rows).execute();
    }
    return true;
  });
}

/** The same records newest first (the console's order): a cursor of either order is refused by the other. */
export const AUDIT_RECORD_PAGES_NEWEST_FIRST = cursorList<[id: number]>('okm-audit-records-newest-first', ['integer']);

/** Which of an OKM's audit records a page holds: when keyfleet received them, and in which order. */
export interface AuditRecordFilter {
  newestFirst?: boolean;
  /** Received at or after (epoch ms). */
  since?: number;
  /** Received before (epoch ms). */
  until?: number;
}

/**
 * One page of the OKM's audit records in the order they arrived (or newest first), after the
 * cursor's id: a range of the (okm_serial, id) index entered at the cursor, so that a page keeps
 * its content while new records are appended and a deep page costs what the first does; only
 * the page's rows are read. A time filter is checked on the rows of that one OKM's range as
 * it is walked: a window far from the cursor's end reads the OKM's records outside it too (at
 * most the OKM's own records, never another's), which is why no index on received_at was
 * added: it would cost every audit intake of every OKM an index entry per record.
 */
export async function listAuditRecords(db: Db, serialNumber: string, page: CursorPageRequest<[number]>, filter: AuditRecordFilter = {}): Promise<CursorPage<AuditRecord>> {
  const direction = filter.newestFirst ? 'desc' : 'asc';
  let rows = db.selectFrom('okm_audit_records').selectAll().where('okm_serial', '=', serialNumber).orderBy('id', direction).limit(page.limit + 1);
  if (page.after !== undefined) rows = rows.where(afterKey(['id'], page.after, direction));
  if (filter.since !== undefined) rows = rows.where('received_at', '>=', filter.since);
  if (filter.until !== undefined) rows = rows.where('received_at', '<', filter.until);
  // The answer writes each record's stored text; it is parsed only if read as a value.
  const records = (await rows.execute()).map(
    (row): AuditRecord => ({
      id: row.id,
      serialNumber: row.okm_serial,
      receivedAt: row.received_at,
      get record() {
        return JSON.parse(row.record) as unknown;
      },
      recordJson: row.record,
    }),
  );
  return (filter.newestFirst ? AUDIT_RECORD_PAGES_NEWEST_FIRST : AUDIT_RECORD_PAGES).page(records, page.limit, (record) => [record.id]);
}
