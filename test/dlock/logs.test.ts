import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Db } from '../../src/db/database.ts';
import { loadIntermediatePrivateKey } from '../../src/pki/intermediates.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import type { KeyRing } from '../../src/secrets/key-ring.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { serveProcess } from '../helpers/server-process.ts';
import type { TestDatabase } from '../helpers/databases.ts';
import { privateKeyForms } from '../pki/helpers.ts';

const ENROLMENT_CODE = 'c0ffee00'.repeat(4);

forEachDatabase('DLock secrets in the logs', (kind) => {
  let store: TestStore;
  let database: TestDatabase;
  let db: Db;
  let keyRing: KeyRing;
  before(async () => {
    store = await openTestStore(kind);
    ({ database, db, keyRing } = store);
  });
  after(() => store.close());

  test('a server log at trace level holds no lock key, enrolment code, API key or intermediate private key', async () => {
    const keyfleet = (...args: string[]) => runKeyfleet(database.env, ...args);
    assert.equal((await keyfleet('customer', 'create', 'acme')).exitCode, 0);
    assert.equal((await keyfleet('cert', 'create', '--customer', 'acme', '--name', 'acme-main')).exitCode, 0);
    const apiKey: string = JSON.parse((await keyfleet('apikey', 'create', '--customer', 'acme', '--json')).stdout).key;

    const server = serveProcess({ ...database.env, LOG_LEVEL: 'trace' });
    const base = await server.listening;
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const lockKeys: string[] = [];
    try {
      for (const [serial, base64] of [['LOG-1', false], ['LOG-2', true]] as const) {
        const body = JSON.stringify({ serial_no: serial, type: 'door', certificate: 'acme-main', enrolment_code: ENROLMENT_CODE, base64 });
        const posted = await fetch(`${base}/v1/dlock`, { method: 'POST', headers, body });
        assert.equal(posted.status, 200);
        const fetched = await fetch(`${base}/v1/dlock/${serial}`, { headers });
        lockKeys.push(((await fetched.json()) as { data: { key: { key: string } } }).data.key.key);
        assert.equal((await fetch(`${base}/v1/dlock/${serial}?base64=true`, { headers })).status, 200);
      }
      const duplicate = JSON.stringify({ serial_no: 'LOG-1', type: '', certificate: 'acme-main', enrolment_code: ENROLMENT_CODE, base64: false });
      assert.equal((await fetch(`${base}/v1/dlock`, { method: 'POST', headers, body: duplicate })).status, 400);
      const badCode = JSON.stringify({ serial_no: 'LOG-3', type: '', certificate: 'acme-main', enrolment_code: `${ENROLMENT_CODE}z`, base64: false });
      assert.equal((await fetch(`${base}/v1/dlock`, { method: 'POST', headers, body: badCode })).status, 400);
      assert.equal((await fetch(`${base}/v1/certificates/acme-main`, { headers })).status, 200);
      assert.equal((await fetch(`${base}/v1/dlock/LOG-1`, { method: 'DELETE', headers })).status, 204);
    } finally {
      await server.stop();
    }

    const log = server.output();
    assert.match(log, /\/v1\/dlock/, 'the requests were logged');
    const intermediateKey = await loadIntermediatePrivateKey(db, keyRing, 'acme-main');
    const secrets = [
      ...lockKeys.flatMap((key) => {
        const bytes = Buffer.from(key, 'base64');
        return [key, bytes.toString('hex'), bytes.toString('hex').toUpperCase(), bytes.toString('base64url')];
      }),
      ENROLMENT_CODE,
      apiKey,
      apiKey.slice(-43),
      ...privateKeyForms(intermediateKey).texts,
    ];
    for (const secret of secrets) assert.equal(log.includes(secret), false, `found ${secret.slice(0, 8)}… in the log`);
  });
});
