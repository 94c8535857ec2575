import type { Kysely } from 'kysely';

/**
 * What a migration is given. Migrations are frozen: each must do on a database migrated
 * tomorrow exactly what it did on the databases it has already built, so nothing under
 * src/db/migrations/ imports live code (test/architecture/import-rules.test.ts), and a migration
 * learns about its database from data, never from the live dialect strategy, whose behaviour
 * may change. What differs between dialects is decided from `kind` by frozen/dialect.ts.
 */

// Migrations describe tables that the current schema types may no longer have.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyDb = Kysely<any>;

export interface MigrationContext {
  readonly kind: 'sqlite' | 'postgres';
}

export interface MigrationModule {
  up(db: AnyDb, context: MigrationContext): Promise<void>;
}
