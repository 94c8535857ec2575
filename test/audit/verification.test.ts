import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import { chainAllPendingEntries } from '../../src/audit/chainer.ts';
import { signDueCheckpoints, CHECKPOINT_EVERY_ENTRIES, dueCheckpointSeqs } from '../../src/audit/checkpoints.ts';
import { pruneAuditTrail } from '../../src/audit/retention.ts';
import { entryHash } from '../../src/audit/chain.ts';
import { entryOfRow, recordChanges, SYSTEM_SOURCE, type Change } from '../../src/audit/trail.ts';
import { verifyAuditTrail } from '../../src/audit/verification.ts';
import { loadActiveSigningKey } from '../../src/auth/signing-keys.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';

const change = (index: number): Change => ({ action: 'customer.updated', customer: 'acme', entity: { type: 'customer', id: 'acme' }, before: { time_zone: `Zone/${index}` }, after: { time_zone: `Zone/${index + 1}` } });

test('checkpoints fall due at each multiple of the interval, and at the head once the last one is ten minutes old', () => {
  assert.deepEqual(dueCheckpointSeqs(undefined, 10, 0), [10]);
  assert.deepEqual(dueCheckpointSeqs({ seq: 10, signedAt: 0 }, 2_500, 60_000), [1_000, 2_000]);
  assert.deepEqual(dueCheckpointSeqs({ seq: 2_000, signedAt: 0 }, 2_500, 60_000), []);
  assert.deepEqual(dueCheckpointSeqs({ seq: 2_000, signedAt: 0 }, 2_500, 10 * 60_000), [2_500]);
  assert.deepEqual(dueCheckpointSeqs({ seq: 2_500, signedAt: 0 }, 2_500, 10 * 60_000), []);
  assert.equal(CHECKPOINT_EVERY_ENTRIES, 1_000);
});

forEachDatabase('keyfleet audit verify', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind);
  });
  after(() => t.close());

  const signingKey = () => loadActiveSigningKey(t.db, t.app.keyRing);
  /** A trail of `count` entries, the last ones signed by a checkpoint at the head. */
  async function freshTrail(count: number, { now = Date.now(), checkpoint = true } = {}) {
    await t.db.deleteFrom('audit_entries').execute();
    await t.db.deleteFrom('audit_checkpoints').execute();
    await t.db.updateTable('audit_chain_head').set({ seq: 0, hash: '0'.repeat(64) }).execute();
    await t.db.transaction().execute((trx) => recordChanges(trx, SYSTEM_SOURCE, Array.from({ length: count }, (_, index) => change(index)), now));
    await chainAllPendingEntries(t.db);
    if (checkpoint) {
      // The app's own upkeep signs due checkpoints every 10 s too, and may have signed this one
      // first: what the tests need is the head signed, by either.
      await signDueCheckpoints(t.db, signingKey, now);
      const signed = await t.db.selectFrom('audit_checkpoints').select('seq').execute();
      assert.deepEqual(signed.map(({ seq }) => Number(seq)), [count]);
    }
  }
  const verify = async () => {
    const run = await runKeyfleet(t.database.env, 'audit', 'verify', '--json');
    return { exitCode: run.exitCode, result: JSON.parse(run.stdout) as { intact: boolean; entries: number; problem?: { kind: string; seq: number; detail: string } } };
  };
  /** Moves entries by hand: a row's seq set to another, through a free seq so that the primary key never clashes. */
  const moveSeq = (from: number, to: number) => t.db.updateTable('audit_entries').set({ seq: to }).where('seq', '=', from).execute();

  beforeEach(() => freshTrail(8));

  test('an intact chain exits 0 and says what it walked', async () => {
    const { exitCode, result } = await verify();
    assert.equal(exitCode, 0);
    assert.equal(result.intact, true);
    assert.equal(result.entries, 8);
  });

  test('an entry edited by hand is named altered', async () => {
    await t.db.updateTable('audit_entries').set({ actor_name: 'mallory' }).where('seq', '=', 3).execute();
    const { exitCode, result } = await verify();
    assert.equal(exitCode, 1);
    assert.deepEqual([result.problem?.kind, result.problem?.seq], ['altered', 3]);
  });

  test('an entry deleted by hand is named deleted', async () => {
    await t.db.deleteFrom('audit_entries').where('seq', '=', 5).execute();
    const { exitCode, result } = await verify();
    assert.equal(exitCode, 1);
    assert.deepEqual([result.problem?.kind, result.problem?.seq], ['deleted', 5]);
  });

  test('the first entries deleted with no signed checkpoint before them are named deleted', async () => {
    await t.db.deleteFrom('audit_entries').where('seq', '<=', 2).execute();
    const { result } = await verify();
    assert.deepEqual([result.problem?.kind, result.problem?.seq], ['deleted', 1]);
  });

  test('an entry made by hand and slipped in between two others is named inserted', async () => {
    // Entries 4… move one on, and an entry made outside the chain, hashed right under seq 4 but linked to no entry of it, takes seq 4.
    for (let seq = 8; seq >= 4; seq -= 1) await moveSeq(seq, seq + 1);
    const third = await t.db.selectFrom('audit_entries').selectAll().where('seq', '=', 3).executeTakeFirstOrThrow();
    const forged = { ...third, seq: 4, actor_name: 'mallory', prev_hash: 'f'.repeat(64) };
    await t.db.insertInto('audit_entries').values({ ...forged, hash: entryHash(entryOfRow(forged)) }).execute();
    const { exitCode, result } = await verify();
    assert.equal(exitCode, 1);
    assert.deepEqual([result.problem?.kind, result.problem?.seq], ['inserted', 4]);
  });

  test('two entries exchanged by hand are named reordered', async () => {
    await moveSeq(4, 100);
    await moveSeq(5, 4);
    await moveSeq(100, 5);
    const { exitCode, result } = await verify();
    assert.equal(exitCode, 1);
    assert.deepEqual([result.problem?.kind, result.problem?.seq], ['reordered', 4]);
  });

  test('entries deleted from the end after a signed checkpoint are named a missing tail', async () => {
    await t.db.deleteFrom('audit_entries').where('seq', '>', 6).execute();
    await t.db.updateTable('audit_chain_head').set({ seq: 6 }).execute();
    const { exitCode, result } = await verify();
    assert.equal(exitCode, 1);
    assert.deepEqual([result.problem?.kind, result.problem?.seq], ['missing_tail', 7]);
  });

  test('a tail rewritten with fresh hashes verifies link by link, and the signed checkpoint names it', async () => {
    const rows = await t.db.selectFrom('audit_entries').selectAll().where('seq', '>=', 6).orderBy('seq').execute();
    await t.db.deleteFrom('audit_entries').where('seq', '>=', 6).execute();
    await t.db.updateTable('audit_chain_head').set({ seq: 5, hash: (await t.db.selectFrom('audit_entries').select('hash').where('seq', '=', 5).executeTakeFirstOrThrow()).hash! }).execute();
    await t.db.transaction().execute((trx) => recordChanges(trx, SYSTEM_SOURCE, rows.map((_, index) => change(100 + index))));
    await chainAllPendingEntries(t.db);
    const { result } = await verify();
    assert.deepEqual([result.problem?.kind, result.problem?.seq], ['altered', 8]);
  });

  test('a checkpoint edited by hand, or signed by a key the deployment never had, is named', async () => {
    await t.db.updateTable('audit_checkpoints').set({ hash: 'f'.repeat(64) }).execute();
    assert.equal((await verify()).result.problem?.kind, 'bad_checkpoint');
    await freshTrail(3);
    await t.db.updateTable('audit_checkpoints').set({ kid: 'unknown-key' }).execute();
    assert.equal((await verify()).result.problem?.kind, 'bad_checkpoint');
  });

  test('retention prunes old entries only down to a signed checkpoint, and the rest verifies from it as an anchor', async () => {
    const day = 86_400_000;
    const now = Date.now();
    // 1 500 entries 40 days old, signed at 1 000 and 1 200; the 300 after 1 200 have no checkpoint yet; one entry of today.
    await freshTrail(1_200, { now: now - 40 * day, checkpoint: false });
    assert.equal(await signDueCheckpoints(t.db, signingKey, now), 2);
    await t.db.transaction().execute((trx) => recordChanges(trx, SYSTEM_SOURCE, Array.from({ length: 300 }, (_, index) => change(index)), now - 40 * day));
    await t.db.transaction().execute((trx) => recordChanges(trx, SYSTEM_SOURCE, [change(9_999)], now));
    await chainAllPendingEntries(t.db);

    assert.equal(await pruneAuditTrail(t.db, 30, now), 1_200);
    assert.equal(await pruneAuditTrail(t.db, 30, now), 0);
    const verification = await verifyAuditTrail(t.db);
    assert.equal(verification.intact, true, JSON.stringify(verification.problem));
    assert.deepEqual([verification.anchor, verification.first, verification.last], [1_200, 1_201, 1_501]);
    // An entry younger than the retention stays whatever the checkpoints: 60 days keeps them all.
    assert.equal(await pruneAuditTrail(t.db, 60, now), 0);
  });

  test('keyfleet audit export writes the selection newest first: NDJSON lines as the API shows them, CSV with a header, a file with --output', async () => {
    const ndjson = await runKeyfleet(t.database.env, 'audit', 'export', '--entity-type', 'customer', '--since', new Date(Date.now() - 3_600_000).toISOString());
    assert.equal(ndjson.exitCode, 0, ndjson.stderr);
    const lines = ndjson.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { id: number; hash: string });
    assert.deepEqual(lines.map((entry) => entry.id), [8, 7, 6, 5, 4, 3, 2, 1]);
    for (const entry of lines) assert.equal(entryHash(entry as never), entry.hash);

    const file = path.join(os.tmpdir(), `keyfleet-audit-${process.pid}-${kind}.csv`);
    const csv = await runKeyfleet(t.database.env, 'audit', 'export', '--format', 'csv', '--action', 'customer.updated', '--output', file, '--json');
    assert.equal(csv.exitCode, 0, csv.stderr);
    assert.deepEqual(JSON.parse(csv.stdout), { entries: 8, format: 'csv', output: file });
    const rows = fs.readFileSync(file, 'utf8').trimEnd().split('\r\n');
    fs.rmSync(file);
    assert.equal(rows.length, 9);
    assert.match(rows[0]!, /^id,time,actor_kind/);

    const refused = await runKeyfleet(t.database.env, 'audit', 'export', '--action', 'customer.exploded');
    assert.notEqual(refused.exitCode, 0);
  });
});
