import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bearerCredential } from '../../src/http/bearer.ts';

describe('bearer credentials', () => {
  test('the credential of a Bearer header is returned, the scheme in any case, trailing spaces ignored', () => {
    assert.deepEqual(bearerCredential('Bearer abc.def'), { ok: true, credential: 'abc.def' });
    assert.deepEqual(bearerCredential('bearer  abc '), { ok: true, credential: 'abc' });
  });

  test('no header, or an empty one, is missing', () => {
    assert.deepEqual(bearerCredential(undefined), { ok: false, reason: 'missing' });
    assert.deepEqual(bearerCredential('  '), { ok: false, reason: 'missing' });
  });

  test('another scheme, no credential, or two words are malformed', () => {
    for (const header of ['Basic Zm9vOmJhcg==', 'Bearer', 'Bearer ', 'Bearer a b', 'Bearerabc']) {
      assert.deepEqual(bearerCredential(header), { ok: false, reason: 'malformed' }, header);
    }
  });
});
