import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { issueToken } from '../../src/auth/tokens.ts';
import { loadSettings, type Settings } from '../../src/config/settings.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import { OUTAGE_LOG_INTERVAL_MS } from '../../src/db/connection-errors.ts';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { createKeyRing } from '../../src/key-ring.ts';
import { loadKeyRing } from '../../src/secrets/load-key-ring.ts';
import { loadMasterKey } from '../../src/secrets/master-key.ts';
import { eventually } from '../helpers/eventually.ts';
import { REQUEST_BOUND_MS, aclBody, assertCleanUnavailable, pause, send, timeUntil, unexpectedAnswers, type Answer } from '../helpers/outage-load.ts';
import { clusterUnavailableReason, startThrowawayCluster, type ThrowawayCluster } from '../helpers/postgres-cluster.ts';
import { freePort, serveProcess, spawnKeyfleet, stopProcess, waitUntilServing, type ServerProcess } from '../helpers/server-process.ts';
import { FAST_WEBHOOKS, Receiver, insertOkmsWithQueuedStatus, subscribe } from '../webhooks/helpers.ts';

/** /readyz must be 200 again this soon after the database accepts connections. */
const READY_AGAIN_WITHIN_MS = 5_000;
/** How long each outage lasts, under load. */
const OUTAGE_MS = 1_500;
const POLL_WORKERS = 3;
const ACL_WORKERS = 2;
const POLL_SERIALS = 12;
/** A log line's time is read a moment after the outage log's own clock: a warning may carry a time a few ms late. */
const LOG_CLOCK_SLACK_MS = 50;

const skip = clusterUnavailableReason();

describe('PostgreSQL outages: the database stops and starts again under load', { skip }, () => {
  let cluster: ThrowawayCluster;
  let receiver: Receiver;
  let env: Record<string, string>;
  let settings: Settings;
  let db: Db;
  let dataDir: string;
  before(async () => {
    cluster = await startThrowawayCluster();
    receiver = await Receiver.start();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-outage-'));
    env = {
      ...FAST_WEBHOOKS,
      DATABASE_URL: cluster.url,
      DATA_DIR: dataDir,
      MASTER_KEY: randomBytes(32).toString('hex'),
      RATE_LIMIT_DEVICE_PER_MINUTE: '0',
      RATE_LIMIT_API_PER_MINUTE: '0',
    };
    settings = loadSettings({ ...env, LOG_LEVEL: 'silent' });
    db = openDatabase(dialectFor(settings)).db;
  });
  after(async () => {
    await db?.destroy();
    await receiver?.close();
    await cluster?.destroy();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('keyfleet serve stays up, answers clean 503s within a bound, is ready again within 5 s, keeps every acknowledged write, and delivers events again', { timeout: 50_000 }, async () => {
    const server: ServerProcess = serveProcess(env);
    let running = true;
    const loads: Promise<void>[] = [];
    try {
      const base = await server.listening;
      await createCustomer(db, 'outage');
      const { token } = await issueToken(db, await loadKeyRing(createKeyRing(db, loadMasterKey(settings)), settings), settings, { customer: 'outage', scopes: ['acl:read', 'acl:create'], ttlSeconds: 600 });
      const { key: apiKey } = await createApiKey(db, { customer: 'outage' });
      const serials = Array.from({ length: POLL_SERIALS }, (_, index) => `OUTAGE-${index}`);
      for (const serial of serials) await send('poll', `${base}${settings.configPath}/${serial}`);
      for (const serial of serials) await subscribe(db, serial, [receiver.url('/load')]);

      const answers: Answer[] = [];
      const acknowledgedAcls: string[] = [];
      const pollLoad = async (worker: number) => {
        for (let index = worker; running; index += POLL_WORKERS) {
          const serial = serials[index % POLL_SERIALS]!;
          answers.push({ ...(await send('poll', `${base}${settings.configPath}/${serial}`)), serial });
        }
      };
      const aclLoad = async () => {
        while (running) {
          const id = randomUUID();
          const answer = await send('acl', `${base}/api/v1/acls`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: aclBody(id, 'outage'),
          });
          answers.push(answer);
          if (answer.status === 201) acknowledgedAcls.push(id);
        }
      };
      for (let worker = 0; worker < POLL_WORKERS; worker++) loads.push(pollLoad(worker));
      for (let worker = 0; worker < ACL_WORKERS; worker++) loads.push(aclLoad());
      const dlockProbe = () => send('dlock', `${base}/v1/dlock/LOCK-PROBE`, { headers: { authorization: `Bearer ${apiKey}` } });

      const figures: Record<string, unknown>[] = [];
      for (const mode of ['fast', 'immediate'] as const) {
        await pause(500);
        const before = answers.length;
        const stopping = Date.now();
        await cluster.stop(mode);
        const stopped = Date.now();
        const notReadyAfterMs = await timeUntil(`${base}/readyz`, 503, REQUEST_BOUND_MS);
        await pause(OUTAGE_MS);
        const dlock = await dlockProbe();
        await cluster.start();
        const readyAgainAfterMs = await timeUntil(`${base}/readyz`, 200, READY_AGAIN_WITHIN_MS + 1_000);

        const during = answers.slice(before);
        const unavailable = during.filter((answer) => answer.status === 503);
        figures.push({
          mode,
          stopMs: stopped - stopping,
          notReadyAfterStopMs: notReadyAfterMs + stopped - stopping,
          readyAgainAfterStartMs: readyAgainAfterMs,
          requests: during.length,
          unavailable: unavailable.length,
          slowestMs: Math.max(...during.map((answer) => answer.ms)),
        });
        assert.ok(readyAgainAfterMs <= READY_AGAIN_WITHIN_MS, `${mode}: /readyz 200 only ${readyAgainAfterMs} ms after the database was back`);
        assert.equal(dlock.status, 503);
        assertCleanUnavailable(dlock);
        assert.ok(unavailable.some((answer) => answer.family === 'poll') && unavailable.some((answer) => answer.family === 'acl'), `${mode}: the load saw the outage`);

        // Events queued after the database is back reach their subscriber.
        const serial = `OUTAGE-AFTER-${mode}`;
        await send('poll', `${base}${settings.configPath}/${serial}`);
        await subscribe(db, serial, [receiver.url(`/after-${mode}`)]);
        assert.equal((await send('poll', `${base}${settings.configPath}/${serial}`)).status, 200);
        await eventually(() => receiver.eventsAt(`/after-${mode}`).length > 0, 10_000, `${mode}: an event queued after the outage delivered`);
      }
      await pause(300);
      running = false;
      await Promise.all(loads);
      console.log(JSON.stringify({ outages: figures, requests: answers.length, aclsAcknowledged: acknowledgedAcls.length }));

      const unexpected = unexpectedAnswers(answers);
      assert.deepEqual(unexpected.slice(0, 5), [], `${unexpected.length} answers neither 2xx nor 503`);
      for (const answer of answers.filter((each) => each.status === 503)) assertCleanUnavailable(answer);
      assert.ok(Math.max(...answers.map((answer) => answer.ms)) < REQUEST_BOUND_MS);
      const stored = await db.selectFrom('acls').select('id').where('id', 'in', acknowledgedAcls).execute();
      assert.equal(stored.length, acknowledgedAcls.length, 'every acknowledged ACL is stored');
      // A poll's answer comes after its write committed: the stored sync time is at least its start.
      const okms = await db.selectFrom('okm_polls').select(['serial_number', 'last_sync_time']).where('serial_number', 'in', serials).execute();
      const syncTimes = new Map(okms.map((okm) => [okm.serial_number, Number(okm.last_sync_time)]));
      for (const answer of answers.filter((each) => each.serial && typeof each.status === 'number' && each.status < 300)) {
        assert.ok(syncTimes.get(answer.serial!)! >= answer.startedAt, `the acknowledged poll of ${answer.serial} at ${answer.startedAt} is stored`);
      }
      assert.equal((await send('poll', `${base}/healthz`)).status, 200, 'the same process still serves');
      // One warning per kind of failure per interval, however many requests and passes failed:
      // each kind once an outage at most (each is shorter than the interval), and never twice
      // within the interval, however far apart the two outages fall.
      const outageWarnings = server.output().split('\n').filter((line) => line.includes('database unavailable')).map((line) => JSON.parse(line) as { msg: string; time: number });
      assert.ok(outageWarnings.length > 0, 'the outages were logged');
      const warningsByKind = Map.groupBy(outageWarnings, (warning) => warning.msg);
      for (const [kind, warnings] of warningsByKind) {
        assert.ok(warnings.length <= 2, `${warnings.length} warnings "${kind}" for two outages`);
        if (warnings.length === 2) assert.ok(warnings[1]!.time - warnings[0]!.time >= OUTAGE_LOG_INTERVAL_MS - LOG_CLOCK_SLACK_MS, `"${kind}" twice within ${warnings[1]!.time - warnings[0]!.time} ms`);
      }
      assert.doesNotMatch(server.output(), /unhandled error|"stack"/);
      assert.equal(await server.stop(), 0);
    } finally {
      running = false;
      await Promise.all(loads);
      server.kill('SIGKILL');
    }
  });

  test('keyfleet dispatch stays up through the outages and delivers the events queued after each', { timeout: 30_000 }, async () => {
    const metricsPort = await freePort();
    const dispatcher = spawnKeyfleet(env, 'dispatch', '--metrics-port', String(metricsPort));
    const queueEvent = (serial: string) => insertOkmsWithQueuedStatus(db, [serial], (subscribed) => receiver.url(`/${subscribed}`));
    try {
      await waitUntilServing(`http://127.0.0.1:${metricsPort}/metrics`, dispatcher);
      await queueEvent('DISPATCH-BEFORE');
      await eventually(() => receiver.eventsAt('/DISPATCH-BEFORE').length > 0, 10_000, 'an event delivered before the outage');
      const figures: Record<string, unknown>[] = [];
      for (const mode of ['fast', 'immediate'] as const) {
        await cluster.stop(mode);
        await pause(OUTAGE_MS);
        assert.equal(dispatcher.exitCode, null, `${mode}: the dispatcher is still running`);
        await cluster.start();
        const back = Date.now();
        await queueEvent(`DISPATCH-AFTER-${mode}`);
        await eventually(() => receiver.eventsAt(`/DISPATCH-AFTER-${mode}`).length > 0, 10_000, `${mode}: an event queued after the outage delivered`);
        figures.push({ mode, deliveredAfterStartMs: Date.now() - back });
      }
      console.log(JSON.stringify({ dispatch: figures }));
      assert.equal(dispatcher.exitCode, null);
    } finally {
      await stopProcess(dispatcher);
    }
  });
});
