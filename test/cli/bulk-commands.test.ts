import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Principal } from '../../src/auth/guard.ts';
import { createAcl, getAcl } from '../../src/acl/service.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { findOkm, insertOkm } from '../../src/okm/repository.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { aclUser } from '../acl/helpers.ts';

const actor = { kind: 'cli' as const, id: 'test', name: 'test' };
const principal: Principal = { subject: 'cli:test', actor, customer: null, scopes: new Set(['admin']), isAdmin: true };
const source = { actor, requestId: null, ip: null, userAgent: null };

let unique = 0;

forEachDatabase('keyfleet acl remove-user and okm remove-subscriber-url', (kind) => {
  let store: TestStore;
  before(async () => {
    store = await openTestStore(kind);
    const migrated = await runKeyfleet(store.database.env, 'migrate');
    assert.equal(migrated.exitCode, 0, migrated.stderr);
    await createCustomer(store.db, 'acme');
  });
  after(() => store.close());

  const keyfleet = (...args: string[]) => runKeyfleet(store.database.env, ...args);
  const request = () => ({ db: store.db, principal, now: Date.now(), source, locking: store.dialect });
  const aclHolding = async (userIds: number[]) => {
    const body = { id: randomUUID(), customer: 'acme', locks: ['L1', 'L2'], users: userIds.map((id) => aclUser(id, [1, 0])) };
    await createAcl(request(), { body: body as never, jsonText: JSON.stringify(body) });
    return body.id;
  };
  const usersOf = async (id: string) => (JSON.parse((await getAcl(request(), id, 'acme')).usersJson) as { user_id: number }[]).map((user) => user.user_id);

  test('acl remove-user lists the ACLs without --apply, and removes the user from all of them with it', async () => {
    const leaving = 800_000_000 + ++unique;
    const ids = [await aclHolding([leaving, 7]), await aclHolding([leaving])].sort();

    const preview = await keyfleet('acl', 'remove-user', '--customer', 'acme', '--user', String(leaving), '--json');
    assert.equal(preview.exitCode, 0, preview.stderr);
    const previewed = JSON.parse(preview.stdout);
    assert.deepEqual(previewed.acls.map((acl: { id: string }) => acl.id), ids);
    assert.equal(previewed.applied, false);
    for (const id of ids) assert.ok((await usersOf(id)).includes(leaving), 'the preview changes nothing');

    const text = await keyfleet('acl', 'remove-user', '--customer', 'acme', '--user', String(leaving));
    assert.match(text.stdout, /is in 2 ACLs of acme \(nothing changed: run again with --apply/);

    const applied = await keyfleet('acl', 'remove-user', '--customer', 'acme', '--user', String(leaving), '--apply', '--json');
    assert.equal(applied.exitCode, 0, applied.stderr);
    assert.deepEqual(JSON.parse(applied.stdout), { ...previewed, applied: true });
    for (const id of ids) assert.equal((await usersOf(id)).includes(leaving), false);
  });

  test('acl remove-user refuses a malformed user id (exit 2) and an unknown customer', async () => {
    assert.equal((await keyfleet('acl', 'remove-user', '--customer', 'acme', '--user', 'abc')).exitCode, 2);
    assert.notEqual((await keyfleet('acl', 'remove-user', '--customer', 'nobody', '--user', '1')).exitCode, 0);
  });

  test('okm remove-subscriber-url takes the URL out of every OKM holding it, only with --apply', async () => {
    const dead = `https://hooks.example/dead-${process.pid}-${++unique}`;
    const serials = [`CLIB-${process.pid}-${unique}-1`, `CLIB-${process.pid}-${unique}-2`];
    for (const serial of serials) await insertOkm(store.db, serial, null, { ...UNCONFIGURED_OKM, statusUrls: ['https://hooks.example/alive', dead] }, Date.now());

    const preview = await keyfleet('okm', 'remove-subscriber-url', dead, '--json');
    assert.equal(preview.exitCode, 0, preview.stderr);
    assert.deepEqual(JSON.parse(preview.stdout).serial_numbers, serials);
    assert.deepEqual((await findOkm(store.db, serials[0]!))!.statusUrls.length, 2);

    const applied = await keyfleet('okm', 'remove-subscriber-url', dead, '--apply');
    assert.equal(applied.exitCode, 0, applied.stderr);
    assert.match(applied.stdout, /^removed .* from 2 OKMs/);
    for (const serial of serials) assert.deepEqual((await findOkm(store.db, serial))!.statusUrls, ['https://hooks.example/alive']);
  });
});
