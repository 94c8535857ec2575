import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { after, before, mock, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { OKMS, call, createOkm, issueTokens, uniqueSerial, type Tokens } from '../okm/admin-helpers.ts';
import { addRelease, freezeServerClock, poll, SERVER_TIME } from './config-helpers.ts';
import { SEED_ORDER } from './resolvers/fixtures.ts';

forEachDatabase('OKM drift and last_correction', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  freezeServerClock();
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  /** What an unconfigured OKM's device reports when nothing needs correcting. */
  const inStep = () => ({ kasDateTime: Date.now(), cacheMode: 1, auditUrl: t.settings.auditUrl, pollingInterval: t.settings.fleetPollingInterval });

  const record = async (serial: string) => (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).json().data;
  const drift = (serial: string, token = tokens.acmeRead) => call(t, 'GET', `${OKMS}/${serial}/drift`, { token });

  test('a poll answered with a correction records its reply key as last_correction, and a poll answered {} clears it', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);
    assert.equal((await record(serial)).last_correction, null);

    await poll(t, serial, { ...inStep(), pollingInterval: 300 });
    assert.equal((await record(serial)).last_correction, 'pollingInterval');

    await poll(t, serial, { ...inStep(), kasDateTime: undefined });
    assert.equal((await record(serial)).last_correction, 'kasDateTime');

    const answer = await poll(t, serial, inStep());
    assert.deepEqual(answer.json(), {});
    assert.equal((await record(serial)).last_correction, null);
  });

  /** Counts the statements that write okms.last_correction (an UPDATE OF trigger: the poll's own UPDATE does not name it). */
  async function countCorrectionWrites(): Promise<() => Promise<number>> {
    await sql`CREATE TABLE IF NOT EXISTS correction_writes (serial_number text)`.execute(t.db);
    if (kind === 'sqlite') {
      await sql`CREATE TRIGGER IF NOT EXISTS count_correction_writes AFTER UPDATE OF last_correction ON okms
        BEGIN INSERT INTO correction_writes VALUES (new.serial_number); END`.execute(t.db);
    } else {
      await sql`CREATE OR REPLACE FUNCTION count_correction_write() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN INSERT INTO correction_writes VALUES (NEW.serial_number); RETURN NEW; END $$`.execute(t.db);
      await sql`DROP TRIGGER IF EXISTS count_correction_writes ON okms`.execute(t.db);
      await sql`CREATE TRIGGER count_correction_writes AFTER UPDATE OF last_correction ON okms
        FOR EACH ROW EXECUTE FUNCTION count_correction_write()`.execute(t.db);
    }
    await sql`DELETE FROM correction_writes`.execute(t.db);
    return async () => Number((await sql<{ n: number | string }>`SELECT count(*) AS n FROM correction_writes`.execute(t.db)).rows[0]!.n);
  }

  test('last_correction is written only when the verdict changes: polls with the same answer write nothing more than the poll itself', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);
    const correctionWrites = await countCorrectionWrites();

    for (let round = 0; round < 3; round++) await poll(t, serial, inStep());
    assert.equal(await correctionWrites(), 0);
    // Two, not three: a third poll sent the same correction makes the OKM stuck, which is written.
    for (let round = 0; round < 2; round++) await poll(t, serial, { ...inStep(), pollingInterval: 300 });
    assert.equal(await correctionWrites(), 1);
    await poll(t, serial, inStep());
    assert.equal(await correctionWrites(), 2);
  });

  test('a correction of two keys is recorded by its first (keyCheckoutWindowTime)', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial, { key_checkout_window: { time: 60, contact: 'open' } });

    await poll(t, serial, inStep());

    assert.equal((await record(serial)).last_correction, 'keyCheckoutWindowTime');
  });

  test("drift lists every resolver's verdict in seed order (contract §0.4) and the body the next poll would get", async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial, { polling_interval: 60, asset_list: ['LOCK-1'] });
    await poll(t, serial, inStep());

    const response = await drift(serial);

    assert.equal(response.statusCode, 200);
    const { data } = response.json();
    assert.equal(data.serial_number, serial);
    assert.equal(data.in_step, false);
    assert.deepEqual(
      data.resolvers.map((verdict: { name: string }) => verdict.name),
      SEED_ORDER,
    );
    const drifting = data.resolvers.filter((verdict: { in_step: boolean }) => !verdict.in_step);
    assert.deepEqual(
      drifting.map((verdict: { name: string }) => verdict.name),
      ['assetList', 'pollingInterval'],
    );
    assert.deepEqual(drifting[0].correction.assetList, ['LOCK-1']);
    assert.match(drifting[0].correction.assetListDigest, /^[0-9a-f]{64}$/);
    assert.deepEqual(drifting[1].correction, { pollingInterval: 60 });
    assert.deepEqual(data.next, drifting[0].correction);
    assert.ok(data.resolvers.filter((verdict: { in_step: boolean }) => verdict.in_step).every((verdict: { correction: unknown }) => verdict.correction === null));
  });

  test('drift of an OKM in step is in_step with next null, and the clock is judged as it was at the last poll', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);
    await poll(t, serial, inStep());

    mock.timers.setTime(SERVER_TIME + 3_600_000);
    try {
      const { data } = (await drift(serial)).json();
      assert.equal(data.in_step, true);
      assert.equal(data.next, null);
    } finally {
      mock.timers.setTime(SERVER_TIME);
    }
  });

  test('drift reports the firmware offer the poll would make', async () => {
    const serial = uniqueSerial();
    await addRelease(t.db, 'kas', '3.0.0');
    await createOkm(t, tokens.acmeWrite, serial, { firmware: { kas: '3.0.0' } });
    await poll(t, serial, { ...inStep(), kasFirmware: '2.0.0' });

    const { data } = (await drift(serial)).json();

    assert.equal(data.next.kasFirmware.version, '3.0.0');
    assert.equal((await record(serial)).last_correction, 'kasFirmware');
  });

  test('drift writes nothing: a buffered message it reports stays pending, and the next poll delivers it', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);
    await poll(t, serial, inStep());
    const queued = await call(t, 'POST', `${OKMS}/${serial}/messages`, { token: tokens.acmeWrite, payload: { type: 'delete-assets', payload: { all: true } } });
    assert.equal(queued.statusCode, 201, queued.body);
    const before = await record(serial);

    const { data } = (await drift(serial)).json();

    assert.deepEqual(data.next, { message: { id: queued.json().data.id, type: 'delete-assets', payload: { all: true } } });
    const history = (await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.acmeRead })).json().data;
    assert.equal(history[0].delivered_at, null);
    assert.deepEqual(await record(serial), before);
    assert.deepEqual((await poll(t, serial, inStep())).json(), data.next);
  });

  test('the correction the last poll sent is "sent", and the next poll is expected to send the one after it; the list says the same when asked with next_correction=true', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial, { polling_interval: 60, cache_mode: 2 });
    assert.deepEqual((await poll(t, serial, inStep())).json(), { cacheMode: 2 });

    const { data } = (await drift(serial)).json();
    const listed = async (query: string) => (await call(t, 'GET', `${OKMS}?serial_prefix=${serial}${query}`, { token: tokens.acmeRead })).json().data[0];

    assert.equal(data.last_correction, 'cacheMode');
    assert.equal(data.last_poll_at, new Date(SERVER_TIME).toISOString());
    assert.deepEqual(data.next, { cacheMode: 2 }, 'next keeps its meaning: the first correction against the last report');
    assert.deepEqual(data.expected_next, { pollingInterval: 60 });
    const verdicts = Object.fromEntries(data.resolvers.map((resolver: { name: string; verdict: string; sent_on_last_poll: boolean }) => [resolver.name, [resolver.verdict, resolver.sent_on_last_poll]]));
    assert.deepEqual(verdicts.cacheMode, ['sent', true]);
    assert.deepEqual(verdicts.pollingInterval, ['next', false]);
    assert.deepEqual(verdicts.auditUrl, ['in_step', false]);
    const withNext = await listed('&next_correction=true');
    assert.equal(withNext.last_correction, 'cacheMode');
    assert.equal(withNext.next_correction, 'pollingInterval');
    assert.equal('next_correction' in (await listed('')), false, 'only when asked');

    // The device applied it: the next poll sends what the report expected.
    assert.deepEqual((await poll(t, serial, { ...inStep(), cacheMode: 2 })).json(), { pollingInterval: 60 });
    const applied = (await drift(serial)).json().data;
    assert.equal(applied.expected_next, null);
    assert.equal((await listed('&next_correction=true')).next_correction, null);
  });

  test('a configuration changed after the last poll makes the correction that poll sent due again: what was sent may no longer be what is configured', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial, { cache_mode: 2 });
    await poll(t, serial, inStep());
    assert.deepEqual((await drift(serial)).json().data.expected_next, null);

    mock.timers.setTime(SERVER_TIME + 1_000);
    try {
      const patched = await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 90 }, headers: { 'content-type': 'application/merge-patch+json' } });
      assert.equal(patched.statusCode, 200, patched.body);
      const { data } = (await drift(serial)).json();
      assert.deepEqual(data.expected_next, { cacheMode: 2 });
      assert.deepEqual(
        data.resolvers.filter((resolver: { in_step: boolean }) => !resolver.in_step).map((resolver: { name: string; verdict: string }) => [resolver.name, resolver.verdict]),
        [['cacheMode', 'next'], ['pollingInterval', 'later']],
      );
    } finally {
      mock.timers.setTime(SERVER_TIME);
    }
  });

  test('a buffered message sent on the last poll is delivered: another one waiting is the next, not "sent"', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);
    await poll(t, serial, inStep());
    const queue = async (type: string) => (await call(t, 'POST', `${OKMS}/${serial}/messages`, { token: tokens.acmeWrite, payload: { type } })).json().data.id;
    await queue('first');
    const second = await queue('second');
    await poll(t, serial, inStep());

    const { data } = (await drift(serial)).json();

    assert.equal(data.last_correction, 'message');
    assert.deepEqual(data.expected_next, { message: { id: second, type: 'second', payload: null } });
    assert.deepEqual(
      data.resolvers.filter((resolver: { name: string }) => resolver.name === 'message').map((resolver: { verdict: string; sent_on_last_poll: boolean }) => [resolver.verdict, resolver.sent_on_last_poll]),
      [['next', true]],
    );
  });

  test("another customer's OKM and an unknown serial are both 404; a bad serial is 400; no token is 401", async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const foreign = await drift(serial, tokens.betaWrite);
    const unknown = await drift(uniqueSerial('NONE'), tokens.betaWrite);

    assert.equal(foreign.statusCode, 404);
    assert.deepEqual(foreign.json(), unknown.json());
    assert.equal((await drift('bad serial!')).statusCode, 400);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}/drift`)).statusCode, 401);
    const noScope = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read'] });
    assert.equal((await drift(serial, noScope)).statusCode, 403);
    assert.equal((await drift(serial, tokens.admin)).statusCode, 200);
  });
});
