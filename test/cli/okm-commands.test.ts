import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createCustomer } from '../../src/customers/service.ts';
import { authenticateDevice } from '../../src/okm/device-tokens.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { recordPendingCall } from '../../src/okm/pending-repository.ts';
import { findOkm, insertOkm } from '../../src/okm/repository.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { runKeyfleet } from '../helpers/cli.ts';

let serials = 0;
const newSerial = () => `CLI-${process.pid}-${++serials}`;

forEachDatabase('keyfleet okm pending, accept and token', (kind) => {
  let store: TestStore;
  before(async () => {
    store = await openTestStore(kind);
    const migrated = await runKeyfleet(store.database.env, 'migrate');
    assert.equal(migrated.exitCode, 0, migrated.stderr);
    await createCustomer(store.db, 'acme');
  });
  after(() => store.close());

  const keyfleet = (...args: string[]) => runKeyfleet(store.database.env, ...args);

  async function pendingOkm(): Promise<string> {
    const serial = newSerial();
    await recordPendingCall(store.db, serial, { now: Date.parse('2026-11-20T10:00:00Z'), ip: '203.0.113.7', firmwareVersion: '2.1.0' });
    return serial;
  }

  async function knownOkm(): Promise<string> {
    const serial = newSerial();
    await insertOkm(store.db, serial, null, UNCONFIGURED_OKM, Date.now());
    return serial;
  }

  async function pendingSerials(): Promise<string[]> {
    const run = await keyfleet('okm', 'pending', '--json');
    assert.equal(run.exitCode, 0, run.stderr);
    return (JSON.parse(run.stdout) as { pending: Array<{ serial_number: string }> }).pending.map((okm) => okm.serial_number);
  }

  test('okm pending --json prints the pending OKMs with what an operator needs to decide', async () => {
    const serial = await pendingOkm();

    const run = await keyfleet('okm', 'pending', '--json');

    assert.equal(run.exitCode, 0, run.stderr);
    const printed = JSON.parse(run.stdout) as { next_cursor: string | null; pending: Array<Record<string, unknown>> };
    assert.equal(printed.next_cursor, null);
    assert.deepEqual(
      printed.pending.find((okm) => okm.serial_number === serial),
      {
        serial_number: serial,
        first_seen_at: '2026-11-20T10:00:00.000Z',
        last_seen_at: '2026-11-20T10:00:00.000Z',
        last_ip: '203.0.113.7',
        firmware_version: '2.1.0',
        calls: 1,
      },
    );
  });

  test('okm pending without --json prints one line per pending OKM and how many are on the page', async () => {
    const serial = await pendingOkm();

    const run = await keyfleet('okm', 'pending');

    assert.equal(run.exitCode, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`^${serial}  first 2026-11-20T10:00:00.000Z  last 2026-11-20T10:00:00.000Z from 203.0.113.7  firmware 2.1.0  calls 1$`, 'm'));
    assert.match(run.stdout, /^\d+ pending on this page\n$/m);
  });

  test('okm accept --customer makes the pending OKM an OKM of that customer, no longer pending', async () => {
    const serial = await pendingOkm();

    const run = await keyfleet('okm', 'accept', serial, '--customer', 'acme', '--json');

    assert.equal(run.exitCode, 0, run.stderr);
    const printed = JSON.parse(run.stdout) as { serial_number: string; customer: string; accepted_at: string };
    assert.equal(printed.serial_number, serial);
    assert.equal(printed.customer, 'acme');
    assert.ok(!Number.isNaN(Date.parse(printed.accepted_at)));
    const okm = await findOkm(store.db, serial);
    assert.ok(okm);
    assert.notEqual(okm.customerId, null);
    assert.equal(okm.lastIp, '203.0.113.7');
    assert.ok(!(await pendingSerials()).includes(serial));
  });

  test('okm accept without --customer leaves the OKM to no customer', async () => {
    const serial = await pendingOkm();

    const run = await keyfleet('okm', 'accept', serial);

    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(run.stdout, `accepted: ${serial}\n`);
    assert.equal((await findOkm(store.db, serial))?.customerId, null);
  });

  test('okm accept fails with one line on stderr for a serial number that is not pending, or an unknown customer', async () => {
    const pending = await pendingOkm();
    const notPending = newSerial();

    const unknownSerial = await keyfleet('okm', 'accept', notPending);
    const unknownCustomer = await keyfleet('okm', 'accept', pending, '--customer', 'nobody');

    assert.notEqual(unknownSerial.exitCode, 0);
    assert.equal(unknownSerial.stderr, `keyfleet: No pending OKM ${notPending}\n`);
    assert.notEqual(unknownCustomer.exitCode, 0);
    assert.equal(unknownCustomer.stderr, 'keyfleet: customer: unknown customer nobody\n');
    assert.ok((await pendingSerials()).includes(pending));
  });

  test('okm token --json prints a token that authenticates the OKM; a second one replaces it', async () => {
    const serial = await knownOkm();

    const first = await keyfleet('okm', 'token', serial, '--json');
    const second = await keyfleet('okm', 'token', serial, '--json');

    assert.equal(first.exitCode, 0, first.stderr);
    assert.equal(second.exitCode, 0, second.stderr);
    const { token: oldToken } = JSON.parse(first.stdout) as { token: string };
    const printed = JSON.parse(second.stdout) as { serial_number: string; token: string; issued_at: string };
    assert.equal(printed.serial_number, serial);
    assert.match(printed.token, /^kf_okm_[A-Za-z0-9_-]{43}$/);
    assert.equal(await authenticateDevice(store.db, serial, `Bearer ${printed.token}`), 'authenticated');
    await assert.rejects(authenticateDevice(store.db, serial, `Bearer ${oldToken}`), { statusCode: 401 });
  });

  test('okm token without --json prints the token with a note that it is shown once', async () => {
    const serial = await knownOkm();

    const run = await keyfleet('okm', 'token', serial);

    assert.equal(run.exitCode, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`^serial: ${serial}\ntoken: kf_okm_[A-Za-z0-9_-]{43}\n\\(the token is shown only this once`));
  });

  test('okm token fails with one line on stderr for an unknown, a pending or a malformed serial number', async () => {
    const unknown = newSerial();
    const pending = await pendingOkm();

    const forUnknown = await keyfleet('okm', 'token', unknown);
    const forPending = await keyfleet('okm', 'token', pending);
    const forMalformed = await keyfleet('okm', 'token', 'no spaces allowed');

    assert.notEqual(forUnknown.exitCode, 0);
    assert.equal(forUnknown.stderr, `keyfleet: OKM ${unknown} not found\n`);
    assert.notEqual(forPending.exitCode, 0);
    assert.equal(forPending.stderr, `keyfleet: OKM ${pending} is pending: accept it first\n`);
    assert.notEqual(forMalformed.exitCode, 0);
    assert.equal(forMalformed.stderr, 'keyfleet: serial number: expected 1–64 characters of A–Z, a–z, 0–9, ".", "_" or "-", got "no spaces allowed"\n');
  });

  test('okm pending pages by --cursor, 100 a page: each page tells the command for the next, and a cursor of nothing is refused', async () => {
    const serials = Array.from({ length: 101 }, (_, index) => `CLI-PAGE-${String(index).padStart(3, '0')}`);
    await store.db
      .insertInto('pending_okms')
      .values(serials.map((serial) => ({ serial_number: serial, first_seen_at: 1, last_seen_at: 1, last_ip: '203.0.113.7', firmware_version: null, call_count: 1 })))
      .execute();
    const pages: Array<{ next_cursor: string | null; pending: Array<{ serial_number: string }> }> = [];
    for (let cursor: string | null | undefined; cursor !== null; cursor = pages.at(-1)!.next_cursor) {
      const run = await keyfleet('okm', 'pending', '--json', ...(cursor === undefined ? [] : ['--cursor', cursor]));
      assert.equal(run.exitCode, 0, run.stderr);
      pages.push(JSON.parse(run.stdout));
    }
    const text = await keyfleet('okm', 'pending');
    const refused = await keyfleet('okm', 'pending', '--cursor', 'bm90LWEtY3Vyc29y');

    const listed = pages.flatMap((page) => page.pending.map((okm) => okm.serial_number));
    assert.ok(pages.length >= 2 && pages[0]!.pending.length === 100);
    assert.deepEqual(listed.filter((serial) => serial.startsWith('CLI-PAGE-')), serials);
    assert.equal(new Set(listed).size, listed.length);
    assert.match(text.stdout, new RegExp(`^100 pending on this page; the next page: keyfleet okm pending --cursor ${pages[0]!.next_cursor}\n$`, 'm'));
    assert.notEqual(refused.exitCode, 0);
    assert.equal(refused.stderr, 'keyfleet: --cursor: not a cursor of this list; pass the one a page printed, unchanged\n');
    await store.db.deleteFrom('pending_okms').where('serial_number', 'like', 'CLI-PAGE-%').execute();
  });
});
