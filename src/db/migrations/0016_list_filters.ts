import { sql } from 'kysely';
import type { AnyDb } from './migration-context.ts';
import { MAX_BUCKET_ENTRIES } from './frozen/page-buckets.ts';

/**
 * Filtered pages of the OKM list from indexes alone (issue 14). A page of `state=drifting` or
 * `firmware_version=` walked the serial number index and read each OKM's row to test it, and
 * counted its total from a skip-scan of okms_summary_idx; these indexes hold exactly the OKMs
 * that match, in serial number order, for the whole fleet and per customer, so that the walk
 * to the page and the count are walks of a range of one index. A drifting OKM's entries change
 * only when it starts or stops drifting, a firmware entry only when the firmware does.
 *
 * The OKM list joins each OKM's ACL through acls_okm_idx; with most ACLs unlinked, SQLite's
 * ANALYZE counted their NULLs as one value shared by every row, judged the index useless and
 * scanned the ACLs for each OKM of the page (a second a page with 100 000 ACLs; the list
 * bench). The index now holds only the linked ACLs, still unique, and `okm_serial = ?`
 * implies the index's condition, so every look-up of an OKM's ACL uses it.
 *
 * And the page buckets grown past the maximum, for the bucket keeper's look-up, which then
 * costs nothing however many buckets the lists hold.
 */
export async function up(db: AnyDb): Promise<void> {
  const drifting = sql.ref('last_correction');
  // last_correction too, though the condition implies it, so that SQLite reads no row to test it.
  await db.schema.createIndex('okms_drifting_idx').on('okms').columns(['serial_number', 'last_correction']).where(drifting, 'is not', null).execute();
  await db.schema
    .createIndex('okms_customer_drifting_idx')
    .on('okms')
    .columns(['customer_id', 'serial_number', 'last_correction'])
    .where(drifting, 'is not', null)
    .execute();
  await db.schema.createIndex('okms_firmware_idx').on('okms').columns(['firmware_version', 'serial_number']).execute();
  await db.schema.createIndex('okms_customer_firmware_idx').on('okms').columns(['customer_id', 'firmware_version', 'serial_number']).execute();
  await db.schema.dropIndex('acls_okm_idx').execute();
  await db.schema.createIndex('acls_okm_idx').on('acls').column('okm_serial').unique().where(sql.ref('okm_serial'), 'is not', null).execute();
  await db.schema
    .createIndex('page_buckets_oversized_idx')
    .on('page_buckets')
    .columns(['list', 'scope', 'lower_key'])
    .where(sql.ref('entries'), '>', sql.lit(MAX_BUCKET_ENTRIES))
    .execute();
}
