import { randomBytes } from 'node:crypto';
import { recordChange, type ChangeSource } from '../audit/trail.ts';
import { findCustomerByName } from '../customers/repository.ts';
import type { Db } from '../db/database.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import type { ApiKeysTable } from '../db/schema.ts';
import { badRequest, notFound } from '../http/errors.ts';
import { RANDOM_PART_PATTERN, matchesTokenHash, randomTokenPart, tokenHash } from '../shared/secret-tokens.ts';

/**
 * DLock API keys: `kf_live_` + a 16-hex-digit key id + 43 base64url characters (32 random
 * bytes). The id is not secret: it finds the row, shows up in `keyfleet apikey revoke ID` and
 * in logs. Only the SHA-256 of the whole key is stored (src/shared/secret-tokens.ts).
 */
export const API_KEY_PREFIX = 'kf_live_';
const API_KEY = new RegExp(`^${API_KEY_PREFIX}([0-9a-f]{16})(${RANDOM_PART_PATTERN})$`);
const KEY_ID = /^[0-9a-f]{16}$/;

/** last_used_at is written at most once per this interval per key, not on every request. */
export const LAST_USED_RESOLUTION_MS = 60_000;

export interface CreatedApiKey {
  id: string;
  key: string;
  customer: string;
  label: string | null;
  createdAt: number;
}

export interface ApiKeyOwner {
  keyId: string;
  customerId: number;
  customer: string;
}

export type ApiKeyRow = Pick<ApiKeysTable, 'id' | 'customer_id' | 'secret_hash' | 'last_used_at' | 'revoked_at'> & { customer: string };

/** Reads the row of a key id; a route may read what it needs in the same statement (see selectApiKey). */
export type ApiKeyLookup<Row extends ApiKeyRow> = (keyId: string) => Promise<Row | undefined>;

export type ApiKeyCheck<Row extends ApiKeyRow = ApiKeyRow> = { ok: true; owner: ApiKeyOwner; row: Row } | { ok: false; reason: 'malformed' | 'invalid' };

export async function createApiKey(db: Db, request: { customer: string; label?: string | undefined }): Promise<CreatedApiKey> {
  const label = request.label ?? null;
  if (label !== null && (label.length > 200 || /[\p{Cc}]/u.test(label))) {
    throw badRequest('label: expected at most 200 characters and no control characters');
  }
  const customer = await findCustomerByName(db, request.customer);
  if (!customer) throw badRequest(`customer: unknown customer ${request.customer}`);
  const id = randomBytes(8).toString('hex');
  const key = `${API_KEY_PREFIX}${id}${randomTokenPart()}`;
  const createdAt = Date.now();
  await db
    .insertInto('api_keys')
    .values({ id, customer_id: customer.id, label, secret_hash: tokenHash(key), created_at: createdAt, last_used_at: null, revoked_at: null })
    .execute();
  return { id, key, customer: customer.name, label, createdAt };
}

export interface RevokedApiKey {
  id: string;
  customer: string;
  revokedAt: number;
  /** False when the key was revoked before: nothing changed. */
  revokedNow: boolean;
}

/** Revokes a key; revoking one already revoked changes nothing and reports the first revocation. */
export async function revokeApiKey(db: Db, id: string): Promise<RevokedApiKey> {
  if (!KEY_ID.test(id)) throw badRequest(`id: expected 16 hex digits, got "${id}"`);
  const revoked = await db.updateTable('api_keys').set({ revoked_at: Date.now() }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
  const row = await db
    .selectFrom('api_keys')
    .innerJoin('customers', 'customers.id', 'api_keys.customer_id')
    .select(['api_keys.id', 'api_keys.revoked_at', 'customers.name as customer'])
    .where('api_keys.id', '=', id)
    .executeTakeFirst();
  if (!row) throw notFound(`API key ${id} not found`);
  return { id: row.id, customer: row.customer, revokedAt: Number(row.revoked_at), revokedNow: Number(revoked.numUpdatedRows) > 0 };
}

/** createApiKey with its audit entry, in one transaction (the entry holds neither the key nor its hash). */
export function createApiKeyRecorded(db: Db, source: ChangeSource, request: { customer: string; label?: string | undefined }): Promise<CreatedApiKey> {
  return db.transaction().execute(async (trx) => {
    const created = await createApiKey(trx, request);
    await recordChange(
      trx,
      source,
      {
        action: 'api_key.created',
        customer: created.customer,
        entity: { type: 'api_key', id: created.id },
        after: { customer: created.customer, label: created.label, created_at: new Date(created.createdAt).toISOString() },
      },
      created.createdAt,
    );
    return created;
  });
}

/** revokeApiKey with its audit entry, in one transaction; a key revoked before appends none (nothing changed). */
export function revokeApiKeyRecorded(db: Db, source: ChangeSource, id: string): Promise<RevokedApiKey> {
  return db.transaction().execute(async (trx) => {
    const revoked = await revokeApiKey(trx, id);
    if (revoked.revokedNow) {
      await recordChange(
        trx,
        source,
        { action: 'api_key.revoked', customer: revoked.customer, entity: { type: 'api_key', id }, before: { revoked_at: null }, after: { revoked_at: new Date(revoked.revokedAt).toISOString() } },
        revoked.revokedAt,
      );
    }
    return revoked;
  });
}

/** The ApiKeyRow of a key id, as a query that callers may join more tables to. */
export const selectApiKey = (db: Db, id: string) =>
  db
    .selectFrom('api_keys')
    .innerJoin('customers', 'customers.id', 'api_keys.customer_id')
    .select(['api_keys.id', 'api_keys.customer_id', 'customers.name as customer', 'api_keys.secret_hash', 'api_keys.last_used_at', 'api_keys.revoked_at'])
    .where('api_keys.id', '=', id);

const apiKeyQuery = precompiledQuery<ApiKeyRow, [string]>(1, (db, [id]) => selectApiKey(db, id as string));

export const findApiKey =
  (db: Db): ApiKeyLookup<ApiKeyRow> =>
  async (id) =>
    (await apiKeyQuery(db, id)).rows[0];

/**
 * Checks a presented key: the id finds the row, the hashes are compared in constant time,
 * revoked keys fail. Records the last use, at most once per LAST_USED_RESOLUTION_MS.
 */
export async function checkApiKey<Row extends ApiKeyRow = ApiKeyRow>(
  db: Db,
  presented: string,
  now = Date.now(),
  lookup: ApiKeyLookup<Row> = findApiKey(db) as ApiKeyLookup<Row>,
): Promise<ApiKeyCheck<Row>> {
  const match = API_KEY.exec(presented);
  if (!match) return { ok: false, reason: 'malformed' };
  const row = await lookup(match[1]!);
  if (!matchesTokenHash(presented, row?.secret_hash) || !row || row.revoked_at !== null) return { ok: false, reason: 'invalid' };

  const lastUsed = row.last_used_at === null ? null : Number(row.last_used_at);
  if (lastUsed === null || now - lastUsed >= LAST_USED_RESOLUTION_MS) {
    // Conditional, so that processes checking the same key at once write it once.
    await db
      .updateTable('api_keys')
      .set({ last_used_at: now })
      .where('id', '=', row.id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', now - LAST_USED_RESOLUTION_MS)]))
      .execute();
  }
  return { ok: true, owner: { keyId: row.id, customerId: row.customer_id, customer: row.customer }, row };
}
