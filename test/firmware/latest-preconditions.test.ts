import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { addUrlRelease, call, FIRMWARE, uniqueVersion } from '../okm/admin-helpers.ts';

const RACE_ROUNDS = 20;

forEachDatabase('fleet latest preconditions (If-Match, RFC 9110)', (kind) => {
  let t: TestApp;
  let admin: string;
  before(async () => {
    t = await buildTestApp(kind);
    admin = await issueTestToken(t, { scopes: ['admin'] });
  });
  after(() => t.close());

  const preview = async () => (await call(t, 'GET', `${FIRMWARE}/batch_key/latest/preview`, { token: admin })).headers.etag as string;
  const setLatest = (version: string | null, etag?: string) =>
    call(t, 'PUT', `${FIRMWARE}/batch_key/latest`, { token: admin, payload: { version }, ...(etag === undefined ? {} : { headers: { 'if-match': etag } }) });
  const release = async () => {
    const version = uniqueVersion();
    await addUrlRelease(t, admin, 'batch_key', version);
    return version;
  };

  test('the preview names the version its counts are of; a change confirmed from it applies while the fleet latest is still that one', async () => {
    const [first, second] = [await release(), await release()];
    const etag = await preview();

    const set = await setLatest(first, etag);
    const stale = await setLatest(second, etag);

    assert.equal(set.statusCode, 200);
    assert.equal(set.headers.etag, await preview());
    assert.equal(stale.statusCode, 412);
    assert.deepEqual(stale.json(), { error_code: 'PRECONDITION_FAILED', error_msg: stale.json().error_msg, current: { kind: 'batch_key', version: first } });
    assert.equal(stale.headers.etag, set.headers.etag);
    assert.equal((await setLatest(null)).statusCode, 200, 'without If-Match as before');
  });

  test('two operators confirming from the same preview: exactly one change applies', async () => {
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const [one, two] = [await release(), await release()];
      // Every other round from no fleet latest at all: then there is no row to lock.
      if (round % 2 === 0) assert.equal((await setLatest(null)).statusCode, 200);
      const etag = await preview();
      const [first, second] = await Promise.all([setLatest(one, etag), setLatest(two, etag)]);
      assert.deepEqual([first.statusCode, second.statusCode].sort(), [200, 412], `round ${round}`);
    }
  });
});
