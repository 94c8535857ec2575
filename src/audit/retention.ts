import type { Db } from '../db/database.ts';

const DAY_MS = 86_400_000;
/** Entries one statement deletes at most: a long-kept trail is pruned in steps, never in one long transaction. */
const PRUNE_BATCH = 10_000;

/**
 * AUDIT_RETENTION_DAYS: deletes the entries older than the retention, but only down to a signed
 * checkpoint, which stays as the anchor the rest of the chain is verified from (contract
 * §18.5: "pruning leaves the chain verifiable from a signed anchor"). An entry younger than the
 * retention is never deleted, so entries past the newest old checkpoint wait for the next one.
 * Returns how many entries it deleted (at most PRUNE_BATCH a call).
 */
export async function pruneAuditTrail(db: Db, retentionDays: number, now = Date.now()): Promise<number> {
  const cutoff = now - retentionDays * DAY_MS;
  const anchor = await db
    .selectFrom('audit_checkpoints')
    .innerJoin('audit_entries', 'audit_entries.seq', 'audit_checkpoints.seq')
    .select((eb) => eb.fn.max('audit_checkpoints.seq').as('seq'))
    .where('audit_entries.time', '<', cutoff)
    .executeTakeFirst();
  if (anchor?.seq === null || anchor?.seq === undefined) return 0;
  const oldest = await db.selectFrom('audit_entries').select('seq').orderBy('seq').limit(1).executeTakeFirst();
  if (oldest?.seq === null || oldest?.seq === undefined) return 0;
  const through = Math.min(Number(anchor.seq), Number(oldest.seq) + PRUNE_BATCH - 1);
  const result = await db.deleteFrom('audit_entries').where('seq', '<=', through).executeTakeFirst();
  return Number(result.numDeletedRows);
}
