import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { ACLS, call, issueAclTokens, sampleAcl, type AclTokens } from './helpers.ts';

const SUMMARIES = '/api/v1/acl-summaries';
const NAME_MAX_LENGTH = 100;

/** Text the name and name_contains validators accept: 1–100 characters, none of them a control character or a lone surrogate, not only white space. */
const validText = fc
  .string({ unit: fc.oneof(fc.constantFrom('a', 'Z', ' ', '%', '_', '\\', 'ß', 'İ', 'é', '東', '✓', '-'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => !/[\p{Cc}\p{Cs}]/u.test(c))), minLength: 1, maxLength: 40 })
  .filter((text) => text.trim() !== '' && text.length <= NAME_MAX_LENGTH);

/** Text they refuse, each with why. */
const invalidText = fc.oneof(
  validText.chain((text) => fc.constantFrom('\u0000', '\n', '\u007f', '\u0085', '\ud800').map((bad) => `${text}${bad}`)),
  fc.string({ unit: fc.constantFrom('x', 'ö'), minLength: NAME_MAX_LENGTH + 1, maxLength: NAME_MAX_LENGTH + 20 }),
);

/** Invalid text a URL can carry: a lone surrogate has no UTF-8 form to percent-encode. */
const invalidQueryText = invalidText.filter((text) => !/\p{Cs}/u.test(text));

const outOfRangeUserId = fc.oneof(
  fc.integer({ min: 1_000_000_000, max: Number.MAX_SAFE_INTEGER }).map(String),
  fc.integer({ min: Number.MIN_SAFE_INTEGER, max: -1 }).map(String),
  fc.double({ noInteger: true, noNaN: true }).map(String),
  fc.constantFrom('NaN', 'Infinity', '-Infinity', '1e400', '', 'x', '1,5'),
);

/** The one definition of a name match the API documents: the search text, case-folded, anywhere in the case-folded name. */
const fold = (text: string) => text.normalize('NFKC').toLowerCase();

forEachDatabase('ACL name and search validators (properties)', (kind) => {
  let t: TestApp;
  let tokens: AclTokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueAclTokens(t);
  });
  after(() => t.close());

  test('any valid name is stored and given back exactly; any invalid one is a 400 naming name', async () => {
    await fc.assert(
      fc.asyncProperty(validText, invalidText, async (good, bad) => {
        const accepted = await call(t, 'POST', ACLS, { token: tokens.acme, payload: { ...sampleAcl('acme', { users: 0, locks: 0 }), name: good } });
        const refused = await call(t, 'POST', ACLS, { token: tokens.acme, payload: { ...sampleAcl('acme', { users: 0, locks: 0 }), name: bad } });

        assert.equal(accepted.statusCode, 201, accepted.body);
        assert.equal(accepted.json().data.name, good);
        assert.equal(refused.statusCode, 400, refused.body);
        assert.match(refused.json().error_msg, /^name: /);
      }),
      { numRuns: 40 },
    );
  });

  test('any user_id outside 0–999 999 999 or not a whole number is a 400 naming user_id; any inside is a 200', async () => {
    await fc.assert(
      fc.asyncProperty(outOfRangeUserId, fc.integer({ min: 0, max: 999_999_999 }), async (bad, good) => {
        for (const path of [ACLS, SUMMARIES]) {
          const refused = await call(t, 'GET', `${path}?customer=acme&user_id=${encodeURIComponent(bad)}`, { token: tokens.acme });
          const accepted = await call(t, 'GET', `${path}?customer=acme&user_id=${good}`, { token: tokens.acme });
          assert.equal(refused.statusCode, 400, `${bad}: ${refused.body}`);
          assert.match(refused.json().error_msg, /^(querystring\.)?user_id: /);
          assert.equal(accepted.statusCode, 200, accepted.body);
        }
      }),
      { numRuns: 30 },
    );
  });

  test('name_contains finds exactly the customer\'s ACLs whose name holds the text, ignoring case; invalid text is a 400 naming it', async () => {
    const customer = 'namesearch';
    const token = await issueTestToken(t, { customer, scopes: ['acl:read', 'acl:create', 'acl:delete'] });
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(validText, { minLength: 1, maxLength: 6 }), fc.nat(), fc.nat(), invalidQueryText, async (names, pick, cut, bad) => {
        const created: Array<{ id: string; name: string }> = [];
        try {
          for (const name of names) {
            const acl = { ...sampleAcl(customer, { users: 0, locks: 0 }), name };
            const response = await call(t, 'POST', ACLS, { token, payload: acl });
            assert.equal(response.statusCode, 201, response.body);
            created.push({ id: acl.id, name });
          }
          // A piece of one of the names, in another case, so that at least one ACL matches.
          const source = names[pick % names.length]!;
          const start = cut % source.length;
          const piece = source.slice(start, start + 1 + (cut % 5)).toUpperCase();
          const wanted = piece.trim() === '' || /[\p{Cs}]/u.test(piece) ? source : piece;

          const response = await call(t, 'GET', `${ACLS}?customer=${customer}&results_per_page=100&name_contains=${encodeURIComponent(wanted)}`, { token });
          const refused = await call(t, 'GET', `${ACLS}?customer=${customer}&name_contains=${encodeURIComponent(bad)}`, { token });

          assert.equal(response.statusCode, 200, response.body);
          const expected = created.filter((acl) => fold(acl.name).includes(fold(wanted))).map((acl) => acl.id).sort();
          assert.deepEqual(response.json().data.map((acl: { id: string }) => acl.id), expected, `${JSON.stringify(wanted)} in ${JSON.stringify(names)}`);
          assert.equal(refused.statusCode, 400, refused.body);
          assert.match(refused.json().error_msg, /^(querystring\.)?name_contains: /);
        } finally {
          for (const acl of created) await call(t, 'DELETE', `${ACLS}/${acl.id}`, { token });
        }
      }),
      { numRuns: 25 },
    );
  });
});
