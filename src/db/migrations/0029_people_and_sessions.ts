import type { AnyDb, MigrationContext } from './migration-context.ts';
import { autoIncrementPrimaryKey, idType } from './frozen/dialect.ts';

/**
 * People, role bindings, sessions and the registry of API tokens (contract §17).
 *
 * - `people`: one row per (issuer, subject) of the OpenID Provider, made at first sign-in.
 * - `role_bindings`: an IdP group, an email or a subject bound to a role, for one customer or
 *   (customer_id null) the whole fleet.
 * - `sessions`: keyed by the SHA-256 of the cookie's secret (the cookie alone opens it); the
 *   groups of the last sign-in or refresh, the refresh token sealed under the data keys;
 *   `seen_at` is written at most once a minute, so that a session's requests do not write.
 * - `sign_in_attempts`: a sign-in between its redirect to the provider and the callback, keyed
 *   by the SHA-256 of its `state`, with its nonce and PKCE verifier; deleted when used (a
 *   replayed callback finds none) or after 10 minutes.
 * - `api_tokens`: one row per token `keyfleet token issue` signs (its `jti`), so that it can be
 *   listed and revoked; tokens signed before this table existed have no row and keep working
 *   until they expire.
 */
export async function up(db: AnyDb, context: MigrationContext): Promise<void> {
  await db.schema
    .createTable('people')
    .addColumn('id', idType(context), (c) => autoIncrementPrimaryKey(context, c))
    .addColumn('issuer', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('email', 'text')
    .addColumn('name', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('signed_in_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('people_issuer_subject_key', ['issuer', 'subject'])
    .execute();

  await db.schema
    .createTable('role_bindings')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('customer_id', idType(context), (c) => c.references('customers.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('role_bindings_value_idx').on('role_bindings').columns(['kind', 'value']).execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('person_id', idType(context), (c) => c.notNull().references('people.id').onDelete('cascade'))
    .addColumn('groups', 'text', (c) => c.notNull())
    .addColumn('refresh_token_sealed', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('seen_at', 'bigint', (c) => c.notNull())
    .addColumn('refreshed_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('ended_at', 'bigint')
    .addColumn('ended_by', 'text')
    .execute();
  await db.schema.createIndex('sessions_person_idx').on('sessions').columns(['person_id', 'created_at']).execute();
  await db.schema.createIndex('sessions_ended_idx').on('sessions').column('ended_at').execute();

  await db.schema
    .createTable('sign_in_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('code_verifier', 'text', (c) => c.notNull())
    .addColumn('return_to', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sign_in_attempts_created_idx').on('sign_in_attempts').column('created_at').execute();

  await db.schema
    .createTable('api_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    // Set null, not cascade: a revoked token's row must outlive its customer, or a customer made again under the name would revive it.
    .addColumn('customer_id', idType(context), (c) => c.references('customers.id').onDelete('set null'))
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .addColumn('revoked_by', 'text')
    .execute();
  await db.schema.createIndex('api_tokens_revoked_idx').on('api_tokens').columns(['revoked_at', 'expires_at']).execute();
}
