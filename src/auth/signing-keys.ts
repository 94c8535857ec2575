import { calculateJwkThumbprint, createLocalJWKSet, errors, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JSONWebKeySet, type JWK, type JWTVerifyGetKey } from 'jose';
import { recordChange, type ChangeSource } from '../audit/trail.ts';
import type { Db } from '../db/database.ts';
import { badRequest, notFound } from '../http/errors.ts';
import { open, seal } from '../secrets/sealed-box.ts';
import { sealedColumn } from '../secrets/sealed-columns.ts';
import type { KeyRing } from '../secrets/key-ring.ts';

export const SIGNING_ALGORITHM = 'EdDSA';

export const SIGNING_PRIVATE_KEYS = sealedColumn({
  table: 'signing_keys',
  column: 'private_jwk_sealed',
  key: 'kid',
  reads: ['kid'],
  associatedData: (row) => row.kid as string,
});

export interface ActiveSigningKey {
  kid: string;
  algorithm: string;
  privateKey: CryptoKey;
}

async function newSigningKeyRow(keyRing: KeyRing, now: number) {
  const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALGORITHM, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    kid,
    algorithm: SIGNING_ALGORITHM,
    public_jwk: JSON.stringify({ ...publicJwk, kid, alg: SIGNING_ALGORITHM, use: 'sig' }),
    // The kid as associated data ties the sealed private key to its row.
    private_jwk_sealed: await seal(keyRing, JSON.stringify(await exportJWK(privateKey)), kid),
    created_at: now,
    retired_at: null,
  };
}

/**
 * Creates the deployment's signing key unless one is active. Several processes may start at
 * once: a unique index admits only one active key, so a losing insert does nothing and every
 * process then reads the winner's key.
 */
export async function ensureActiveSigningKey(db: Db, keyRing: KeyRing): Promise<void> {
  const active = await db.selectFrom('signing_keys').select('kid').where('retired_at', 'is', null).executeTakeFirst();
  if (active) return;
  await db
    .insertInto('signing_keys')
    .values(await newSigningKeyRow(keyRing, Date.now()))
    .onConflict((oc) => oc.doNothing())
    .execute();
}

/**
 * Makes a new key the active (signing) one. The previous key stops signing now and keeps
 * verifying for `graceSeconds`, so that the tokens it signed stay valid until then
 * (retired_at in the future means "verifies only"). Recorded as signing_key.rotated.
 */
export async function rotateSigningKey(
  db: Db,
  keyRing: KeyRing,
  graceSeconds: number,
  source: ChangeSource,
  now = Date.now(),
): Promise<{ kid: string; previous: string | null; previousVerifiesUntil: number }> {
  const row = await newSigningKeyRow(keyRing, now);
  const previousVerifiesUntil = now + graceSeconds * 1000;
  return db.transaction().execute(async (tx) => {
    const previous = await tx.updateTable('signing_keys').set({ retired_at: previousVerifiesUntil }).where('retired_at', 'is', null).returning('kid').executeTakeFirst();
    await tx.insertInto('signing_keys').values(row).execute();
    const previousKid = previous?.kid ?? null;
    await recordChange(
      tx,
      source,
      {
        action: 'signing_key.rotated',
        customer: null,
        entity: { type: 'signing_key', id: row.kid },
        before: { active: previousKid },
        after: { active: row.kid, previous: previousKid, previous_verifies_until: previousKid === null ? null : new Date(previousVerifiesUntil).toISOString() },
      },
      now,
    );
    return { kid: row.kid, previous: previousKid, previousVerifiesUntil };
  });
}

/**
 * Stops a key that no longer signs from verifying tokens too (a leaked key, or an early end to
 * its grace), recorded as signing_key.retired; a key that has stopped verifying already is
 * left as it is, and nothing recorded.
 */
export async function retireSigningKey(db: Db, kid: string, source: ChangeSource, now = Date.now()): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const row = await tx.selectFrom('signing_keys').select('retired_at').where('kid', '=', kid).executeTakeFirst();
    if (!row) throw notFound(`signing key ${kid} not found`);
    if (row.retired_at === null) throw badRequest(`signing key ${kid} is the active key: rotate first`);
    const retired = await tx.updateTable('signing_keys').set({ retired_at: now }).where('kid', '=', kid).where('retired_at', '>', now).executeTakeFirst();
    if (Number(retired.numUpdatedRows) === 0) return;
    await recordChange(
      tx,
      source,
      {
        action: 'signing_key.retired',
        customer: null,
        entity: { type: 'signing_key', id: kid },
        before: { verifies_until: new Date(Number(row.retired_at)).toISOString() },
        after: { verifies_until: new Date(now).toISOString() },
      },
      now,
    );
  });
}

export interface SigningKeyState {
  kid: string;
  createdAt: number;
  /** null for the active key; when a key stops verifying. */
  retiredAt: number | null;
}

export async function listSigningKeys(db: Db): Promise<SigningKeyState[]> {
  const rows = await db.selectFrom('signing_keys').select(['kid', 'created_at', 'retired_at']).orderBy('created_at').execute();
  return rows.map((row) => ({ kid: row.kid, createdAt: Number(row.created_at), retiredAt: row.retired_at === null ? null : Number(row.retired_at) }));
}

/** The public keys that verify the deployment's own tokens: the active key and those still in their grace. */
export async function loadPublicJwks(db: Db, now = Date.now()): Promise<JSONWebKeySet> {
  const rows = await db
    .selectFrom('signing_keys')
    .select('public_jwk')
    .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', now)]))
    .orderBy('kid')
    .execute();
  return { keys: rows.map((row) => JSON.parse(row.public_jwk) as JWK) };
}

export async function loadActiveSigningKey(db: Db, keyRing: KeyRing): Promise<ActiveSigningKey> {
  const row = await db
    .selectFrom('signing_keys')
    .select(['kid', 'algorithm', 'private_jwk_sealed'])
    .where('retired_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw new Error('no active signing key: ensureActiveSigningKey has not run on this database');
  const privateJwk = JSON.parse((await open(keyRing, row.private_jwk_sealed, row.kid)).toString('utf8')) as JWK;
  return { kid: row.kid, algorithm: row.algorithm, privateKey: (await importJWK(privateJwk, row.algorithm)) as CryptoKey };
}

/**
 * The oldest a process's copy of its own public keys may be when it verifies a token: a
 * retirement committed now is seen by every process from this long after (`keyfleet
 * signing-key retire` waits that long before it says so). The reread is one small query.
 */
export const KEY_SET_MAX_AGE_MS = 1_000;
/** A token with an unknown kid rereads the keys at most this often (a rotation in another process). */
const UNKNOWN_KID_RELOAD_MS = 5_000;

export interface OwnKeySet {
  /** The current public keys: what /.well-known/jwks.json serves. */
  jwks(): Promise<JSONWebKeySet>;
  /** jose's key lookup for jwtVerify. */
  getKey: JWTVerifyGetKey;
}

/**
 * The deployment's public keys, kept current across processes: a token is verified (and the
 * JWKS served) with keys read from the database at most KEY_SET_MAX_AGE_MS before the request
 * came, and a token that names a key this process has not seen rereads them at once (at most
 * every 5 s). Concurrent requests share one reread.
 */
export async function loadOwnKeySet(db: Db, clock: () => number = Date.now): Promise<OwnKeySet> {
  let keys = await loadPublicJwks(db, clock());
  let lookup = createLocalJWKSet(keys);
  // When the query that read `keys` started: the keys are at least that recent.
  let readAt = clock();
  let unknownKidReloadAt = -Infinity;
  let reading: Promise<void> | undefined;
  const reload = () =>
    (reading ??= (async () => {
      const startedAt = clock();
      try {
        keys = await loadPublicJwks(db, startedAt);
        lookup = createLocalJWKSet(keys);
        readAt = startedAt;
      } finally {
        reading = undefined;
      }
    })());
  const fresh = async () => {
    const askedAt = clock();
    // A reread already under way may have started too early for this request: then another.
    while (askedAt - readAt >= KEY_SET_MAX_AGE_MS) await reload();
  };
  return {
    async jwks() {
      await fresh();
      return keys;
    },
    async getKey(header, token) {
      await fresh();
      try {
        return await lookup(header, token);
      } catch (error) {
        if (!(error instanceof errors.JWKSNoMatchingKey) || clock() - unknownKidReloadAt < UNKNOWN_KID_RELOAD_MS) throw error;
        unknownKidReloadAt = clock();
        await reload();
        return lookup(header, token);
      }
    },
  };
}
