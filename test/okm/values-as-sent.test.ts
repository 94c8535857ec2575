import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { jsonNestingDepth, MAX_JSON_DEPTH } from '../../src/http/json-bodies.ts';
import { canonicalDigest } from '../../src/shared/canonical-json.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { OKMS, call, createOkm, issueTokens, uniqueSerial, type Tokens } from './admin-helpers.ts';
import { poll } from '../device/config-helpers.ts';

/**
 * Free-form JSON that the docs say comes back "as sent" (users_assets, message payloads, audit
 * records; contract §16) is compared here as response text, never parsed: JSON.parse would hide
 * exactly what is at stake (1.0 and 1, -0 and 0, a 30-digit integer and its double).
 */

/** A list whose every item JSON.parse + JSON.stringify would rewrite: number forms, an escape, spacing. */
const ODD_ITEMS = '[{"big":123456789012345678901234567890,"zero":-0,"one":1.0,"exp":1E+2,"tiny":5e-324,"text":"caf\\u00e9","nested": { "a" : [ 1.50 , -0.0 ] }}]';
/** ODD_ITEMS as a device receives it: as keyfleet reads it (each number a double), written as JSON.stringify writes it. */
const ODD_ITEMS_AS_READ = '[{"big":1.2345678901234568e+29,"zero":0,"one":1,"exp":100,"tiny":5e-324,"text":"café","nested":{"a":[1.5,0]}}]';
// SHA-256 of the RFC 8785 text of ODD_ITEMS, written out by hand and hashed outside keyfleet:
// printf '%s' '[{"big":1.2345678901234568e+29,"exp":100,"nested":{"a":[1.5,0]},"one":1,"text":"café","tiny":5e-324,"zero":0}]' | sha256sum
const ODD_ITEMS_DIGEST = 'd78d355f2166d7210f271f052686956154a0ffd2ee388d1b42532d0b5b4f8679';
const OTHER_ODD_ITEMS = '[ {"n":-0.0e0} , {"m":10000000000000000000001} ]';
/** An ordinary list, and its digest as config-resolvers.test.ts has it (RFC 8785 text hashed outside keyfleet). */
const ORDINARY_ITEMS = '[{"user_id":7,"pin_hash":"abc123","permissions":[1,17]}]';
const ORDINARY_DIGEST = 'afad4518d21a28ac1868d1d9d3445870bd97625df9058b29994fd7b3d75f0124';

const ODD_PAYLOAD = '{"big":123456789012345678901234567890, "zero":-0,"one":1.0,"list":[1.0,2E3],"text":"\\u0041"}';
const ODD_PAYLOAD_AS_READ = '{"big":1.2345678901234568e+29,"zero":0,"one":1,"list":[1,2000],"text":"A"}';

const duplicateName = (field: string) => ({
  error_code: 'BAD_REQUEST',
  error_msg: `${field}: a name that its object already has; JSON objects sent to devices must not repeat a name`,
});

forEachDatabase('values come back as sent', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  const send = (method: 'PUT' | 'PATCH' | 'POST', url: string, body: string, token?: string) =>
    t.app.inject({
      method,
      url,
      payload: body,
      headers: { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
  const getText = async (url: string, token = tokens.acmeRead) => {
    const response = await call(t, 'GET', url, { token });
    assert.equal(response.statusCode, 200, response.body);
    return response.body;
  };
  /** The response text holds the member exactly as written (the rest of the record is ordinary JSON). */
  const assertHolds = (text: string, member: string) => assert.ok(text.includes(member), `expected ${member} in ${text.slice(0, 600)}`);

  describe('users_assets', () => {
    test('an operator\'s PUT that creates the OKM: the 201 and every later GET (and the list) show the list as sent', async () => {
      const serial = uniqueSerial('ASSENT');

      const created = await send('PUT', `${OKMS}/${serial}?customer=acme`, `{"users_assets":${ODD_ITEMS}}`, tokens.admin);

      assert.equal(created.statusCode, 201, created.body);
      assertHolds(created.body, `"users_assets":${ODD_ITEMS},`);
      assertHolds(await getText(`${OKMS}/${serial}`), `"users_assets":${ODD_ITEMS},`);
      assertHolds(await getText(`${OKMS}?serial_prefix=${serial}`), `"users_assets":${ODD_ITEMS},`);
    });

    test('a customer\'s PUT that replaces the configuration keeps the list as sent', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial, { users_assets: [{ v: 1 }] });

      const replaced = await send('PUT', `${OKMS}/${serial}`, `{ "polling_interval" : 60 , "users_assets" : ${ODD_ITEMS} }`, tokens.acmeWrite);

      assert.equal(replaced.statusCode, 200, replaced.body);
      assertHolds(replaced.body, `"users_assets":${ODD_ITEMS},`);
      assertHolds(await getText(`${OKMS}/${serial}`), `"users_assets":${ODD_ITEMS},`);
    });

    test('PATCH: a patch that sets users_assets stores the array as sent in that patch; one that does not name it keeps the stored text; null removes it', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial, { users_assets: [{ v: 1 }] });

      const patched = await send('PATCH', `${OKMS}/${serial}`, `{"users_assets":${ODD_ITEMS}}`, tokens.acmeWrite);
      assert.equal(patched.statusCode, 200, patched.body);
      assertHolds(patched.body, `"users_assets":${ODD_ITEMS},`);

      const other = await send('PATCH', `${OKMS}/${serial}`, '{"polling_interval":60,"key_checkout_window":{"time":1.0,"contact":"open"}}', tokens.acmeWrite);
      assert.equal(other.statusCode, 200, other.body);
      assertHolds(other.body, `"users_assets":${ODD_ITEMS},`);
      assertHolds(await getText(`${OKMS}/${serial}`), `"users_assets":${ODD_ITEMS},`);

      const replaced = await send('PATCH', `${OKMS}/${serial}`, `{"users_assets":${OTHER_ODD_ITEMS}}`, tokens.acmeWrite);
      assertHolds(replaced.body, `"users_assets":${OTHER_ODD_ITEMS},`);
      assertHolds(await getText(`${OKMS}/${serial}`), `"users_assets":${OTHER_ODD_ITEMS},`);

      const removed = await send('PATCH', `${OKMS}/${serial}`, '{"users_assets":null}', tokens.acmeWrite);
      assertHolds(removed.body, '"users_assets":null,');
    });

    test('duplicate names anywhere in users_assets are a 400 naming the second one, on PUT and PATCH, and nothing changes', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial, { users_assets: [{ v: 1 }] });
      const before = await getText(`${OKMS}/${serial}`);
      const cases: ['PUT' | 'PATCH', string, string][] = [
        ['PUT', '{"users_assets":[{"user":1,"user":2}]}', 'users_assets[0].user'],
        ['PATCH', '{"users_assets":[{},{"a":{"b":1,"c":2,"b":3}}]}', 'users_assets[1].a.b'],
        ['PUT', '{"users_assets":[{"k":[{"x":1}],"\\u006b":2}]}', 'users_assets[0].k'],
      ];
      const failures: string[] = [];
      for (const [method, body, field] of cases) {
        const response = await send(method, `${OKMS}/${serial}`, body, tokens.acmeWrite);

        if (response.statusCode !== 400 || response.body !== JSON.stringify(duplicateName(field))) failures.push(`${method} ${body}: ${response.statusCode} ${response.body}`);
      }
      assert.deepEqual(failures, []);
      assert.equal(await getText(`${OKMS}/${serial}`), before);
    });

    test('the device gets the list as keyfleet reads it, with the RFC 8785 digest of that; reporting the digest puts the list in step', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial);
      await send('PATCH', `${OKMS}/${serial}`, `{"users_assets":${ODD_ITEMS}}`, tokens.acmeWrite);
      const inStepBeforeTheList = { kasDateTime: Date.now(), cacheMode: 1 };

      const corrected = await poll(t, serial, inStepBeforeTheList);
      const inStep = await poll(t, serial, { ...inStepBeforeTheList, kasDateTime: Date.now(), usersAssets: ODD_ITEMS_DIGEST.toUpperCase() });

      assert.equal(corrected.body, `{"usersAssets":${ODD_ITEMS_AS_READ},"usersAssetsDigest":"${ODD_ITEMS_DIGEST}"}`);
      assert.equal(inStep.body, '{"auditUrl":"/api/v1/audit"}');
    });

    test('a list nested as deep as a body may be comes back as sent, and the device gets it with its digest', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial);
      // The body, users_assets and its item take 3 levels; the rest, objects and arrays in turn.
      const levels = MAX_JSON_DEPTH - 3;
      const openers = Array.from({ length: levels }, (_, level) => (level % 2 === 0 ? '{"n" :' : '[ '));
      const deep = `[{"d":${openers.join('')}1.0${openers.map((opener) => (opener === '[ ' ? ' ]' : '}')).reverse().join('')}}]`;

      assert.equal(jsonNestingDepth(`{"users_assets":${deep}}`), MAX_JSON_DEPTH);

      const patched = await send('PATCH', `${OKMS}/${serial}`, `{"users_assets":${deep}}`, tokens.acmeWrite);
      const corrected = await poll(t, serial, { kasDateTime: Date.now(), cacheMode: 1 });

      assert.equal(patched.statusCode, 200, patched.body.slice(0, 300));
      assertHolds(patched.body, `"users_assets":${deep},`);
      const asRead = JSON.parse(deep) as unknown[];
      assert.equal(corrected.body, `{"usersAssets":${JSON.stringify(asRead)},"usersAssetsDigest":"${canonicalDigest(asRead)}"}`);
    });

    test('ordinary lists (as JSON.stringify writes them) are stored with the same text and digest as before lists were kept as sent', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial);
      // __proto__ is refused by every JSON body (prototype poisoning), so it is not an ordinary name.
      const item = fc.dictionary(fc.string().filter((name) => name !== '__proto__'), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 });

      await fc.assert(
        fc.asyncProperty(fc.array(item, { maxLength: 4 }), async (list) => {
          const response = await send('PATCH', `${OKMS}/${serial}`, JSON.stringify({ users_assets: list }), tokens.acmeWrite);
          const row = await t.db.selectFrom('okms').select(['users_assets', 'users_assets_digest']).where('serial_number', '=', serial).executeTakeFirstOrThrow();

          assert.equal(response.statusCode, 200, response.body.slice(0, 300));
          assert.deepEqual(row, { users_assets: JSON.stringify(list), users_assets_digest: canonicalDigest(list) });
          assertHolds(response.body, `"users_assets":${JSON.stringify(list)},`);
        }),
        { numRuns: 25, seed: 20_261_205 },
      );
    });

    test('an ordinary list: the device gets the same text and digest as before lists were kept as sent', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial);
      await send('PATCH', `${OKMS}/${serial}`, `{"users_assets":${ORDINARY_ITEMS}}`, tokens.acmeWrite);

      const corrected = await poll(t, serial, { kasDateTime: Date.now(), cacheMode: 1 });

      assert.equal(corrected.body, `{"usersAssets":${ORDINARY_ITEMS},"usersAssetsDigest":"${ORDINARY_DIGEST}"}`);
      assertHolds(await getText(`${OKMS}/${serial}`), `"users_assets":${ORDINARY_ITEMS},`);
    });
  });

  describe('message payloads', () => {
    test('a payload comes back as sent from the POST and the message list; the device gets it as keyfleet reads it', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial);

      const queued = await send('POST', `${OKMS}/${serial}/messages`, `{"type":"note","payload":${ODD_PAYLOAD}}`, tokens.acmeWrite);
      const listed = await getText(`${OKMS}/${serial}/messages`);
      const delivered = await poll(t, serial);

      assert.equal(queued.statusCode, 201, queued.body);
      const id = (JSON.parse(queued.body) as { data: { id: number } }).data.id;
      assertHolds(queued.body, `"payload":${ODD_PAYLOAD},`);
      assertHolds(listed, `"payload":${ODD_PAYLOAD},`);
      assert.equal(delivered.body, `{"message":{"id":${id},"type":"note","payload":${ODD_PAYLOAD_AS_READ}}}`);
      assertHolds(await getText(`${OKMS}/${serial}/messages`), `"payload":${ODD_PAYLOAD},`);
    });

    test('scalar payloads keep their form, and a message without one has null', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial);
      const payloads = ['-0', '1.0', '123456789012345678901234567890', '"\\u00e9"', '[ ]'];

      for (const payload of payloads) {
        const queued = await send('POST', `${OKMS}/${serial}/messages`, `{"payload" : ${payload} ,"type":"n"}`, tokens.acmeWrite);
        assertHolds(queued.body, `"payload":${payload},`);
      }
      const bare = await send('POST', `${OKMS}/${serial}/messages`, '{"type":"n"}', tokens.acmeWrite);

      assertHolds(bare.body, '"payload":null,');
      const listed = await getText(`${OKMS}/${serial}/messages`);
      for (const payload of [...payloads, 'null']) assertHolds(listed, `"payload":${payload},`);
    });

    test('duplicate names in a payload are a 400 naming the second one, and nothing is queued', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial);

      const response = await send('POST', `${OKMS}/${serial}/messages`, '{"type":"note","payload":{"a":[{"b":1,"b":1}]}}', tokens.acmeWrite);

      assert.equal(response.statusCode, 400);
      assert.equal(response.body, JSON.stringify(duplicateName('payload.a[0].b')));
      assert.equal(await getText(`${OKMS}/${serial}/messages`), '{"message":"Resource fetched successfully","data":[],"next_cursor":null}');
    });

    test('the 64 KiB limit is on the payload\'s text as sent', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial);
      const spaced = (bytes: number) => `{"s":"${'x'.repeat(100)}"${' '.repeat(bytes - 108)}}`;

      const atLimit = await send('POST', `${OKMS}/${serial}/messages`, `{"type":"n","payload":${spaced(64 * 1024)}}`, tokens.acmeWrite);
      const over = await send('POST', `${OKMS}/${serial}/messages`, `{"type":"n","payload":${spaced(64 * 1024 + 1)}}`, tokens.acmeWrite);

      assert.equal(atLimit.statusCode, 201, atLimit.body.slice(0, 200));
      assert.equal(over.statusCode, 400);
      assert.equal(over.json().error_msg, `payload: must be at most ${64 * 1024} bytes of JSON`);
    });
  });

  describe('audit records', () => {
    test('each record of an array comes back as sent: number forms, escapes, spacing and duplicate names kept', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial);
      const records = ['{"big":123456789012345678901234567890,"d":1,"d":2}', '-0', '1.0', '"caf\\u00e9"', '{ "nested" : [ 1.50 , { "z" : -0.0 } ] }', '[]'];

      const posted = await send('POST', `${t.settings.auditUrl}/${serial}`, `[ ${records.join(' ,\n ')} ]`);
      const listed = await getText(`${OKMS}/${serial}/audit`);

      assert.equal(posted.statusCode, 201, posted.body);
      for (const record of records) assertHolds(listed, `"record":${record}}`);
    });

    test('a body of one record is that record as sent, without the spacing around it', async () => {
      const serial = uniqueSerial('ASSENT');
      await createOkm(t, tokens.acmeWrite, serial);
      const record = '{"event" : "key-out","user":7.0,"at":1.7e12}';

      await send('POST', `${t.settings.auditUrl}/${serial}`, `\n  ${record}\t\r\n`);

      assertHolds(await getText(`${OKMS}/${serial}/audit`), `"record":${record}}`);
    });
  });
});
