import type { AnyDb } from './migration-context.ts';

/** OKMs read per statement of the back-fill, and rows written per insert (under both databases' limits of bound parameters). */
const BACK_FILL_CHUNK = 500;

/**
 * `GET /api/v1/okms?subscriber_url=` (contract §15) lists the OKMs whose status URLs hold
 * one URL. okms.status_urls is a JSON array in a text column, which no portable index can look
 * into, so each URL of each OKM is also a row here: (url, serial_number) is an ordinary index
 * range in the list's order. The admin write path that sets an OKM's status URLs rewrites its
 * rows in the same transaction; the config poll never writes them. Filled here from the OKMs
 * stored so far, read in serial number order a chunk at a time (the same statements on both
 * databases: no JSON functions, which differ between them).
 */
export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .createTable('okm_subscriber_urls')
    .addColumn('serial_number', 'text', (c) => c.notNull().references('okms.serial_number').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('okm_subscriber_urls_pkey', ['serial_number', 'url'])
    .execute();
  await db.schema.createIndex('okm_subscriber_urls_url_idx').on('okm_subscriber_urls').columns(['url', 'serial_number']).execute();

  let after = '';
  for (;;) {
    const okms: { serial_number: string; status_urls: string }[] = await db
      .selectFrom('okms')
      .select(['serial_number', 'status_urls'])
      .where('serial_number', '>', after)
      .orderBy('serial_number')
      .limit(BACK_FILL_CHUNK)
      .execute();
    if (okms.length === 0) return;
    after = okms.at(-1)!.serial_number;
    const rows = okms.flatMap((okm) => [...new Set(JSON.parse(okm.status_urls) as string[])].map((url) => ({ serial_number: okm.serial_number, url })));
    for (let start = 0; start < rows.length; start += BACK_FILL_CHUNK) await db.insertInto('okm_subscriber_urls').values(rows.slice(start, start + BACK_FILL_CHUNK)).execute();
  }
}
