import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { FIRMWARE, call } from '../okm/admin-helpers.ts';

const MiB = 1024 * 1024;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

forEachDatabase('firmware file upload and download', (kind) => {
  let t: TestApp;
  let admin: string;
  // Two and a half chunks, so that ranges cross chunk boundaries.
  const file = randomBytes(2 * MiB + MiB / 2);
  const FILE_URL = `${FIRMWARE}/kas/5.0.0/file`;
  let versions = 0;

  before(async () => {
    t = await buildTestApp(kind);
    admin = await issueTestToken(t, { scopes: ['admin'] });
    const upload = await call(t, 'PUT', `${FIRMWARE}/kas/5.0.0`, {
      token: admin,
      payload: file,
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(upload.statusCode, 201, upload.body);
  });
  after(() => t.close());

  const upload = (version: string, payload: Buffer | Readable, headers: Record<string, string> = {}, token = admin) =>
    t.app.inject({
      method: 'PUT',
      url: `${FIRMWARE}/batch_key/${version}`,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', ...headers },
      payload,
    });
  const download = (headers: Record<string, string> = {}, url = FILE_URL) => t.app.inject({ method: 'GET', url, headers });

  test('an uploaded file becomes a release with its size and sha256 computed, served from keyfleet', async () => {
    const bytes = randomBytes(1000);
    const version = `1.${++versions}`;

    const response = await upload(version, bytes);

    assert.equal(response.statusCode, 201);
    const { message, data } = response.json();
    assert.equal(message, 'Resource created successfully');
    assert.equal(data.source, 'file');
    assert.equal(data.size, 1000);
    assert.equal(data.sha256, sha256(bytes));
    assert.equal(data.url, `/api/v1/firmware/batch_key/${version}/file`);
  });

  test('a file over 1 MiB is stored in 1 MiB chunks', async () => {
    const chunks = await t.db
      .selectFrom('firmware_chunks')
      .select(['seq', 'data'])
      .where('kind', '=', 'kas')
      .where('version', '=', '5.0.0')
      .orderBy('seq')
      .execute();

    assert.deepEqual(
      chunks.map((chunk) => [chunk.seq, chunk.data.length]),
      [
        [0, MiB],
        [1, MiB],
        [2, MiB / 2],
      ],
    );
  });

  test('the whole file downloads without a token, byte for byte, with its sha256 as ETag', async () => {
    const response = await download();

    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], 'application/octet-stream');
    assert.equal(response.headers['accept-ranges'], 'bytes');
    assert.equal(response.headers['content-length'], String(file.length));
    assert.equal(response.headers.etag, `"${sha256(file)}"`);
    assert.equal(sha256(response.rawPayload), sha256(file));
    const release = await call(t, 'GET', `${FIRMWARE}/kas/5.0.0`, { token: admin });
    assert.equal(release.json().data.sha256, sha256(response.rawPayload));
  });

  test('a range of the first bytes answers 206 with Content-Range', async () => {
    const response = await download({ range: 'bytes=0-99' });

    assert.equal(response.statusCode, 206);
    assert.equal(response.headers['content-range'], `bytes 0-99/${file.length}`);
    assert.equal(response.headers['content-length'], '100');
    assert.deepEqual(response.rawPayload, file.subarray(0, 100));
  });

  test('a range across a chunk boundary is served from both chunks', async () => {
    const response = await download({ range: `bytes=${MiB - 10}-${2 * MiB + 9}` });

    assert.equal(response.statusCode, 206);
    assert.equal(response.headers['content-range'], `bytes ${MiB - 10}-${2 * MiB + 9}/${file.length}`);
    assert.deepEqual(response.rawPayload, file.subarray(MiB - 10, 2 * MiB + 10));
  });

  test('a suffix range gives the last bytes', async () => {
    const response = await download({ range: 'bytes=-500' });

    assert.equal(response.statusCode, 206);
    assert.equal(response.headers['content-range'], `bytes ${file.length - 500}-${file.length - 1}/${file.length}`);
    assert.deepEqual(response.rawPayload, file.subarray(file.length - 500));
  });

  test('an open-ended range runs to the end of the file', async () => {
    const response = await download({ range: `bytes=${2 * MiB}-` });

    assert.equal(response.statusCode, 206);
    assert.deepEqual(response.rawPayload, file.subarray(2 * MiB));
  });

  test('downloading in ranges and joining them gives the file with the reported sha256', async () => {
    const parts: Buffer[] = [];
    for (let start = 0; start < file.length; start += 700_000) {
      parts.push((await download({ range: `bytes=${start}-${start + 699_999}` })).rawPayload);
    }

    assert.equal(sha256(Buffer.concat(parts)), sha256(file));
  });

  test('a range starting past the end answers 416 with the file size in Content-Range', async () => {
    for (const range of [`bytes=${file.length}-`, 'bytes=-0']) {
      const response = await download({ range });

      assert.equal(response.statusCode, 416, range);
      assert.equal(response.headers['content-range'], `bytes */${file.length}`);
      assert.equal(response.json().error_code, 'RANGE_NOT_SATISFIABLE');
    }
  });

  test('several ranges or a malformed Range header get the whole file', async () => {
    for (const range of ['bytes=0-1,5-6', 'bytes=x-y']) {
      const response = await download({ range });

      assert.equal(response.statusCode, 200, range);
      assert.equal(response.rawPayload.length, file.length);
    }
  });

  test('If-None-Match with the current ETag answers 304 without a body', async () => {
    const response = await download({ 'if-none-match': `"${sha256(file)}"` });

    assert.equal(response.statusCode, 304);
    assert.equal(response.rawPayload.length, 0);
  });

  test('a Range with an If-Range of another ETag gets the whole file', async () => {
    const response = await download({ range: 'bytes=0-9', 'if-range': '"stale"' });

    assert.equal(response.statusCode, 200);
    assert.equal(response.rawPayload.length, file.length);
  });

  test('HEAD gives the headers without the body', async () => {
    const response = await t.app.inject({ method: 'HEAD', url: FILE_URL });

    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-length'], String(file.length));
    assert.equal(response.rawPayload.length, 0);
  });

  test('the file route of a URL release answers 404', async () => {
    await call(t, 'POST', FIRMWARE, {
      token: admin,
      payload: { kind: 'wireless_key', version: '2.0', url: 'https://firmware.example/w.bin', sha256: 'ab'.repeat(32) },
    });

    const response = await download({}, `${FIRMWARE}/wireless_key/2.0/file`);

    assert.equal(response.statusCode, 404);
    assert.match(response.json().error_msg, /download it from https:\/\/firmware\.example\/w\.bin/);
  });

  test('the file route of a release the catalog does not have answers 404', async () => {
    const response = await download({}, `${FIRMWARE}/kas/96.0/file`);

    assert.equal(response.statusCode, 404);
  });

  test('an upload of another content type is refused with 415', async () => {
    const response = await upload(`1.${++versions}`, Buffer.from('{}'), { 'content-type': 'application/json' });

    assert.equal(response.statusCode, 415);
    assert.equal(response.json().error_msg, 'Content-Type must be application/octet-stream');
  });

  test('an empty upload is refused with 400', async () => {
    const version = `1.${++versions}`;

    const response = await upload(version, Buffer.alloc(0));

    assert.equal(response.statusCode, 400);
    assert.equal(response.json().error_msg, 'body: the firmware file is empty');
  });

  test('an upload of a version the catalog has is refused with 409', async () => {
    const response = await t.app.inject({
      method: 'PUT',
      url: `${FIRMWARE}/kas/5.0.0`,
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/octet-stream' },
      payload: Buffer.from('other'),
    });

    assert.equal(response.statusCode, 409);
  });

  test('an upload needs the admin scope', async () => {
    const reader = await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write'] });

    const response = await upload(`1.${++versions}`, Buffer.from('x'), {}, reader);

    assert.equal(response.statusCode, 403);
  });

  test('deleting a file release deletes its chunks', async () => {
    const version = `1.${++versions}`;
    await upload(version, randomBytes(MiB + 1));

    const response = await call(t, 'DELETE', `${FIRMWARE}/batch_key/${version}`, { token: admin });

    assert.equal(response.statusCode, 204);
    const chunks = await t.db.selectFrom('firmware_chunks').select('seq').where('kind', '=', 'batch_key').where('version', '=', version).execute();
    assert.deepEqual(chunks, []);
  });
});

forEachDatabase('firmware upload size limit', (kind) => {
  let t: TestApp;
  let admin: string;
  before(async () => {
    t = await buildTestApp(kind, { FIRMWARE_MAX_BYTES: '1000' });
    admin = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  const upload = (version: string, payload: Buffer | Readable) =>
    t.app.inject({
      method: 'PUT',
      url: `${FIRMWARE}/kas/${version}`,
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/octet-stream' },
      payload,
    });

  test('an upload declaring more than FIRMWARE_MAX_BYTES is refused with 413 and nothing is stored', async () => {
    const response = await upload('1.0', randomBytes(1001));

    assert.equal(response.statusCode, 413);
    assert.equal(response.json().error_msg, 'body: a firmware file may have at most 1000 bytes');
    assert.equal((await call(t, 'GET', `${FIRMWARE}/kas/1.0`, { token: admin })).statusCode, 404);
  });

  test('a streamed upload that grows past FIRMWARE_MAX_BYTES is refused with 413, leaving no release and no temporary file', async () => {
    const response = await upload('1.1', Readable.from([randomBytes(600), randomBytes(600)]));

    assert.equal(response.statusCode, 413);
    assert.equal((await call(t, 'GET', `${FIRMWARE}/kas/1.1`, { token: admin })).statusCode, 404);
    const uploads = path.join(t.settings.dataDir, 'uploads');
    assert.deepEqual(fs.existsSync(uploads) ? fs.readdirSync(uploads) : [], []);
  });

  test('an upload of exactly FIRMWARE_MAX_BYTES is accepted', async () => {
    const response = await upload('1.2', randomBytes(1000));

    assert.equal(response.statusCode, 201);
  });
});
