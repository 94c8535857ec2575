import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';

const AUDIT = '/api/v1/audit/OKM-1';

forEachDatabase('bad input anywhere gets a 4xx JSON error and writes nothing', (kind) => {
  let t: TestApp;
  before(async () => {
    t = await buildTestApp(kind);
    await t.app.inject({ method: 'GET', url: '/api/v1/config/OKM-1' });
  });
  after(() => t.close());

  async function post(payload: string | Buffer, headers: Record<string, string>) {
    const response = await t.app.inject({ method: 'POST', url: AUDIT, payload, headers });
    const stored = await t.db.selectFrom('okm_audit_records').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    return { response, storedRecords: Number(stored.n) };
  }

  const cases: Array<[string, string | Buffer, Record<string, string>, number]> = [
    ['malformed JSON', '{"event": ', { 'content-type': 'application/json' }, 400],
    ['an empty JSON body', '', { 'content-type': 'application/json' }, 400],
    ['a JSON body with __proto__', '{"__proto__": {"polluted": true}}', { 'content-type': 'application/json' }, 400],
    ['an unsupported content type', '<audit/>', { 'content-type': 'application/xml' }, 415],
    ['a body over the 1 MiB limit', JSON.stringify({ blob: 'x'.repeat(1024 * 1024) }), { 'content-type': 'application/json' }, 413],
    ['invalid UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), { 'content-type': 'application/json' }, 400],
    ['a charset other than UTF-8', '{"a":1}', { 'content-type': 'application/json; charset=latin1' }, 415],
    ['a compressed body', '{"a":1}', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, 415],
    ['JSON nested 5000 levels deep', `${'['.repeat(5000)}${']'.repeat(5000)}`, { 'content-type': 'application/json' }, 400],
    ['a scalar instead of a record', '42', { 'content-type': 'application/json' }, 400],
  ];

  for (const [what, payload, headers, status] of cases) {
    test(`${what}: ${status} with {error_code, error_msg}`, async () => {
      const { response, storedRecords } = await post(payload, headers);

      assert.equal(response.statusCode, status, response.body);
      assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
      const body = response.json();
      assert.equal(typeof body.error_code, 'string');
      assert.ok(body.error_msg.length > 0);
      assert.equal(storedRecords, 0);
    });
  }

  test('a serial number with a character outside the rule is a 400 naming serialNumber', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/config/%C3%A4bc' });

    assert.equal(response.statusCode, 400);
    assert.match(response.json().error_msg, /^serialNumber: /);
  });

  test('a serial number of 300 characters is a 400 naming serialNumber, not a 414', async () => {
    const response = await t.app.inject({ method: 'GET', url: `/api/v1/config/${'A'.repeat(300)}` });

    assert.equal(response.statusCode, 400);
    assert.match(response.json().error_msg, /^serialNumber: /);
  });

  test('a URL whose percent-encoding is not UTF-8 is a 400 in the same JSON shape', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/config/%E4bc' });

    assert.equal(response.statusCode, 400);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(response.json().error_code, 'BAD_REQUEST');
  });
});
