import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JSONWebKeySet, type JWK } from 'jose';
import type { Db } from '../db/database.ts';
import { open, seal } from '../secrets/sealed-box.ts';

export const SIGNING_ALGORITHM = 'EdDSA';

export interface ActiveSigningKey {
  kid: string;
  algorithm: string;
  privateKey: CryptoKey;
}

/**
 * Creates the deployment's signing key unless one is active. Several processes may start at
 * once: a unique index admits only one active key, so a losing insert does nothing and every
 * process then reads the winner's key.
 */
export async function ensureActiveSigningKey(db: Db, masterKey: Buffer): Promise<void> {
  const active = await db.selectFrom('signing_keys').select('kid').where('retired_at', 'is', null).executeTakeFirst();
  if (active) return;
  const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  await db
    .insertInto('signing_keys')
    .values({
      kid,
      algorithm: SIGNING_ALGORITHM,
      public_jwk: JSON.stringify({ ...publicJwk, kid, alg: SIGNING_ALGORITHM, use: 'sig' }),
      // The kid as associated data ties the sealed private key to its row.
      private_jwk_sealed: seal(masterKey, JSON.stringify(await exportJWK(privateKey)), kid),
      created_at: Date.now(),
      retired_at: null,
    })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/** The public keys that verify the deployment's own tokens: every key not retired. */
export async function loadPublicJwks(db: Db): Promise<JSONWebKeySet> {
  const rows = await db.selectFrom('signing_keys').select('public_jwk').where('retired_at', 'is', null).orderBy('kid').execute();
  return { keys: rows.map((row) => JSON.parse(row.public_jwk) as JWK) };
}

export async function loadActiveSigningKey(db: Db, masterKey: Buffer): Promise<ActiveSigningKey> {
  const row = await db
    .selectFrom('signing_keys')
    .select(['kid', 'algorithm', 'private_jwk_sealed'])
    .where('retired_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw new Error('no active signing key: ensureActiveSigningKey has not run on this database');
  const privateJwk = JSON.parse(open(masterKey, row.private_jwk_sealed, row.kid).toString('utf8')) as JWK;
  return { kid: row.kid, algorithm: row.algorithm, privateKey: (await importJWK(privateJwk, row.algorithm)) as CryptoKey };
}
