import { randomUUID } from 'node:crypto';
import { createApiKey, revokeApiKey } from '../../src/dlock/api-keys.ts';
import { createIntermediate } from '../../src/pki/intermediates.ts';
import type { TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';
import { aclUser } from '../acl/helpers.ts';
import { call } from '../okm/admin-helpers.ts';
import { type Operation, operationName } from './openapi-operations.ts';

export const ENROLMENT_CODE = '00112233445566778899aabbccddeeff';
/** The release the world's catalog holds, and its rollouts roll out. */
const WORLD_FIRMWARE = { kind: 'kas', version: '9.9.9' };
export const CUSTOMER_SCOPES = ['acl:read', 'acl:create', 'acl:delete', 'okm:read', 'okm:write', 'lock:read'];

/** One customer and what it holds: an OKM, an ACL linked to it, a lock enrolled with its API key, its certificate, a webhook endpoint. */
export interface Tenant {
  name: string;
  /** Every customer scope (not admin). */
  token: string;
  apiKey: string;
  okmSerial: string;
  aclId: string;
  lockSerial: string;
  certificateName: string;
  webhookEndpointId: string;
  /** A ready rollout of the customer's OKMs (id as text, as a path parameter). */
  rolloutId: string;
}

export interface TenantWorld {
  a: Tenant;
  b: Tenant;
  adminToken: string;
  /** A key of customer B, revoked. */
  revokedApiKey: string;
  /** An OKM that polled with an installer code and that no customer holds. */
  unassignedSerial: string;
  firmware: { kind: string; version: string };
}

function expectStatus(response: { statusCode: number; body: string }, expected: number, what: string): void {
  if (response.statusCode !== expected) throw new Error(`${what}: ${response.statusCode} ${response.body}`);
}

async function createTenant(t: TestApp, adminToken: string, name: string): Promise<Omit<Tenant, 'rolloutId'>> {
  const token = await issueTestToken(t, { customer: name, scopes: CUSTOMER_SCOPES });
  const certificateName = `${name}-main`;
  await createIntermediate(t.db, t.app.keyRing, t.settings, { customer: name, name: certificateName });
  const apiKey = (await createApiKey(t.db, { customer: name })).key;
  const okmSerial = `${name.toUpperCase()}-OKM-1`;
  expectStatus(await call(t, 'PUT', `/api/v1/okms/${okmSerial}?customer=${name}`, { token: adminToken, payload: { polling_interval: 60 } }), 201, `OKM of ${name}`);
  expectStatus(await call(t, 'POST', `/api/v1/okms/${okmSerial}/messages`, { token, payload: { type: 'note', payload: { of: name } } }), 201, `message of ${name}`);
  expectStatus(await call(t, 'POST', `/api/v1/audit/${okmSerial}`, { payload: { event: 'open', of: name } }), 201, `audit record of ${name}`);
  const aclId = randomUUID();
  const acl = { id: aclId, customer: name, users: [aclUser(1, [1])], locks: ['DOOR-1'], user_data: { of: name }, okm_id: okmSerial };
  expectStatus(await call(t, 'POST', '/api/v1/acls', { token, payload: acl }), 201, `ACL of ${name}`);
  const lockSerial = `${name.toUpperCase()}-LOCK-1`;
  const lock = { serial_no: lockSerial, type: 'padlock', certificate: certificateName, enrolment_code: ENROLMENT_CODE, base64: false };
  expectStatus(await call(t, 'POST', '/v1/dlock', { token: apiKey, payload: lock }), 200, `lock of ${name}`);
  const endpoint = await call(t, 'POST', '/api/v1/webhook-endpoints', { token, payload: { url: `https://hooks.example/${name}`, event_types: ['okm.overdue'] } });
  expectStatus(endpoint, 201, `webhook endpoint of ${name}`);
  const webhookEndpointId = String(endpoint.json().data.id);
  return { name, token, apiKey, okmSerial, aclId, lockSerial, certificateName, webhookEndpointId };
}

/** Customers A (`rel-a`) and B (`rel-b`) with their resources, an operator token, a revoked key, an unassigned OKM and a firmware release. */
export async function buildTenantWorld(t: TestApp): Promise<TenantWorld> {
  const adminToken = await issueTestToken(t, { scopes: ['admin'] });
  const a = await createTenant(t, adminToken, 'rel-a');
  const b = await createTenant(t, adminToken, 'rel-b');
  const revoked = await createApiKey(t.db, { customer: b.name });
  await revokeApiKey(t.db, revoked.id);
  const unassignedSerial = 'REL-UNASSIGNED-1';
  expectStatus(await call(t, 'GET', `${t.settings.configPath}/${unassignedSerial}?installCode=12345678`), 204, 'unassigned OKM');
  const firmware = WORLD_FIRMWARE;
  const image = { token: adminToken, payload: Buffer.alloc(4096, 7), headers: { 'content-type': 'application/octet-stream' } };
  expectStatus(await call(t, 'PUT', `/api/v1/firmware/${firmware.kind}/${firmware.version}`, image), 201, 'firmware file release');
  // A's rollout stays ready (a start by B would show in A's snapshot); B's is aborted, so that
  // B may create another one of its OKM.
  const rolloutOf = async (tenant: Omit<Tenant, 'rolloutId'>): Promise<Tenant> => {
    const created = await call(t, 'POST', '/api/v1/rollouts', { token: adminToken, payload: rolloutBody(firmware, tenant.name) });
    expectStatus(created, 201, `rollout of ${tenant.name}`);
    return { ...tenant, rolloutId: String((JSON.parse(created.body) as { data: { id: number } }).data.id) };
  };
  const [rolloutsOfA, rolloutsOfB] = [await rolloutOf(a), await rolloutOf(b)];
  expectStatus(await call(t, 'POST', `/api/v1/rollouts/${rolloutsOfB.rolloutId}/abort`, { token: adminToken }), 200, 'abort of the rollout of B');
  return { a: rolloutsOfA, b: rolloutsOfB, adminToken, revokedApiKey: revoked.key, unassignedSerial, firmware };
}

const rolloutBody = (firmware: { kind: string; version: string }, customer: string) => ({ ...firmware, customer, groups: [{ percent: 100 }] });

/** Values for an operation's path parameters that name the tenant's resources. */
export function identifiersOf(operation: Operation, tenant: Tenant, world: TenantWorld): Record<string, string> {
  return {
    serial: operation.path.startsWith('/v1/dlock') ? tenant.lockSerial : tenant.okmSerial,
    serialNumber: tenant.okmSerial,
    name: tenant.certificateName,
    id: operation.path.startsWith('/api/v1/webhook-endpoints')
      ? tenant.webhookEndpointId
      : operation.path.startsWith('/api/v1/rollouts')
        ? tenant.rolloutId
        : tenant.aclId,
    kind: world.firmware.kind,
    version: world.firmware.version,
    // The user of the tenant's ACL; a delivery id none of the tenants' endpoints has, so that its routes answer after their checks.
    user_id: '1',
    delivery_id: '1',
  };
}

/**
 * A valid request body for an operation, naming `owner`'s resources (an ACL of owner, a lock
 * on owner's certificate...), or undefined for an operation without a body.
 */
export function sampleBody(operation: Operation, owner: Tenant): { payload: string | Buffer; contentType: string } | undefined {
  const json = (value: unknown) => ({ payload: JSON.stringify(value), contentType: 'application/json' });
  const acl = { customer: owner.name, users: [aclUser(2, [17])], locks: ['DOOR-2'], okm_id: owner.okmSerial };
  const samples: Record<string, () => { payload: string | Buffer; contentType: string }> = {
    'POST /v1/dlock': () => json({ serial_no: `REL-LOCK-${randomUUID().slice(0, 8)}`, type: 'padlock', certificate: owner.certificateName, enrolment_code: ENROLMENT_CODE, base64: false }),
    'POST /api/v1/acls': () => json({ ...acl, id: owner.aclId }),
    'PUT /api/v1/acls/{id}': () => json(acl),
    'PUT /api/v1/okms/{serial}': () => json({ polling_interval: 90 }),
    'PATCH /api/v1/okms/{serial}': () => json({ polling_interval: 91 }),
    'PUT /api/v1/okms/{serial}/customer': () => json({ customer: owner.name }),
    'POST /api/v1/okms/{serial}/messages': () => json({ type: 'intruder', payload: { by: owner.name } }),
    'POST /api/v1/okms/{serial}/claim': () => json({ install_code: '12345678' }),
    'POST /api/v1/pending-okms/{serial}/accept': () => json({ customer: owner.name }),
    'POST /api/v1/audit/{serialNumber}': () => json({ event: 'close' }),
    'POST /api/v1/webhook-endpoints': () => json({ url: 'https://hooks.example/fleet', event_types: ['okm.overdue'] }),
    'PATCH /api/v1/webhook-endpoints/{id}': () => json({ url: 'https://hooks.example/fleet-moved', event_types: ['okm.back_online'] }),
    'POST /api/v1/firmware': () => json({ kind: 'kas', version: '9.9.10', url: 'https://firmware.example/kas.bin', sha256: 'cd'.repeat(32) }),
    'PUT /api/v1/firmware/{kind}/latest': () => json({ version: '9.9.9' }),
    'PUT /api/v1/firmware/{kind}/{version}': () => ({ payload: Buffer.from('firmware image'), contentType: 'application/octet-stream' }),
    'POST /api/v1/rollouts': () => json(rolloutBody(WORLD_FIRMWARE, owner.name)),
    'POST /api/v1/rollouts/preview': () => json(rolloutBody(WORLD_FIRMWARE, owner.name)),
    'PATCH /api/v1/rollouts/{id}': () => json({ error_threshold: 40 }),
    'POST /api/v1/okm-bulk-actions/preview': () => json({ filter: { customer: owner.name }, action: { type: 'configure', settings: { polling_interval: 92 } } }),
    'POST /api/v1/okm-bulk-actions': () => json({ filter: { customer: owner.name }, action: { type: 'configure', settings: { polling_interval: 92 } } }),
    'POST /api/v1/acl-users/{user_id}/removal': () => json({}),
  };
  const sample = samples[operationName(operation)];
  if (sample) return sample();
  const mediaType = Object.keys(operation.requestBody)[0];
  return mediaType === undefined ? undefined : { payload: mediaType.includes('json') ? '{}' : '', contentType: mediaType };
}

/**
 * Everything of customer A the API shows (as an operator and with A's own credentials), to
 * compare before and after another customer's requests.
 */
export async function snapshotOf(t: TestApp, world: TenantWorld, tenant: Tenant): Promise<string> {
  const admin = { token: world.adminToken };
  const own = { token: tenant.apiKey };
  const reads = await Promise.all([
    call(t, 'GET', `/api/v1/okms/${tenant.okmSerial}`, admin),
    call(t, 'GET', `/api/v1/okms/${tenant.okmSerial}/messages`, admin),
    call(t, 'GET', `/api/v1/okms/${tenant.okmSerial}/audit`, admin),
    call(t, 'GET', `/api/v1/okms/${world.unassignedSerial}`, admin),
    call(t, 'GET', `/api/v1/acls/${tenant.aclId}?customer=${tenant.name}`, admin),
    call(t, 'GET', `/api/v1/acls?customer=${tenant.name}`, admin),
    call(t, 'GET', `/v1/dlock/${tenant.lockSerial}`, own),
    call(t, 'GET', `/v1/certificates/${tenant.certificateName}`, own),
    call(t, 'GET', '/api/v1/firmware', admin),
    call(t, 'GET', `/api/v1/webhook-endpoints?customer=${tenant.name}`, admin),
    call(t, 'GET', `/api/v1/webhook-endpoints/${tenant.webhookEndpointId}/deliveries`, admin),
    call(t, 'GET', `/api/v1/rollouts/${tenant.rolloutId}`, admin),
  ]);
  return JSON.stringify(reads.map((response) => [response.statusCode, response.body]));
}
