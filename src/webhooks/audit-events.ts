import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { auditEntriesAfter } from '../audit/repository.ts';
import type { Db } from '../db/database.ts';
import { repeatStep } from '../db/repeating-step.ts';
import { anyEndpointSubscribes, emitFleetEvents, type FleetEvent } from './fleet-events.ts';

/** How often each server process looks for audit entries to ship. */
const SHIPPING_INTERVAL_MS = 1_000;
/** Entries one step ships at most; the next step follows at once while more wait. */
const ENTRIES_PER_STEP = 500;

/**
 * The `audit.entry` fleet event (contract §18): each audit entry, as the audit log shows it,
 * queued to the endpoints that subscribe (a customer's endpoints its customer's entries, the
 * deployment-wide ones all), so that a SIEM takes entries as they happen. Read from the trail
 * after it commits, off the write path, so that changes made by the command line ship too; the
 * cursor row is locked and advanced in the transaction that queues the events, so that each
 * entry ships once whatever the number of processes. Returns how many entries it passed.
 */
export async function shipAuditEntries(db: Db, now = Date.now()): Promise<number> {
  const [cursor, head] = await Promise.all([
    db.selectFrom('audit_event_cursor').select('seq').where('id', '=', 1).executeTakeFirstOrThrow(),
    db.selectFrom('audit_chain_head').select('seq').where('id', '=', 1).executeTakeFirstOrThrow(),
  ]);
  if (Number(cursor.seq) >= Number(head.seq)) return 0;
  if (!(await anyEndpointSubscribes(db, 'audit.entry', now))) {
    // Nobody takes the entries (the usual case): the cursor moves on without reading them, so
    // that an endpoint subscribed later receives the entries from then on, not the whole trail.
    await db.updateTable('audit_event_cursor').set({ seq: Number(head.seq) }).where('id', '=', 1).where('seq', '=', Number(cursor.seq)).execute();
    return 0;
  }
  return db.transaction().execute(async (trx) => {
    const cursor = await trx.updateTable('audit_event_cursor').set((eb) => ({ seq: eb.ref('seq') })).where('id', '=', 1).returning('seq').executeTakeFirstOrThrow();
    const entries = await auditEntriesAfter(trx, Number(cursor.seq), ENTRIES_PER_STEP);
    if (entries.length === 0) return 0;
    await emitFleetEvents(trx, entries.map(({ entry, customerId }): FleetEvent => ({ type: 'audit.entry', customerId, data: entry })), now);
    await trx.updateTable('audit_event_cursor').set({ seq: entries.at(-1)!.entry.id }).where('id', '=', 1).execute();
    return entries.length;
  });
}

/** Ships audit entries as fleet events from every server process. */
async function auditEventsPlugin(app: FastifyInstance): Promise<void> {
  repeatStep(app, 'audit entry shipping', SHIPPING_INTERVAL_MS, async () => ((await shipAuditEntries(app.db)) === ENTRIES_PER_STEP ? 0 : SHIPPING_INTERVAL_MS));
}

export default fp(auditEventsPlugin, { name: 'keyfleet-audit-events' });
