import type { Db } from '../db/database.ts';
import type { ApiTokensTable } from '../db/schema.ts';
import { notFound } from '../http/errors.ts';
import { freshCopy } from '../shared/fresh-copy.ts';

/**
 * The registry of the tokens this deployment signs (SPEC section 17): each has a row, by its
 * `jti`, so that it can be listed and revoked. A revoked token is refused by every process
 * within REVOCATION_MAX_AGE_MS.
 */

/** The oldest a process's copy of the revoked tokens may be when it verifies a token. */
export const REVOCATION_MAX_AGE_MS = 1_000;

export async function recordToken(db: Db, row: Omit<ApiTokensTable, 'revoked_at' | 'revoked_by'>): Promise<void> {
  await db.insertInto('api_tokens').values({ ...row, revoked_at: null, revoked_by: null }).execute();
}

export interface TokenView {
  id: string;
  name: string;
  subject: string;
  customer: string | null;
  scopes: string[];
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(Number(ms)).toISOString());

/** Tokens newest first; expired ones only with `includeExpired`; the one token `id` when given. */
export async function listTokens(db: Db, { now, includeExpired, customerId, id }: { now: number; includeExpired: boolean; customerId?: number; id?: string }): Promise<TokenView[]> {
  let query = db
    .selectFrom('api_tokens')
    .leftJoin('customers', 'customers.id', 'api_tokens.customer_id')
    .select(['api_tokens.id', 'api_tokens.name', 'api_tokens.subject', 'customers.name as customer', 'api_tokens.scopes', 'api_tokens.created_at', 'api_tokens.expires_at', 'api_tokens.revoked_at'])
    .orderBy('api_tokens.created_at', 'desc')
    .orderBy('api_tokens.id');
  if (!includeExpired) query = query.where('api_tokens.expires_at', '>', now);
  if (customerId !== undefined) query = query.where('api_tokens.customer_id', '=', customerId);
  if (id !== undefined) query = query.where('api_tokens.id', '=', id);
  const rows = await query.execute();
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    subject: row.subject,
    customer: row.customer ?? null,
    scopes: row.scopes.split(' '),
    created_at: iso(row.created_at)!,
    expires_at: iso(row.expires_at)!,
    revoked_at: iso(row.revoked_at),
  }));
}

/** Revokes the token (again: a no-op that keeps the first revocation's time); 404 for an unknown id. */
export async function revokeToken(db: Db, id: string, { now, by }: { now: number; by: string }): Promise<TokenView> {
  const row = await db.selectFrom('api_tokens').select(['id', 'revoked_at']).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound(`token ${id} not found`);
  if (row.revoked_at === null) await db.updateTable('api_tokens').set({ revoked_at: now, revoked_by: by }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  return (await listTokens(db, { now, includeExpired: true, id }))[0]!;
}

export interface TokenRevocations {
  isRevoked(id: string): Promise<boolean>;
}

/**
 * The revoked tokens that have not expired yet, read from the database at most
 * REVOCATION_MAX_AGE_MS before each check: one small query a second under load, a set lookup
 * per request.
 */
export function tokenRevocations(db: Db, { clockToleranceMs, clock = Date.now }: { clockToleranceMs: number; clock?: () => number }): TokenRevocations {
  const revoked = freshCopy(
    async (startedAt) => {
      // A token is accepted up to the clock tolerance past its expiry: it stays revoked that long too.
      const rows = await db.selectFrom('api_tokens').select('id').where('revoked_at', 'is not', null).where('expires_at', '>', startedAt - clockToleranceMs).execute();
      return new Set(rows.map((row) => row.id));
    },
    REVOCATION_MAX_AGE_MS,
    clock,
  );
  return { isRevoked: async (id) => (await revoked.get()).has(id) };
}
