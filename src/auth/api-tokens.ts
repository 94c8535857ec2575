import type { Db } from '../db/database.ts';
import type { ApiTokensTable } from '../db/schema.ts';
import { notFound } from '../http/errors.ts';
import { freshCopy } from '../shared/fresh-copy.ts';
import { recordChange, type ChangeSource } from '../audit/trail.ts';
import { actorText } from './actor.ts';

/**
 * The registry of the tokens this deployment signs (contract §17): each has a row, by its
 * `jti`, so that it can be listed and revoked. A revoked token is refused by every process
 * within REVOCATION_MAX_AGE_MS.
 */

/** The oldest a process's copy of the revoked tokens may be when it verifies a token. */
export const REVOCATION_MAX_AGE_MS = 1_000;

/** Adds a token to the registry; its entry is its caller's (issueToken's token.issued, revokeTokenItself's token.revoked). */
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

/** What an entry records of a token (never the token itself, which no one keeps). */
const recordedToken = (token: TokenView) => ({ name: token.name, subject: token.subject, customer: token.customer, revoked_at: token.revoked_at });

/**
 * Revokes the token, with its token.revoked entry in the same transaction; again, a no-op that
 * keeps the first revocation's time and appends nothing; 404 for an unknown id.
 */
export async function revokeToken(db: Db, id: string, { now, source }: { now: number; source: ChangeSource }): Promise<TokenView> {
  return db.transaction().execute((trx) => revokeTokenInTransaction(trx, id, { now, source }));
}

/** As revokeToken, inside the caller's transaction `trx` (revokeTokenItself records the token in it first). */
export async function revokeTokenInTransaction(trx: Db, id: string, { now, source }: { now: number; source: ChangeSource }): Promise<TokenView> {
  const before = (await listTokens(trx, { now, includeExpired: true, id }))[0];
  if (!before) throw notFound(`token ${id} not found`);
  if (before.revoked_at !== null) return before;
  // Counted: of two revocations at once, one revokes and records it; the other finds it revoked.
  const revoked = await trx.updateTable('api_tokens').set({ revoked_at: now, revoked_by: actorText(source.actor) }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
  const after = (await listTokens(trx, { now, includeExpired: true, id }))[0]!;
  if (Number(revoked.numUpdatedRows) === 1) {
    await recordChange(trx, source, { action: 'token.revoked', customer: before.customer, entity: { type: 'token', id }, before: recordedToken(before), after: recordedToken(after) }, now);
  }
  return after;
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
