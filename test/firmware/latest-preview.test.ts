import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { addRelease, poll } from '../device/config-helpers.ts';
import { FIRMWARE, call, createOkm, issueTokens, uniqueSerial, type Tokens } from '../okm/admin-helpers.ts';

forEachDatabase('fleet latest preview', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
    await addRelease(t.db, 'kas', '2.9.0');
    await addRelease(t.db, 'kas', '2.10.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '2.11.0');
    // acme: one on the latest, one behind, one pinned; beta: one never polled.
    const onLatest = uniqueSerial('PRV');
    await createOkm(t, tokens.acmeWrite, onLatest);
    await poll(t, onLatest, { kasFirmware: '2.10.0' });
    const behind = uniqueSerial('PRV');
    await createOkm(t, tokens.acmeWrite, behind);
    await poll(t, behind, { kasFirmware: '2.9.0' });
    const pinned = uniqueSerial('PRV');
    await createOkm(t, tokens.acmeWrite, pinned, { firmware: { kas: '2.9.0' } });
    await createOkm(t, tokens.betaWrite, uniqueSerial('PRV'));
  });
  after(() => t.close());

  const preview = (query: string, token = tokens.admin) => call(t, 'GET', `${FIRMWARE}/kas/latest/preview${query}`, { token });

  test('making a release the fleet latest reaches every OKM of every customer without a pin of its kind; those not on it are offered it', async () => {
    const response = await preview('?version=2.11.0');

    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json().data, { kind: 'kas', current: '2.10.0', version: '2.11.0', okms: 3, offered: 3, pinned: 1 });
    assert.deepEqual((await preview('?version=2.10.0')).json().data, { kind: 'kas', current: '2.10.0', version: '2.10.0', okms: 3, offered: 2, pinned: 1 });
  });

  test('clearing the fleet latest reaches the same OKMs; offered counts those no longer offered the current latest', async () => {
    const response = await preview('');

    assert.deepEqual(response.json().data, { kind: 'kas', current: '2.10.0', version: null, okms: 3, offered: 2, pinned: 1 });
  });

  test('the preview changes nothing, refuses a version not in the catalog, and is for firmware writers only', async () => {
    const unknown = await preview('?version=9.9.9');
    const customer = await preview('?version=2.11.0', tokens.acmeWrite);
    const catalog = await call(t, 'GET', FIRMWARE, { token: tokens.admin });

    assert.equal(unknown.statusCode, 400, unknown.body);
    assert.equal(unknown.json().error_msg, 'version: no kas release 9.9.9 in the firmware catalog');
    assert.equal(customer.statusCode, 403, customer.body);
    assert.equal(catalog.json().latest.kas, '2.10.0');
  });
});
