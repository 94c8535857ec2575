import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Command } from 'commander';
import type { AuditAction } from '../../src/audit/actions.ts';
import type { Principal } from '../../src/auth/guard.ts';
import { sessionHandle, sessionIdOf, startSession, upsertPerson } from '../../src/auth/sessions.ts';
import { issueToken } from '../../src/auth/tokens.ts';
import { COMMANDS } from '../../src/cli/commands.ts';
import type { Customer } from '../../src/customers/repository.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { dialectFor } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { recordPendingCall } from '../../src/okm/pending-repository.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { loadRootPrivateKey } from '../../src/pki/root-ca.ts';
import { createIntermediateCertificate, createRootCertificate } from '../../src/pki/x509.ts';
import { createRollout, pauseRollout, startRollout, type RolloutRequest } from '../../src/rollouts/service.ts';
import { RETIRE_AFTER_MS } from '../../src/secrets/rotate-master-key.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId, withFailureAfterEachAuditEntry } from '../helpers/audit.ts';
import { databaseDigest, digestDifferences } from '../helpers/audit-rollback.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { addRelease } from '../device/config-helpers.ts';
import { createAcl } from '../../src/acl/service.ts';
import { aclUser } from '../acl/helpers.ts';

/**
 * contract §18 for the command line: every command (its words, as src/cli/commands.ts
 * defines them) has a scenario here (the entries it appends, by the account that runs it, then
 * that a failure of its entry leaves the whole database as it was) or an exemption saying why
 * it changes nothing the trail covers. A command added without either fails the first test.
 */

interface CommandScenario {
  /** Makes what the command needs, fresh each time (the failure check runs it again): its words, and the database it runs on when not the shared one. */
  setup: () => Promise<{ args: string[]; store?: TestStore }>;
  /** The actions it appends, in order, each by the command line. */
  actions: AuditAction[];
}

type CommandEntry = CommandScenario | { exempt: string };

interface World {
  store: TestStore;
  acme: Customer;
  /** Databases made for one scenario (an import of the root needs one without a root): closed at the end. */
  more: TestStore[];
}

let unique = 0;
const next = (prefix: string) => `${prefix}-${process.pid}-${++unique}`;

/** Every command keyfleet has, by its words ("customer create", "webhook secret rotate"), read from the command files COMMANDS names. */
async function commandWords(): Promise<string[]> {
  const program = new Command('keyfleet');
  for (const entry of Object.values(COMMANDS)) {
    for (const load of 'load' in entry ? [entry.load] : Object.values(entry.commands)) (await load()).register(program);
  }
  const leaves = (command: Command, words: string[]): string[][] =>
    command.commands.length === 0 ? [words] : command.commands.flatMap((sub) => leaves(sub, [...words, sub.name()]));
  return program.commands.flatMap((command) => leaves(command, [command.name()])).map((words) => words.join(' '));
}

/** A database as a deployment's first start leaves it: migrated, with its first data key (made by whichever process opens the key ring first). */
async function startedStore(kind: Parameters<typeof openTestStore>[0]): Promise<TestStore> {
  const store = await openTestStore(kind);
  await migrateToLatest(store.db, dialectFor(store.settings));
  await store.keyRing.refresh();
  return store;
}

function commands(w: World, kind: Parameters<typeof openTestStore>[0]): Record<string, CommandEntry> {
  const keyfleet = (...args: string[]) => runKeyfleet(w.store.database.env, ...args);
  const succeeds = async (...args: string[]): Promise<string> => {
    const run = await keyfleet(...args);
    assert.equal(run.exitCode, 0, `${args.join(' ')}: ${run.stderr}`);
    return run.stdout;
  };
  /** The test's own key ring, re-read: the commands rotate the keys under it. */
  const keyRing = async () => {
    await w.store.keyRing.refresh();
    return w.store.keyRing;
  };
  /** Acts through the rollout service as a token of alice's, an operator other than the command line. */
  const asAlice = (): RolloutRequest => {
    const principal: Principal = { subject: 'alice', actor: { kind: 'token', id: 'alice', name: 'alice' }, customer: null, scopes: new Set(['admin']), isAdmin: true };
    return { db: w.store.db, principal, customerName: 'acme', now: Date.now(), emit: async () => {} };
  };
  /** A rollout of acme's kas to 2.0 over two fresh OKMs, made by alice and taken through the steps given. */
  const rollout = async (options: { groups?: number[]; approval?: boolean } = {}, ...steps: ((request: RolloutRequest, id: number) => Promise<unknown>)[]) => {
    const serials = [next('ROLL'), next('ROLL')];
    for (const serial of serials) await insertOkm(w.store.db, serial, w.acme.id, UNCONFIGURED_OKM, Date.now());
    const created = await createRollout(asAlice(), { kind: 'kas', version: '2.0', customer: 'acme', groups: (options.groups ?? [100]).map((percent) => ({ percent })), approval_required: options.approval ?? false, filter: { serial_numbers: serials } });
    for (const step of steps) await step(asAlice(), created.id);
    return String(created.id);
  };
  const rolloutCommand = (word: string, options: { groups?: number[]; approval?: boolean }, ...steps: ((request: RolloutRequest, id: number) => Promise<unknown>)[]) => async () => ({
    args: ['rollout', word, await rollout(options, ...steps)],
  });
  /** A previous data key that may be retired now (as if the servers had had their time to re-read the key ring). */
  const retirablePreviousKey = async () => {
    await w.store.db.updateTable('data_keys').set({ previous_since: Date.now() - RETIRE_AFTER_MS - 1_000 }).where('state', '=', 'previous').execute();
  };

  return {
    serve: { exempt: 'serves the API: the changes made through it are the routes’ (test/audit/every-change-recorded.test.ts)' },
    dispatch: { exempt: 'delivers queued status events: delivery bookkeeping, no configuration changes' },
    migrate: { exempt: 'applies the schema: no entity the trail covers changes' },
    simulate: { exempt: 'runs virtual OKMs against a server: device polls and audit records, which contract §18 exempts' },
    console: { actions: ['token.issued'], setup: async () => ({ args: ['console', '--customer', 'acme', '--url', 'https://keyfleet.example'] }) },
    'customer create': { actions: ['customer.created'], setup: async () => ({ args: ['customer', 'create', next('customer')] }) },
    'customer list': { exempt: 'a read' },
    'customer update': {
      actions: ['customer.updated'],
      setup: async () => {
        const customer = await createCustomer(w.store.db, next('customer'));
        return { args: ['customer', 'update', customer.name, '--time-zone', 'Europe/Berlin'] };
      },
    },
    'token issue': { actions: ['token.issued'], setup: async () => ({ args: ['token', 'issue', '--customer', 'acme', '--scope', 'okm:read', '--name', next('dashboards')] }) },
    'token list': { exempt: 'a read' },
    'token revoke': {
      actions: ['token.revoked'],
      setup: async () => {
        const { id } = await issueToken(w.store.db, await keyRing(), w.store.settings, { customer: 'acme', scopes: ['okm:read'], ttlSeconds: 3600 });
        return { args: ['token', 'revoke', id] };
      },
    },
    'role bind': { actions: ['role_binding.created'], setup: async () => ({ args: ['role', 'bind', 'viewer', '--group', next('group'), '--customer', 'acme'] }) },
    'role unbind': {
      actions: ['role_binding.deleted'],
      setup: async () => {
        const id = randomUUID();
        await w.store.db.insertInto('role_bindings').values({ id, kind: 'group', value: next('group'), role: 'viewer', customer_id: null, created_at: Date.now(), created_by: 'test' }).execute();
        return { args: ['role', 'unbind', id] };
      },
    },
    'role list': { exempt: 'a read' },
    'session list': { exempt: 'a read' },
    'session revoke': {
      actions: ['session.revoked'],
      setup: async () => {
        const identity = { issuer: 'https://idp.example.com', subject: next('erin'), email: 'erin@example.com', name: 'Erin', groups: [], refreshToken: undefined };
        const person = await upsertPerson(w.store.db, identity, Date.now());
        const { secret } = await startSession(w.store.db, await keyRing(), w.store.settings, person, identity, Date.now());
        return { args: ['session', 'revoke', sessionHandle(sessionIdOf(secret))] };
      },
    },
    'signing-key list': { exempt: 'a read' },
    'signing-key rotate': { actions: ['signing_key.rotated'], setup: async () => ({ args: ['signing-key', 'rotate', '--grace', '1h'] }) },
    'signing-key retire': {
      actions: ['signing_key.retired'],
      setup: async () => {
        const { previous_kid: previous } = JSON.parse(await succeeds('signing-key', 'rotate', '--grace', '1h', '--json')) as { previous_kid: string };
        return { args: ['signing-key', 'retire', '--', previous] };
      },
    },
    'master-key rotate': {
      actions: ['master_key.rotated'],
      setup: async () => {
        // A rotation is refused while a previous data key is kept.
        if (await w.store.db.selectFrom('data_keys').select('kid').where('state', '=', 'previous').executeTakeFirst()) {
          await retirablePreviousKey();
          await succeeds('master-key', 'retire', '--yes');
        }
        return { args: ['master-key', 'rotate', '--yes'] };
      },
    },
    'master-key retire': {
      actions: ['master_key.retired'],
      setup: async () => {
        if (!(await w.store.db.selectFrom('data_keys').select('kid').where('state', '=', 'previous').executeTakeFirst())) await succeeds('master-key', 'rotate', '--yes');
        await retirablePreviousKey();
        return { args: ['master-key', 'retire', '--yes'] };
      },
    },
    'apikey create': { actions: ['api_key.created'], setup: async () => ({ args: ['apikey', 'create', '--customer', 'acme', '--label', next('app')] }) },
    'apikey list': { exempt: 'a read' },
    'apikey revoke': {
      actions: ['api_key.revoked'],
      setup: async () => ({ args: ['apikey', 'revoke', (await createApiKey(w.store.db, { customer: 'acme' })).id] }),
    },
    'cert create': { actions: ['certificate.created'], setup: async () => ({ args: ['cert', 'create', '--customer', 'acme', '--name', next('acme')] }) },
    'cert list': { exempt: 'a read' },
    'cert import': {
      actions: ['certificate.imported'],
      setup: async () => {
        const name = next('offline');
        const { root, privateKey } = await loadRootPrivateKey(w.store.db, await keyRing());
        const offline = await createIntermediateCertificate({ certificatePem: root.certificatePem, privateKey }, { customer: 'acme', name }, 30);
        const [certFile, keyFile] = [path.join(w.store.database.dataDir, `${name}.crt`), path.join(w.store.database.dataDir, `${name}.key`)];
        fs.writeFileSync(certFile, offline.certificatePem, { mode: 0o600 });
        fs.writeFileSync(keyFile, offline.privateKeyPem, { mode: 0o600 });
        return { args: ['cert', 'import', '--customer', 'acme', '--name', name, '--cert', certFile, '--key', keyFile] };
      },
    },
    'cert import-root': {
      actions: ['certificate.root_imported'],
      setup: async () => {
        // Only a deployment without a root takes one: a database of its own.
        const store = await startedStore(kind);
        w.more.push(store);
        const root = await createRootCertificate(30);
        const [certFile, keyFile] = [path.join(store.database.dataDir, 'root.crt'), path.join(store.database.dataDir, 'root.key')];
        fs.writeFileSync(certFile, root.certificatePem, { mode: 0o600 });
        fs.writeFileSync(keyFile, root.privateKeyPem, { mode: 0o600 });
        return { args: ['cert', 'import-root', '--cert', certFile, '--key', keyFile], store };
      },
    },
    'cert export': { exempt: 'a read' },
    'cert verify': { exempt: 'a read' },
    'okm pending': { exempt: 'a read' },
    'okm accept': {
      actions: ['okm.accepted'],
      setup: async () => {
        const serial = next('PENDING');
        await recordPendingCall(w.store.db, serial, { now: Date.now(), ip: '203.0.113.7', firmwareVersion: '2.1.0' });
        return { args: ['okm', 'accept', serial, '--customer', 'acme'] };
      },
    },
    'okm token': {
      actions: ['okm.device_token_issued'],
      setup: async () => {
        const serial = next('OKM');
        await insertOkm(w.store.db, serial, w.acme.id, UNCONFIGURED_OKM, Date.now());
        return { args: ['okm', 'token', serial] };
      },
    },
    'okm remove-subscriber-url': {
      actions: ['okm.configured', 'okm.configured'],
      setup: async () => {
        const url = `https://hooks.example/${next('dead')}`;
        for (const serial of [next('OKM'), next('OKM')]) await insertOkm(w.store.db, serial, w.acme.id, { ...UNCONFIGURED_OKM, statusUrls: [url] }, Date.now());
        return { args: ['okm', 'remove-subscriber-url', url, '--customer', 'acme', '--apply'] };
      },
    },
    'acl remove-user': {
      actions: ['acl.updated', 'acl.updated'],
      setup: async () => {
        const leaving = 900_000_000 + (process.pid % 1000) * 1000 + ++unique;
        const actor = { kind: 'cli' as const, id: 'setup', name: 'setup' };
        const principal: Principal = { subject: 'cli:setup', actor, customer: null, scopes: new Set(['admin']), isAdmin: true };
        for (let index = 0; index < 2; index += 1) {
          const body = { id: randomUUID(), customer: 'acme', locks: ['L1', 'L2'], users: [aclUser(7, [1, 0]), aclUser(leaving, [0, 1])] };
          await createAcl({ db: w.store.db, principal, now: Date.now(), source: { actor, requestId: null, ip: null, userAgent: null }, locking: w.store.dialect }, { body: body as never, jsonText: JSON.stringify(body) });
        }
        return { args: ['acl', 'remove-user', '--customer', 'acme', '--user', String(leaving), '--apply'] };
      },
    },
    'audit verify': { exempt: 'a read' },
    'audit export': { exempt: 'a read' },
    'webhook secret show': { exempt: 'a read; a secret not made yet is made as the first status event would make it (keyfleet’s own lazy setup, no secret replaced)' },
    'webhook secret rotate': { actions: ['webhook_secret.rotated'], setup: async () => ({ args: ['webhook', 'secret', 'rotate', '--customer', 'acme'] }) },
    'rollout create': {
      actions: ['rollout.created'],
      setup: async () => {
        const serials = [next('ROLL'), next('ROLL')];
        for (const serial of serials) await insertOkm(w.store.db, serial, w.acme.id, UNCONFIGURED_OKM, Date.now());
        return { args: ['rollout', 'create', 'kas', '2.0', '--customer', 'acme', '--groups', '100', '--serials', serials.join(',')] };
      },
    },
    'rollout list': { exempt: 'a read' },
    'rollout show': { exempt: 'a read' },
    'rollout start': { actions: ['rollout.started'], setup: rolloutCommand('start', {}) },
    'rollout pause': { actions: ['rollout.paused'], setup: rolloutCommand('pause', {}, startRollout) },
    'rollout resume': { actions: ['rollout.resumed'], setup: rolloutCommand('resume', {}, startRollout, pauseRollout) },
    'rollout advance': { actions: ['rollout.advanced'], setup: rolloutCommand('advance', { groups: [50, 100] }, startRollout) },
    'rollout abort': { actions: ['rollout.aborted'], setup: rolloutCommand('abort', {}, startRollout) },
    'rollout approve': { actions: ['rollout.approved'], setup: rolloutCommand('approve', { approval: true }) },
  };
}

forEachDatabase('every command appends its entries, in the transaction of its change', (kind) => {
  const w = { more: [] as TestStore[] } as World;
  const table = commands(w, kind);
  const { username } = os.userInfo();

  before(async () => {
    w.store = await startedStore(kind);
    w.acme = await createCustomer(w.store.db, 'acme');
    // The deployment's root and first data key, as the first command that needs them makes them.
    const first = await runKeyfleet(w.store.database.env, 'cert', 'create', '--customer', 'acme', '--name', 'acme-main');
    assert.equal(first.exitCode, 0, first.stderr);
    await addRelease(w.store.db, 'kas', '2.0');
  });
  after(async () => {
    for (const store of w.more) await store.close();
    await w.store?.close();
  });

  test('every command has a scenario or an exemption, and every one of the table is still a command', async () => {
    const words = await commandWords();
    const uncovered = words.filter((command) => !Object.hasOwn(table, command));
    assert.deepEqual(uncovered, [], `commands with neither a scenario nor an exemption in test/audit/every-command-recorded.test.ts: ${uncovered.join(', ')}`);
    const gone = Object.keys(table).filter((command) => !words.includes(command));
    assert.deepEqual(gone, [], `commands of the table that keyfleet no longer has: ${gone.join(', ')}`);
  });

  for (const [command, entry] of Object.entries(table)) {
    if ('exempt' in entry) continue;
    const scenario = entry;

    test(`keyfleet ${command} appends ${scenario.actions.join(', ')} by the command line`, async () => {
      const { args, store = w.store } = await scenario.setup();
      const start = await lastAuditId(store.db);

      const run = await runKeyfleet(store.database.env, ...args);

      assert.equal(run.exitCode, 0, run.stderr);
      const entries = await auditEntriesAfter(store.db, start);
      assert.deepEqual(
        entries.map((appended) => appended.action),
        scenario.actions,
      );
      for (const appended of entries) {
        assert.deepEqual(appended.actor, { kind: 'cli', id: username, name: username });
        assert.equal(appended.request_id, null);
      }
    });

    test(`keyfleet ${command} whose entry fails to be written changes nothing at all: the change rolls back with its entry`, async () => {
      const { args, store = w.store } = await scenario.setup();
      const start = await lastAuditId(store.db);
      const { run, digestBefore } = await withFailureAfterEachAuditEntry(store.db, kind, async () => {
        const digestBefore = await databaseDigest(store.db);
        return { run: await runKeyfleet(store.database.env, ...args), digestBefore };
      });

      assert.notEqual(run.exitCode, 0, `${command} succeeded although its entry could not be written`);
      assert.match(run.stderr, /injected failure/);
      const changed = digestDifferences(digestBefore, await databaseDigest(store.db));
      assert.deepEqual(changed, [], `${command}: rows changed although the change failed:\n${changed.join('\n')}`);
      assert.deepEqual(await auditEntriesAfter(store.db, start), []);
    });
  }

  test('the chain is intact after every command', async () => {
    await assertAuditChainIntact(w.store.db);
  });
});
