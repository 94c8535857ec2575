import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { StatusEventState } from '../../src/db/schema.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { call, createOkm, issueTokens, uniqueSerial, type Tokens } from '../okm/admin-helpers.ts';

const FAILING = '/api/v1/fleet/failing-subscribers';
const AT = Date.parse('2026-11-22T10:00:00.000Z');

forEachDatabase('failing status-event subscribers', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    // No dispatcher: the queue rows below are the test's, not to be delivered.
    t = await buildTestApp(kind, { WEBHOOK_DISPATCH_IN_SERVER: 'false' });
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  let urls = 0;
  const uniqueUrl = () => `https://hooks-${process.pid}-${++urls}.example.com/status`;

  /** An OKM of `token`'s customer with a queue row for `url` in `state` after `attempts` attempts. */
  async function subscription(token: string, url: string, state: StatusEventState, attempts: number, lastAttemptAt: number, lastError = 'HTTP 503') {
    const serial = uniqueSerial('FAIL');
    await createOkm(t, token, serial);
    await t.db
      .insertInto('status_events')
      .values({
        okm_serial: serial,
        url,
        host: new URL(url).host,
        state,
        attempts,
        next_attempt_at: lastAttemptAt + 60_000,
        last_attempt_at: attempts > 0 ? lastAttemptAt : null,
        last_status_code: lastError.startsWith('HTTP ') ? Number(lastError.slice(5)) : null,
        last_error: attempts > 0 ? lastError : null,
      })
      .execute();
  }

  test('lists the URLs whose deliveries fail, most OKMs first, with the newest attempt’s outcome', async () => {
    const [many, one, healthy] = [uniqueUrl(), uniqueUrl(), uniqueUrl()];
    await subscription(tokens.acmeWrite, many, 'pending', 2, AT, 'HTTP 502');
    await subscription(tokens.acmeWrite, many, 'failed', 0, AT + 5_000, 'HTTP 503');
    await subscription(tokens.acmeWrite, many, 'failed', 8, AT + 9_000, 'connect ECONNREFUSED');
    await subscription(tokens.acmeWrite, one, 'pending', 1, AT, 'HTTP 500');
    await subscription(tokens.acmeWrite, healthy, 'delivered', 0, AT);
    await subscription(tokens.acmeWrite, healthy, 'pending', 0, AT);

    const response = await call(t, 'GET', FAILING, { token: tokens.acmeRead });

    assert.equal(response.statusCode, 200);
    const listed = response.json().data.filter((entry: { url: string }) => [many, one, healthy].includes(entry.url));
    assert.deepEqual(listed, [
      { url: many, okms: 3, failed: 2, last_attempt_at: new Date(AT + 9_000).toISOString(), last_status_code: null, last_error: 'connect ECONNREFUSED' },
      { url: one, okms: 1, failed: 0, last_attempt_at: new Date(AT).toISOString(), last_status_code: 500, last_error: 'HTTP 500' },
    ]);
  });

  test('a customer sees only its own OKMs’ subscribers; an operator sees all, or one customer’s', async () => {
    const [acmeUrl, betaUrl] = [uniqueUrl(), uniqueUrl()];
    await subscription(tokens.acmeWrite, acmeUrl, 'failed', 8, AT);
    await subscription(tokens.betaWrite, betaUrl, 'failed', 8, AT);
    const urlsOf = async (token: string, query = '') => (await call(t, 'GET', `${FAILING}${query}`, { token })).json().data.map((entry: { url: string }) => entry.url);

    const asAcme = await urlsOf(tokens.acmeRead);
    const asAdmin = await urlsOf(tokens.admin);
    const asAdminForBeta = await urlsOf(tokens.admin, '?customer=beta');

    assert.ok(asAcme.includes(acmeUrl) && !asAcme.includes(betaUrl));
    assert.ok(asAdmin.includes(acmeUrl) && asAdmin.includes(betaUrl));
    assert.ok(asAdminForBeta.includes(betaUrl) && !asAdminForBeta.includes(acmeUrl));
  });

  test('needs okm:read, and a customer token may not ask for another customer', async () => {
    const writeOnly = await issueTestToken(t, { customer: 'acme', scopes: ['okm:write'] });

    const unscoped = await call(t, 'GET', FAILING, { token: writeOnly });
    const otherCustomer = await call(t, 'GET', `${FAILING}?customer=beta`, { token: tokens.acmeRead });
    const unknownCustomer = await call(t, 'GET', `${FAILING}?customer=nobody`, { token: tokens.admin });

    assert.equal(unscoped.statusCode, 403);
    assert.equal(otherCustomer.statusCode, 403);
    assert.deepEqual(unknownCustomer.json(), { error_code: 'BAD_REQUEST', error_msg: 'customer: unknown customer nobody' });
  });
});
