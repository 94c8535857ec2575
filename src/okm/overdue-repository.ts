import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import { emitFleetEvents } from '../webhooks/fleet-events.ts';

/** OKMs one sweep transaction marks at most. */
export const OVERDUE_SWEEP_BATCH = 500;

/**
 * Marks up to `limit` OKMs past their due_by time and not marked yet (overdue_at set to now)
 * and emits okm.overdue for each (all queued by one multi-row INSERT), in one transaction.
 * It reads only the entries of okms_due_by_idx that are past due, so its cost follows the
 * OKMs that fell silent, not the fleet. Several sweepers at once mark disjoint OKMs: rows another transaction holds (a
 * sweeper, a batch of polls) are skipped, and the UPDATE checks again that each row is still
 * unmarked and past due (a poll may have moved due_by since the selection). Returns how
 * many OKMs it marked.
 */
export async function markOverdueOkms(db: Db, dialect: DialectStrategy, now: number, limit = OVERDUE_SWEEP_BATCH): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const pastDue = tx.selectFrom('okms').select('serial_number').where('overdue_at', 'is', null).where('due_by', '<', now).orderBy('due_by').limit(limit);
    const marked = await tx
      .updateTable('okms')
      .set({ overdue_at: now })
      .where('serial_number', 'in', dialect.skipRowsClaimedByOthers(pastDue))
      .where('overdue_at', 'is', null)
      .where('due_by', '<', now)
      .returning(['serial_number', 'customer_id', 'last_sync_time', 'due_by', 'last_ip'])
      .execute();
    const events = marked.map((okm) => ({
      type: 'okm.overdue' as const,
      customerId: okm.customer_id,
      data: {
        serial_number: okm.serial_number,
        last_sync_time: new Date(Number(okm.last_sync_time)).toISOString(),
        overdue_since: new Date(Number(okm.due_by)).toISOString(),
        last_ip: okm.last_ip,
      },
    }));
    await emitFleetEvents(tx, events, now);
    return marked.length;
  });
}

/** Marks every OKM past due (in batches of OVERDUE_SWEEP_BATCH); returns how many. */
export async function sweepOverdueOkms(db: Db, dialect: DialectStrategy, now = Date.now()): Promise<number> {
  let total = 0;
  for (let marked = OVERDUE_SWEEP_BATCH; marked === OVERDUE_SWEEP_BATCH; total += marked) marked = await markOverdueOkms(db, dialect, now);
  return total;
}
