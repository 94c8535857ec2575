import type { Selectable } from 'kysely';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import type { OkmMessagesTable } from '../db/schema.ts';
import { JsonText } from '../shared/raw-json.ts';

/** A buffered message for one OKM; delivered ones stay as history (deliveredAt set). */
export interface OkmMessage {
  id: number;
  serialNumber: string;
  type: string;
  /** The payload as keyfleet reads it (JSON.parse): what the device is sent. */
  readonly payload: unknown;
  /** The payload's JSON text as stored: as sent, for a payload queued through the admin API. */
  payloadJson: string;
  createdAt: number;
  deliveredAt: number | null;
}

function toMessage(row: Selectable<OkmMessagesTable>): OkmMessage {
  return {
    id: row.id,
    serialNumber: row.okm_serial,
    type: row.type,
    // Parsed only where it is read as a value (the poll that delivers it); answers write the stored text.
    get payload() {
      return JSON.parse(row.payload) as unknown;
    },
    payloadJson: row.payload,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
  };
}

/** An OKM's messages page by id: oldest first, the order its polls receive them in. */
export const MESSAGE_PAGES = cursorList<[id: number]>('okm-messages', ['integer']);

/**
 * One page of the OKM's messages, oldest first, after the cursor's id: a range of
 * okm_messages_okm_idx (okm_serial, id) entered at the cursor. `pending` true: only those not
 * delivered yet, a range of okm_messages_pending_idx (okm_serial, delivered_at, id) with
 * delivered_at NULL; false: only the delivered ones.
 */
export async function listMessages(db: Db, serialNumber: string, page: CursorPageRequest<[number]>, pending?: boolean): Promise<CursorPage<OkmMessage>> {
  let rows = db.selectFrom('okm_messages').selectAll().where('okm_serial', '=', serialNumber).orderBy('id').limit(page.limit + 1);
  if (pending !== undefined) rows = rows.where('delivered_at', pending ? 'is' : 'is not', null);
  if (page.after !== undefined) rows = rows.where(afterKey(['id'], page.after));
  return MESSAGE_PAGES.page((await rows.execute()).map(toMessage), page.limit, (message) => [message.id]);
}

/**
 * Queues a message that the OKM receives on one of its next polls (oldest first, one per
 * poll). The OKM must exist: the foreign key rejects an unknown serial number. A JsonText
 * payload is stored as its text (as sent); any other value as JSON.stringify writes it.
 */
export async function queueMessage(
  db: Db,
  serialNumber: string,
  type: string,
  payload: unknown = null,
  now: number = Date.now(),
): Promise<OkmMessage> {
  const row = await db
    .insertInto('okm_messages')
    .values({ okm_serial: serialNumber, type, payload: payload instanceof JsonText ? payload.text : JSON.stringify(payload ?? null), created_at: now, delivered_at: null })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toMessage(row);
}

/** Marks a pending message delivered; false when it was already (a concurrent poll claimed it). */
export async function markMessageDelivered(db: Db, id: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('okm_messages')
    .set({ delivered_at: now })
    .where('id', '=', id)
    .where('delivered_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function findMessage(db: Db, id: number): Promise<OkmMessage | undefined> {
  const row = await db.selectFrom('okm_messages').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toMessage(row);
}
