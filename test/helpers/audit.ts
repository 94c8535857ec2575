import assert from 'node:assert/strict';
import { verifyChain } from '../../src/audit/chain.ts';
import { auditChainInOrder, auditLogNewestFirst, type AuditFilter } from '../../src/audit/repository.ts';
import type { AuditEntry } from '../../src/audit/trail.ts';
import type { Db } from '../../src/db/database.ts';

/** The entries the filter selects, oldest first. */
export async function auditEntries(db: Db, filter: AuditFilter = {}): Promise<AuditEntry[]> {
  const entries: AuditEntry[] = [];
  for await (const entry of auditLogNewestFirst(db, filter)) entries.push(entry);
  return entries.reverse();
}

/** The id of the chain's last entry (0 before the first): take it before an act, and read what the act appended after it. */
export async function lastAuditId(db: Db): Promise<number> {
  const row = await db.selectFrom('audit_chain_head').select('seq').where('id', '=', 1).executeTakeFirstOrThrow();
  return Number(row.seq);
}

/** The entries appended after the entry `afterId`, oldest first. */
export async function auditEntriesAfter(db: Db, afterId: number): Promise<AuditEntry[]> {
  return (await auditEntries(db)).filter((entry) => entry.id > afterId);
}

/** Fails unless every entry of the chain links to the one before and hashes to its stored hash. */
export async function assertAuditChainIntact(db: Db): Promise<void> {
  const entries: AuditEntry[] = [];
  for await (const chunk of auditChainInOrder(db)) entries.push(...chunk);
  assert.equal(verifyChain(entries), undefined);
}
