import { sql } from 'kysely';
import type { AnyDb } from '../../src/db/migrate.ts';
import { GROUP_COLUMNS } from '../../src/okm/fleet-summary-counts.ts';

type Group = Record<(typeof GROUP_COLUMNS)[number], unknown> & { okms: number };

const byKey = (groups: Group[]) => groups.map((group) => JSON.stringify(GROUP_COLUMNS.map((column) => group[column] ?? null)) + ` ${group.okms}`).sort();

/** The groups the summary reads: the counts plus the deltas not folded yet, groups of no OKM left out. */
export async function keptGroups(db: AnyDb): Promise<string[]> {
  const { rows } = await sql<Group>`
    SELECT ${sql.raw(GROUP_COLUMNS.join(', '))}, sum(okms) AS okms FROM (
      SELECT ${sql.raw(GROUP_COLUMNS.join(', '))}, okms FROM fleet_summary_counts
      UNION ALL SELECT ${sql.raw(GROUP_COLUMNS.join(', '))}, okms FROM fleet_summary_deltas
    ) AS kept GROUP BY ${sql.raw(GROUP_COLUMNS.join(', '))}`.execute(db);
  return byKey(rows.map((row) => ({ ...row, customer_id: row.customer_id === null ? null : Number(row.customer_id), okms: Number(row.okms) })).filter((row) => row.okms !== 0));
}

/** The same groups counted afresh from the okms rows, the flags worked out here rather than in SQL. */
export async function freshGroups(db: AnyDb): Promise<string[]> {
  const okms = await db
    .selectFrom('okms')
    .select(['customer_id', 'last_correction', 'firmware_version', 'batch_key_firmware_version', 'wireless_key_firmware_version', 'last_sync_time', 'overdue_at'])
    .execute();
  const groups = new Map<string, Group>();
  for (const okm of okms) {
    const group = {
      customer_id: okm.customer_id === null ? null : Number(okm.customer_id),
      last_correction: okm.last_correction,
      firmware_version: okm.firmware_version,
      batch_key_firmware_version: okm.batch_key_firmware_version,
      wireless_key_firmware_version: okm.wireless_key_firmware_version,
      never_polled: okm.last_sync_time === null ? 1 : 0,
      marked_overdue: okm.overdue_at !== null && Number(okm.overdue_at) > 0 ? 1 : 0,
      okms: 0,
    };
    const key = JSON.stringify(GROUP_COLUMNS.map((column) => group[column]));
    (groups.get(key) ?? groups.set(key, group).get(key)!).okms++;
  }
  return byKey([...groups.values()]);
}

