import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export type DatabaseKind = 'sqlite' | 'postgres';
export const DATABASE_KINDS: DatabaseKind[] = ['sqlite', 'postgres'];

export const POSTGRES_URL = process.env.KEYFLEET_TEST_POSTGRES_URL ?? 'postgres://root@127.0.0.1:5432/test';

/** Environment (DATA_DIR, DATABASE_URL) of one fresh database: a SQLite file or a Postgres schema. */
export interface TestDatabase {
  env: Record<string, string>;
  dataDir: string;
  drop(): Promise<void>;
}

let postgresReachable: Promise<boolean> | undefined;

export function isPostgresReachable(): Promise<boolean> {
  postgresReachable ??= (async () => {
    // A busy machine (the suite runs files in parallel) can be slow to accept a connection.
    for (let attempt = 0; attempt < 3; attempt++) {
      const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 10_000 });
      try {
        await client.connect();
        await client.end();
        return true;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
    return false;
  })();
  return postgresReachable;
}

/**
 * Why a dialect's tests cannot run here, or undefined when they can. In CI (CI=true) a
 * missing PostgreSQL is a failure, never a skip.
 */
export async function unavailableReason(kind: DatabaseKind): Promise<string | undefined> {
  if (kind === 'sqlite' || (await isPostgresReachable())) return undefined;
  if (process.env.CI) throw new Error(`PostgreSQL is not reachable at ${POSTGRES_URL}, and CI requires it`);
  warnPostgresSkipped();
  return `PostgreSQL is not reachable at ${POSTGRES_URL}`;
}

let warnedPostgresSkipped = false;
/** Once per test file: a skipped half of the suite must not read as a green run. */
function warnPostgresSkipped(): void {
  if (warnedPostgresSkipped) return;
  warnedPostgresSkipped = true;
  process.stderr.write(
    `WARNING: PostgreSQL is not reachable at ${POSTGRES_URL}: every PostgreSQL test in this file is SKIPPED ` +
      '(counted under "skipped"; set CI=true to make this a failure, or KEYFLEET_TEST_POSTGRES_URL to point at a server)\n',
  );
}

export async function createTestDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-test-'));
  const removeDir = () => fs.rmSync(dataDir, { recursive: true, force: true });
  if (kind === 'sqlite') {
    return { env: { DATA_DIR: dataDir }, dataDir, drop: async () => removeDir() };
  }
  const schema = `t_${randomBytes(8).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: url.toString(), MASTER_KEY: randomBytes(32).toString('hex') },
    dataDir,
    async drop() {
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
      removeDir();
    },
  };
}
