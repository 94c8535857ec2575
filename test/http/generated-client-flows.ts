import assert from 'node:assert/strict';
import createClient from 'openapi-fetch';
import type { paths } from '../../clients/typescript/keyfleet-openapi.ts';

export interface Credentials {
  baseUrl: string;
  /** A JWT with the admin scope. */
  operatorToken: string;
  /** A DLock API key of the customer `customer`. */
  dlockApiKey: string;
  customer: string;
  certificate: string;
}

/**
 * The main flows of the API driven by a client generated from /openapi.json (openapi-typescript +
 * openapi-fetch), as a customer writes it: typed by the document alone, without a cast.
 */
export async function runClientFlows(credentials: Credentials): Promise<string[]> {
  const done: string[] = [];
  const device = createClient<paths>({ baseUrl: credentials.baseUrl });
  const operator = createClient<paths>({ baseUrl: credentials.baseUrl, headers: { authorization: `Bearer ${credentials.operatorToken}` } });
  const dlock = createClient<paths>({ baseUrl: credentials.baseUrl, headers: { authorization: `Bearer ${credentials.dlockApiKey}` } });
  const serialNumber = 'CLIENT-OKM-1';

  const bootstrap = await device.GET('/embeddedv1/kas/config');
  assert.equal(bootstrap.data?.configUrl, '/api/v1/config');
  const enrolled = await device.GET('/api/v1/config/{serialNumber}', { params: { path: { serialNumber }, query: { kasFirmware: '1.0.0', pollingInterval: 150 } } });
  assert.equal(enrolled.response.status, 204);
  const poll = await device.GET('/api/v1/config/{serialNumber}', { params: { path: { serialNumber }, query: { kasDateTime: Date.now(), cacheMode: 0 } } });
  assert.equal(poll.response.status, 200);
  assert.equal(typeof poll.data, 'object');
  const audit = await device.POST('/api/v1/audit/{serialNumber}', { params: { path: { serialNumber } }, body: [{ event: 'open' }, { event: 'close' }] });
  assert.equal(audit.data?.count, 2);
  done.push('device poll and audit');

  const okm = await operator.PATCH('/api/v1/okms/{serial}', { params: { path: { serial: serialNumber } }, body: { polling_interval: 300 } });
  assert.equal(okm.data?.data.polling_interval, 300);
  const fetched = await operator.GET('/api/v1/okms/{serial}', { params: { path: { serial: serialNumber } } });
  assert.equal(fetched.data?.data.effective_polling_interval, 300);
  const list = await operator.GET('/api/v1/okms', { params: { query: { serial_prefix: serialNumber, limit: 10 } } });
  assert.ok(list.data?.data.some((record) => record.serial_number === serialNumber));
  assert.equal(list.data?.next_cursor, null);
  done.push('OKM admin');

  const enrolment = await dlock.POST('/v1/dlock', {
    body: { serial_no: 'CLIENT-LOCK-1', type: 'padlock', certificate: credentials.certificate, enrolment_code: '00112233445566778899aabbccddeeff', base64: false },
  });
  assert.equal(enrolment.error, undefined);
  const key = enrolment.data?.data.key;
  assert.ok(key !== undefined && typeof key !== 'string');
  assert.equal(key.data.serial_no, 'CLIENT-LOCK-1');
  const again = await dlock.GET('/v1/dlock/{serial}', { params: { path: { serial: 'CLIENT-LOCK-1' }, query: { base64: true } } });
  assert.equal(typeof again.data?.data.key, 'string');
  const removed = await dlock.DELETE('/v1/dlock/{serial}', { params: { path: { serial: 'CLIENT-LOCK-1' } } });
  assert.equal(removed.response.status, 204);
  const gone = await dlock.GET('/v1/dlock/{serial}', { params: { path: { serial: 'CLIENT-LOCK-1' } } });
  assert.equal(gone.error?.status, 404);
  const chain = await dlock.GET('/v1/certificates/{name}', { params: { path: { name: credentials.certificate } } });
  assert.match(chain.data?.data.chain ?? '', /BEGIN CERTIFICATE/);
  done.push('DLock enrol, get, delete, certificate chain');

  const user = { user_id: 7, pin_hash: 'abc123', auth_time: 8 as const, sounder: false, sounder_delay: 0, sounder_duration: 0, sounder_volume: 2 as const, permissions: [1 as const] };
  const created = await operator.POST('/api/v1/acls', { body: { customer: credentials.customer, users: [user], locks: ['LOCK-A'] } });
  const aclId = created.data?.data.id ?? '';
  assert.equal(created.data?.data.users[0]?.user_id, 7);
  const replaced = await operator.PUT('/api/v1/acls/{id}', { params: { path: { id: aclId } }, body: { customer: credentials.customer, users: [], locks: ['LOCK-A', 'LOCK-B'] } });
  assert.deepEqual(replaced.data?.data.locks, ['LOCK-A', 'LOCK-B']);
  const acls = await operator.GET('/api/v1/acls', { params: { query: { customer: credentials.customer } } });
  assert.equal(acls.data?.pagination.total_results, '1');
  const aclGone = await operator.DELETE('/api/v1/acls/{id}', { params: { path: { id: aclId } } });
  assert.equal(aclGone.response.status, 204);
  const missing = await operator.GET('/api/v1/acls/{id}', { params: { path: { id: aclId } } });
  assert.equal(missing.error?.error_code, 'NOT_FOUND');
  done.push('ACL create, replace, list, delete');

  const upload = await operator.PUT('/api/v1/firmware/{kind}/{version}', {
    params: { path: { kind: 'kas', version: '9.1.0' } },
    body: 'firmware bytes',
    bodySerializer: (body) => body,
    headers: { 'content-type': 'application/octet-stream' },
  });
  assert.equal(upload.data?.data.version, '9.1.0');
  const download = await device.GET('/api/v1/firmware/{kind}/{version}/file', { params: { path: { kind: 'kas', version: '9.1.0' } }, parseAs: 'arrayBuffer' });
  assert.equal(Buffer.from(download.data ?? new ArrayBuffer(0)).toString(), 'firmware bytes');
  const range = await device.GET('/api/v1/firmware/{kind}/{version}/file', {
    params: { path: { kind: 'kas', version: '9.1.0' } },
    headers: { range: 'bytes=0-7' },
    parseAs: 'text',
  });
  assert.equal(range.response.status, 206);
  assert.equal(range.data, 'firmware');
  done.push('firmware upload and download');
  return done;
}
