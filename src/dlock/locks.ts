import { createHash } from 'node:crypto';
import { changeWithEntry, recordChange, type Change, type ChangeSource } from '../audit/trail.ts';
import type { Db } from '../db/database.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import { HttpError, badRequest, notFound } from '../http/errors.ts';
import { findIntermediate, intermediateSigningKey } from '../pki/intermediates.ts';
import { open, seal } from '../secrets/sealed-box.ts';
import { sealedColumn } from '../secrets/sealed-columns.ts';
import { canonicalJson } from '../shared/canonical-json.ts';
import { selectApiKey, type ApiKeyLookup, type ApiKeyOwner, type ApiKeyRow } from './api-keys.ts';
import { deriveLockKey, issueKeyCertificate, type KeyCertificate } from './key-certificate.ts';
import type { KeyRing } from '../secrets/key-ring.ts';

export const CERTIFICATE_FORBIDDEN = 'Certificate not found for this customer';
export const LOCK_NOT_FOUND = 'DLock not found';

export const forbiddenCertificate = () => new HttpError(403, 'FORBIDDEN', CERTIFICATE_FORBIDDEN);

/** Ties a sealed lock key to its lock: a blob copied to another row does not open. */
const lockKeyAssociatedData = (serialNo: string) => `dlock-key:${serialNo}`;

export const LOCK_KEYS = sealedColumn({
  table: 'dlocks',
  column: 'key_sealed',
  key: 'serial_no',
  reads: ['serial_no'],
  associatedData: (row) => lockKeyAssociatedData(row.serial_no as string),
});

export interface RegisterLock {
  serial_no: string;
  type: string;
  certificate: string;
  enrolment_code: string;
}

export interface LockContext {
  db: Db;
  keyRing: KeyRing;
  deploymentSecret: Buffer;
  validityDays: number;
  /** The dialect's writesInWith: an enrolment and its entry are then one statement. */
  writesInWith: boolean;
}

/** The caller's own intermediate, or 403 (unknown and foreign names answer alike). */
export async function ownIntermediate(db: Db, owner: ApiKeyOwner, name: string) {
  const certificate = await findIntermediate(db, name);
  if (!certificate || certificate.customerId !== owner.customerId) throw forbiddenCertificate();
  return certificate;
}

// The enrolment and fetch queries, built once: Kysely's building cost more than running them.
const insertLockWithEntry = changeWithEntry<[string, number, string, string, string, number], 'dlocks'>(
  6,
  (db, [serialNo, customerId, certificateName, certificateJson, keySealed, createdAt]) =>
    db
      .insertInto('dlocks')
      .values({
        serial_no: serialNo as string,
        customer_id: customerId as number,
        certificate_name: certificateName as string,
        certificate_json: certificateJson as string,
        key_sealed: keySealed as string,
        created_at: createdAt as number,
      })
      .onConflict((oc) => oc.column('serial_no').doNothing())
      .returning('serial_no'),
);

/** An API key's row with the key's customer's lock of one serial number (null columns when there is none). */
export type ApiKeyWithLockRow = ApiKeyRow & { certificate_json: string | null; key_sealed: string | null };

const apiKeyWithLockQuery = precompiledQuery<ApiKeyWithLockRow, [string, string]>(2, (db, [keyId, serialNo]) =>
  selectApiKey(db, keyId as string)
    .leftJoin('dlocks', (join) => join.on('dlocks.serial_no', '=', serialNo as string).onRef('dlocks.customer_id', '=', 'api_keys.customer_id'))
    .select(['dlocks.certificate_json', 'dlocks.key_sealed']),
);

/**
 * The API-key lookup of a lock fetch: the key and the caller's lock in one statement (a fetch
 * is the DLock call a fleet makes most, and each statement costs a read transaction).
 */
export const findApiKeyWithLock =
  (db: Db, serialNo: string): ApiKeyLookup<ApiKeyWithLockRow> =>
  async (keyId) =>
    (await apiKeyWithLockQuery(db, keyId, serialNo)).rows[0];

/**
 * A lock as the audit trail records it: its public data and its key certificate's validity
 * and fingerprint (SHA-256 of the certificate's canonical JSON without the lock key, which is
 * what is stored), never the lock key.
 */
function lockAuditState(stored: Omit<KeyCertificate, 'key'>) {
  return {
    serial_no: stored.data.serial_no,
    type: stored.data.lock_type,
    customer: stored.data.customer,
    certificate: { name: stored.issuer, serial: stored.data.certificate_id },
    key_certificate: {
      format: stored.type,
      valid_from: new Date(stored.valid * 1000).toISOString(),
      valid_until: new Date(stored.expires * 1000).toISOString(),
      fingerprint: createHash('sha256').update(canonicalJson(stored), 'utf8').digest('hex'),
    },
  };
}

const lockChange = (action: 'dlock.enrolled' | 'dlock.deleted', owner: ApiKeyOwner, stored: Omit<KeyCertificate, 'key'>): Change => ({
  action,
  customer: owner.customer,
  entity: { type: 'dlock', id: stored.data.serial_no },
  ...(action === 'dlock.enrolled' ? { after: lockAuditState(stored) } : { before: lockAuditState(stored) }),
});

/**
 * Enrols a lock: derives its key, issues the key certificate and stores it with its audit
 * entry. The serial number is the primary key and the insert does nothing on conflict, so of
 * two concurrent enrolments of one serial exactly one wins and the other gets 400.
 */
export async function registerLock(context: LockContext, owner: ApiKeyOwner, request: RegisterLock, source: ChangeSource, now = Date.now()): Promise<KeyCertificate> {
  const intermediate = await ownIntermediate(context.db, owner, request.certificate);
  if (intermediate.notAfter <= now) throw badRequest(`certificate: ${request.certificate} has expired`);
  const signingKey = await intermediateSigningKey(context.db, context.keyRing, intermediate);
  const lockKey = deriveLockKey(Buffer.from(request.enrolment_code, 'hex'), context.deploymentSecret, request.serial_no);
  const certificate = issueKeyCertificate({
    issuer: intermediate.name,
    signingKey,
    data: { serial_no: request.serial_no, lock_type: request.type, customer: owner.customer, certificate_id: intermediate.serial },
    lockKey,
    validityDays: context.validityDays,
    now,
  });
  const { key: _key, ...withoutKey } = certificate;
  // Sealed before the transaction: sealing may re-read the key ring, through a connection of its own.
  const keySealed = await seal(context.keyRing, lockKey, lockKeyAssociatedData(request.serial_no));
  const lockRow: [string, number, string, string, string, number] = [request.serial_no, owner.customerId, intermediate.name, JSON.stringify(withoutKey), keySealed, now];
  const inserted = await insertLockWithEntry(context.db, context.writesInWith, lockRow, source, lockChange('dlock.enrolled', owner, withoutKey), now);
  if (!inserted) throw badRequest(`serial_no: DLock ${request.serial_no} is already registered`);
  return certificate;
}

/** The stored key certificate of the lock read with the caller's key (findApiKeyWithLock), its key unsealed; else 404. */
export async function lockCertificate(keyRing: KeyRing, serialNo: string, row: ApiKeyWithLockRow): Promise<KeyCertificate> {
  if (row.certificate_json === null || row.key_sealed === null) throw notFound(LOCK_NOT_FOUND);
  const stored = JSON.parse(row.certificate_json) as Omit<KeyCertificate, 'key'>;
  const key = (await open(keyRing, row.key_sealed, lockKeyAssociatedData(serialNo))).toString('base64');
  return { type: stored.type, issuer: stored.issuer, valid: stored.valid, expires: stored.expires, data: stored.data, key, signature: stored.signature };
}

/** Removes one of the caller's locks, freeing its serial number, with its audit entry; 404 when there is none. */
export async function deleteLock(db: Db, owner: ApiKeyOwner, serialNo: string, source: ChangeSource, now = Date.now()): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const deleted = await trx
      .deleteFrom('dlocks')
      .where('serial_no', '=', serialNo)
      .where('customer_id', '=', owner.customerId)
      .returning('certificate_json')
      .executeTakeFirst();
    if (!deleted) throw notFound(LOCK_NOT_FOUND);
    await recordChange(trx, source, lockChange('dlock.deleted', owner, JSON.parse(deleted.certificate_json) as Omit<KeyCertificate, 'key'>), now);
  });
}
