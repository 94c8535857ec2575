import { recordChange, type ChangeSource } from '../audit/trail.ts';
import type { Db } from '../db/database.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import { bearerCredential } from '../http/bearer.ts';
import { notFound, unauthorized } from '../http/errors.ts';
import { RANDOM_PART_PATTERN, matchesTokenHash, randomTokenPart, tokenHash } from '../shared/secret-tokens.ts';
import { findOwnedOkm, lockOkm } from './admin-repository.ts';
import { okmChange } from './audit-view.ts';
import { isPendingOkm } from './pending-repository.ts';
import { checkSerialNumber, type DeviceTokenRecord } from './schemas.ts';

/**
 * OKM device tokens: `kf_okm_` + 43 base64url characters (32 random bytes), one per OKM,
 * presented as `Authorization: Bearer kf_okm_…`. The serial number in the path finds the
 * row, so the token carries no id. Only its SHA-256 is stored.
 */
const DEVICE_TOKEN_PREFIX = 'kf_okm_';
const DEVICE_TOKEN = new RegExp(`^${DEVICE_TOKEN_PREFIX}${RANDOM_PART_PATTERN}$`);

const MISSING_DEVICE_TOKEN = 'Missing device token';
export const INVALID_DEVICE_TOKEN = 'Invalid device token';

export interface IssuedDeviceToken {
  serialNumber: string;
  token: string;
  issuedAt: number;
}

/**
 * Creates the OKM's device token, replacing the one it had: the earlier token stops working at
 * once. Records no change: a token someone asks for is issued by issueDeviceTokenRecorded.
 */
export async function issueDeviceToken(db: Db, serialNumber: string, now: number): Promise<IssuedDeviceToken> {
  checkSerialNumber(serialNumber);
  const token = `${DEVICE_TOKEN_PREFIX}${randomTokenPart()}`;
  const result = await db
    .updateTable('okms')
    .set({ device_token_hash: tokenHash(token), device_token_issued_at: now, updated_at: now })
    .where('serial_number', '=', serialNumber)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) === 0) {
    throw notFound((await isPendingOkm(db, serialNumber)) ? `OKM ${serialNumber} is pending: accept it first` : `OKM ${serialNumber} not found`);
  }
  return { serialNumber, token, issuedAt: now };
}

const isoOrNull = (epochMs: number | null) => (epochMs === null ? null : new Date(epochMs).toISOString());

/**
 * Issues the OKM's device token as `source` asks: the token and its okm.device_token_issued
 * entry commit together. The entry says when the replaced token and the new one were issued,
 * never a token.
 */
export async function issueDeviceTokenRecorded(db: Db, source: ChangeSource, serialNumber: string, now: number): Promise<IssuedDeviceToken> {
  checkSerialNumber(serialNumber);
  return db.transaction().execute(async (trx) => {
    // Locked first, so that the issue time read as "before" is the one this token replaces.
    const before = (await lockOkm(trx, serialNumber)) ? await findOwnedOkm(trx, serialNumber) : undefined;
    // Throws the 404 of an OKM that is not there (or only pending), so that past it `before` is the OKM.
    const issued = await issueDeviceToken(trx, serialNumber, now);
    const change = okmChange('okm.device_token_issued', serialNumber, before!.customerName, {
      before: { device_token_issued_at: isoOrNull(before!.okm.deviceTokenIssuedAt) },
      after: { device_token_issued_at: isoOrNull(issued.issuedAt) },
    });
    await recordChange(trx, source, change, now);
    return issued;
  });
}

export const toDeviceTokenRecord = (issued: IssuedDeviceToken): DeviceTokenRecord => ({
  serial_number: issued.serialNumber,
  token: issued.token,
  issued_at: new Date(issued.issuedAt).toISOString(),
});

const deviceTokenHashQuery = precompiledQuery<{ device_token_hash: string | null }, [string]>(1, (db, [serialNumber]) =>
  db.selectFrom('okms').select('device_token_hash').where('serial_number', '=', serialNumber as string),
);

/**
 * What a device call proved, when device tokens are required: the token of an existing OKM,
 * or nothing because no OKM has that serial number yet (no token can exist for it, so the
 * enrolment rules decide what happens to the call).
 */
export type DeviceAuthentication = 'authenticated' | 'unknown serial';

/** Checks a device call's token against the OKM's, in constant time; 401 when it is missing or not the OKM's. */
export async function authenticateDevice(db: Db, serialNumber: string, authorization: string | undefined): Promise<DeviceAuthentication> {
  const [row] = (await deviceTokenHashQuery(db, serialNumber)).rows;
  if (!row) return 'unknown serial';
  const bearer = bearerCredential(authorization);
  if (!bearer.ok) throw unauthorized(bearer.reason === 'missing' ? MISSING_DEVICE_TOKEN : INVALID_DEVICE_TOKEN);
  if (!DEVICE_TOKEN.test(bearer.credential) || !matchesTokenHash(bearer.credential, row.device_token_hash)) {
    throw unauthorized(INVALID_DEVICE_TOKEN);
  }
  return 'authenticated';
}
