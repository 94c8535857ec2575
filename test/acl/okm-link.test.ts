import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { canonicalDigest } from '../../src/shared/canonical-json.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { newSerial, poll, type DeviceParameters } from '../device/config-helpers.ts';
import { parametersAfter } from '../../src/simulator/device.ts';
import { claim, claimedOkm } from '../okm/admin-helpers.ts';
import { ACLS, OKMS, call, createOkm, devicePoll, issueAclTokens, sampleAcl, type AclBodyFixture, type AclTokens } from './helpers.ts';

const notHeld = (serial: string) => ({
  error_code: 'BAD_REQUEST',
  error_msg: `okm_id: no OKM ${serial} held by this ACL's customer (an OKM nobody holds is claimed first, with its installer code)`,
});

forEachDatabase('ACL linked to an OKM', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
  });
  after(() => t.close());

  const postAcl = (acl: AclBodyFixture, token = tokens.acme) => call(t, 'POST', ACLS, { token, payload: acl });
  const putAcl = (id: string, acl: AclBodyFixture, token = tokens.acme) => call(t, 'PUT', `${ACLS}/${id}`, { token, payload: acl });
  const okmRecord = async (serial: string) => (await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.admin })).json().data;
  const messageTypes = async (serial: string) =>
    (await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.admin })).json().data.map((message: { type: string }) => message.type);

  async function acmeOkm() {
    const serial = newSerial('ACL');
    await createOkm(t, tokens.acmeOkm, serial);
    return serial;
  }

  async function linkedAcl(serial: string) {
    const acl = { ...sampleAcl('acme'), okm_id: serial };
    assert.equal((await postAcl(acl)).statusCode, 201);
    return acl;
  }

  test('a linked ACL\'s locks and users become the OKM\'s asset list and user asset list, and the OKM record names the ACL', async () => {
    const serial = await acmeOkm();

    const acl = await linkedAcl(serial);

    const record = await okmRecord(serial);
    assert.equal(record.acl_id, acl.id);
    assert.deepEqual(record.asset_list, acl.locks);
    assert.deepEqual(record.users_assets, acl.users);
  });

  test('an OKM that no customer holds yet is refused with the same 400 as an unknown one: linking does not claim it', async () => {
    const serial = newSerial('ACL');
    assert.equal((await devicePoll(t, serial, '?installCode=12345678')).statusCode, 204);
    const acl = { ...sampleAcl('acme'), okm_id: serial };

    const response = await postAcl(acl);

    assert.deepEqual([response.statusCode, response.json()], [400, notHeld(serial)]);
    const record = await okmRecord(serial);
    assert.deepEqual([record.customer, record.acl_id], [null, null]);
    assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).statusCode, 404);
  });

  test('an admin creating an ACL for a customer cannot link it to an OKM that no customer holds either', async () => {
    const serial = newSerial('ACL');
    await devicePoll(t, serial);

    const response = await postAcl({ ...sampleAcl('acme'), okm_id: serial }, tokens.admin);

    assert.deepEqual([response.statusCode, response.json()], [400, notHeld(serial)]);
    assert.equal((await okmRecord(serial)).customer, null);
  });

  test('once its customer has claimed it with its installer code, the OKM links', async () => {
    const serial = newSerial('ACL');
    await claimedOkm(t, tokens.acmeOkm, serial);

    const acl = await linkedAcl(serial);

    assert.equal((await okmRecord(serial)).acl_id, acl.id);
  });

  test('when okm_id names an unknown OKM, POST is a 400 and no ACL is created', async () => {
    const acl = { ...sampleAcl('acme'), okm_id: newSerial('MISSING') };

    const response = await postAcl(acl);

    assert.equal(response.statusCode, 400);
    assert.deepEqual(response.json(), notHeld(acl.okm_id));
    assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).statusCode, 404);
  });

  test('another customer\'s OKM is answered as an unknown one, and neither it nor the ACLs change', async () => {
    const serial = newSerial('ACL');
    const betaOkmToken = await issueTestToken(t, { customer: 'beta', scopes: ['okm:read', 'okm:write'] });
    await createOkm(t, betaOkmToken, serial, { asset_list: ['B1'] });
    const acl = { ...sampleAcl('acme'), okm_id: serial };

    const response = await postAcl(acl);

    assert.deepEqual(response.json(), notHeld(serial));
    const record = await okmRecord(serial);
    assert.equal(record.customer, 'beta');
    assert.equal(record.acl_id, null);
    assert.deepEqual(record.asset_list, ['B1']);
    assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).statusCode, 404);
  });

  test('an OKM links to at most one ACL: linking a second is a 400 and the first stays linked', async () => {
    const serial = await acmeOkm();
    const first = await linkedAcl(serial);
    const second = { ...sampleAcl('acme', { users: 1 }), okm_id: serial };

    const response = await postAcl(second);

    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error_msg, `okm_id: OKM ${serial} is already linked to ACL ${first.id}`);
    assert.equal((await okmRecord(serial)).acl_id, first.id);
    assert.deepEqual((await okmRecord(serial)).users_assets, first.users);
  });

  test('when PUT names an unknown OKM, it is a 400 and the ACL, its link and the OKM\'s lists are unchanged', async () => {
    const serial = await acmeOkm();
    const acl = await linkedAcl(serial);

    const response = await putAcl(acl.id, { ...sampleAcl('acme', { users: 1 }), okm_id: newSerial('MISSING') });

    assert.equal(response.statusCode, 400);
    const { okm_id: _okmId, ...shown } = acl;
    assert.deepEqual((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).json().data, shown);
    assert.equal((await okmRecord(serial)).acl_id, acl.id);
    assert.deepEqual((await okmRecord(serial)).users_assets, acl.users);
  });

  test('PUT without okm_id keeps the link and updates the OKM\'s lists', async () => {
    const serial = await acmeOkm();
    const acl = await linkedAcl(serial);
    const { okm_id: _okmId, ...replacement } = { ...sampleAcl('acme', { users: 3, locks: 2 }), id: acl.id };

    await putAcl(acl.id, replacement);

    const record = await okmRecord(serial);
    assert.equal(record.acl_id, acl.id);
    assert.deepEqual(record.asset_list, replacement.locks);
    assert.deepEqual(record.users_assets, replacement.users);
  });

  test('PUT with okm_id null unlinks: the OKM\'s lists are cleared and a delete-assets message is queued', async () => {
    const serial = await acmeOkm();
    const acl = await linkedAcl(serial);

    const response = await putAcl(acl.id, { ...acl, okm_id: null });

    assert.equal(response.statusCode, 200);
    const record = await okmRecord(serial);
    assert.equal(record.acl_id, null);
    assert.equal(record.asset_list, null);
    assert.equal(record.users_assets, null);
    assert.deepEqual(await messageTypes(serial), ['delete-assets']);
  });

  test('moving an ACL to another OKM sends delete-assets to the first and the lists to the second', async () => {
    const [first, second] = [await acmeOkm(), await acmeOkm()];
    const acl = await linkedAcl(first);

    await putAcl(acl.id, { ...acl, okm_id: second });

    assert.deepEqual(await messageTypes(first), ['delete-assets']);
    assert.equal((await okmRecord(first)).acl_id, null);
    assert.equal((await okmRecord(second)).acl_id, acl.id);
    assert.deepEqual((await okmRecord(second)).asset_list, acl.locks);
    assert.deepEqual(await messageTypes(second), []);
  });

  test('POST overwriting a linked ACL without okm_id keeps the link', async () => {
    const serial = await acmeOkm();
    const acl = await linkedAcl(serial);
    const { okm_id: _okmId, ...overwrite } = { ...sampleAcl('acme', { users: 1, locks: 1 }), id: acl.id };

    await postAcl(overwrite);

    assert.deepEqual((await okmRecord(serial)).asset_list, overwrite.locks);
  });

  test('deleting a linked ACL clears the OKM\'s lists and queues a delete-assets message', async () => {
    const serial = await acmeOkm();
    const acl = await linkedAcl(serial);

    await call(t, 'DELETE', `${ACLS}/${acl.id}`, { token: tokens.acme });

    const record = await okmRecord(serial);
    assert.equal(record.acl_id, null);
    assert.equal(record.users_assets, null);
    assert.deepEqual(await messageTypes(serial), ['delete-assets']);
  });

  test('while an ACL is linked, an OKM admin PUT or PATCH naming asset_list or users_assets is a 409, and the lists stay', async () => {
    const serial = await acmeOkm();
    const acl = await linkedAcl(serial);

    const responses = [
      await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.acmeOkm, payload: { asset_list: ['X'] } }),
      await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeOkm, payload: { users_assets: null } }),
    ];

    for (const response of responses) {
      assert.equal(response.statusCode, 409);
      assert.match(response.json().error_msg, new RegExp(`^(asset_list|users_assets): set by the linked ACL ${acl.id}`));
    }
    assert.deepEqual((await okmRecord(serial)).asset_list, acl.locks);
  });

  test('while an ACL is linked, an OKM admin PUT of other settings keeps the ACL\'s lists', async () => {
    const serial = await acmeOkm();
    const acl = await linkedAcl(serial);

    const response = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.acmeOkm, payload: { polling_interval: 60 } });

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json().data.asset_list, acl.locks);
    assert.deepEqual(response.json().data.users_assets, acl.users);
    assert.equal(response.json().data.acl_id, acl.id);
  });

  test('an OKM moved to another customer leaves its ACL unlinked and is told to delete its assets', async () => {
    const serial = await acmeOkm();
    const acl = await linkedAcl(serial);

    await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: 'beta' } });

    assert.equal((await okmRecord(serial)).acl_id, null);
    assert.deepEqual(await messageTypes(serial), ['delete-assets']);
    assert.equal((await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).statusCode, 200);
  });

  test('deleting the OKM leaves the ACL, unlinked, which may then link to another OKM', async () => {
    const serial = await acmeOkm();
    const acl = await linkedAcl(serial);
    const other = await acmeOkm();

    await call(t, 'DELETE', `${OKMS}/${serial}`, { token: tokens.acmeOkm });
    const relinked = await putAcl(acl.id, { ...acl, okm_id: other });

    assert.equal(relinked.statusCode, 200);
    assert.equal((await okmRecord(other)).acl_id, acl.id);
  });

  test('concurrent PUTs of a linked ACL leave the OKM\'s lists equal to the stored ACL', async () => {
    const serial = await acmeOkm();
    const acl = await linkedAcl(serial);
    const bodies = Array.from({ length: 8 }, (_, index) => ({ ...sampleAcl('acme', { users: 5 + index, locks: 3 + index }), id: acl.id }));

    await Promise.all(bodies.map((body) => putAcl(acl.id, body)));

    const stored = (await call(t, 'GET', `${ACLS}/${acl.id}`, { token: tokens.acme })).json().data;
    const record = await okmRecord(serial);
    assert.deepEqual(record.asset_list, stored.locks);
    assert.deepEqual(record.users_assets, stored.users);
  });

  test('end to end: the OKM polls the ACL\'s lists in, gets a changed permission, then delete-assets when the ACL goes', async () => {
    const serial = newSerial('E2E');
    assert.equal((await poll(t, serial, { installCode: '12345678' })).statusCode, 204);
    assert.equal((await claim(t, tokens.acmeOkm, serial, '12345678')).statusCode, 200);
    const acl = await linkedAcl(serial);
    let device: DeviceParameters = {};
    const pollOnce = async () => {
      const response = await poll(t, serial, device);
      assert.equal(response.statusCode, 200);
      const body = response.json();
      device = { ...device, ...(parametersAfter(body) as DeviceParameters) };
      return body;
    };
    const corrections: Record<string, unknown>[] = [];
    for (let polls = 0; polls < 20; polls++) {
      const body = await pollOnce();
      if (Object.keys(body).length === 0) break;
      corrections.push(body);
    }

    assert.deepEqual(corrections.find((body) => 'assetList' in body), { assetList: acl.locks, assetListDigest: canonicalDigest(acl.locks) });
    assert.deepEqual(corrections.find((body) => 'usersAssets' in body), { usersAssets: acl.users, usersAssetsDigest: canonicalDigest(acl.users) });
    assert.deepEqual(await pollOnce(), {});

    const changed = structuredClone(acl);
    changed.users[1]!.permissions[0] = changed.users[1]!.permissions[0] === 17 ? 0 : 17;
    assert.equal((await putAcl(acl.id, changed)).statusCode, 200);

    assert.deepEqual(await pollOnce(), { usersAssets: changed.users, usersAssetsDigest: canonicalDigest(changed.users) });
    assert.deepEqual(await pollOnce(), {});

    assert.equal((await call(t, 'DELETE', `${ACLS}/${acl.id}`, { token: tokens.acme })).statusCode, 204);

    const deleteAssets = await pollOnce();
    assert.deepEqual(deleteAssets, { message: { id: deleteAssets.message.id, type: 'delete-assets', payload: null } });
    assert.deepEqual(await pollOnce(), {});
  });
});
