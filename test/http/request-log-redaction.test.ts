import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { redactUrl } from '../../src/http/request-log.ts';

describe('request log redaction', () => {
  const code = '8675309421';
  const secretNames = [
    'installCode', 'install%43ode', 'install%43%6Fde', '%69%6e%73%74%61%6c%6c%43%6f%64%65', 'INSTALLCODE', 'install%63ode',
    'access_token', 'access%5Ftoken', 'token', 'api_key', 'apiKey',
  ];

  for (const name of secretNames) {
    test(`when the query has ${name}=<secret>, its value is not in the logged URL`, () => {
      const url = `/api/v1/config/OKM-1?cacheMode=1&${name}=${code}&fullStatus=0`;

      const logged = redactUrl(url);

      assert.equal(logged, `/api/v1/config/OKM-1?cacheMode=1&${name}=[redacted]&fullStatus=0`);
    });
  }

  test('when the secret is the first parameter or has an encoded value, it is redacted', () => {
    assert.equal(redactUrl(`/x?install%43ode=${code}%26more`), '/x?install%43ode=[redacted]');
  });

  test('when the query has no secret parameter (or a name that only contains one), the URL is logged as it came', () => {
    for (const url of ['/api/v1/okms?limit=5&cursor=abc', '/healthz', '/x?myinstallCode=1&installCodes=2', '/x?%zz=1&a']) {
      assert.equal(redactUrl(url), url);
    }
  });
});
