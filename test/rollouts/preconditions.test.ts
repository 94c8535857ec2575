import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { insertOkm } from '../../src/okm/repository.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { sweepRollouts } from '../../src/rollouts/sweep.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { createTestCustomer } from '../helpers/tokens.ts';
import { addRelease } from '../device/config-helpers.ts';
import { customerWriter } from './fleet-helpers.ts';

const ROLLOUTS = '/api/v1/rollouts';
const GROUPS = [{ percent: 50 }, { percent: 100 }];
const RACE_ROUNDS = 15;

forEachDatabase('rollout preconditions (If-Match, RFC 9110)', (kind) => {
  let t: TestApp;
  let token: string;
  before(async () => {
    t = await buildTestApp(kind, { ROLLOUT_SWEEP_INTERVAL_MS: '0' });
    await addRelease(t.db, 'kas', '1.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '2.0');
    const customer = await createTestCustomer(t, 'acme');
    for (let index = 0; index < 4; index++) await insertOkm(t.db, `PRE-${index}`, customer.id, UNCONFIGURED_OKM, Date.now());
    token = await customerWriter(t, 'acme');
  });
  after(() => t.close());

  const request = (method: 'GET' | 'POST' | 'PATCH', url: string, options: { payload?: object; ifMatch?: string } = {}) =>
    t.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}`, ...(options.ifMatch === undefined ? {} : { 'if-match': options.ifMatch }) },
      ...(options.payload === undefined ? {} : { payload: options.payload }),
    });
  const act = (id: number, action: string, ifMatch?: string) => request('POST', `${ROLLOUTS}/${id}/${action}`, ifMatch === undefined ? {} : { ifMatch });

  /** A ready rollout (the OKMs are in one unfinished rollout at most: the one before is aborted). */
  async function readyRollout() {
    const created = await request('POST', ROLLOUTS, { payload: { kind: 'kas', version: '2.0', groups: GROUPS } });
    assert.equal(created.statusCode, 201, created.body);
    return { id: created.json().data.id as number, etag: created.headers.etag as string };
  }

  test('creation, reads and actions answer with the ETag of the version they show', async () => {
    const { id, etag } = await readyRollout();

    const read = await request('GET', `${ROLLOUTS}/${id}`);
    const started = await act(id, 'start', etag);

    assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/);
    assert.equal(read.headers.etag, etag);
    assert.equal(started.statusCode, 200, started.body);
    assert.notEqual(started.headers.etag, etag);
    assert.equal((await request('GET', `${ROLLOUTS}/${id}`)).headers.etag, started.headers.etag);
    await act(id, 'abort');
  });

  test('an action with a stale If-Match is a 412 holding the rollout as it is; nothing happens', async () => {
    const { id, etag } = await readyRollout();
    const started = await act(id, 'start');

    const stalePause = await act(id, 'pause', etag);
    const staleAbort = await act(id, 'abort', etag);

    for (const response of [stalePause, staleAbort]) {
      assert.equal(response.statusCode, 412);
      assert.equal(response.headers.etag, started.headers.etag);
      assert.equal(response.json().error_code, 'PRECONDITION_FAILED');
      assert.equal(response.json().current.state, 'running');
      assert.equal(response.json().current.id, id);
    }
    assert.equal((await request('GET', `${ROLLOUTS}/${id}`)).json().data.state, 'running');
    assert.equal((await act(id, 'abort', started.headers.etag as string)).statusCode, 200);
  });

  test('a change the sweep or another operator makes gives another ETag; * matches; a 409 stays a 409', async () => {
    const { id, etag } = await readyRollout();
    await act(id, 'start');
    const paused = await act(id, 'pause');

    assert.notEqual(paused.headers.etag, etag);
    assert.equal((await act(id, 'start', '*')).statusCode, 409);
    assert.equal((await act(id, 'resume', `W/${paused.headers.etag as string}`)).statusCode, 412);
    assert.equal((await act(id, 'resume', 'bogus')).statusCode, 400);
    assert.equal((await act(id, 'resume', '*')).statusCode, 200);
    await act(id, 'abort');
  });

  test('the sweep starting a scheduled rollout gives it another ETag: an action based on the ready one is a 412', async () => {
    const created = await request('POST', ROLLOUTS, { payload: { kind: 'kas', version: '2.0', groups: GROUPS, start_at: new Date(Date.now() + 60_000).toISOString() } });
    assert.equal(created.statusCode, 201, created.body);
    const { id } = created.json().data as { id: number };

    await sweepRollouts(t.db, t.dialect, async () => {}, Date.now() + 120_000);

    const read = await request('GET', `${ROLLOUTS}/${id}`);
    assert.equal(read.json().data.state, 'running');
    assert.notEqual(read.headers.etag, created.headers.etag);
    assert.equal((await act(id, 'advance', created.headers.etag as string)).statusCode, 412);
    await act(id, 'abort');
  });

  test('two operators changing the thresholds with the same If-Match: exactly one wins', async () => {
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const { id, etag } = await readyRollout();
      const [first, second] = await Promise.all([
        request('PATCH', `${ROLLOUTS}/${id}`, { payload: { success_threshold: 80 }, ifMatch: etag }),
        request('PATCH', `${ROLLOUTS}/${id}`, { payload: { success_threshold: 60 }, ifMatch: etag }),
      ]);
      assert.deepEqual([first.statusCode, second.statusCode].sort(), [200, 412], `round ${round}: ${first.body} ${second.body}`);
      const [winner, loser] = first.statusCode === 200 ? [first, second] : [second, first];
      assert.equal(loser.headers.etag, winner.headers.etag);
      assert.equal(loser.json().current.success_threshold, winner.json().data.success_threshold);
      await act(id, 'abort');
    }
  });

  test('two operators starting and aborting with the same If-Match: exactly one acts', async () => {
    for (let round = 0; round < RACE_ROUNDS; round++) {
      const { id, etag } = await readyRollout();
      const [started, aborted] = await Promise.all([act(id, 'start', etag), act(id, 'abort', etag)]);
      const outcome = `${started.statusCode}/${aborted.statusCode}`;
      // The start that finds the rollout aborted before it looks is a 409 (RFC 9110 §13.2.1: no 2xx without the condition either).
      assert.ok(['200/412', '412/200', '409/200'].includes(outcome), `round ${round}: ${outcome}`);
      await act(id, 'abort');
    }
  });
});
