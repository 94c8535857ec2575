import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { OKMS, call, createOkm, devicePoll, issueTokens, uniqueSerial, type Tokens } from './admin-helpers.ts';

const NOT_FOUND = { error_code: 'NOT_FOUND', error_msg: 'OKM not found' };
const MISSING_SCOPES = { error_code: 'UNAUTHORIZED_ACCESS', error_msg: 'Missing required scopes' };

type Route = [InjectOptions['method'], string, unknown?];

/** Every OKM route with a valid body, for the given serial number. */
const routes = (serial: string): Route[] => [
  ['GET', `${OKMS}`],
  ['GET', `${OKMS}/${serial}`],
  ['PUT', `${OKMS}/${serial}`, {}],
  ['PATCH', `${OKMS}/${serial}`, {}],
  ['DELETE', `${OKMS}/${serial}`],
  ['PUT', `${OKMS}/${serial}/customer`, { customer: null }],
  ['POST', `${OKMS}/${serial}/claim`, { install_code: '12345' }],
  ['POST', `${OKMS}/${serial}/messages`, { type: 'note' }],
  ['GET', `${OKMS}/${serial}/messages`],
  ['GET', `${OKMS}/${serial}/audit`],
];
const isWrite = ([method]: Route) => method !== 'GET';

forEachDatabase('OKM admin API tenancy, scopes and assignment', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  test('a customer gets 404 "OKM not found" for every call on another customer\'s OKM (PATCH: the 409 of any OKM it does not hold), and nothing changes', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.betaWrite, serial, { polling_interval: 40 });
    const patch = await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 50 } });
    assert.equal(patch.statusCode, 409);
    const calls: Route[] = [
      ['GET', `${OKMS}/${serial}`],
      ['DELETE', `${OKMS}/${serial}`],
      ['POST', `${OKMS}/${serial}/messages`, { type: 'note' }],
      ['GET', `${OKMS}/${serial}/messages`],
      ['GET', `${OKMS}/${serial}/audit`],
    ];

    for (const [method, url, payload] of calls) {
      const response = await call(t, method, url, { token: tokens.acmeWrite, payload });

      assert.equal(response.statusCode, 404, `${method} ${url}`);
      assert.deepEqual(response.json(), NOT_FOUND);
    }
    const stored = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.betaWrite });
    assert.equal(stored.json().data.polling_interval, 40);
    assert.deepEqual((await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.betaWrite })).json().data, []);
  });

  test('a customer\'s list shows its own OKMs and never another customer\'s', async () => {
    const own = uniqueSerial();
    const others = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, own);
    await createOkm(t, tokens.betaWrite, others);

    const response = await call(t, 'GET', `${OKMS}?limit=500`, { token: tokens.acmeRead });
    const listed: { serial_number: string; customer: string }[] = response.json().data;

    assert.ok(listed.some((okm) => okm.serial_number === own), 'the list is not empty: it holds the customer\'s own OKM');
    assert.ok(listed.every((okm) => okm.customer === 'acme'));
    assert.equal(listed.some((okm) => okm.serial_number === others), false);
  });

  test('a customer token naming another customer gets 403', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    for (const url of [`${OKMS}?customer=beta`, `${OKMS}/${serial}?customer=beta`]) {
      const response = await call(t, 'GET', url, { token: tokens.acmeRead });

      assert.equal(response.statusCode, 403, url);
      assert.equal(response.json().error_code, 'UNAUTHORIZED_ACCESS');
    }
  });

  test('a customer token naming its own customer is served', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const response = await call(t, 'GET', `${OKMS}/${serial}?customer=acme`, { token: tokens.acmeRead });

    assert.equal(response.statusCode, 200);
  });

  test('an OKM that no customer has claimed is hidden from customers and shown to admins', async () => {
    const serial = uniqueSerial();
    await devicePoll(t, serial);

    const asCustomer = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead });
    const asAdmin = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.admin });

    assert.equal(asCustomer.statusCode, 404);
    assert.equal(asAdmin.statusCode, 200);
    assert.equal(asAdmin.json().data.customer, null);
  });

  test('an admin reaches any customer\'s OKM, but acting for another customer it is not found', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const direct = await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.admin, payload: { cache_mode: 1 } });
    const asBeta = await call(t, 'GET', `${OKMS}/${serial}?customer=beta`, { token: tokens.admin });

    assert.equal(direct.statusCode, 200);
    assert.equal(direct.json().data.customer, 'acme');
    assert.equal(asBeta.statusCode, 404);
  });

  test('an admin naming a customer creates the OKM for that customer', async () => {
    const serial = uniqueSerial();

    const response = await call(t, 'PUT', `${OKMS}/${serial}?customer=beta`, { token: tokens.admin, payload: {} });

    assert.equal(response.statusCode, 201);
    assert.equal(response.json().data.customer, 'beta');
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.betaWrite })).statusCode, 200);
  });

  test('every route answers 401 with an invalid_token challenge without a token', async () => {
    for (const [method, url, payload] of routes(uniqueSerial())) {
      const response = await call(t, method, url, { payload });

      assert.equal(response.statusCode, 401, `${method} ${url}`);
      assert.equal(response.headers['www-authenticate'], 'Bearer error="invalid_token"');
    }
  });

  test('an invalid body without a token is refused for the token first (401)', async () => {
    const response = await call(t, 'PUT', `${OKMS}/${uniqueSerial()}`, { payload: { polling_interval: 1 } });

    assert.equal(response.statusCode, 401);
  });

  test('a token with okm:read only gets 403 on every write route and is served on reads', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    for (const route of routes(serial)) {
      const [method, url, payload] = route;
      const response = await call(t, method, url, { token: tokens.acmeRead, payload });

      if (isWrite(route)) {
        assert.equal(response.statusCode, 403, `${method} ${url}`);
        assert.deepEqual(response.json(), MISSING_SCOPES);
      } else {
        assert.equal(response.statusCode, 200, `${method} ${url}`);
      }
    }
  });

  test('writes need okm:read as well as okm:write', async () => {
    const writeOnly = await issueTestToken(t, { customer: 'acme', scopes: ['okm:write'] });

    const response = await call(t, 'PUT', `${OKMS}/${uniqueSerial()}`, { token: writeOnly, payload: {} });

    assert.equal(response.statusCode, 403);
    assert.deepEqual(response.json(), MISSING_SCOPES);
  });

  test('a token with only ACL scopes gets 403 on reads', async () => {
    const aclToken = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'acl:create', 'acl:delete'] });

    const response = await call(t, 'GET', OKMS, { token: aclToken });

    assert.equal(response.statusCode, 403);
    assert.deepEqual(response.json(), MISSING_SCOPES);
  });

  test('assigning an OKM to a customer needs the admin scope', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const response = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.acmeWrite, payload: { customer: 'acme' } });

    assert.equal(response.statusCode, 403);
    assert.deepEqual(response.json(), MISSING_SCOPES);
  });

  test('an admin assigns an unclaimed OKM to a customer, which then sees it with its configuration', async () => {
    const serial = uniqueSerial();
    await devicePoll(t, serial);
    await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.admin, payload: { polling_interval: 25 } });

    const response = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: 'acme' } });

    assert.equal(response.statusCode, 200);
    assert.equal(response.json().message, 'Resource updated successfully');
    assert.equal(response.json().data.customer, 'acme');
    const seen = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead });
    assert.equal(seen.statusCode, 200);
    assert.equal(seen.json().data.polling_interval, 25);
  });

  test('moving an OKM to another customer hides it from the first and resets its configuration', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial, { polling_interval: 30, subscribe_urls: { status: ['https://acme.example/hook'] } });

    const response = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: 'beta' } });

    assert.equal(response.statusCode, 200);
    assert.equal(response.json().data.customer, 'beta');
    assert.equal(response.json().data.polling_interval, null);
    assert.deepEqual(response.json().data.subscribe_urls, { status: [] });
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).statusCode, 404);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.betaWrite })).statusCode, 200);
  });

  /** An OKM created with the token, with one delivered and one pending message and two audit records. */
  async function okmWithHistory(token: string, query = ''): Promise<string> {
    const serial = uniqueSerial();
    await createOkm(t, token, serial, {}, query);
    await call(t, 'POST', `${OKMS}/${serial}/messages${query}`, { token, payload: { type: 'delivered' } });
    await devicePoll(t, serial);
    await call(t, 'POST', `${OKMS}/${serial}/messages${query}`, { token, payload: { type: 'pending', payload: { secret: 'acme' } } });
    const intake = await t.app.inject({ method: 'POST', url: `${t.settings.auditUrl}/${serial}`, payload: [{ event: 'a' }, { event: 'b' }] });
    assert.ok(intake.statusCode < 300, `audit intake answered ${intake.statusCode} ${intake.body}`);
    return serial;
  }

  test('moving an OKM to another customer deletes its messages and audit records: the new customer sees none, the device gets no pending one', async () => {
    const serial = await okmWithHistory(tokens.acmeWrite);

    const response = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: 'beta' } });

    assert.equal(response.statusCode, 200);
    const messages = await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.betaWrite });
    assert.equal(messages.statusCode, 200);
    assert.deepEqual(messages.json().data, []);
    const audit = await call(t, 'GET', `${OKMS}/${serial}/audit`, { token: tokens.betaWrite });
    assert.equal(audit.statusCode, 200);
    assert.deepEqual(audit.json().data, []);
    const poll = await devicePoll(t, serial);
    assert.equal(poll.statusCode, 200);
    assert.equal('message' in poll.json(), false, poll.body);
  });

  test('moving an OKM to no customer deletes its messages and audit records too', async () => {
    const serial = await okmWithHistory(tokens.acmeWrite);

    await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: null } });

    assert.deepEqual((await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.admin })).json().data, []);
    assert.deepEqual((await call(t, 'GET', `${OKMS}/${serial}/audit`, { token: tokens.admin })).json().data, []);
    assert.equal('message' in (await devicePoll(t, serial)).json(), false);
  });

  test('claiming an unassigned OKM keeps its messages and audit records', async () => {
    const serial = await okmWithHistory(tokens.admin);

    await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: 'acme' } });

    const messages = (await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.acmeRead })).json().data;
    assert.deepEqual(
      messages.map((message: { type: string }) => message.type),
      ['delivered', 'pending'],
    );
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}/audit`, { token: tokens.acmeRead })).json().data.length, 2);
    assert.equal((await devicePoll(t, serial)).json().message?.type, 'pending');
  });

  test('assigning an OKM to its own customer keeps its messages and audit records', async () => {
    const serial = await okmWithHistory(tokens.acmeWrite);

    await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: 'acme' } });

    assert.equal((await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.acmeRead })).json().data.length, 2);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}/audit`, { token: tokens.acmeRead })).json().data.length, 2);
  });

  test('assigning null makes the OKM unassigned again', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const response = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: null } });

    assert.equal(response.json().data.customer, null);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).statusCode, 404);
  });

  test('assigning an OKM to its own customer changes nothing', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial, { polling_interval: 30 });

    const response = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: 'acme' } });

    assert.equal(response.json().data.polling_interval, 30);
  });

  test('assigning to a customer that does not exist is refused with 400', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    const response = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload: { customer: 'nobody' } });

    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error_msg, 'customer: unknown customer nobody');
  });

  test('assigning an OKM that does not exist answers 404', async () => {
    const response = await call(t, 'PUT', `${OKMS}/${uniqueSerial()}/customer`, { token: tokens.admin, payload: { customer: 'acme' } });

    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), NOT_FOUND);
  });

  test('an assignment body needs exactly a customer name or null', async () => {
    const serial = uniqueSerial();
    await createOkm(t, tokens.acmeWrite, serial);

    for (const payload of [{}, { customer: 5 }, { customer: 'acme', note: 'x' }]) {
      const response = await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.admin, payload });

      assert.equal(response.statusCode, 400, JSON.stringify(payload));
    }
  });
});
