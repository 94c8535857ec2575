import { hkdfSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type { Db } from '../db/database.ts';
import { open, seal } from '../secrets/sealed-box.ts';
import { sealedColumn } from '../secrets/sealed-columns.ts';
import { canonicalJson } from '../shared/canonical-json.ts';
import type { KeyRing } from '../secrets/key-ring.ts';

export const KEY_CERTIFICATE_TYPE = 'dlock-key/v1';
const KDF_INFO = 'keyfleet dlock-key/v1';
const SECRET_SLOT = 'deployment';
const SECRET_ASSOCIATED_DATA = 'dlock-secret';

export const DEPLOYMENT_SECRET = sealedColumn({
  table: 'dlock_secret',
  column: 'secret_sealed',
  key: 'slot',
  reads: [],
  associatedData: () => SECRET_ASSOCIATED_DATA,
});
const DAY_SECONDS = 86_400;

export interface KeyCertificateData {
  serial_no: string;
  lock_type: string;
  customer: string;
  certificate_id: string;
}

/** A DLock key certificate; `signature` covers the RFC 8785 form of every other member. */
export interface KeyCertificate {
  type: typeof KEY_CERTIFICATE_TYPE;
  issuer: string;
  valid: number;
  expires: number;
  data: KeyCertificateData;
  key: string;
  signature: string;
}

/**
 * The lock key: 16 bytes of HKDF-SHA256 over the enrolment code, salted with the deployment
 * secret, bound to the lock by its serial number. The one place to change when the lock
 * vendor's derivation is known.
 */
export function deriveLockKey(enrolmentCode: Buffer, deploymentSecret: Buffer, serialNo: string): Buffer {
  return Buffer.from(hkdfSync('sha256', enrolmentCode, deploymentSecret, Buffer.from(KDF_INFO + serialNo, 'utf8'), 16));
}

/**
 * The deployment secret (HKDF salt of lock keys): made on first use, kept sealed in the
 * database. Concurrent first starts insert with ON CONFLICT DO NOTHING and all read the winner.
 */
export async function ensureDeploymentSecret(db: Db, keyRing: KeyRing): Promise<Buffer> {
  await db
    .insertInto('dlock_secret')
    .values({ slot: SECRET_SLOT, secret_sealed: await seal(keyRing, randomBytes(32), SECRET_ASSOCIATED_DATA), created_at: Date.now() })
    .onConflict((oc) => oc.column('slot').doNothing())
    .execute();
  const row = await db.selectFrom('dlock_secret').select('secret_sealed').where('slot', '=', SECRET_SLOT).executeTakeFirstOrThrow();
  return open(keyRing, row.secret_sealed, SECRET_ASSOCIATED_DATA);
}

/** Builds and signs a key certificate (ECDSA P-256/SHA-256, IEEE P1363 r||s, base64). */
export function issueKeyCertificate(request: {
  issuer: string;
  signingKey: KeyObject;
  data: KeyCertificateData;
  lockKey: Buffer;
  validityDays: number;
  now?: number;
}): KeyCertificate {
  const valid = Math.floor((request.now ?? Date.now()) / 1000);
  const unsigned: Omit<KeyCertificate, 'signature'> = {
    type: KEY_CERTIFICATE_TYPE,
    issuer: request.issuer,
    valid,
    expires: valid + request.validityDays * DAY_SECONDS,
    data: { ...request.data },
    key: request.lockKey.toString('base64'),
  };
  const signature = sign('sha256', Buffer.from(canonicalJson(unsigned), 'utf8'), { key: request.signingKey, dsaEncoding: 'ieee-p1363' });
  return { ...unsigned, signature: signature.toString('base64') };
}

/** The base64 form the mobile SDK takes: standard base64 of the UTF-8 canonical JSON. */
export function toBase64Form(certificate: KeyCertificate): string {
  return Buffer.from(canonicalJson(certificate), 'utf8').toString('base64');
}
