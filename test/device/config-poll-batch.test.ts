import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery, Kysely, sql } from 'kysely';
import { dialectFor, openDatabase, type Db } from '../../src/db/database.ts';
import type { DialectStrategy } from '../../src/db/dialects/strategy.ts';
import type { Database } from '../../src/db/schema.ts';
import { queueMessage } from '../../src/okm/messages-repository.ts';
import { UNCONFIGURED_OKM, type OkmSettings } from '../../src/okm/model.ts';
import { pollStatementsFor, type ObservedPoll } from '../../src/device/poll-batch-repository.ts';
import { createPollHandler, type PollReply, type PollRequest } from '../../src/device/poll-service.ts';
import { findOkm, insertOkm } from '../../src/okm/repository.ts';
import { insertMembers, insertRollout } from '../../src/rollouts/repository.ts';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { unavailableReason, type DatabaseKind } from '../helpers/databases.ts';
import { addRelease, allMessages, freezeServerClock, newSerial, SERVER_TIME, type DeviceParameters } from './config-helpers.ts';

const IN_STEP: DeviceParameters = { kasDateTime: SERVER_TIME, kasFirmware: '1.0.0', cacheMode: 1, pollingInterval: 60, auditUrl: '/api/v1/audit' };
const CONFIGURED: OkmSettings = { ...UNCONFIGURED_OKM, cacheMode: 1, pollingInterval: 60 };
/** The fleet's latest wireless key firmware in the mixed scenario; 3.0 is in the catalog too. */
const FLEET_WIRELESS = '3.1';

/** One poll of a scenario: the OKM (by its role) and what it reports. */
interface ScenarioPoll {
  okm: string;
  parameters: DeviceParameters;
}

/**
 * A fleet with one OKM for each case a poll meets, created afresh under its own serial
 * numbers, and the polls to send it: in step, a changed verdict, the same verdict again, a
 * pending message, a firmware pin (in the catalog or not), subscriber URLs, an unknown serial
 * number, one OKM polled twice, and the fleet's latest wireless key firmware (FLEET_WIRELESS)
 * offered to an OKM without a pin and held back by one pinned below it.
 */
async function mixedScenario(t: TestApp): Promise<{ serials: Record<string, string>; polls: ScenarioPoll[] }> {
  const roles = ['inStep', 'changed', 'sameVerdict', 'message', 'pinned', 'pinMissing', 'subscribed', 'twice', 'unknown', 'fleetOffer', 'pinnedBelowFleet'];
  const serials = Object.fromEntries(roles.map((role) => [role, newSerial(role)]));
  const settings: Record<string, OkmSettings> = {
    pinned: { ...CONFIGURED, firmware: { ...CONFIGURED.firmware, kas: '2.0.0' } },
    pinMissing: { ...CONFIGURED, firmware: { ...CONFIGURED.firmware, batch_key: '9.9' } },
    subscribed: { ...CONFIGURED, statusUrls: ['https://subscriber.example/status'] },
    pinnedBelowFleet: { ...CONFIGURED, firmware: { ...CONFIGURED.firmware, wireless_key: '3.0' } },
  };
  for (const role of roles.filter((role) => role !== 'unknown')) {
    await insertOkm(t.db, serials[role]!, null, settings[role] ?? CONFIGURED, 1000);
  }
  await t.db.updateTable('okms').set({ last_correction: 'pollingInterval' }).where('serial_number', '=', serials.sameVerdict!).execute();
  await queueMessage(t.db, serials.message!, 'delete-assets', { all: true });
  const offInterval = { ...IN_STEP, pollingInterval: 300 };
  return {
    serials,
    polls: [
      { okm: 'inStep', parameters: { ...IN_STEP, installCode: '12345678' } },
      { okm: 'changed', parameters: offInterval },
      { okm: 'sameVerdict', parameters: offInterval },
      { okm: 'message', parameters: IN_STEP },
      { okm: 'pinned', parameters: IN_STEP },
      { okm: 'pinMissing', parameters: { ...IN_STEP, batchKeyFirmware: '1.0' } },
      { okm: 'subscribed', parameters: IN_STEP },
      { okm: 'twice', parameters: offInterval },
      { okm: 'unknown', parameters: IN_STEP },
      { okm: 'twice', parameters: { ...IN_STEP, kasDateTime: SERVER_TIME - 600_000 } },
      { okm: 'unknown', parameters: offInterval },
      { okm: 'fleetOffer', parameters: { ...IN_STEP, wirelessKeyFirmware: '3.0' } },
      { okm: 'pinnedBelowFleet', parameters: { ...IN_STEP, wirelessKeyFirmware: '3.0' } },
    ].map(({ okm, parameters }) => ({ okm, parameters: { wirelessKeyFirmware: FLEET_WIRELESS, ...parameters } })),
  };
}

const pollRequest = (serialNumber: string, parameters: DeviceParameters): PollRequest => {
  const query = Object.fromEntries(Object.entries(parameters).map(([name, value]) => [name, String(value)]));
  return { serialNumber, ip: '192.0.2.1', query, reportedQuery: `?${new URLSearchParams(query).toString()}`, now: SERVER_TIME };
};

/** What a scenario left: each reply and each OKM as stored, with serial numbers and message ids left out. */
async function outcome(t: TestApp, serials: Record<string, string>, replies: PollReply[]) {
  const okms: Record<string, unknown> = {};
  for (const [role, serial] of Object.entries(serials)) {
    const okm = await findOkm(t.db, serial);
    const row = await t.db.selectFrom('okms').leftJoin('okm_polls', 'okm_polls.serial_number', 'okms.serial_number').select(['okm_polls.status_queued_at', 'okms.last_correction']).where('okms.serial_number', '=', serial).executeTakeFirst();
    const messages = (await allMessages(t.db, serial)).map(({ type, deliveredAt }) => ({ type, deliveredAt }));
    const pending = await t.db.selectFrom('pending_okms').select(['call_count', 'last_seen_at']).where('serial_number', '=', serial).executeTakeFirst();
    okms[role] = { okm: okm && { ...okm, serialNumber: role, createdAt: 0, updatedAt: 0 }, row, messages, pending: pending && { ...pending, call_count: Number(pending.call_count) } };
  }
  return { replies: replies.map((reply) => JSON.stringify(reply).replace(/"id":\d+/g, '"id":0')), okms };
}

for (const autoEnrol of ['true', 'false']) {
  forEachDatabase(`config polls of one batch, auto-enrol ${autoEnrol}`, (kind) => {
    let t: TestApp;
    freezeServerClock();
    before(async () => {
      // No dispatcher: its fan-out would clear status marks of one run and not yet of the other.
      t = await buildTestApp(kind, { OKM_AUTO_ENROL: autoEnrol, WEBHOOK_DISPATCH_IN_SERVER: 'false' });
      await addRelease(t.db, 'kas', '2.0.0');
      await addRelease(t.db, 'wireless_key', '3.0');
      await addRelease(t.db, 'wireless_key', FLEET_WIRELESS, { fleetLatest: true });
    });
    after(() => t.close());

    test('a batch of polls of every kind gets the same answers and leaves the same rows as the same polls one by one, a statement per row', async () => {
      const together = await mixedScenario(t);
      const oneByOne = await mixedScenario(t);
      const queued = { together: 0, oneByOne: 0 };
      const batched = createPollHandler(t.db, t.settings, t.dialect, (count) => (queued.together += count));
      const perRow = createPollHandler(t.db, t.settings, { ...t.dialect, rowSet: undefined, writeGrouping: { kind: 'transaction' } }, (count) => (queued.oneByOne += count));

      const batchReplies = await Promise.all(together.polls.map(({ okm, parameters }) => batched(pollRequest(together.serials[okm]!, parameters))));
      const sequentialReplies = [];
      for (const { okm, parameters } of oneByOne.polls) sequentialReplies.push(await perRow(pollRequest(oneByOne.serials[okm]!, parameters)));

      const batch = await outcome(t, together.serials, batchReplies);
      assert.deepEqual(batch, await outcome(t, oneByOne.serials, sequentialReplies));
      assert.deepEqual(queued, { together: 1, oneByOne: 1 });
      // The scenario does meet each case.
      const enrolled = autoEnrol === 'true' ? 'enrolled' : 'pending';
      assert.deepEqual(
        batchReplies.map(({ kind }) => kind),
        [...Array(8).fill('answered'), enrolled, 'answered', autoEnrol === 'true' ? 'answered' : 'pending', 'answered', 'answered'],
      );
      assert.match(batch.replies[3]!, /"message"/);
      assert.match(batch.replies[4]!, /"kasFirmware".*2\.0\.0/);
      assert.deepEqual(batchReplies[9], { kind: 'answered', body: { kasDateTime: SERVER_TIME } });
      assert.match(batch.replies[11]!, /"wirelessKeyFirmware":{"version":"3\.1"/);
      assert.deepEqual(batchReplies[12], { kind: 'answered', body: {} });
      assert.equal(batch.okms.changed && (batch.okms.changed as { row: { last_correction: string } }).row.last_correction, 'pollingInterval');
    });
  });
}

forEachDatabase('reported firmware versions', (kind) => {
  let t: TestApp;
  freezeServerClock();
  before(async () => (t = await buildTestApp(kind, { WEBHOOK_DISPATCH_IN_SERVER: 'false' })));
  after(() => t.close());

  test('a poll reporting other versions than stored records them in one more statement; one reporting the stored versions writes none', async () => {
    const serial = newSerial('versions');
    await insertOkm(t.db, serial, null, CONFIGURED, 1000);
    const strategy = dialectFor(t.settings);
    const reporting = (kasFirmware: string) => [pollRequest(serial, { ...IN_STEP, kasFirmware, batchKeyFirmware: '4.1' })];

    await countStatements(strategy, t, reporting('1.0.0'));
    const recordedFirst = await findOkm(t.db, serial);

    const same = await countStatements(strategy, t, reporting('1.0.0'));
    const upgraded = await countStatements(strategy, t, reporting('1.1.0'));
    const recordedUpgrade = await findOkm(t.db, serial);

    assert.equal(upgraded, same + 1);
    assert.equal(recordedFirst?.firmwareVersion, '1.0.0');
    assert.equal(recordedUpgrade?.firmwareVersion, '1.1.0');
    const row = await t.db.selectFrom('okms').select(['batch_key_firmware_version', 'wireless_key_firmware_version']).where('serial_number', '=', serial).executeTakeFirstOrThrow();
    assert.deepEqual(row, { batch_key_firmware_version: '4.1', wireless_key_firmware_version: null });
  });
});

forEachDatabase('two servers polling one OKM at once', (kind) => {
  let t: TestApp;
  /** The second server's own database handle. */
  let other: Db;
  freezeServerClock();
  before(async () => {
    t = await buildTestApp(kind, { WEBHOOK_DISPATCH_IN_SERVER: 'false' });
    other = openDatabase(dialectFor(t.settings)).db;
  });
  after(async () => {
    await other.destroy();
    await t.close();
  });

  test('each poll is counted once, the pending message is sent by one poll only, and every other poll answers the correction', async () => {
    const serial = newSerial('shared');
    await insertOkm(t.db, serial, null, CONFIGURED, 1000);
    const servers = [createPollHandler(t.db, t.settings, t.dialect, () => {}), createPollHandler(other, t.settings, t.dialect, () => {})];
    await servers[0]!(pollRequest(serial, IN_STEP));
    const message = await queueMessage(t.db, serial, 'delete-assets');
    const pollsOf = async () => Number((await t.db.selectFrom('okm_polls').select('polls').where('serial_number', '=', serial).executeTakeFirstOrThrow()).polls);
    const counted = await pollsOf();
    const POLLS = 16;

    const replies = await Promise.all(Array.from({ length: POLLS }, (_, index) => servers[index % 2]!(pollRequest(serial, { ...IN_STEP, pollingInterval: 300 }))));

    assert.equal(await pollsOf(), counted + POLLS);
    const bodies = replies.map((reply) => (reply.kind === 'answered' ? reply.body : reply));
    assert.deepEqual(
      bodies.filter((body) => 'message' in body),
      [{ message: { id: message.id, type: 'delete-assets', payload: null } }],
    );
    assert.deepEqual(
      bodies.filter((body) => !('message' in body)),
      Array.from({ length: POLLS - 1 }, () => ({ pollingInterval: 60 })),
    );
    assert.ok((await allMessages(t.db, serial)).every((stored) => stored.deliveredAt !== null));
  });
});

forEachDatabase('the fleet\'s latest releases changed by another server between two polls', (kind) => {
  let t: TestApp;
  let server: ReturnType<typeof loggedServer>;
  freezeServerClock();
  before(async () => {
    t = await buildTestApp(kind, { WEBHOOK_DISPATCH_IN_SERVER: 'false' });
    server = loggedServer(dialectFor(t.settings), t);
  });
  after(async () => {
    await server.close();
    await t.close();
  });

  /** The reply to the first poll of a new OKM in step at kas 1.0.0 (a new one each time: no offer held back by an earlier one). */
  async function firstPollReply(): Promise<string> {
    const serial = newSerial('fleetlatest');
    await insertOkm(t.db, serial, null, CONFIGURED, 1000);
    return JSON.stringify(await server.poll(pollRequest(serial, IN_STEP)));
  }

  test('a release made the fleet\'s latest, then another, then none, is what the next poll is offered each time', async () => {
    const before = await firstPollReply();
    await addRelease(t.db, 'kas', '2.0.0', { fleetLatest: true });
    const afterFirst = await firstPollReply();
    await addRelease(t.db, 'kas', '2.1.0', { fleetLatest: true });
    const afterSecond = await firstPollReply();
    await t.db.deleteFrom('fleet_firmware').where('kind', '=', 'kas').execute();
    const afterNone = await firstPollReply();

    assert.doesNotMatch(before, /kasFirmware/);
    assert.match(afterFirst, /"kasFirmware":\{"version":"2\.0\.0","url":"https:\/\/firmware\.example\/kas\/2\.0\.0\.bin"/);
    assert.match(afterSecond, /"kasFirmware":\{"version":"2\.1\.0"/);
    assert.doesNotMatch(afterNone, /kasFirmware/);
  });

  test('a release deleted and uploaded again under its version, then made the fleet\'s latest again, is offered as uploaded the second time', async () => {
    await addRelease(t.db, 'kas', '5.0.0', { fleetLatest: true, url: 'https://firmware.example/first-upload.bin' });
    const firstUpload = await firstPollReply();
    // Another server: 5.0.1 becomes the latest, 5.0.0 is deleted, uploaded again and made the latest again, with no poll here between.
    await addRelease(t.db, 'kas', '5.0.1', { fleetLatest: true });
    await t.db.deleteFrom('firmware_releases').where('kind', '=', 'kas').where('version', '=', '5.0.0').execute();
    await addRelease(t.db, 'kas', '5.0.0', { fleetLatest: true, url: 'https://firmware.example/second-upload.bin' });

    const secondUpload = await firstPollReply();

    assert.match(firstUpload, /"kasFirmware":\{"version":"5\.0\.0","url":"https:\/\/firmware\.example\/first-upload\.bin"/);
    assert.match(secondUpload, /"kasFirmware":\{"version":"5\.0\.0","url":"https:\/\/firmware\.example\/second-upload\.bin"/);
  });
});

/** Polls in one batch, through a handler on a database handle that records the statements it runs. */
async function runStatements(strategy: DialectStrategy, t: TestApp, requests: PollRequest[]): Promise<CompiledQuery[]> {
  const server = loggedServer(strategy, t);
  try {
    return await server.run(requests);
  } finally {
    await server.close();
  }
}

/** A poll handler, as one server's, on a database handle of its own that records the statements each run of polls makes. */
function loggedServer(strategy: DialectStrategy, t: TestApp) {
  let statements: CompiledQuery[] = [];
  const db = new Kysely<Database>({ dialect: strategy.createDialect(), log: (event) => void statements.push(event.query) });
  const handle = createPollHandler(db, t.settings, strategy, () => {});
  return {
    /** Polls in one batch, and the statements they ran. */
    async run(requests: PollRequest[]): Promise<CompiledQuery[]> {
      statements = [];
      await Promise.all(requests.map((request) => handle(request)));
      return statements;
    },
    /** One poll, and its reply. */
    poll: (request: PollRequest) => handle(request),
    close: () => db.destroy(),
  };
}

async function countStatements(strategy: DialectStrategy, t: TestApp, requests: PollRequest[]): Promise<number> {
  return (await runStatements(strategy, t, requests)).length;
}

/** A running rollout of kas `version` whose first group holds `serials` (its members, not yet offered). */
async function runningRollout(t: TestApp, version: string, serials: string[]): Promise<void> {
  const rolloutId = await insertRollout(t.db, {
    customer_id: null,
    kind: 'kas',
    version,
    filter: null,
    group_percents: '[100]',
    success_threshold: 100,
    error_threshold: 100,
    update_timeout_ms: 3_600_000,
    auto_advance: 0,
    state: 'running',
    current_group: 0,
    approval_required: 0,
    created_by: 'test',
    created_at: 1000,
    updated_at: 1000,
  });
  await insertMembers(
    t.db,
    rolloutId,
    serials.map((serialNumber) => ({ serialNumber, group: 0 })),
  );
  await t.db.updateTable('okms').set({ rollout_id: rolloutId }).where('serial_number', 'in', serials).execute();
}

/** The plan of a statement, one line per step, with seq scans off on PostgreSQL: a step that must scan still shows as one. */
async function queryPlan(t: TestApp, kind: DatabaseKind, query: CompiledQuery): Promise<string[]> {
  if (kind === 'sqlite') {
    const { rows } = await t.db.executeQuery<{ detail: string }>(CompiledQuery.raw(`EXPLAIN QUERY PLAN ${query.sql}`, [...query.parameters]));
    return rows.map((row) => row.detail);
  }
  return t.db.connection().execute(async (db) => {
    await sql`SET enable_seqscan = off`.execute(db);
    try {
      const { rows } = await db.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`EXPLAIN ${query.sql}`, [...query.parameters]));
      return rows.map((row) => row['QUERY PLAN']);
    } finally {
      await sql`RESET enable_seqscan`.execute(db);
    }
  });
}

forEachDatabase('the cost of rollouts to a poll', (kind) => {
  let t: TestApp;
  let strategy: DialectStrategy;
  freezeServerClock();
  before(async () => {
    t = await buildTestApp(kind, { WEBHOOK_DISPATCH_IN_SERVER: 'false' });
    strategy = dialectFor(t.settings);
    await addRelease(t.db, 'kas', '2.0.0', { fleetLatest: true });
    await addRelease(t.db, 'kas', '3.0.0');
  });
  after(() => t.close());

  const BATCH = 5;
  async function newOkms(prefix: string): Promise<string[]> {
    const serials = Array.from({ length: BATCH }, () => newSerial(prefix));
    for (const serial of serials) await insertOkm(t.db, serial, null, CONFIGURED, 1000);
    return serials;
  }
  const batch = (serials: string[], kasFirmware: string) => serials.map((serial) => pollRequest(serial, { ...IN_STEP, kasFirmware }));
  /** Statements of three batches of the OKMs' polls: at 1.0.0 (first offered a version), at 1.0.0 again, then reporting `installs`. */
  async function threePolls(serials: string[], installs: string): Promise<CompiledQuery[][]> {
    return [
      await runStatements(strategy, t, batch(serials, '1.0.0')),
      await runStatements(strategy, t, batch(serials, '1.0.0')),
      await runStatements(strategy, t, batch(serials, installs)),
    ];
  }
  const counts = (runs: CompiledQuery[][]) => runs.map((statements) => statements.length);

  test('polls of OKMs in no rollout run the same statements while a rollout runs as when no rollout exists', async () => {
    assert.equal((await t.db.selectFrom('rollouts').select('id').execute()).length, 0);
    const beforeAnyRollout = await threePolls(await newOkms('norollout'), '2.0.0');
    const members = await newOkms('member');
    await runningRollout(t, '3.0.0', members);
    await runStatements(strategy, t, batch(members, '1.0.0'));

    const whileRunning = await threePolls(await newOkms('outside'), '2.0.0');

    assert.deepEqual(counts(whileRunning), counts(beforeAnyRollout));
    assert.ok(whileRunning.flat().every((query) => !/"rollouts"|"rollout_members"/.test(query.sql)), 'a poll outside rollouts reads no rollout table');
  });

  test('polls of OKMs in a running rollout run one indexed read more, plus one write when first offered and two when reporting the version', async () => {
    const outside = counts(await threePolls(await newOkms('control'), '2.0.0'));
    const members = await newOkms('inrollout');
    await runningRollout(t, '3.0.0', members);

    const inRollout = await threePolls(members, '3.0.0');

    assert.deepEqual(counts(inRollout), [outside[0]! + 1 + 1, outside[1]! + 1, outside[2]! + 1 + 2]);
    const statuses = await t.db.selectFrom('rollout_members').select('status').where('serial_number', 'in', members).execute();
    assert.deepEqual(statuses, Array(BATCH).fill({ status: 'updated' }));
    const reads = inRollout[1]!.filter((query) => /join "rollouts"/.test(query.sql));
    assert.equal(reads.length, 1);
    const plan = await queryPlan(t, kind, reads[0]!);
    // Each step a search by key: no SQLite SCAN, no PostgreSQL Seq Scan nor index scan without a condition.
    const searches = (step: string, index: number) => !/^SCAN|Seq Scan/.test(step.trim()) && (!/Index (Only )?Scan/.test(step) || /^Index Cond/.test(plan[index + 1]?.trim() ?? ''));
    assert.ok(plan.length > 0 && plan.every(searches), plan.join('\n'));
  });
});

describe('config polls on PostgreSQL', { skip: await unavailableReason('postgres') }, () => {
  let t: TestApp;
  freezeServerClock();
  before(async () => {
    t = await buildTestApp('postgres');
    await addRelease(t.db, 'kas', '2.0.0');
    await addRelease(t.db, 'kas', '3.0.0');
  });
  after(() => t.close());

  /**
   * `copies` polls of each kind: a changed verdict, a pending message, a pin, subscriber URLs,
   * an unknown serial number, and two OKMs of a running rollout (one offered its version, one
   * reporting it).
   */
  async function mixedRequests(copies: number): Promise<PollRequest[]> {
    const requests: PollRequest[] = [];
    const [offered, updated] = [Array.from({ length: copies }, () => newSerial('offered')), Array.from({ length: copies }, () => newSerial('updated'))];
    for (const serial of [...offered, ...updated]) await insertOkm(t.db, serial, null, CONFIGURED, 1000);
    await runningRollout(t, '3.0.0', [...offered, ...updated]);
    for (let copy = 0; copy < copies; copy++) {
      requests.push(pollRequest(offered[copy]!, IN_STEP), pollRequest(updated[copy]!, { ...IN_STEP, kasFirmware: '3.0.0' }));
      const [changed, message, pinned, subscribed] = [newSerial('changed'), newSerial('message'), newSerial('pinned'), newSerial('subscribed')];
      await insertOkm(t.db, changed, null, CONFIGURED, 1000);
      await insertOkm(t.db, message, null, CONFIGURED, 1000);
      await insertOkm(t.db, pinned, null, { ...CONFIGURED, firmware: { ...CONFIGURED.firmware, kas: '2.0.0' } }, 1000);
      await insertOkm(t.db, subscribed, null, { ...CONFIGURED, statusUrls: ['https://subscriber.example/status'] }, 1000);
      await queueMessage(t.db, message, 'delete-assets');
      requests.push(
        pollRequest(changed, { ...IN_STEP, pollingInterval: 300 }),
        pollRequest(message, IN_STEP),
        pollRequest(pinned, IN_STEP),
        pollRequest(subscribed, IN_STEP),
        pollRequest(newSerial('unknown'), IN_STEP),
      );
    }
    return requests;
  }

  test('a batch of polls runs the same number of statements whatever the number of polls', async () => {
    const strategy = dialectFor(t.settings);

    const few = await countStatements(strategy, t, await mixedRequests(1));
    const many = await countStatements(strategy, t, await mixedRequests(9));

    assert.equal(many, few);
    assert.ok(few <= 16, `${few} statements`);
  });

  test('a batch of polls in step runs its statement and one read of the fleet\'s latest releases between BEGIN and COMMIT', async () => {
    const serials = Array.from({ length: 5 }, () => newSerial('steady'));
    for (const serial of serials) await insertOkm(t.db, serial, null, CONFIGURED, 1000);
    const requests = serials.map((serial) => pollRequest(serial, IN_STEP));
    const server = loggedServer(dialectFor(t.settings), t);
    try {
      // The first polls end the OKMs' never-polled state, a write of their own.
      await server.run(requests);

      const statements = await server.run(requests);

      assert.deepEqual(
        statements.map((statement) => statement.sql.trim().split(/\s/)[0]!.toLowerCase()),
        ['begin', 'with', 'select', 'commit'],
        statements.map((statement) => statement.sql).join('\n'),
      );
    } finally {
      await server.close();
    }
  });

  test('OKMs of a rollout polled in one batch are offered its version, and those reporting it leave the rollout as updated', async () => {
    const requests = await mixedRequests(3);
    const handle = createPollHandler(t.db, t.settings, t.dialect, () => {});

    const replies = await Promise.all(requests.map((request) => handle(request)));

    const members = await t.db
      .selectFrom('rollout_members')
      .innerJoin('okms', 'okms.serial_number', 'rollout_members.serial_number')
      .select(['rollout_members.serial_number', 'rollout_members.status', 'okms.rollout_id'])
      .where(
        'rollout_members.serial_number',
        'in',
        requests.map((request) => request.serialNumber),
      )
      .orderBy('rollout_members.serial_number')
      .execute();
    assert.deepEqual(
      members.map(({ serial_number, status, rollout_id }) => [serial_number.split('-')[0], status, rollout_id === null ? 'left' : 'in']).sort(),
      [...Array(3).fill(['offered', 'offered', 'in']), ...Array(3).fill(['updated', 'updated', 'left'])],
    );
    const offeredReplies = replies.filter((_, position) => requests[position]!.serialNumber.startsWith('offered'));
    assert.ok(offeredReplies.every((reply) => JSON.stringify(reply).includes('"kasFirmware"') && JSON.stringify(reply).includes('3.0.0')), JSON.stringify(offeredReplies));
  });

  test('two batches polling the same OKMs at once, in opposite orders, both commit (their rows are locked in one order)', async () => {
    const serials = Array.from({ length: 300 }, () => newSerial('locked'));
    for (const serial of serials) await insertOkm(t.db, serial, null, CONFIGURED, 1000);
    const statements = pollStatementsFor(t.dialect);
    const polls = (order: string[]): ObservedPoll[] =>
      order.map((serialNumber) => ({
        serialNumber,
        observation: { now: SERVER_TIME, ip: '192.0.2.1', firmwareVersion: null, batchKeyFirmwareVersion: null, wirelessKeyFirmwareVersion: null, reported: '{}', installCode: null },
      }));
    const other: Db = openDatabase(dialectFor(t.settings)).db;
    try {
      for (let round = 0; round < 10; round++) {
        const results = await Promise.allSettled([
          t.db.transaction().execute((tx) => statements.recordPolls(tx, polls(serials))),
          other.transaction().execute((tx) => statements.recordPolls(tx, polls([...serials].reverse()))),
        ]);
        for (const result of results) assert.equal(result.status, 'fulfilled', result.status === 'rejected' ? String(result.reason) : '');
      }
    } finally {
      await other.destroy();
    }
  });
});
