import { badRequest } from '../http/errors.ts';
import { strongEtag } from '../http/preconditions.ts';
import type { AclSummary } from './repository.ts';
import { MAX_USER_DATA_BYTES, type AclBody, type AclUser } from './schemas.ts';

/** An ACL as responses show it: its lists as canonical JSON text, user_data as the caller's own text. */
export interface StoredAcl {
  id: string;
  customerId: number;
  customerName: string;
  /** The operator's label; null when it has none. */
  name: string | null;
  usersJson: string;
  locksJson: string;
  userDataJson: string | null;
  /** The OKM it is linked to, when the reader knows it (responses never show it; its ETag covers it). */
  okmSerial?: string | null;
}

/**
 * The rules the body schema cannot express: locks strictly ascending (byte order, so no
 * duplicates), user ids unique, one permission per lock, and the size of user_data.
 * Throws a 400 naming the first field at fault.
 */
export function checkAclRules(body: AclBody, userDataJson: string | null): void {
  body.locks.forEach((lock, index) => {
    if (index > 0 && !(body.locks[index - 1]! < lock)) {
      throw badRequest(`locks[${index}]: must come after locks[${index - 1}] (${body.locks[index - 1]}); locks are unique and ascending`);
    }
  });
  const firstIndexOfUserId = new Map<number, number>();
  body.users.forEach((user, index) => {
    const earlier = firstIndexOfUserId.get(user.user_id);
    if (earlier !== undefined) throw badRequest(`users[${index}].user_id: ${user.user_id} is also the user_id of users[${earlier}]`);
    firstIndexOfUserId.set(user.user_id, index);
    if (user.permissions.length !== body.locks.length) {
      throw badRequest(`users[${index}].permissions: expected ${body.locks.length} values, one per lock, got ${user.permissions.length}`);
    }
  });
  if (userDataJson !== null && Buffer.byteLength(userDataJson) > MAX_USER_DATA_BYTES) {
    throw badRequest(`user_data: must be at most ${MAX_USER_DATA_BYTES} bytes of JSON`);
  }
  if (typeof body.name === 'string' && body.name.trim() === '') throw badRequest('name: must not be blank; send null to remove the name');
}

/**
 * A name as the name search compares it, and the search text too: compatibility-normalised
 * (NFKC, so a ligature or a full-width digit matches its plain form) and lower-cased by
 * JavaScript's locale-independent rules. The application computes it, not the database, so
 * that both databases match alike (SQLite's lower() folds ASCII only). Names are stored with
 * their key: a change here needs a migration that recomputes acls.name_key.
 */
export function aclNameSearchKey(text: string): string {
  return text.normalize('NFKC').toLowerCase();
}

/**
 * RFC 8785 canonical JSON of validated users, written directly: their members are known
 * (so sorted here by name), integers, booleans and alphanumeric strings, for which
 * JSON.stringify already writes the canonical form. canonicalize() takes several times as
 * long on an ACL of 5 000 × 1 000 permissions.
 */
export function canonicalUsersJson(users: readonly AclUser[]): string {
  return JSON.stringify(
    users.map((user) => ({
      auth_time: user.auth_time,
      permissions: user.permissions,
      pin_hash: user.pin_hash,
      sounder: user.sounder,
      sounder_delay: user.sounder_delay,
      sounder_duration: user.sounder_duration,
      sounder_volume: user.sounder_volume,
      user_id: user.user_id,
    })),
  );
}

/**
 * The ACL's strong ETag: a digest of what its writes can change, its link included (a PUT may
 * set okm_id), so that any change, by whatever path, gives another tag (docs/adr/0100).
 */
export const aclEtag = (acl: StoredAcl, okmSerial: string | null, json = aclJson(acl)) => strongEtag(`${okmSerial ?? ''}\n`, json);

/** The ACL's JSON as responses show it (no okm_id), built from the stored texts without parsing them. */
export function aclJson(acl: StoredAcl): string {
  const userData = acl.userDataJson === null ? '' : `,"user_data":${acl.userDataJson}`;
  return `{"id":${JSON.stringify(acl.id)}${nameMember(acl.name)},"customer":${JSON.stringify(acl.customerName)},"users":${acl.usersJson},"locks":${acl.locksJson}${userData}}`;
}

/** The name member of an ACL's JSON; nothing at all when it has no name, so that such an ACL reads exactly as contract §0.6 has it. */
const nameMember = (name: string | null) => (name === null ? '' : `,"name":${JSON.stringify(name)}`);

/** An ACL summary's JSON (AclSummaryView), user_data written from the caller's own text. */
export function aclSummaryJson(summary: AclSummary): string {
  const userData = summary.userDataJson === null ? '' : `,"user_data":${summary.userDataJson}`;
  const fields = {
    id: summary.id,
    ...(summary.name === null ? {} : { name: summary.name }),
    customer: summary.customerName,
    user_count: summary.userCount,
    lock_count: summary.lockCount,
    okm_id: summary.okmSerial,
    updated_at: new Date(summary.updatedAt).toISOString(),
  };
  return `${JSON.stringify(fields).slice(0, -1)}${userData}}`;
}
