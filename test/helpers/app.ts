import { describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { loadSettings, type Settings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import type { DialectStrategy } from '../../src/db/dialects/strategy.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import type { KeyRing } from '../../src/secrets/key-ring.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { buildServer } from '../../src/server.ts';
import { checkConformance } from './conformance.ts';
import { DATABASE_KINDS, createTestDatabase, unavailableReason, type DatabaseKind, type TestDatabase } from './databases.ts';

export interface TestApp {
  app: FastifyInstance;
  db: Db;
  dialect: DialectStrategy;
  settings: Settings;
  database: TestDatabase;
  close(): Promise<void>;
}

/**
 * A keyfleet app on a fresh, migrated database of the given kind; env adds or overrides
 * settings; beforeReady may add test-only routes.
 */
export async function buildTestApp(
  kind: DatabaseKind,
  env: Record<string, string> = {},
  beforeReady?: (app: FastifyInstance) => void | Promise<void>,
): Promise<TestApp> {
  const database = await createTestDatabase(kind);
  // Rate limits are off unless a test sets them: suites poll far faster than any device. The
  // fleet pass does not run by itself: a test that needs the summary or overdue marks runs it
  // (app.fleetPass.runPass) at the time it chooses, so what it reads does not hang on a timer.
  const settings = loadSettings({
    LOG_LEVEL: 'silent',
    RATE_LIMIT_DEVICE_PER_MINUTE: '0',
    RATE_LIMIT_DEVICE_IP_PER_MINUTE: '0',
    RATE_LIMIT_API_PER_MINUTE: '0',
    FLEET_PASS_INTERVAL_MS: '0',
    ...database.env,
    ...env,
  });
  const { db, dialect } = openDatabase(dialectFor(settings));
  await migrateToLatest(db, dialect);
  const keyRing = createKeyRing(db, loadMasterKey(settings));
  await keyRing.refresh();
  const app = await buildServer({ settings, db, dialect, keyRing });
  // Every answer a test receives keeps to the document (issue 15), so a test that gets one outside it fails.
  checkConformance(app);
  await beforeReady?.(app);
  await app.ready();
  return {
    app,
    db,
    dialect,
    settings,
    database,
    async close() {
      await app.close();
      await db.destroy();
      await database.drop();
    },
  };
}

/** A fresh database for tests that drive the CLI or a server process: its settings and an open connection, not migrated (the commands migrate). */
export interface TestStore {
  database: TestDatabase;
  settings: Settings;
  db: Db;
  dialect: DialectStrategy;
  /** Loads on first use, once the commands have migrated the database. */
  keyRing: KeyRing;
  close(): Promise<void>;
}

export async function openTestStore(kind: DatabaseKind): Promise<TestStore> {
  const database = await createTestDatabase(kind);
  const settings = loadSettings({ LOG_LEVEL: 'silent', ...database.env });
  const { db, dialect } = openDatabase(dialectFor(settings));
  return {
    database,
    settings,
    db,
    dialect,
    keyRing: createKeyRing(db, loadMasterKey(settings)),
    async close() {
      await db.destroy();
      await database.drop();
    },
  };
}

/** Runs one list of tests once per database kind: `forEachDatabase((kind) => { test(…) })`. */
export function forEachDatabase(name: string, tests: (kind: DatabaseKind) => void): void {
  for (const kind of DATABASE_KINDS) {
    describe(`${name} [${kind}]`, async () => {
      const skip = await unavailableReason(kind);
      if (skip) {
        // A skipped test, not a skipped suite: node:test counts only tests under "skipped".
        test(`skipped: ${skip}`, { skip }, () => {});
        return;
      }
      tests(kind);
    });
  }
}
