import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { issueToken } from '../../src/auth/tokens.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { aclUser } from '../acl/helpers.ts';
import { forEachDatabase, openTestStore, type TestStore } from '../helpers/app.ts';
import { serveProcess, type ServerProcess } from '../helpers/server-process.ts';

const CUSTOMER = 'crash-a';
/** Workers per kind of request, all at once against one server process. */
const WORKERS = { poll: 4, acl: 3, okmPut: 2, okmPatch: 2 };
/**
 * The server is killed, with every worker still sending, once each kind of write has its
 * minimum and either KILL_AFTER_ACKNOWLEDGED writes were acknowledged or KILL_AFTER_MS passed
 * (at the latest after LOAD_LIMIT_MS, on a very slow host).
 */
const MINIMUM_ACKNOWLEDGED = { polls: 20, acls: 20, okmPuts: 10, okmPatches: 10 };
const KILL_AFTER_ACKNOWLEDGED = 300;
const KILL_AFTER_MS = 3000;
const LOAD_LIMIT_MS = 20_000;

/** What the clients were told was done: each entry is a 2xx answer, and what it promised. */
interface Acknowledged {
  polls: Map<string, string>;
  acls: Map<string, ReturnType<typeof aclBody>>;
  okmPuts: Map<string, number>;
  /** Per patched OKM: the last acknowledged polling_interval, and the last one sent (acknowledged or not). */
  okmPatches: Map<string, { acknowledged: number; sent: number }>;
}

const aclBody = (index: number) => ({
  id: randomUUID(),
  customer: CUSTOMER,
  users: [aclUser(index % 1000, [1, 17])],
  locks: [`DOOR-${index}-A`, `DOOR-${index}-B`],
  user_data: { index },
});

const serverEnv = (store: TestStore) => ({
  ...store.database.env,
  // The load is far above any device's or integration's rate: limits would only measure themselves.
  RATE_LIMIT_DEVICE_PER_MINUTE: '0',
  RATE_LIMIT_API_PER_MINUTE: '0',
});

forEachDatabase('crash: kill -9 of the server under load, restart on the same data', (kind) => {
  test('every poll, ACL and OKM write acknowledged before a kill -9 is there after the restart', async (context) => {
    const store = await openTestStore(kind);
    let server: ServerProcess | undefined;
    try {
      server = serveProcess(serverEnv(store));
      let base = await server.listening;
      await createCustomer(store.db, CUSTOMER);
      const issue = async (scopes: string[], customer?: string) =>
        (await issueToken(store.db, store.keyRing, store.settings, { scopes, ttlSeconds: 3600, ...(customer ? { customer } : {}) })).token;
      const admin = { authorization: `Bearer ${await issue(['admin'])}` };
      const aclWriter = { authorization: `Bearer ${await issue(['acl:create', 'acl:read'], CUSTOMER)}` };
      const json = { 'content-type': 'application/json' };

      const acknowledged: Acknowledged = { polls: new Map(), acls: new Map(), okmPuts: new Map(), okmPatches: new Map() };
      for (let worker = 0; worker < WORKERS.okmPatch; worker++) {
        const serial = `CRASH-PATCHED-${worker}`;
        const created = await fetch(`${base}/api/v1/okms/${serial}?customer=${CUSTOMER}`, { method: 'PUT', headers: { ...admin, ...json }, body: '{"polling_interval":5}' });
        assert.equal(created.status, 201, await created.text());
        acknowledged.okmPatches.set(serial, { acknowledged: 5, sent: 5 });
      }

      const aclsSent = new Map<string, ReturnType<typeof aclBody>>();
      let killed = false;
      let sequence = 0;
      const refusedBeforeKill: string[] = [];
      let cutOff = 0;
      const patchesAcknowledged = () => [...acknowledged.okmPatches.values()].reduce((sum, patch) => sum + patch.acknowledged - 5, 0);
      const counts = () => ({ polls: acknowledged.polls.size, acls: acknowledged.acls.size, okmPuts: acknowledged.okmPuts.size, okmPatches: patchesAcknowledged() });
      const minimumsMet = () => Object.entries(MINIMUM_ACKNOWLEDGED).every(([name, minimum]) => counts()[name as keyof typeof MINIMUM_ACKNOWLEDGED] >= minimum);
      const total = () => Object.values(counts()).reduce((sum, count) => sum + count, 0);
      /** Sends requests one after the other until the server is gone; `onSuccess` records what a 2xx promised. */
      const worker = async (request: () => { url: string; init: RequestInit; onSuccess: () => void }) => {
        while (!killed) {
          const { url, init, onSuccess } = request();
          let response: Response;
          try {
            response = await fetch(`${base}${url}`, init);
            await response.arrayBuffer();
          } catch {
            if (!killed) refusedBeforeKill.push(`${init.method ?? 'GET'} ${url}: no answer`);
            cutOff++;
            return;
          }
          if (response.ok) onSuccess();
          else if (!killed) refusedBeforeKill.push(`${init.method ?? 'GET'} ${url}: ${response.status}`);
        }
      };
      const workers = [
        ...Array.from({ length: WORKERS.poll }, () =>
          worker(() => {
            const serial = `CRASH-POLL-${++sequence}`;
            const installCode = String(10_000_000 + sequence);
            return { url: `/api/v1/config/${serial}?installCode=${installCode}&kasFirmware=1.0.0`, init: {}, onSuccess: () => acknowledged.polls.set(serial, installCode) };
          }),
        ),
        ...Array.from({ length: WORKERS.acl }, () =>
          worker(() => {
            const body = aclBody(++sequence);
            aclsSent.set(body.id, body);
            return { url: '/api/v1/acls', init: { method: 'POST', headers: { ...aclWriter, ...json }, body: JSON.stringify(body) }, onSuccess: () => acknowledged.acls.set(body.id, body) };
          }),
        ),
        ...Array.from({ length: WORKERS.okmPut }, () =>
          worker(() => {
            const serial = `CRASH-PUT-${++sequence}`;
            const interval = 5 + (sequence % 3000);
            const init = { method: 'PUT', headers: { ...admin, ...json }, body: JSON.stringify({ polling_interval: interval }) };
            return { url: `/api/v1/okms/${serial}?customer=${CUSTOMER}`, init, onSuccess: () => acknowledged.okmPuts.set(serial, interval) };
          }),
        ),
        ...[...acknowledged.okmPatches.entries()].map(([serial, patch]) =>
          worker(() => {
            const interval = ++patch.sent;
            const init = { method: 'PATCH', headers: { ...admin, 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ polling_interval: interval }) };
            return { url: `/api/v1/okms/${serial}`, init, onSuccess: () => (patch.acknowledged = interval) };
          }),
        ),
      ];

      const loadStarted = Date.now();
      const elapsed = () => Date.now() - loadStarted;
      while (!(minimumsMet() && (total() >= KILL_AFTER_ACKNOWLEDGED || elapsed() >= KILL_AFTER_MS)) && elapsed() < LOAD_LIMIT_MS) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      killed = true;
      server.kill('SIGKILL');
      assert.equal(await server.exited, 'SIGKILL');
      await Promise.all(workers);

      server = serveProcess(serverEnv(store));
      base = await server.listening;
      const missing: string[] = [];
      const read = async (url: string, headers: Record<string, string>) => {
        const response = await fetch(`${base}${url}`, { headers });
        return { status: response.status, body: (await response.json()) as { data: Record<string, unknown> } };
      };
      const checks = [
        ...[...acknowledged.polls].map(([serial, installCode]) => async () => {
          const { status, body } = await read(`/api/v1/okms/${serial}`, admin);
          if (status !== 200 || body.data.install_code !== installCode) missing.push(`poll of ${serial}: ${status} ${JSON.stringify(body)}`);
        }),
        ...[...acknowledged.acls].map(([id, acl]) => async () => {
          const { status, body } = await read(`/api/v1/acls/${id}?customer=${CUSTOMER}`, aclWriter);
          if (status !== 200 || !isDeepStrictEqual(body.data.users, acl.users) || !isDeepStrictEqual(body.data.locks, acl.locks)) {
            missing.push(`ACL ${id}: ${status} ${JSON.stringify(body)}`);
          }
        }),
        ...[...acknowledged.okmPuts].map(([serial, interval]) => async () => {
          const { status, body } = await read(`/api/v1/okms/${serial}`, admin);
          if (status !== 200 || body.data.polling_interval !== interval || body.data.customer !== CUSTOMER) missing.push(`PUT of ${serial}: ${status} ${JSON.stringify(body)}`);
        }),
        ...[...acknowledged.okmPatches].map(([serial, patch]) => async () => {
          const { status, body } = await read(`/api/v1/okms/${serial}`, admin);
          const interval = body.data?.polling_interval as number;
          // The patch in flight at the kill may or may not have committed; an acknowledged one must have.
          if (status !== 200 || interval < patch.acknowledged || interval > patch.sent) missing.push(`PATCH of ${serial}: ${interval}, acknowledged ${patch.acknowledged}, sent ${patch.sent}`);
        }),
      ];
      for (let start = 0; start < checks.length; start += 8) await Promise.all(checks.slice(start, start + 8).map((check) => check()));
      const partial: string[] = [];
      for (let page = 1; ; page++) {
        const listed = (await (await fetch(`${base}/api/v1/acls?customer=${CUSTOMER}&page=${page}&results_per_page=100`, { headers: aclWriter })).json()) as { data: { id: string; users: unknown; locks: unknown }[] };
        // Acknowledged or cut off, an ACL is there whole or not at all.
        for (const acl of listed.data) {
          const sent = aclsSent.get(acl.id);
          if (!sent || !isDeepStrictEqual(acl.users, sent.users) || !isDeepStrictEqual(acl.locks, sent.locks)) partial.push(JSON.stringify(acl));
        }
        if (listed.data.length < 100) break;
      }
      const ready = await fetch(`${base}/readyz`);

      const { polls, acls, okmPuts, okmPatches } = counts();
      const figures = `polls ${polls}, ACLs ${acls}, OKM PUTs ${okmPuts}, OKM PATCHes ${okmPatches}; requests cut off by the kill ${cutOff}`;
      context.diagnostic(`acknowledged writes checked after the restart: ${total()} (${figures})`);
      console.log(`crash [${kind}]: ${figures}`);
      assert.equal(ready.status, 200);
      assert.deepEqual(refusedBeforeKill, []);
      assert.ok(minimumsMet(), figures);
      assert.ok(cutOff > 0, 'the kill came while requests were in flight');
      assert.deepEqual(missing, []);
      assert.deepEqual(partial, []);
    } finally {
      await server?.stop();
      await store.close();
    }
  });
});
