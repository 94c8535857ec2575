import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadSettings } from '../../src/config/settings.ts';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import { CLAIM_BLOCK_MS, CLAIM_WINDOW_MS, MAX_FAILED_CLAIMS } from '../../src/okm/claim-policy.ts';
import { buildServer } from '../../src/server.ts';
import { ACLS, sampleAcl } from '../acl/helpers.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { OKMS, call, claim, claimedOkm, createOkm, devicePoll, issueTokens, uniqueSerial, type Tokens } from './admin-helpers.ts';

const CODE = '12345678';
/** What docs/okm-admin-api.md (Claiming) promises: failures of all customers only slow a serial number's claims, from the 10th in its window, by at most 2 s. */
const SLOWED_AFTER = 10;
const SLOWDOWN_SECONDS = 2;
const CLAIM_FAILED = { error_code: 'NOT_FOUND', error_msg: 'OKM not found or installer code does not match' };
const notAssigned = (serial: string) => ({ error_code: 'CONFLICT', error_msg: `OKM ${serial} is not assigned to you; claim it with its installer code` });

forEachDatabase('Claiming an OKM with its installer code (contract §10)', (kind) => {
  let t: TestApp;
  let tokens: Tokens;
  before(async () => {
    t = await buildTestApp(kind);
    tokens = await issueTokens(t);
  });
  after(() => t.close());

  /** An OKM that polled with the installer code and that nobody holds yet. */
  async function enrolledOkm(installCode = CODE): Promise<string> {
    const serial = uniqueSerial('CLM');
    assert.equal((await devicePoll(t, serial, `?installCode=${installCode}`)).statusCode, 204);
    return serial;
  }

  /** A write token of the customer (created if missing). */
  const customerToken = (customer: string) => issueTestToken(t, { customer, scopes: ['okm:read', 'okm:write'] });

  const storedOkm = (serial: string) => t.db.selectFrom('okms').select(['customer_id', 'polling_interval']).where('serial_number', '=', serial).executeTakeFirst();

  /** Moves the serial number's failed claims, its own and each customer's, this far into the past, as if that much time had gone by. */
  async function timePasses(serial: string, ms: number): Promise<void> {
    await t.db
      .updateTable('okm_claim_failures')
      .set((eb) => ({
        window_started_at: eb('window_started_at', '-', ms),
        slowed_until: eb('slowed_until', '-', ms),
        expires_at: eb('expires_at', '-', ms),
      }))
      .where('serial_number', '=', serial)
      .execute();
    await t.db
      .updateTable('okm_claim_customer_failures')
      .set((eb) => ({
        window_started_at: eb('window_started_at', '-', ms),
        blocked_until: eb('blocked_until', '-', ms),
        expires_at: eb('expires_at', '-', ms),
      }))
      .where('serial_number', '=', serial)
      .execute();
  }

  /** Wrong codes from the customer's token, each answered 404 (counted). */
  async function failClaims(token: string, serial: string, times: number): Promise<void> {
    for (let attempt = 1; attempt <= times; attempt++) {
      const response = await claim(t, token, serial, `0000${attempt}`);
      assert.equal(response.statusCode, 404, `attempt ${attempt}: ${response.body}`);
    }
  }

  const tooMany = (serial: string, seconds: number) => ({ error_code: 'TOO_MANY_REQUESTS', error_msg: `Too many failed claims of OKM ${serial}; retry in ${seconds} seconds` });

  /** A 429 of the slowdown: Retry-After of 1 to SLOWDOWN_SECONDS (the time since the last failure counts), the same in the message. */
  function assertSlowed(response: { statusCode: number; headers: Record<string, unknown>; json(): unknown; body: string }, serial: string): void {
    const seconds = Number(response.headers['retry-after']);
    assert.ok(seconds >= 1 && seconds <= SLOWDOWN_SECONDS, `Retry-After ${String(response.headers['retry-after'])}: ${response.body}`);
    assert.deepEqual([response.statusCode, response.json()], [429, tooMany(serial, seconds)]);
  }

  test('customer B can neither see, PUT, PATCH, link nor claim without the code an OKM that polled with code X; A claims it with X, and B still cannot see it', async () => {
    const serial = await enrolledOkm(CODE);
    const betaAcl = await issueTestToken(t, { customer: 'beta', scopes: ['acl:read', 'acl:create', 'acl:delete'] });
    const betaAclBody = { ...sampleAcl('beta'), okm_id: serial };

    const betaGet = await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.betaWrite });
    const betaPut = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.betaWrite, payload: { polling_interval: 30 } });
    const betaPatch = await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.betaWrite, payload: { polling_interval: 30 } });
    const betaLink = await call(t, 'POST', ACLS, { token: betaAcl, payload: betaAclBody });
    const betaClaim = await claim(t, tokens.betaWrite, serial, '87654321');

    assert.equal(betaGet.statusCode, 404);
    assert.deepEqual([betaPut.statusCode, betaPut.json()], [409, notAssigned(serial)]);
    assert.deepEqual([betaPatch.statusCode, betaPatch.json()], [409, notAssigned(serial)]);
    assert.equal(betaLink.statusCode, 400);
    assert.match(betaLink.json().error_msg, /^okm_id: /);
    assert.equal((await call(t, 'GET', `${ACLS}/${betaAclBody.id}`, { token: betaAcl })).statusCode, 404);
    assert.deepEqual([betaClaim.statusCode, betaClaim.json()], [404, CLAIM_FAILED]);
    assert.deepEqual(await storedOkm(serial), { customer_id: null, polling_interval: null });

    const acmeClaim = await claim(t, tokens.acmeWrite, serial, CODE);

    assert.equal(acmeClaim.statusCode, 200);
    assert.equal(acmeClaim.json().data.serial_number, serial);
    assert.equal(acmeClaim.json().data.customer, 'acme');
    assert.equal(acmeClaim.json().data.install_code, CODE);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).statusCode, 200);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.betaWrite })).statusCode, 404);
    assert.equal((await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.betaWrite, payload: {} })).statusCode, 409);
    assert.deepEqual((await claim(t, tokens.betaWrite, serial, CODE)).json(), CLAIM_FAILED);
    assert.equal((await call(t, 'POST', ACLS, { token: betaAcl, payload: { ...sampleAcl('beta'), okm_id: serial } })).statusCode, 400);
  });

  test('the claimed OKM is configured by its customer, and linked to its ACL', async () => {
    const serial = uniqueSerial('CLM');
    await claimedOkm(t, tokens.acmeWrite, serial);
    const acmeAcl = await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'acl:create'] });

    const put = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 30 } });
    const patch = await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { cache_mode: 2 } });
    const link = await call(t, 'POST', ACLS, { token: acmeAcl, payload: { ...sampleAcl('acme'), okm_id: serial } });

    assert.deepEqual([put.statusCode, put.json().message], [200, 'Resource updated successfully']);
    assert.deepEqual([patch.json().data.polling_interval, patch.json().data.cache_mode], [30, 2]);
    assert.equal(link.statusCode, 201);
  });

  test('every failed claim gets the same 404, byte for byte: unknown serial, held by another, held by oneself, no code reported, wrong code', async () => {
    const heldByBeta = await enrolledOkm();
    await claim(t, tokens.betaWrite, heldByBeta, CODE);
    const heldByAcme = await enrolledOkm();
    await claim(t, tokens.acmeWrite, heldByAcme, CODE);
    const noCode = uniqueSerial('CLM');
    await devicePoll(t, noCode);
    const wrongCode = await enrolledOkm();

    const responses = await Promise.all(
      [uniqueSerial('CLM'), heldByBeta, heldByAcme, noCode, wrongCode].map((serial) => claim(t, tokens.acmeWrite, serial, serial === wrongCode ? '12345679' : CODE)),
    );

    for (const response of responses) {
      assert.equal(response.statusCode, 404);
      assert.equal(response.body, JSON.stringify(CLAIM_FAILED));
      assert.equal(response.headers['retry-after'], undefined);
    }
    assert.equal((await storedOkm(heldByBeta))?.customer_id, (await t.db.selectFrom('customers').select('id').where('name', '=', 'beta').executeTakeFirstOrThrow()).id);
    assert.equal((await storedOkm(wrongCode))?.customer_id, null);
  });

  test('a code that matches an earlier report but not the last one is refused', async () => {
    const serial = await enrolledOkm('11111111');
    await devicePoll(t, serial, '?installCode=22222222');

    assert.deepEqual((await claim(t, tokens.acmeWrite, serial, '11111111')).json(), CLAIM_FAILED);
    assert.equal((await claim(t, tokens.acmeWrite, serial, '22222222')).statusCode, 200);
  });

  test(`after ${MAX_FAILED_CLAIMS} failed claims of a serial number by one customer, that customer's claims of it are 429 for 15 minutes, even with the right code`, async () => {
    const serial = await enrolledOkm();
    await failClaims(tokens.acmeWrite, serial, MAX_FAILED_CLAIMS);

    const blocked = await claim(t, tokens.acmeWrite, serial, CODE);

    assert.deepEqual([blocked.statusCode, blocked.json()], [429, tooMany(serial, CLAIM_BLOCK_MS / 1000)]);
    assert.equal(blocked.headers['retry-after'], String(CLAIM_BLOCK_MS / 1000));
    assert.equal((await storedOkm(serial))?.customer_id, null);
    await timePasses(serial, CLAIM_BLOCK_MS - 60_000);
    assert.equal((await claim(t, tokens.acmeWrite, serial, CODE)).statusCode, 429, 'a minute before the block ends');
    await timePasses(serial, 60_000);
    const afterBlock = await claim(t, tokens.acmeWrite, serial, CODE);
    assert.equal(afterBlock.statusCode, 200, afterBlock.body);
    assert.equal(afterBlock.json().data.customer, 'acme');
  });

  test(`another customer's failed claims do not block the owner: beta failing ${MAX_FAILED_CLAIMS} times and on (then itself 429) leaves acme's claim with the right code a 200`, async () => {
    const serial = await enrolledOkm();
    await failClaims(tokens.betaWrite, serial, MAX_FAILED_CLAIMS);
    const betaAgain = await Promise.all([claim(t, tokens.betaWrite, serial, '00009'), claim(t, tokens.betaWrite, serial, CODE)]);

    const owner = await claim(t, tokens.acmeWrite, serial, CODE);

    for (const response of betaAgain) {
      assert.deepEqual([response.statusCode, response.json()], [429, tooMany(serial, CLAIM_BLOCK_MS / 1000)]);
    }
    assert.equal(owner.statusCode, 200, owner.body);
    assert.equal(owner.json().data.customer, 'acme');
  });

  test(`once a serial number has had ${SLOWED_AFTER} failed claims in its window, by all customers, a customer that has not failed on it is not slowed: the owner's first claim is a 200 at once`, async () => {
    const serial = await enrolledOkm();
    await failClaims(tokens.betaWrite, serial, MAX_FAILED_CLAIMS);
    await failClaims(await customerToken('gamma'), serial, MAX_FAILED_CLAIMS);

    const owner = await claim(t, tokens.acmeWrite, serial, CODE);

    assert.equal(owner.statusCode, 200, owner.body);
  });

  test(`once a serial number has had ${SLOWED_AFTER} failed claims in its window, by all customers, a customer that has failed on it is slowed, not blocked: 429 with Retry-After at most ${SLOWDOWN_SECONDS}, then its right code is a 200`, async () => {
    const serial = await enrolledOkm();
    await failClaims(tokens.acmeWrite, serial, 1);
    await failClaims(tokens.betaWrite, serial, MAX_FAILED_CLAIMS);
    await failClaims(await customerToken('gamma'), serial, SLOWED_AFTER - MAX_FAILED_CLAIMS - 1);

    const slowed = await claim(t, tokens.acmeWrite, serial, CODE);

    assertSlowed(slowed, serial);
    assert.equal((await storedOkm(serial))?.customer_id, null);
    await timePasses(serial, SLOWDOWN_SECONDS * 1000);
    const owner = await claim(t, tokens.acmeWrite, serial, CODE);
    assert.equal(owner.statusCode, 200, owner.body);
    assert.equal(owner.json().data.customer, 'acme');
  });

  test('the slowdown is one serial number\'s, shared by every customer that has failed on it: one counted attempt per slowdown, the others 429 and not counted', async () => {
    const serial = await enrolledOkm();
    const [delta, epsilon] = [await customerToken('delta'), await customerToken('epsilon')];
    await failClaims(delta, serial, 1);
    await failClaims(epsilon, serial, 1);
    await failClaims(tokens.betaWrite, serial, MAX_FAILED_CLAIMS);
    await failClaims(await customerToken('gamma'), serial, SLOWED_AFTER - MAX_FAILED_CLAIMS - 2);

    const whileSlowed = await claim(t, delta, serial, '00007');
    await timePasses(serial, SLOWDOWN_SECONDS * 1000);
    const taken = await claim(t, delta, serial, '00007');
    const afterTaken = await claim(t, epsilon, serial, '00007');
    await timePasses(serial, SLOWDOWN_SECONDS * 1000);
    const atOnce = await Promise.all([claim(t, delta, serial, '00008'), claim(t, epsilon, serial, '00008'), claim(t, epsilon, serial, '00009')]);

    assertSlowed(whileSlowed, serial);
    assert.equal(taken.statusCode, 404, taken.body);
    assertSlowed(afterTaken, serial);
    assert.deepEqual(atOnce.map((response) => response.statusCode).sort(), [404, 429, 429]);
    for (const response of atOnce.filter((response) => response.statusCode === 429)) assertSlowed(response, serial);
    // Counted: the first SLOWED_AFTER, then one of the first pair and one of the concurrent three.
    const { failures } = await t.db.selectFrom('okm_claim_failures').select('failures').where('serial_number', '=', serial).executeTakeFirstOrThrow();
    assert.equal(Number(failures), SLOWED_AFTER + 2);
  });

  test('a block of every customer that the earlier per-serial rule left in okm_claim_failures no longer holds the owner back', async () => {
    const serial = await enrolledOkm();
    const now = Date.now();
    await t.db
      .insertInto('okm_claim_failures')
      .values({ serial_number: serial, failures: MAX_FAILED_CLAIMS, window_started_at: now, blocked_until: now + CLAIM_BLOCK_MS, expires_at: now + CLAIM_BLOCK_MS })
      .execute();

    const owner = await claim(t, tokens.acmeWrite, serial, CODE);

    assert.equal(owner.statusCode, 200, owner.body);
  });

  test('failures older than 15 minutes do not count towards the limit', async () => {
    const serial = await enrolledOkm();
    await failClaims(tokens.acmeWrite, serial, MAX_FAILED_CLAIMS - 1);
    await timePasses(serial, CLAIM_WINDOW_MS);

    await failClaims(tokens.acmeWrite, serial, MAX_FAILED_CLAIMS - 1);
    assert.equal((await claim(t, tokens.acmeWrite, serial, CODE)).statusCode, 200);
  });

  test('the limit is per serial number: another OKM is still claimed', async () => {
    const blockedSerial = await enrolledOkm();
    for (let attempt = 0; attempt <= MAX_FAILED_CLAIMS; attempt++) await claim(t, tokens.betaWrite, blockedSerial, '00000');
    const other = await enrolledOkm();

    assert.equal((await claim(t, tokens.acmeWrite, other, CODE)).statusCode, 200);
  });

  test('failed claims of a serial number that does not exist are counted too', async () => {
    const serial = uniqueSerial('CLM');
    for (let attempt = 0; attempt < MAX_FAILED_CLAIMS; attempt++) await claim(t, tokens.betaWrite, serial, CODE);

    assert.equal((await claim(t, tokens.betaWrite, serial, CODE)).statusCode, 429);
  });

  test('concurrent failed claims of one customer are all counted: of 12 at once, 5 are 404 and 7 are 429; the owner still claims', async () => {
    const serial = await enrolledOkm();

    const responses = await Promise.all(Array.from({ length: 12 }, () => claim(t, tokens.betaWrite, serial, '00000')));

    const codes = responses.map((response) => response.statusCode).sort();
    assert.deepEqual(codes, [...Array(MAX_FAILED_CLAIMS).fill(404), ...Array(12 - MAX_FAILED_CLAIMS).fill(429)]);
    assert.equal((await claim(t, tokens.acmeWrite, serial, CODE)).statusCode, 200);
  });

  test('failures are counted in the database, across server processes', async () => {
    const serial = await enrolledOkm();
    const second = await secondServer(t);
    try {
      for (let attempt = 0; attempt < MAX_FAILED_CLAIMS; attempt++) {
        await (attempt % 2 === 0 ? claim(t, tokens.betaWrite, serial, '00000') : second.claim(tokens.betaWrite, serial, '00000'));
      }

      assert.equal((await second.claim(tokens.betaWrite, serial, CODE)).statusCode, 429);
      assert.equal((await claim(t, tokens.betaWrite, serial, CODE)).statusCode, 429);
      assert.equal((await second.claim(tokens.acmeWrite, serial, CODE)).statusCode, 200);
    } finally {
      await second.close();
    }
  });

  test('rows of failed claims whose window and block are over are pruned: the table does not grow without bound', async () => {
    const guessed = Array.from({ length: 20 }, () => uniqueSerial('GUESS'));
    for (const serial of guessed) await claim(t, tokens.betaWrite, serial, CODE);
    for (const serial of guessed) await timePasses(serial, CLAIM_WINDOW_MS);

    await claim(t, tokens.betaWrite, uniqueSerial('GUESS'), CODE);

    const left = await t.db.selectFrom('okm_claim_failures').select('serial_number').where('serial_number', 'in', guessed).execute();
    const leftOfCustomers = await t.db.selectFrom('okm_claim_customer_failures').select('serial_number').where('serial_number', 'in', guessed).execute();
    assert.deepEqual([left, leftOfCustomers], [[], []]);
  });

  test('a malformed install_code is a 400 naming the field, and is not counted as a failed claim', async () => {
    const serial = await enrolledOkm();
    const bodies: unknown[] = [{}, { install_code: '1234' }, { install_code: '1'.repeat(21) }, { install_code: '12a45' }, { install_code: 12345678 }, { install_code: CODE, customer: 'acme' }];

    for (const payload of bodies) {
      const response = await call(t, 'POST', `${OKMS}/${serial}/claim`, { token: tokens.betaWrite, payload });
      assert.equal(response.statusCode, 400, JSON.stringify(payload));
      assert.match(response.json().error_msg, /^(install_code|customer): /, JSON.stringify(payload));
    }

    assert.equal((await claim(t, tokens.acmeWrite, serial, CODE)).statusCode, 200);
  });

  test('claiming needs okm:write and okm:read; an admin claims only for the customer it names', async () => {
    const serial = await enrolledOkm();

    assert.equal((await claim(t, tokens.acmeRead, serial, CODE)).statusCode, 403);
    assert.equal((await claim(t, await issueTestToken(t, { customer: 'acme', scopes: ['okm:write'] }), serial, CODE)).statusCode, 403);
    assert.equal((await claim(t, tokens.admin, serial, CODE)).statusCode, 400);
    const asAdmin = await call(t, 'POST', `${OKMS}/${serial}/claim?customer=beta`, { token: tokens.admin, payload: { install_code: CODE } });
    assert.equal(asAdmin.json().data.customer, 'beta');
  });

  test('a customer token cannot create an OKM by PUT (409, nothing stored); an admin can, for a customer or for none', async () => {
    const serial = uniqueSerial('CLM');

    const put = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 30 } });
    const patch = await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 30 } });

    assert.deepEqual([put.statusCode, put.json()], [409, notAssigned(serial)]);
    assert.deepEqual([patch.statusCode, patch.json()], [409, notAssigned(serial)]);
    assert.equal(await storedOkm(serial), undefined);
    assert.equal((await call(t, 'PUT', `${OKMS}/${serial}?customer=acme`, { token: tokens.admin, payload: {} })).statusCode, 201);
    assert.equal((await call(t, 'GET', `${OKMS}/${serial}`, { token: tokens.acmeRead })).statusCode, 200);
  });

  test('a customer gets the same 409 for PUT and PATCH of another customer\'s OKM, which does not change', async () => {
    const serial = uniqueSerial('CLM');
    await createOkm(t, tokens.betaWrite, serial, { polling_interval: 40 });

    const put = await call(t, 'PUT', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 50 } });
    const patch = await call(t, 'PATCH', `${OKMS}/${serial}`, { token: tokens.acmeWrite, payload: { polling_interval: 50 } });

    assert.deepEqual([put.statusCode, put.json()], [409, notAssigned(serial)]);
    assert.deepEqual([patch.statusCode, patch.json()], [409, notAssigned(serial)]);
    assert.equal((await storedOkm(serial))?.polling_interval, 40);
  });

  test('no other OKM route shows or changes an OKM nobody holds to a customer token', async () => {
    const serial = await enrolledOkm();
    const routes: [string, string, unknown?][] = [
      ['GET', `${OKMS}/${serial}`],
      ['DELETE', `${OKMS}/${serial}`],
      ['POST', `${OKMS}/${serial}/messages`, { type: 'note' }],
      ['GET', `${OKMS}/${serial}/messages`],
      ['GET', `${OKMS}/${serial}/audit`],
      ['GET', `${OKMS}/${serial}/deliveries`],
    ];

    for (const [method, url, payload] of routes) {
      const response = await call(t, method as 'GET', url, { token: tokens.acmeWrite, payload });
      assert.equal(response.statusCode, 404, `${method} ${url}`);
    }
    assert.equal((await call(t, 'POST', `${OKMS}/${serial}/device-token`, { token: tokens.acmeWrite })).statusCode, 403);
    assert.equal((await call(t, 'PUT', `${OKMS}/${serial}/customer`, { token: tokens.acmeWrite, payload: { customer: 'acme' } })).statusCode, 403);
    assert.equal((await call(t, 'GET', `${OKMS}?unassigned=true`, { token: tokens.acmeRead })).statusCode, 403);
    for (const filter of ['', '?overdue=false', `?firmware_version=x`]) {
      const list = await call(t, 'GET', `${OKMS}${filter}${filter ? '&' : '?'}serial_prefix=${serial}`, { token: tokens.acmeRead });
      assert.ok(list.json().data.every((okm: { serial_number: string }) => okm.serial_number !== serial), filter);
    }
    const messages = await call(t, 'GET', `${OKMS}/${serial}/messages`, { token: tokens.admin });
    assert.deepEqual(messages.json().data, []);
    assert.equal((await storedOkm(serial))?.customer_id, null);
  });

  test('the claim route and its body are in the OpenAPI document', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();

    const operation = document.paths['/api/v1/okms/{serial}/claim']?.post;
    assert.ok(operation, 'POST /api/v1/okms/{serial}/claim');
    const body = operation.requestBody.content['application/json'].schema;
    assert.deepEqual(body.required, ['install_code']);
    assert.equal(body.properties.install_code.pattern, '^[0-9]{5,20}$');
  });
});

/** Another keyfleet server on the same database, as a second process behind a load balancer would be. */
async function secondServer(t: TestApp): Promise<{ claim: (token: string, serial: string, code: string) => Promise<{ statusCode: number }>; close(): Promise<void> }> {
  const settings = loadSettings({ LOG_LEVEL: 'silent', RATE_LIMIT_DEVICE_PER_MINUTE: '0', RATE_LIMIT_API_PER_MINUTE: '0', ...t.database.env });
  const { db, dialect } = openDatabase(dialectFor(settings));
  const app = await buildServer({ settings, db: db as Db, dialect, keyRing: t.app.keyRing });
  await app.ready();
  return {
    claim: async (token, serial, code) =>
      app.inject({ method: 'POST', url: `${OKMS}/${serial}/claim`, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: JSON.stringify({ install_code: code }) }),
    async close() {
      await app.close();
      await db.destroy();
    },
  };
}
