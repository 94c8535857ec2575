import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { cursorListContract, textKeyAt, walkKeys } from '../helpers/cursor-lists.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { OKMS, call, createOkm, devicePoll, issueTokens, type Tokens } from './admin-helpers.ts';

/**
 * GET /api/v1/okms?subscriber_url= (contract §15): the OKMs whose subscribe_urls.status holds the
 * URL, exactly as stored, paged by serial number like the rest of the list and scoped to the
 * token's customer.
 */
forEachDatabase('OKM list by subscriber URL', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  let urls = 0;
  /** A subscriber URL no other test of the file uses. */
  const uniqueUrl = (path = 'status') => `https://hooks${++urls}.example/${path}`;
  const bySubscriber = (token: string, url: string, extra = '') => call(t, 'GET', `${OKMS}?subscriber_url=${encodeURIComponent(url)}${extra}`, { token });
  const serialsOf = (response: { json(): { data: { serial_number: string }[] } }) => response.json().data.map((okm) => okm.serial_number);
  const withUrls = (...status: string[]) => ({ subscribe_urls: { status } });

  test('lists exactly the OKMs whose status URLs hold the URL, as PUT, PATCH, a customer change and DELETE leave them', async () => {
    const [url, other] = [uniqueUrl(), uniqueUrl()];
    const serials = ['SUB-A1', 'SUB-A2', 'SUB-A3', 'SUB-A4'].map((serial) => `${serial}-${kind}`);
    await createOkm(t, tokens.acmeWrite, serials[0]!, withUrls(url));
    await createOkm(t, tokens.acmeWrite, serials[1]!, withUrls(other, url));
    await createOkm(t, tokens.acmeWrite, serials[2]!, withUrls(other));
    await createOkm(t, tokens.acmeWrite, serials[3]!, withUrls(`${url}/`));

    assert.deepEqual(serialsOf(await bySubscriber(tokens.acmeRead, url)), [serials[0], serials[1]]);
    assert.deepEqual(serialsOf(await bySubscriber(tokens.acmeRead, other)), [serials[1], serials[2]]);

    // PATCH replaces the list whole (a merge patch replaces arrays); PUT without it removes it.
    await call(t, 'PATCH', `${OKMS}/${serials[2]}`, { token: tokens.acmeWrite, payload: withUrls(url) });
    await call(t, 'PUT', `${OKMS}/${serials[1]}`, { token: tokens.acmeWrite, payload: {} });
    assert.deepEqual(serialsOf(await bySubscriber(tokens.acmeRead, url)), [serials[0], serials[2]]);
    assert.deepEqual(serialsOf(await bySubscriber(tokens.acmeRead, other)), []);

    // Moved away from its customer, an OKM loses its settings, subscribers included.
    await call(t, 'PUT', `${OKMS}/${serials[0]}/customer`, { token: tokens.admin, payload: { customer: 'beta' } });
    const deleted = await call(t, 'DELETE', `${OKMS}/${serials[2]}`, { token: tokens.acmeWrite });
    assert.equal(deleted.statusCode, 204);
    assert.deepEqual(serialsOf(await bySubscriber(tokens.admin, url)), []);
  });

  test('a config poll records nothing for the filter: neither an OKM it enrols nor the polls of one with subscribers', async () => {
    const url = uniqueUrl();
    const serial = `SUB-POLL-${kind}`;
    await createOkm(t, tokens.acmeWrite, serial, withUrls(url));
    const before = await t.db.selectFrom('okm_subscriber_urls').selectAll().orderBy('serial_number').orderBy('url').execute();

    await devicePoll(t, serial, '?kasFirmware=1.0.0');
    await devicePoll(t, `SUB-NEW-${kind}`);

    assert.deepEqual(await t.db.selectFrom('okm_subscriber_urls').selectAll().orderBy('serial_number').orderBy('url').execute(), before);
    assert.deepEqual(serialsOf(await bySubscriber(tokens.acmeRead, url)), [serial]);
  });

  test("a customer's token never lists another customer's OKM with the same URL; an admin lists every customer's, or one's", async () => {
    const url = uniqueUrl();
    await createOkm(t, tokens.acmeWrite, `SUB-T1-${kind}`, withUrls(url));
    await createOkm(t, tokens.betaWrite, `SUB-T2-${kind}`, withUrls(url));
    await createOkm(t, tokens.admin, `SUB-T3-${kind}`, withUrls(url));

    assert.deepEqual(serialsOf(await bySubscriber(tokens.acmeRead, url)), [`SUB-T1-${kind}`]);
    assert.deepEqual(serialsOf(await bySubscriber(tokens.betaWrite, url)), [`SUB-T2-${kind}`]);
    assert.deepEqual(serialsOf(await bySubscriber(tokens.admin, url)), [`SUB-T1-${kind}`, `SUB-T2-${kind}`, `SUB-T3-${kind}`]);
    assert.deepEqual(serialsOf(await bySubscriber(tokens.admin, url, '&customer=beta')), [`SUB-T2-${kind}`]);
    assert.deepEqual(serialsOf(await bySubscriber(tokens.admin, url, '&unassigned=true')), [`SUB-T3-${kind}`]);
    assert.equal((await bySubscriber(tokens.acmeRead, url, '&customer=beta')).statusCode, 403);
    // Walked one at a time, a customer's pages hold its own OKMs only.
    assert.deepEqual(await walkKeys({ t, token: tokens.betaWrite, url: `${OKMS}?subscriber_url=${encodeURIComponent(url)}`, keyOf: (okm) => okm.serial_number as string }, 1), [`SUB-T2-${kind}`]);
  });

  test('combines with the other filters', async () => {
    const url = uniqueUrl();
    await createOkm(t, tokens.acmeWrite, `SUB-C1-${kind}`, withUrls(url));
    await createOkm(t, tokens.acmeWrite, `SUB-C2-${kind}`, withUrls(url));
    await devicePoll(t, `SUB-C2-${kind}`);

    assert.deepEqual(serialsOf(await bySubscriber(tokens.acmeRead, url, '&state=never_polled')), [`SUB-C1-${kind}`]);
    assert.deepEqual(serialsOf(await bySubscriber(tokens.acmeRead, url, `&serial_prefix=SUB-C2`)), [`SUB-C2-${kind}`]);
  });

  test('a value that is no subscriber URL is a 400 naming subscriber_url; without a token it is a 401 first', async () => {
    for (const value of ['', 'not a url', 'ftp://hooks.example/x', `https://hooks.example/${'a'.repeat(2048)}`]) {
      const response = await call(t, 'GET', `${OKMS}?subscriber_url=${encodeURIComponent(value)}`, { token: tokens.acmeRead });
      assert.equal(response.statusCode, 400, `${value.slice(0, 40)}: ${response.body}`);
      assert.match(response.json().error_msg, /(^|\.)subscriber_url: /, value.slice(0, 40));
    }
    const twice = await call(t, 'GET', `${OKMS}?subscriber_url=https://a.example/&subscriber_url=https://b.example/`, { token: tokens.acmeRead });
    assert.equal(twice.statusCode, 400);
    assert.match(twice.json().error_msg, /subscriber_url/);

    const anonymous = await call(t, 'GET', `${OKMS}?subscriber_url=not-a-url`);
    assert.equal(anonymous.statusCode, 401);
  });

  let lists = 0;
  cursorListContract('the OKMs of one subscriber URL', async () => {
    const url = uniqueUrl(`contract-${++lists}`);
    const prefix = `SUBL${lists}-${kind}-`;
    const token = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write'] });
    // OKMs of the same customer without the URL, between the listed ones, are left out.
    await createOkm(t, token, `${prefix}00000x`, withUrls(uniqueUrl()));
    return {
      t,
      url: `${OKMS}?subscriber_url=${encodeURIComponent(url)}`,
      token,
      keyOf: (item) => item.serial_number as string,
      keyAt: textKeyAt(prefix),
      add: async (keys) => {
        for (const key of keys) await createOkm(t, token, String(key), withUrls(url));
      },
      remove: async (key) => {
        const response = await call(t, 'DELETE', `${OKMS}/${key}`, { token });
        assert.equal(response.statusCode, 204);
      },
    };
  });
});
