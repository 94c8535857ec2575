import { recordChange, type ChangeSource } from '../audit/trail.ts';
import { findCustomerByName } from '../customers/repository.ts';
import { cursorPageRequest, mapCursorPage, type CursorPage, type CursorPageQuery } from '../db/cursor-pages.ts';
import type { Db } from '../db/database.ts';
import { badRequest, conflict, notFound } from '../http/errors.ts';
import { UNCONFIGURED_OKM } from './model.ts';
import { listPendingOkms, PENDING_OKM_PAGES, takePendingOkm, type PendingOkm } from './pending-repository.ts';
import { checkSerialNumber, type PendingOkmRecord } from './schemas.ts';
import { insertOkm, setLastCall } from './repository.ts';
import { okmChange } from './audit-view.ts';

const toPendingOkmRecord = (pending: PendingOkm): PendingOkmRecord => ({
  serial_number: pending.serialNumber,
  first_seen_at: new Date(pending.firstSeenAt).toISOString(),
  last_seen_at: new Date(pending.lastSeenAt).toISOString(),
  last_ip: pending.lastIp,
  firmware_version: pending.firmwareVersion,
  calls: pending.calls,
});

/** One page of the OKMs waiting to be accepted, by serial number. */
export async function pendingOkmRecords(db: Db, query: CursorPageQuery): Promise<CursorPage<PendingOkmRecord>> {
  return mapCursorPage(await listPendingOkms(db, cursorPageRequest(PENDING_OKM_PAGES, query)), toPendingOkmRecord);
}

export interface AcceptedOkm {
  serialNumber: string;
  customer: string | null;
  acceptedAt: number;
}

/**
 * Turns a pending OKM into an OKM, unconfigured, of the customer named (or of none yet), with
 * its last call as the pending entry recorded it. Its next poll is served like any OKM's.
 * Records no change: an accept someone asks for is acceptPendingOkmRecorded.
 */
export async function acceptPendingOkm(db: Db, serialNumber: string, customerName: string | undefined, now: number): Promise<AcceptedOkm> {
  checkSerialNumber(serialNumber);
  return db.transaction().execute((trx) => acceptInTransaction(trx, serialNumber, customerName, now));
}

/** acceptPendingOkm as `source` asks: the OKM and its okm.accepted entry commit together. */
export async function acceptPendingOkmRecorded(db: Db, source: ChangeSource, serialNumber: string, customerName: string | undefined, now: number): Promise<AcceptedOkm> {
  checkSerialNumber(serialNumber);
  return db.transaction().execute(async (trx) => {
    const accepted = await acceptInTransaction(trx, serialNumber, customerName, now);
    await recordChange(trx, source, okmChange('okm.accepted', serialNumber, accepted.customer, { after: { customer: accepted.customer } }), now);
    return accepted;
  });
}

async function acceptInTransaction(trx: Db, serialNumber: string, customerName: string | undefined, now: number): Promise<AcceptedOkm> {
  const customer = customerName === undefined ? null : await findCustomerByName(trx, customerName);
  if (customer === undefined) throw badRequest(`customer: unknown customer ${customerName}`);
  const pending = await takePendingOkm(trx, serialNumber);
  if (!pending) throw notFound(`No pending OKM ${serialNumber}`);
  // The pending entry counts only while no OKM exists, so only a concurrent creation gets here.
  if (!(await insertOkm(trx, serialNumber, customer?.id ?? null, UNCONFIGURED_OKM, now))) throw conflict(`OKM ${serialNumber} already exists`);
  await setLastCall(trx, serialNumber, { at: pending.lastSeenAt, ip: pending.lastIp, firmwareVersion: pending.firmwareVersion });
  return { serialNumber, customer: customer?.name ?? null, acceptedAt: now };
}
