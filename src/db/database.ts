import path from 'node:path';
import { Kysely } from 'kysely';
import type { Settings } from '../config/settings.ts';
import { postgresStrategy } from './dialects/postgres.ts';
import { sqliteStrategy } from './dialects/sqlite.ts';
import type { DialectStrategy } from './dialects/strategy.ts';
import type { Database } from './schema.ts';

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  dialect: DialectStrategy;
}

export function dialectFor(settings: Pick<Settings, 'databaseUrl' | 'dataDir'>, pgSchema?: string): DialectStrategy {
  return settings.databaseUrl
    ? postgresStrategy({ connectionString: settings.databaseUrl, ...(pgSchema ? { schema: pgSchema } : {}) })
    : sqliteStrategy(path.join(settings.dataDir, 'keyfleet.sqlite'));
}

export function openDatabase(dialect: DialectStrategy): DatabaseHandle {
  // No query log on this instance: a transaction's precompiled queries may run past the executor.
  return { db: new Kysely<Database>({ dialect: dialect.createDialect({ directPrecompiledStatements: true }) }), dialect };
}
