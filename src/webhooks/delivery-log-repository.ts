import type { Selectable } from 'kysely';
import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import type { StatusDeliveryFailuresTable, StatusEventsTable } from '../db/schema.ts';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';

/*
 * An OKM's status-event delivery log as the API shows it: its queue rows (one per subscriber
 * URL) and the failed attempts kept in status_delivery_failures, and how long those are kept.
 * The rows are written by the dispatcher's outcomes (queue-repository.ts); the fleet events'
 * log is fleet-deliveries-repository.ts.
 */

/** Removes delivery-log entries older than `before`. */
export async function pruneDeliveryFailures(db: Db, before: number): Promise<void> {
  await db.deleteFrom('status_delivery_failures').where('attempted_at', '<', before).execute();
}

export interface DeliveryLog {
  /** When a poll queued the OKM's newest status, while the dispatcher has not fanned it out to the subscriptions. */
  queuedAt: number | null;
  subscriptions: Selectable<StatusEventsTable>[];
}

/** An OKM's queue rows (one per URL: at most MAX_STATUS_URLS) and its status not fanned out yet. */
export async function deliveryLog(db: Db, serialNumber: string): Promise<DeliveryLog> {
  const [okm, subscriptions] = await Promise.all([
    db.selectFrom('okm_polls').select('status_queued_at').where('serial_number', '=', serialNumber).executeTakeFirst(),
    db.selectFrom('status_events').selectAll().where('okm_serial', '=', serialNumber).orderBy('url').execute(),
  ]);
  const queuedAt = okm?.status_queued_at ?? null;
  return { queuedAt: queuedAt === null ? null : Number(queuedAt), subscriptions };
}

/** An OKM's failed delivery attempts page by id, newest first. */
export const DELIVERY_FAILURE_PAGES = cursorList<[id: number]>('okm-delivery-failures', ['integer']);

/**
 * One page of an OKM's failed delivery attempts, newest first, before the cursor's id: a
 * range of status_delivery_failures_okm_idx (okm_serial, id) walked backwards from the cursor.
 */
export async function listDeliveryFailures(db: Db, serialNumber: string, page: CursorPageRequest<[number]>): Promise<CursorPage<Selectable<StatusDeliveryFailuresTable>>> {
  let rows = db.selectFrom('status_delivery_failures').selectAll().where('okm_serial', '=', serialNumber).orderBy('id', 'desc').limit(page.limit + 1);
  if (page.after !== undefined) rows = rows.where(afterKey(['id'], page.after, 'desc'));
  return DELIVERY_FAILURE_PAGES.page(await rows.execute(), page.limit, (row) => [row.id]);
}
