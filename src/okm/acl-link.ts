import type { Db } from '../db/database.ts';
import { queueMessage } from './messages-repository.ts';
import { setOkmListDigests } from './repository.ts';

/**
 * The ACL linked to an OKM (acls.okm_serial): the OKM's asset lists are then the ACL's. The ACL
 * side (src/acl/okm-link.ts) links and unlinks as ACLs are written; the OKM side reads the
 * link and drops it when the OKM leaves its customer. Both build on the pieces here, so that
 * okm/ needs nothing from acl/, which needs okm/.
 */

const DELETE_ASSETS = 'delete-assets';

export async function setAclOkm(db: Db, id: string, okmSerial: string | null): Promise<void> {
  await db.updateTable('acls').set({ okm_serial: okmSerial }).where('id', '=', id).execute();
}

/** The id of the ACL linked to the OKM, if any. */
export async function findAclIdOfOkm(db: Db, okmSerial: string): Promise<string | undefined> {
  const row = await db.selectFrom('acls').select('id').where('okm_serial', '=', okmSerial).executeTakeFirst();
  return row?.id;
}

/** The OKM's lists are no longer configured, and its next poll tells the device to delete its assets. */
export async function releaseOkmAssets(trx: Db, serialNumber: string, now: number): Promise<void> {
  await setOkmListDigests(trx, serialNumber, null, now);
  await queueMessage(trx, serialNumber, DELETE_ASSETS, null, now);
}

/** The OKM leaves its customer (OKM row locked): the ACL linked to it, if any, is unlinked. */
export async function unlinkAclOfOkm(trx: Db, serialNumber: string, now: number): Promise<void> {
  const aclId = await findAclIdOfOkm(trx, serialNumber);
  if (aclId === undefined) return;
  await setAclOkm(trx, aclId, null);
  await releaseOkmAssets(trx, serialNumber, now);
}
