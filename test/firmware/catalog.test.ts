import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { FIRMWARE, OKMS, call, createOkm, devicePoll, issueTokens, uniqueSerial, type Tokens } from '../okm/admin-helpers.ts';

const SHA256 = 'ab'.repeat(32);
const urlRelease = (kind: string, version: string) => ({ kind, version, url: `https://firmware.example/${kind}/${version}.bin`, sha256: SHA256 });

forEachDatabase('firmware catalog', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  let versions = 0;
  /** A version of its own for each test: the suite shares one catalog. */
  const newVersion = (major = 3) => `${major}.${++versions}`;

  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  const addRelease = async (firmwareKind: string, version: string) => {
    const response = await call(t, 'POST', FIRMWARE, { token: tokens.admin, payload: urlRelease(firmwareKind, version) });
    assert.equal(response.statusCode, 201, response.body);
    return response;
  };
  const setLatest = (firmwareKind: string, version: string | null) =>
    call(t, 'PUT', `${FIRMWARE}/${firmwareKind}/latest`, { token: tokens.admin, payload: { version } });
  const catalog = async (query = '') => (await call(t, 'GET', `${FIRMWARE}${query}`, { token: tokens.acmeRead })).json();

  test('POST adds a URL release and answers 201 with it', async () => {
    const version = newVersion();

    const response = await addRelease('kas', version);

    const { message, data } = response.json();
    assert.equal(message, 'Resource created successfully');
    const { created_at, ...release } = data;
    assert.deepEqual(release, {
      kind: 'kas',
      version,
      source: 'url',
      url: `https://firmware.example/kas/${version}.bin`,
      sha256: SHA256,
      size: null,
    });
    assert.ok(!Number.isNaN(Date.parse(created_at)));
  });

  test('an upper-case sha256 is stored in lower case', async () => {
    const version = newVersion();

    const response = await call(t, 'POST', FIRMWARE, { token: tokens.admin, payload: { ...urlRelease('kas', version), sha256: 'AB'.repeat(32) } });

    assert.equal(response.json().data.sha256, SHA256);
  });

  test('GET lists releases by kind, newest version first, with the fleet-wide latest of each kind', async () => {
    const [older, newer] = [`7.9.${++versions}`, `7.10.${++versions}`];
    await addRelease('wireless_key', older);
    await addRelease('wireless_key', newer);
    await setLatest('wireless_key', older);

    const body = await catalog('?kind=wireless_key');

    assert.equal(body.message, 'Resource fetched successfully');
    assert.ok(body.data.every((release: { kind: string }) => release.kind === 'wireless_key'));
    const listed = body.data.map((release: { version: string }) => release.version);
    assert.ok(listed.indexOf(newer) < listed.indexOf(older), 'newest first');
    assert.equal(body.latest.wireless_key, older);
  });

  test('GET one release answers 200, and 404 when the catalog does not have it', async () => {
    const version = newVersion();
    await addRelease('batch_key', version);

    const found = await call(t, 'GET', `${FIRMWARE}/batch_key/${version}`, { token: tokens.acmeRead });
    const missing = await call(t, 'GET', `${FIRMWARE}/batch_key/99.99`, { token: tokens.acmeRead });

    assert.equal(found.statusCode, 200);
    assert.equal(found.json().data.version, version);
    assert.equal(missing.statusCode, 404);
    assert.deepEqual(missing.json(), { error_code: 'NOT_FOUND', error_msg: 'Firmware release not found' });
  });

  test('a release of a version already in the catalog is refused with 409, also written another way', async () => {
    const version = `8.${++versions}`;
    await addRelease('kas', version);

    const same = await call(t, 'POST', FIRMWARE, { token: tokens.admin, payload: urlRelease('kas', version) });
    const equivalent = await call(t, 'POST', FIRMWARE, { token: tokens.admin, payload: urlRelease('kas', `${version}.0`) });
    const otherKind = await call(t, 'POST', FIRMWARE, { token: tokens.admin, payload: urlRelease('batch_key', version) });

    assert.equal(same.statusCode, 409);
    assert.equal(same.json().error_code, 'CONFLICT');
    assert.equal(equivalent.statusCode, 409);
    assert.equal(otherKind.statusCode, 201);
  });

  test('invalid releases are refused with 400 naming the field', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ version: '1.2.3.4.5' }, /^version: must match pattern/],
      [{ version: 'v1.2' }, /^version: must match pattern/],
      [{ version: '01.2' }, /^version: must match pattern/],
      [{ version: '' }, /^version: must match pattern/],
      [{ version: 1.2 }, /^version: must be string$/],
      [{ kind: 'bootloader' }, /^kind: must be one of "kas", "batch_key", "wireless_key"$/],
      [{ sha256: 'ab'.repeat(31) }, /^sha256: must match pattern/],
      [{ sha256: 'zz'.repeat(32) }, /^sha256: must match pattern/],
      [{ url: 'ftp://firmware.example/x.bin' }, /^url: must be an http or https URL$/],
      [{ url: 'no url' }, /^url: must match format "uri"$/],
      [{ size: 5 }, /^size: unknown field$/],
    ];

    for (const [change, message] of cases) {
      const response = await call(t, 'POST', FIRMWARE, { token: tokens.admin, payload: { ...urlRelease('kas', newVersion()), ...change } });

      assert.equal(response.statusCode, 400, JSON.stringify(change));
      assert.match(response.json().error_msg, message, JSON.stringify(change));
    }
  });

  test('a path naming an unknown kind or a malformed version is refused with 400', async () => {
    for (const url of [`${FIRMWARE}/bootloader/1.0`, `${FIRMWARE}/kas/1.x`, `${FIRMWARE}/kas/1.2.3.4.5`]) {
      const response = await call(t, 'GET', url, { token: tokens.acmeRead });

      assert.equal(response.statusCode, 400, url);
    }
  });

  test('PUT latest sets the fleet-wide latest, and polling OKMs with older firmware are offered it', async () => {
    const version = `50.${++versions}`;
    await addRelease('kas', version);
    const serial = uniqueSerial('FW');
    await devicePoll(t, serial);

    const response = await setLatest('kas', version);

    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { message: 'Resource updated successfully', data: { kind: 'kas', version } });
    assert.equal((await catalog()).latest.kas, version);
    const poll = await devicePoll(t, serial, '?kasFirmware=1.0');
    assert.deepEqual(poll.json(), { kasFirmware: { version, url: `https://firmware.example/kas/${version}.bin`, sha256: SHA256 } });
  });

  test('an OKM\'s pin overrides the fleet-wide latest', async () => {
    const [pinned, latest] = [`60.${++versions}`, `61.${++versions}`];
    await addRelease('kas', pinned);
    await addRelease('kas', latest);
    await setLatest('kas', latest);
    const serial = uniqueSerial('FW');
    await createOkm(t, tokens.acmeWrite, serial, { firmware: { kas: pinned } });

    const poll = await devicePoll(t, serial, '?kasFirmware=1.0');

    assert.equal(poll.json().kasFirmware.version, pinned);
  });

  test('PUT latest with a version the catalog does not have is refused with 400', async () => {
    const response = await setLatest('batch_key', '98.0');

    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error_msg, 'version: no batch_key release 98.0 in the firmware catalog');
  });

  test('PUT latest null clears the fleet-wide latest', async () => {
    const version = newVersion();
    await addRelease('batch_key', version);
    await setLatest('batch_key', version);

    const response = await setLatest('batch_key', null);

    assert.equal(response.statusCode, 200);
    assert.equal((await catalog()).latest.batch_key, null);
  });

  test('PUT latest with a malformed body is refused with 400', async () => {
    for (const payload of [{}, { version: '1.x' }, { version: 1 }, { version: '1.0', kind: 'kas' }]) {
      const response = await call(t, 'PUT', `${FIRMWARE}/kas/latest`, { token: tokens.admin, payload });

      assert.equal(response.statusCode, 400, JSON.stringify(payload));
    }
  });

  test('DELETE removes a release that nothing refers to and answers 204', async () => {
    const version = newVersion();
    await addRelease('kas', version);

    const response = await call(t, 'DELETE', `${FIRMWARE}/kas/${version}`, { token: tokens.admin });

    assert.equal(response.statusCode, 204);
    assert.equal((await call(t, 'GET', `${FIRMWARE}/kas/${version}`, { token: tokens.acmeRead })).statusCode, 404);
  });

  test('DELETE of a release the catalog does not have answers 404', async () => {
    const response = await call(t, 'DELETE', `${FIRMWARE}/kas/97.0`, { token: tokens.admin });

    assert.equal(response.statusCode, 404);
  });

  test('DELETE of the fleet-wide latest release is refused with 409 until another is latest', async () => {
    const [first, second] = [`70.${++versions}`, `71.${++versions}`];
    await addRelease('wireless_key', first);
    await addRelease('wireless_key', second);
    await setLatest('wireless_key', first);

    const refused = await call(t, 'DELETE', `${FIRMWARE}/wireless_key/${first}`, { token: tokens.admin });
    await setLatest('wireless_key', second);
    const accepted = await call(t, 'DELETE', `${FIRMWARE}/wireless_key/${first}`, { token: tokens.admin });

    assert.equal(refused.statusCode, 409);
    assert.match(refused.json().error_msg, /is the fleet-wide latest release/);
    assert.equal(accepted.statusCode, 204);
  });

  test('DELETE of a release that an OKM pins is refused with 409 until the pin is removed', async () => {
    const version = newVersion();
    await addRelease('batch_key', version);
    const serial = uniqueSerial('FW');
    await createOkm(t, tokens.acmeWrite, serial, { firmware: { batch_key: version } });

    const refused = await call(t, 'DELETE', `${FIRMWARE}/batch_key/${version}`, { token: tokens.admin });
    await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { firmware: { batch_key: null } } });
    const accepted = await call(t, 'DELETE', `${FIRMWARE}/batch_key/${version}`, { token: tokens.admin });

    assert.equal(refused.statusCode, 409);
    assert.equal(refused.json().error_msg, `firmware batch_key ${version} is pinned by 1 OKM`);
    assert.equal(accepted.statusCode, 204);
  });

  test('reading the catalog needs okm:read; changing it needs admin', async () => {
    const writer = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write'] });
    const version = newVersion();
    await addRelease('kas', version);
    const writes: [string, string, unknown?][] = [
      ['POST', FIRMWARE, urlRelease('kas', newVersion())],
      ['PUT', `${FIRMWARE}/kas/latest`, { version }],
      ['DELETE', `${FIRMWARE}/kas/${version}`],
    ];

    assert.equal((await call(t, 'GET', FIRMWARE)).statusCode, 401);
    assert.equal((await call(t, 'GET', FIRMWARE, { token: writer })).statusCode, 200);
    assert.equal((await call(t, 'GET', `${FIRMWARE}/kas/${version}`, { token: writer })).statusCode, 200);
    for (const [method, url, payload] of writes) {
      const response = await call(t, method as 'POST', url, { token: writer, payload });

      assert.equal(response.statusCode, 403, `${method} ${url}`);
      assert.deepEqual(response.json(), { error_code: 'UNAUTHORIZED_ACCESS', error_msg: 'Missing required scopes' });
    }
  });
});
