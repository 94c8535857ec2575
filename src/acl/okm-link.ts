import type { Db } from '../db/database.ts';
import { badRequest } from '../http/errors.ts';
import { lockOkm } from '../okm/admin-repository.ts';
import { canonicalTextDigest } from '../shared/canonical-json.ts';
import { findAclIdOfOkm, releaseOkmAssets, setAclOkm } from '../okm/acl-link.ts';
import { findOkmCustomerId, setOkmListDigests } from '../okm/repository.ts';
import type { AclContent } from './repository.ts';

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
