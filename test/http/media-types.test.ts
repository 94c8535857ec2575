import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestApiKey, issueTestToken } from '../helpers/tokens.ts';

forEachDatabase('a JSON body sent with another media type', (kind) => {
  let t: TestApp;
  let adminToken: string;
  let apiKey: string;
  before(async () => {
    t = await buildTestApp(kind);
    adminToken = await issueTestToken(t, { scopes: ['admin'] });
    apiKey = await issueTestApiKey(t, 'media');
  });
  after(() => t.close());

  const json = JSON.stringify({ customer: 'media', users: [], locks: [] });

  for (const [name, url, credential] of [
    ['an ACL', '/api/v1/acls', () => adminToken],
    ['an OKM message', '/api/v1/okms/MEDIA-1/messages', () => adminToken],
    ['a DLock enrolment', '/v1/dlock', () => apiKey],
    ['audit records', '/api/v1/audit/MEDIA-1', () => undefined],
  ] as const) {
    test(`text/plain on ${name} is 415 Unsupported Media Type, as the document and docs/ say, whatever the body`, async () => {
      const key = credential();
      const response = await t.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'text/plain', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        payload: json,
      });

      assert.equal(response.statusCode, 415, response.body);
      assert.match(response.body, /text\/plain/);
    });
  }
});
