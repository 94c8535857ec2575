import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { AuditAction } from '../../src/audit/actions.ts';
import { signDueCheckpoints } from '../../src/audit/checkpoints.ts';
import { loadActiveSigningKey } from '../../src/auth/signing-keys.ts';
import { sessionHandle, sessionIdOf } from '../../src/auth/sessions.ts';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { REQUEST_ID_HEADER } from '../../src/http/request-log.ts';
import { UNCONFIGURED_OKM } from '../../src/okm/model.ts';
import { recordPendingCall } from '../../src/okm/pending-repository.ts';
import { insertOkm } from '../../src/okm/repository.ts';
import { createIntermediate } from '../../src/pki/intermediates.ts';
import { shipAuditEntries } from '../../src/webhooks/audit-events.ts';
import { forEachDatabase, type TestApp } from '../helpers/app.ts';
import { assertAuditChainIntact, auditEntriesAfter, lastAuditId, withFailureAfterEachAuditEntry } from '../helpers/audit.ts';
import { databaseDigest, digestDifferences, type DigestExclusion } from '../helpers/audit-rollback.ts';
import type { ProviderPerson } from '../helpers/openid-provider.ts';
import { SignInClient } from '../helpers/sign-in-client.ts';
import { appWithSingleSignOn, type SingleSignOnWorld } from '../helpers/single-sign-on.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';
import { aclUser, sampleAcl } from '../acl/helpers.ts';
import { addRelease } from '../device/config-helpers.ts';

/**
 * contract §18, "every change made through any interface appends one entry, in the same
 * transaction as the change", checked route by route: the write operations are read from the
 * app's own OpenAPI document, and each has a scenario here (what it must append, then that a
 * failure of its entry leaves the whole database as it was) or an exemption saying why it
 * changes nothing the trail covers. A write route added without either fails the first test.
 */

/** The methods of an operation that may change something. The routes that only answer 405 are not operations (the document lists them under x-methods-not-allowed, outside its paths). */
const WRITE_METHODS = new Set(['post', 'put', 'patch', 'delete']);

/** Operations that change something but are kept out of the document (browser pages): listed by hand, their routes checked. */
const OUTSIDE_THE_DOCUMENT = [{ operationId: 'completeSignIn', method: 'GET' as const, url: '/auth/oidc/callback' }];

/**
 * What a digest leaves out: rows a request writes before its change's transaction, whatever becomes of the change.
 * Nothing else: the digest also covers the audit tables that the server's background steps write (checkpoints, the
 * audit.entry cursor), which each scenario brings up to date before its digest (settle).
 */
const WRITTEN_OUTSIDE_THE_CHANGE: DigestExclusion[] = [
  { table: 'api_keys', columns: ['last_used_at'], why: 'written when a DLock API key is checked (at most once a minute), before the route runs: usage bookkeeping, not a change' },
  {
    table: 'sign_in_attempts',
    why: 'the sign-in callback deletes its attempt before it signs the person in, in a statement of its own: a state is used once, also by a sign-in that fails',
  },
  {
    table: 'people',
    why: 'the callback records the person the provider vouched for (made at the first sign-in, email, name and time at each) before the grant is decided, for a refused sign-in too: who tried, not a change of access; the change is the session it starts',
  },
];

const PEOPLE: ProviderPerson[] = [
  { sub: 'alice', email: 'alice@example.com', name: 'Alice Admin', groups: ['kf-admins'] },
  { sub: 'bob', email: 'bob@example.com', name: 'Bob Viewer', groups: ['kf-acme-viewers'] },
  { sub: 'dave', email: 'dave@example.com', name: 'Dave Leaving', groups: ['kf-acme-viewers'] },
];

const INSTALL_CODE = '12345678';
const ENROLMENT_CODE = '00112233445566778899aabbccddeeff';

interface Answer {
  status: number;
  requestId: string | null;
  body: string;
}

/** The one request a scenario is about. */
type Call = () => Promise<Answer>;

interface Scenario {
  /** Makes what the call needs, fresh each time (the failure check runs it again), and gives the call. */
  setup: () => Promise<Call>;
  /** The actions the call appends, in order. */
  actions: AuditAction[];
  actor: 'token' | 'person' | 'api_key';
  /** The answer of a call that succeeds, when not a 2xx (the sign-in callback redirects). */
  status?: number;
}

type Operation = Scenario | { exempt: string };

interface World {
  sso: SingleSignOnWorld;
  t: TestApp;
  base: string;
  admin: string;
  acmeOkm: string;
  acmeAcl: string;
  rolloutWriter: string;
  rolloutApprover: string;
  apiKey: string;
  acmeId: number;
}

let unique = 0;
const next = (prefix: string) => `${prefix}-${process.pid}-${++unique}`;

/** The operations that change something, by operationId: a scenario each, or why none is needed. */
function operations(w: World): Record<string, Operation> {
  const request = async (method: string, path: string, options: { token?: string; client?: SignInClient; csrf?: string; json?: unknown; bytes?: Buffer } = {}): Promise<Answer> => {
    const headers: Record<string, string> = { 'user-agent': 'every-change-test/1.0' };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.csrf) headers['x-csrf-token'] = options.csrf;
    let body: string | Uint8Array<ArrayBuffer> | undefined;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.bytes !== undefined) {
      headers['content-type'] = 'application/octet-stream';
      body = new Uint8Array(options.bytes);
    }
    const url = `${w.base}${path}`;
    const init = { method, headers, ...(body === undefined ? {} : { body }) };
    const response = options.client ? await options.client.request(url, init as { method: string; headers: Record<string, string>; body?: string }) : await fetch(url, init);
    return { status: response.status, requestId: response.headers.get(REQUEST_ID_HEADER), body: await response.text() };
  };
  const ok = (answer: Answer, what: string) => {
    assert.ok(answer.status >= 200 && answer.status < 300, `${what}: ${answer.status} ${answer.body}`);
    return answer.body === '' ? undefined : (JSON.parse(answer.body) as { data: Record<string, unknown> }).data;
  };

  /** A person signed in through the provider: their client (cookies), anti-CSRF token and id. */
  const signedIn = async (login: string) => {
    const client = new SignInClient();
    const { response, url } = await client.signIn(w.base, login);
    assert.equal(response.status, 200, `${login}: ${url}`);
    const me = await client.request(`${w.base}/api/v1/me`);
    assert.equal(me.status, 200);
    const { actor } = ((await me.json()) as { data: { actor: { id: string } } }).data;
    return { client, csrf: me.headers.get('x-csrf-token')!, personId: actor.id, handle: sessionHandle(sessionIdOf(client.cookie(w.base, 'keyfleet_session')!)) };
  };

  /** Follows a sign-in from its start through the provider's form, and stops at the redirect back to keyfleet's callback: its URL. */
  const signInUpToCallback = async (client: SignInClient, login: string): Promise<string> => {
    const callback = `${w.base}/auth/oidc/callback`;
    const hop = async (url: string, init: { method?: string; body?: string } = {}): Promise<{ response: Response; url: string } | { callbackUrl: string }> => {
      let current = url;
      let response = await client.request(current, init);
      while (response.status >= 300 && response.status < 400) {
        current = new URL(response.headers.get('location')!, current).toString();
        if (current.startsWith(callback)) return { callbackUrl: current };
        response = await client.request(current);
      }
      return { response, url: current };
    };
    const atForm = await hop(`${w.base}/auth/oidc/login`);
    assert.ok('response' in atForm && atForm.url.includes('/interaction/'), 'the provider shows its sign-in form');
    const action = /action="([^"]+)"/.exec(await atForm.response.text())![1]!;
    const back = await hop(new URL(action, atForm.url).toString(), { method: 'POST', body: new URLSearchParams({ login }).toString() });
    assert.ok('callbackUrl' in back, 'the provider sends the browser back to keyfleet');
    return back.callbackUrl;
  };

  const okmOfAcme = async () => {
    const serial = next('EVERY');
    ok(await request('PUT', `/api/v1/okms/${serial}?customer=acme`, { token: w.admin, json: {} }), 'PUT okm');
    return serial;
  };
  /** An OKM that polled with its installer code and that no customer holds. */
  const enrolledOkm = async () => {
    const serial = next('EVERY');
    const poll = await w.t.app.inject({ method: 'GET', url: `${w.t.settings.configPath}/${serial}?installCode=${INSTALL_CODE}` });
    assert.equal(poll.statusCode, 204);
    return serial;
  };
  const enrolment = (serial: string) => ({ serial_no: serial, type: 'padlock', certificate: 'acme-main', enrolment_code: ENROLMENT_CODE, base64: false });
  const urlRelease = async (kind: string) => {
    const version = `7.${++unique}`;
    ok(await request('POST', '/api/v1/firmware', { token: w.admin, json: { kind, version, url: `https://firmware.example/${kind}/${version}.bin`, sha256: 'ab'.repeat(32) } }), 'POST firmware');
    return version;
  };
  const webhookEndpoint = async () => ok(await request('POST', '/api/v1/webhook-endpoints', { token: w.acmeOkm, json: { url: `https://hooks.example/${next('hook')}`, event_types: ['okm.overdue'] } }), 'POST endpoint')!.id as number;
  const acl = () => ({ ...sampleAcl('acme'), users: [aclUser(1234, [1, 0, 1])] });
  const createdAcl = async () => {
    const body = acl();
    ok(await request('POST', '/api/v1/acls', { token: w.acmeAcl, json: body }), 'POST acl');
    return body;
  };
  /** A rollout of acme's kas to 2.0 over two fresh OKMs, taken through the actions given. */
  const rollout = async (options: { groups?: number[]; approval?: boolean } = {}, ...actions: string[]) => {
    const serials = [next('ROLL'), next('ROLL')];
    for (const serial of serials) await insertOkm(w.t.db, serial, w.acmeId, UNCONFIGURED_OKM, Date.now());
    const body = { kind: 'kas', version: '2.0', groups: (options.groups ?? [100]).map((percent) => ({ percent })), approval_required: options.approval ?? false, filter: { serial_numbers: serials } };
    const id = ok(await request('POST', '/api/v1/rollouts', { token: w.rolloutWriter, json: body }), 'POST rollout')!.id as number;
    for (const action of actions) ok(await request('POST', `/api/v1/rollouts/${id}/${action}`, { token: w.rolloutWriter }), action);
    return { id, body };
  };
  const rolloutAction = (action: string, actions: string[], options: { groups?: number[]; approval?: boolean } = {}, token = () => w.rolloutWriter) => async (): Promise<Call> => {
    const { id } = await rollout(options, ...actions);
    return () => request('POST', `/api/v1/rollouts/${id}/${action}`, { token: token() });
  };

  return {
    completeSignIn: {
      actions: ['session.started'],
      actor: 'person',
      status: 302,
      setup: async () => {
        const client = new SignInClient();
        const callbackUrl = await signInUpToCallback(client, 'alice');
        return async () => {
          const response = await client.request(callbackUrl);
          return { status: response.status, requestId: response.headers.get(REQUEST_ID_HEADER), body: await response.text() };
        };
      },
    },
    signOut: {
      actions: ['session.ended'],
      actor: 'person',
      setup: async () => {
        const { client, csrf } = await signedIn('alice');
        return () => request('POST', '/auth/logout', { client, csrf });
      },
    },
    createRoleBinding: {
      actions: ['role_binding.created'],
      actor: 'token',
      setup: async () => () => request('POST', '/api/v1/role-bindings', { token: w.admin, json: { kind: 'group', value: next('group'), role: 'viewer' } }),
    },
    deleteRoleBinding: {
      actions: ['role_binding.deleted'],
      actor: 'token',
      setup: async () => {
        const { id } = ok(await request('POST', '/api/v1/role-bindings', { token: w.admin, json: { kind: 'group', value: next('group'), role: 'viewer' } }), 'bind')!;
        return () => request('DELETE', `/api/v1/role-bindings/${id as string}`, { token: w.admin });
      },
    },
    revokeSession: {
      actions: ['session.revoked'],
      actor: 'token',
      setup: async () => {
        const { handle } = await signedIn('bob');
        return () => request('DELETE', `/api/v1/sessions/${handle}`, { token: w.admin });
      },
    },
    revokePersonSessions: {
      // Dave's only session: the scenario (run first) leaves none, and its setup makes one.
      actions: ['session.revoked'],
      actor: 'token',
      setup: async () => {
        const { personId } = await signedIn('dave');
        return () => request('DELETE', `/api/v1/people/${personId}/sessions`, { token: w.admin });
      },
    },
    revokeToken: {
      actions: ['token.revoked'],
      actor: 'token',
      setup: async () => {
        const token = await issueTestToken(w.t, { customer: 'acme', scopes: ['okm:read'] });
        const { jti } = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { jti: string };
        return () => request('DELETE', `/api/v1/tokens/${jti}`, { token: w.admin });
      },
    },
    enrolDlock: {
      actions: ['dlock.enrolled'],
      actor: 'api_key',
      setup: async () => {
        const serial = next('LOCK');
        return () => request('POST', '/v1/dlock', { token: w.apiKey, json: enrolment(serial) });
      },
    },
    deleteDlock: {
      actions: ['dlock.deleted'],
      actor: 'api_key',
      setup: async () => {
        const serial = next('LOCK');
        ok(await request('POST', '/v1/dlock', { token: w.apiKey, json: enrolment(serial) }), 'enrol');
        return () => request('DELETE', `/v1/dlock/${serial}`, { token: w.apiKey });
      },
    },
    sendAuditRecords: { exempt: "an OKM's own audit records (what happened at its locks), which contract §18 exempts like its polls: a device reporting, not a change made through an interface" },
    putOkm: {
      actions: ['okm.configured'],
      actor: 'token',
      setup: async () => {
        const serial = next('EVERY');
        return () => request('PUT', `/api/v1/okms/${serial}?customer=acme`, { token: w.admin, json: { polling_interval: 30 } });
      },
    },
    updateOkm: {
      actions: ['okm.configured'],
      actor: 'token',
      setup: async () => {
        const serial = await okmOfAcme();
        return () => request('PATCH', `/api/v1/okms/${serial}`, { token: w.acmeOkm, json: { polling_interval: 60 } });
      },
    },
    deleteOkm: {
      actions: ['okm.deleted'],
      actor: 'token',
      setup: async () => {
        const serial = await okmOfAcme();
        return () => request('DELETE', `/api/v1/okms/${serial}`, { token: w.acmeOkm });
      },
    },
    assignOkmCustomer: {
      actions: ['okm.assigned'],
      actor: 'token',
      setup: async () => {
        const serial = await enrolledOkm();
        return () => request('PUT', `/api/v1/okms/${serial}/customer`, { token: w.admin, json: { customer: 'acme' } });
      },
    },
    claimOkm: {
      actions: ['okm.claimed'],
      actor: 'token',
      setup: async () => {
        const serial = await enrolledOkm();
        return () => request('POST', `/api/v1/okms/${serial}/claim`, { token: w.acmeOkm, json: { install_code: INSTALL_CODE } });
      },
    },
    queueOkmMessage: {
      actions: ['okm.message_queued'],
      actor: 'token',
      setup: async () => {
        const serial = await okmOfAcme();
        return () => request('POST', `/api/v1/okms/${serial}/messages`, { token: w.acmeOkm, json: { type: 'open-door', payload: { door: 2 } } });
      },
    },
    issueDeviceToken: {
      actions: ['okm.device_token_issued'],
      actor: 'token',
      setup: async () => {
        const serial = await okmOfAcme();
        return () => request('POST', `/api/v1/okms/${serial}/device-token`, { token: w.admin });
      },
    },
    acceptPendingOkm: {
      actions: ['okm.accepted'],
      actor: 'token',
      setup: async () => {
        const serial = next('PENDING');
        await recordPendingCall(w.t.db, serial, { now: Date.now(), ip: '203.0.113.9', firmwareVersion: '2.1.0' });
        return () => request('POST', `/api/v1/pending-okms/${serial}/accept`, { token: w.admin, json: { customer: 'acme' } });
      },
    },
    createWebhookEndpoint: {
      actions: ['webhook_endpoint.created'],
      actor: 'token',
      setup: async () => () => request('POST', '/api/v1/webhook-endpoints', { token: w.acmeOkm, json: { url: `https://hooks.example/${next('hook')}`, event_types: ['okm.overdue'] } }),
    },
    updateWebhookEndpoint: {
      actions: ['webhook_endpoint.updated'],
      actor: 'token',
      setup: async () => {
        const id = await webhookEndpoint();
        return () => request('PATCH', `/api/v1/webhook-endpoints/${id}`, { token: w.acmeOkm, json: { event_types: ['okm.overdue', 'okm.back_online'] } });
      },
    },
    deleteWebhookEndpoint: {
      actions: ['webhook_endpoint.deleted'],
      actor: 'token',
      setup: async () => {
        const id = await webhookEndpoint();
        return () => request('DELETE', `/api/v1/webhook-endpoints/${id}`, { token: w.acmeOkm });
      },
    },
    redeliverWebhookEndpointDelivery: {
      actions: ['webhook_delivery.redelivered'],
      actor: 'token',
      setup: async () => {
        const id = await webhookEndpoint();
        const body = { id: `msg_${next('redeliver')}`, type: 'okm.overdue', timestamp: new Date().toISOString(), data: { serial_number: 'OKM-1' } };
        const now = Date.now();
        const failed = await w.t.db
          .insertInto('fleet_event_deliveries')
          .values({ endpoint_id: id, customer_id: w.acmeId, url: 'https://hooks.example/', host: 'hooks.example', event_id: body.id, event_type: body.type, payload: JSON.stringify(body), state: 'failed', attempts: 4, next_attempt_at: now, created_at: now, last_attempt_at: now, last_status_code: 500, last_error: 'HTTP 500' })
          .returning('id')
          .executeTakeFirstOrThrow();
        return () => request('POST', `/api/v1/webhook-endpoints/${id}/deliveries/${failed.id}/redeliver`, { token: w.acmeOkm });
      },
    },
    sendWebhookEndpointTestEvent: { exempt: 'queues a test delivery to the endpoint: delivery bookkeeping, no configuration changes' },
    addFirmwareUrl: {
      actions: ['firmware.added'],
      actor: 'token',
      setup: async () => {
        const version = `8.${++unique}`;
        return () => request('POST', '/api/v1/firmware', { token: w.admin, json: { kind: 'kas', version, url: `https://firmware.example/kas/${version}.bin`, sha256: 'cd'.repeat(32) } });
      },
    },
    setLatestFirmware: {
      actions: ['firmware.latest_set'],
      actor: 'token',
      setup: async () => {
        const version = await urlRelease('wireless_key');
        return () => request('PUT', '/api/v1/firmware/wireless_key/latest', { token: w.admin, json: { version } });
      },
    },
    uploadFirmware: {
      actions: ['firmware.added'],
      actor: 'token',
      setup: async () => {
        const version = `9.${++unique}`;
        return () => request('PUT', `/api/v1/firmware/batch_key/${version}`, { token: w.admin, bytes: Buffer.from(`batch key firmware ${version}`) });
      },
    },
    deleteFirmware: {
      actions: ['firmware.deleted'],
      actor: 'token',
      setup: async () => {
        const version = await urlRelease('batch_key');
        return () => request('DELETE', `/api/v1/firmware/batch_key/${version}`, { token: w.admin });
      },
    },
    createAcl: {
      actions: ['acl.created'],
      actor: 'token',
      setup: async () => {
        const body = acl();
        return () => request('POST', '/api/v1/acls', { token: w.acmeAcl, json: body });
      },
    },
    replaceAcl: {
      actions: ['acl.updated'],
      actor: 'token',
      setup: async () => {
        const body = await createdAcl();
        return () => request('PUT', `/api/v1/acls/${body.id}`, { token: w.acmeAcl, json: { ...body, users: [aclUser(1234, [1, 1, 1])] } });
      },
    },
    deleteAcl: {
      actions: ['acl.deleted'],
      actor: 'token',
      setup: async () => {
        const body = await createdAcl();
        return () => request('DELETE', `/api/v1/acls/${body.id}`, { token: w.acmeAcl });
      },
    },
    removeAclUser: {
      actions: ['acl.updated', 'acl.updated'],
      actor: 'token',
      setup: async () => {
        const leaving = 900_000_000 + (process.pid % 1000) * 1000 + ++unique;
        const ids: string[] = [];
        for (let index = 0; index < 2; index += 1) {
          const body = { ...sampleAcl('acme'), users: [aclUser(1234, [1, 0, 1]), aclUser(leaving, [0, 1, 1])] };
          ok(await request('POST', '/api/v1/acls', { token: w.acmeAcl, json: body }), 'POST acl');
          ids.push(body.id);
        }
        return () => request('POST', `/api/v1/acl-users/${leaving}/removal?customer=acme`, { token: w.acmeAcl, json: { acl_ids: ids } });
      },
    },
    applyOkmBulkAction: {
      actions: ['okm.configured', 'okm.configured'],
      actor: 'token',
      setup: async () => {
        const prefix = next('BULK');
        for (const serial of [`${prefix}.1`, `${prefix}.2`]) ok(await request('PUT', `/api/v1/okms/${serial}?customer=acme`, { token: w.admin, json: {} }), 'PUT okm');
        return () => request('POST', '/api/v1/okm-bulk-actions', { token: w.acmeOkm, json: { filter: { serial_prefix: prefix }, action: { type: 'configure', settings: { polling_interval: 45 } } } });
      },
    },
    previewOkmBulkAction: { exempt: 'says which OKMs a bulk action would change: changes nothing' },
    createRollout: {
      actions: ['rollout.created'],
      actor: 'token',
      setup: async () => {
        const serials = [next('ROLL'), next('ROLL')];
        for (const serial of serials) await insertOkm(w.t.db, serial, w.acmeId, UNCONFIGURED_OKM, Date.now());
        return () => request('POST', '/api/v1/rollouts', { token: w.rolloutWriter, json: { kind: 'kas', version: '2.0', groups: [{ percent: 100 }], filter: { serial_numbers: serials } } });
      },
    },
    startRollout: { actions: ['rollout.started'], actor: 'token', setup: rolloutAction('start', []) },
    pauseRollout: { actions: ['rollout.paused'], actor: 'token', setup: rolloutAction('pause', ['start']) },
    resumeRollout: { actions: ['rollout.resumed'], actor: 'token', setup: rolloutAction('resume', ['start', 'pause']) },
    advanceRollout: { actions: ['rollout.advanced'], actor: 'token', setup: rolloutAction('advance', ['start'], { groups: [50, 100] }) },
    abortRollout: { actions: ['rollout.aborted'], actor: 'token', setup: rolloutAction('abort', ['start']) },
    approveRollout: { actions: ['rollout.approved'], actor: 'token', setup: rolloutAction('approve', [], { approval: true }, () => w.rolloutApprover) },
    updateRollout: {
      actions: ['rollout.updated'],
      actor: 'token',
      setup: async () => {
        const { id } = await rollout({}, 'start', 'pause');
        return () => request('PATCH', `/api/v1/rollouts/${id}`, { token: w.rolloutWriter, json: { error_threshold: 40 } });
      },
    },
    ...Object.fromEntries(
      (['retry', 'exclude'] as const).map((path) => [
        `${path}RolloutOkms`,
        {
          actions: [path === 'retry' ? 'rollout.members_retried' : 'rollout.members_excluded'],
          actor: 'token',
          setup: async (): Promise<Call> => {
            const { id } = await rollout({}, 'start', 'pause');
            // Members the sweep would have failed: the sweep is off here.
            await w.t.db.updateTable('rollout_members').set({ status: 'failed', status_changed_at: Date.now() }).where('rollout_id', '=', id).execute();
            return () => request('POST', `/api/v1/rollouts/${id}/okms/${path}`, { token: w.rolloutWriter, json: {} });
          },
        },
      ]),
    ),
    previewRollout: { exempt: 'computes which OKMs a rollout would take: changes nothing' },
  };
}

forEachDatabase('every write route appends its entries, in the transaction of its change', (kind) => {
  const w = {} as World;
  const table = operations(w);

  before(async () => {
    // No timer writes the database while a scenario takes its digests: webhook deliveries, the rollout sweep and
    // the fleet pass are off (the audit upkeep and shipping are brought up to date by settle()).
    const sso = await appWithSingleSignOn(kind, PEOPLE, { env: { WEBHOOK_DISPATCH_IN_SERVER: 'false', ROLLOUT_SWEEP_INTERVAL_MS: '0' } });
    const { t, base } = sso;
    const acme = await createTestCustomer(t, 'acme');
    const admin = await issueTestToken(t, { scopes: ['admin'], subject: 'every-change-admin' });
    for (const binding of [
      { kind: 'group', value: 'kf-admins', role: 'admin' },
      { kind: 'group', value: 'kf-acme-viewers', role: 'viewer', customer: 'acme' },
    ]) {
      const response = await t.app.inject({ method: 'POST', url: '/api/v1/role-bindings', headers: { authorization: `Bearer ${admin}` }, payload: binding });
      assert.equal(response.statusCode, 201, response.body);
    }
    await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: 'acme', name: 'acme-main' });
    await addRelease(t.db, 'kas', '2.0');
    Object.assign(w, {
      sso,
      t,
      base,
      admin,
      acmeId: acme.id,
      acmeOkm: await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write'] }),
      acmeAcl: await issueTestToken(t, { customer: 'acme', scopes: ['acl:read', 'acl:create', 'acl:delete'] }),
      rolloutWriter: await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'rollout:write'], subject: 'writer' }),
      rolloutApprover: await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'rollout:approve'], subject: 'approver' }),
      apiKey: (await createApiKey(t.db, { customer: 'acme' })).key,
    } satisfies World);
  });
  after(() => w.sso?.close());

  /** Brings what the server's background steps write from the trail up to date (audit.entry shipping, checkpoints due), so that no step writes during a digest. */
  async function settle(): Promise<void> {
    await shipAuditEntries(w.t.db);
    await signDueCheckpoints(w.t.db, () => loadActiveSigningKey(w.t.db, w.t.app.keyRing));
  }

  test('every operation of the document that writes (POST, PUT, PATCH, DELETE), and the sign-in callback, has a scenario or an exemption; every one of the table still exists', async () => {
    const document = (await w.t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { operationId?: string }>> };
    const writes = new Map<string, string>();
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        if (!WRITE_METHODS.has(method)) continue;
        assert.ok(operation.operationId, `${method.toUpperCase()} ${path} has no operationId`);
        writes.set(operation.operationId, `${method.toUpperCase()} ${path}`);
      }
    }
    for (const { operationId, method, url } of OUTSIDE_THE_DOCUMENT) {
      assert.ok(w.t.app.hasRoute({ method, url }), `${operationId}: no route ${method} ${url}`);
      writes.set(operationId, `${method} ${url}`);
    }

    const uncovered = [...writes].filter(([operationId]) => !Object.hasOwn(table, operationId)).map(([operationId, route]) => `${operationId} (${route})`);
    assert.deepEqual(uncovered, [], `write operations with neither a scenario nor an exemption in test/audit/every-change-recorded.test.ts: ${uncovered.join(', ')}`);
    const gone = Object.keys(table).filter((operationId) => !writes.has(operationId));
    assert.deepEqual(gone, [], `operations of the table that the app no longer has: ${gone.join(', ')}`);
  });

  for (const [operationId, operation] of Object.entries(table)) {
    if ('exempt' in operation) continue;
    const scenario = operation;

    test(`${operationId} appends ${scenario.actions.join(', ')} by its ${scenario.actor}, with the request's id`, async () => {
      const call = await scenario.setup();
      const start = await lastAuditId(w.t.db);

      const answer = await call();

      if (scenario.status === undefined) assert.ok(answer.status >= 200 && answer.status < 300, `${operationId}: ${answer.status} ${answer.body}`);
      else assert.equal(answer.status, scenario.status, answer.body);
      assert.ok(answer.requestId, `${operationId}: the answer has no ${REQUEST_ID_HEADER}`);
      const entries = await auditEntriesAfter(w.t.db, start);
      assert.deepEqual(
        entries.map((entry) => entry.action),
        scenario.actions,
      );
      for (const entry of entries) {
        assert.equal(entry.request_id, answer.requestId, `${entry.action}: the request's id`);
        assert.equal(entry.actor.kind, scenario.actor, `${entry.action}: the actor`);
      }
    });

    test(`${operationId} whose entry fails to be written changes nothing at all: the change rolls back with its entry`, async () => {
      const call = await scenario.setup();
      const start = await lastAuditId(w.t.db);
      await settle();
      const { answer, digestBefore } = await withFailureAfterEachAuditEntry(w.t.db, kind, async () => {
        const digestBefore = await databaseDigest(w.t.db, WRITTEN_OUTSIDE_THE_CHANGE);
        return { answer: await call(), digestBefore };
      });

      assert.ok(answer.status >= 500 && answer.status < 600, `${operationId}: ${answer.status} ${answer.body}`);
      const changed = digestDifferences(digestBefore, await databaseDigest(w.t.db, WRITTEN_OUTSIDE_THE_CHANGE));
      assert.deepEqual(changed, [], `${operationId}: rows changed although the change failed:\n${changed.join('\n')}`);
      assert.deepEqual(await auditEntriesAfter(w.t.db, start), []);
    });
  }

  test('the chain is intact after every scenario', async () => {
    await assertAuditChainIntact(w.t.db);
  });
});
