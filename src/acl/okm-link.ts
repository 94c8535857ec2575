import type { Db } from '../db/database.ts';
import { badRequest } from '../http/errors.ts';
import { lockOkm } from '../okm/admin-repository.ts';
import { queueMessage } from '../okm/messages-repository.ts';
import { canonicalTextDigest } from '../shared/canonical-json.ts';
import { findOkmCustomerId, setOkmListDigests } from '../okm/repository.ts';
import { findAclIdOfOkm, setAclOkm, type AclContent } from './repository.ts';

const DELETE_ASSETS = 'delete-assets';

/** The OKM's lists are no longer configured, and its next poll tells the device to delete its assets. */
async function releaseOkmAssets(trx: Db, serialNumber: string, now: number): Promise<void> {
  await setOkmListDigests(trx, serialNumber, null, now);
  await queueMessage(trx, serialNumber, DELETE_ASSETS, null, now);
}

/**
 * An OKM may be linked when the ACL's customer holds it and it has no ACL yet. One answer for
 * a missing OKM, another customer's and one that nobody holds (which its customer claims first).
 */
async function checkOkmLinkable(trx: Db, acl: { id: string; customerId: number }, serialNumber: string): Promise<void> {
  if ((await findOkmCustomerId(trx, serialNumber)) !== acl.customerId) {
    throw badRequest(`okm_id: no OKM ${serialNumber} held by this ACL's customer (an OKM nobody holds is claimed first, with its installer code)`);
  }
  const linkedAcl = await findAclIdOfOkm(trx, serialNumber);
  if (linkedAcl !== undefined) throw badRequest(`okm_id: OKM ${serialNumber} is already linked to ACL ${linkedAcl}`);
}

/**
 * After a write of an ACL's content (inside its transaction, with the ACL's row locked):
 * links it to `requested` (undefined keeps the current link, null unlinks), and makes the
 * linked OKM's asset list and user asset list the ACL's locks and users. An OKM that loses
 * the ACL gets a delete-assets message.
 */
export async function linkAclToOkm(
  trx: Db,
  acl: { id: string; customerId: number },
  current: string | null,
  requested: string | null | undefined,
  content: AclContent,
  now: number,
): Promise<void> {
  const next = requested === undefined ? current : requested;
  // A fixed order, so that two ACLs trading their OKMs cannot deadlock.
  const involved = [...new Set([current, next])].filter((serial): serial is string => serial !== null).sort();
  for (const serial of involved) await lockOkm(trx, serial);
  if (next !== null && next !== current) await checkOkmLinkable(trx, acl, next);
  if (current !== null && current !== next) await releaseOkmAssets(trx, current, now);
  if (next !== current) await setAclOkm(trx, acl.id, next);
  if (next !== null) {
    // The content is canonical JSON, so the digests are those of the lists.
    const digests = { assetList: canonicalTextDigest(content.locksJson), usersAssets: canonicalTextDigest(content.usersJson) };
    await setOkmListDigests(trx, next, digests, now);
  }
}

/** The ACL linked to the OKM is being deleted: the OKM's lists go with it (the ACL's row is locked). */
export async function releaseOkmOfDeletedAcl(trx: Db, serialNumber: string, now: number): Promise<void> {
  await lockOkm(trx, serialNumber);
  await releaseOkmAssets(trx, serialNumber, now);
}

/** The OKM leaves its customer (OKM row locked): the ACL linked to it, if any, is unlinked. */
export async function unlinkAclOfOkm(trx: Db, serialNumber: string, now: number): Promise<void> {
  const aclId = await findAclIdOfOkm(trx, serialNumber);
  if (aclId === undefined) return;
  await setAclOkm(trx, aclId, null);
  await releaseOkmAssets(trx, serialNumber, now);
}
