import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { verifyChain } from '../../src/audit/chain.ts';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import { auditChainInOrder, auditLogNewestFirst, type AuditFilter } from '../../src/audit/repository.ts';
import type { AuditEntry } from '../../src/audit/trail.ts';
import type { Db } from '../../src/db/database.ts';
import type { DatabaseKind } from './databases.ts';

/** The entries the filter selects, oldest first: every entry committed so far, chained first. */
export async function auditEntries(db: Db, filter: AuditFilter = {}): Promise<AuditEntry[]> {
  await chainAllPendingEntries(db);
  const entries: AuditEntry[] = [];
  for await (const entry of auditLogNewestFirst(db, filter)) entries.push(entry);
  return entries.reverse();
}

/** The id of the chain's last entry (0 before the first), every committed entry chained: take it before an act, and read what the act appended after it. */
export async function lastAuditId(db: Db): Promise<number> {
  await chainAllPendingEntries(db);
  const row = await db.selectFrom('audit_chain_head').select('seq').where('id', '=', 1).executeTakeFirstOrThrow();
  return Number(row.seq);
}

/** The entries appended after the entry `afterId`, oldest first. */
export async function auditEntriesAfter(db: Db, afterId: number): Promise<AuditEntry[]> {
  return (await auditEntries(db)).filter((entry) => entry.id > afterId);
}

/** Fails unless every entry of the chain links to the one before and hashes to its stored hash. */
export async function assertAuditChainIntact(db: Db): Promise<void> {
  await chainAllPendingEntries(db);
  const entries: AuditEntry[] = [];
  for await (const chunk of auditChainInOrder(db)) entries.push(...chunk);
  assert.equal(verifyChain(entries), undefined);
}

/**
 * Runs `act` while every write of an audit entry fails right after the entry's INSERT (a
 * trigger raising an error after the row is written): a change whose transaction writes its
 * entry fails with it, and must leave neither the change nor the entry.
 */
export async function withFailureAfterEachAuditEntry<T>(db: Db, kind: DatabaseKind, act: () => Promise<T>): Promise<T> {
  if (kind === 'sqlite') {
    await sql`CREATE TRIGGER fail_after_audit_entry AFTER INSERT ON audit_pending BEGIN SELECT RAISE(ABORT, 'injected failure after the audit entry'); END`.execute(db);
  } else {
    await sql`CREATE FUNCTION fail_after_audit_entry() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected failure after the audit entry'; END $$ LANGUAGE plpgsql`.execute(db);
    await sql`CREATE TRIGGER fail_after_audit_entry AFTER INSERT ON audit_pending FOR EACH ROW EXECUTE FUNCTION fail_after_audit_entry()`.execute(db);
  }
  try {
    return await act();
  } finally {
    if (kind === 'sqlite') {
      await sql`DROP TRIGGER fail_after_audit_entry`.execute(db);
    } else {
      await sql`DROP TRIGGER fail_after_audit_entry ON audit_pending`.execute(db);
      await sql`DROP FUNCTION fail_after_audit_entry()`.execute(db);
    }
  }
}
