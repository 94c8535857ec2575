import type { InjectOptions } from 'fastify';
import { decodeJwt } from 'jose';
import type { TestApp } from '../helpers/app.ts';
import { issueTestToken } from '../helpers/tokens.ts';

export const OKMS = '/api/v1/okms';
export const FIRMWARE = '/api/v1/firmware';

let serials = 0;
/** A serial number no other test of the run uses. */
export const uniqueSerial = (prefix = 'ADM') => `${prefix}-${process.pid}-${++serials}`;

export interface Tokens {
  admin: string;
  acmeRead: string;
  acmeWrite: string;
  betaWrite: string;
}

/** An operator token, and tokens of customers acme and beta (created on the way). */
export async function issueTokens(t: TestApp): Promise<Tokens> {
  return {
    admin: await issueTestToken(t, { scopes: ['admin'] }),
    acmeRead: await issueTestToken(t, { customer: 'acme', scopes: ['okm:read'] }),
    acmeWrite: await issueTestToken(t, { customer: 'acme', scopes: ['okm:read', 'okm:write'] }),
    betaWrite: await issueTestToken(t, { customer: 'beta', scopes: ['okm:read', 'okm:write'] }),
  };
}

export interface CallOptions {
  token?: string;
  payload?: unknown;
  headers?: Record<string, string>;
}

/** One request through the app; a payload that is not a string or Buffer is sent as JSON. */
export function call(t: TestApp, method: InjectOptions['method'], url: string, options: CallOptions = {}) {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  let payload: string | Buffer | undefined;
  if (typeof options.payload === 'string' || Buffer.isBuffer(options.payload)) payload = options.payload;
  else if (options.payload !== undefined) {
    payload = JSON.stringify(options.payload);
    headers['content-type'] ??= 'application/json';
  }
  return t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
}

/**
 * Leaves the OKM as a poll `ageMs` ago would have: its okm_polls row with that last sync time,
 * and no overdue mark (a fleet pass marks it once it is silent for three of its intervals).
 */
export async function setLastPoll(t: TestApp, serial: string, ageMs: number) {
  const polledAt = Date.now() - ageMs;
  await t.db
    .insertInto('okm_polls')
    .values({ serial_number: serial, last_sync_time: polledAt, last_ip: '127.0.0.1', reported: '{}', install_code: null, status_queued_at: null })
    .onConflict((oc) => oc.column('serial_number').doUpdateSet({ last_sync_time: polledAt }))
    .execute();
  await t.db.updateTable('okms').set({ overdue_at: null }).where('serial_number', '=', serial).execute();
}

/** Runs a fleet pass now, as the server's would: it marks the OKMs silent for three of their intervals and counts the summary. */
export async function runFleetPass(t: TestApp, now = Date.now()) {
  if (!(await t.app.fleetPass.runPass({ now: () => now }))) throw new Error('the fleet pass is held by another runner');
}

const operatorTokens = new WeakMap<TestApp, Promise<string>>();

/**
 * Creates (PUT) an OKM with the given settings; throws unless the service answers 201. With a
 * customer's token, an operator creates it for that customer (a customer token takes no new
 * OKM: contract §10), and the test goes on with the customer's token.
 */
export async function createOkm(t: TestApp, token: string, serial: string, settings: Record<string, unknown> = {}, query = '') {
  const { customer, scope } = decodeJwt(token);
  const asOperator = typeof customer === 'string' && !String(scope).split(' ').includes('admin');
  if (asOperator && !operatorTokens.has(t)) operatorTokens.set(t, issueTestToken(t, { scopes: ['admin'] }));
  const [putToken, putQuery] = asOperator ? [await operatorTokens.get(t)!, `?customer=${customer}`] : [token, query];
  const response = await call(t, 'PUT', `${OKMS}/${serial}${putQuery}`, { token: putToken, payload: settings });
  if (response.statusCode !== 201) throw new Error(`PUT ${serial}: ${response.statusCode} ${response.body}`);
  return response.json().data as Record<string, unknown>;
}

/** POST …/claim with an installer code. */
export function claim(t: TestApp, token: string, serial: string, installCode: string) {
  return call(t, 'POST', `${OKMS}/${serial}/claim`, { token, payload: { install_code: installCode } });
}

/** An OKM that the device enrolled by polling with the installer code, then the token's customer claimed. */
export async function claimedOkm(t: TestApp, token: string, serial: string, installCode = '12345678') {
  await devicePoll(t, serial, `?installCode=${installCode}`);
  const response = await claim(t, token, serial, installCode);
  if (response.statusCode !== 200) throw new Error(`claim ${serial}: ${response.statusCode} ${response.body}`);
  return response.json().data as Record<string, unknown>;
}

/** A device's config poll, which inserts an unknown OKM without a customer. */
export function devicePoll(t: TestApp, serial: string, query = '') {
  return t.app.inject({ method: 'GET', url: `${t.settings.configPath}/${serial}${query}` });
}

/** Adds a catalog release with an external URL, as an operator would. */
export async function addUrlRelease(t: TestApp, adminToken: string, kind: string, version: string) {
  const response = await call(t, 'POST', FIRMWARE, {
    token: adminToken,
    payload: { kind, version, url: `https://firmware.example/${kind}/${version}.bin`, sha256: 'ab'.repeat(32) },
  });
  if (response.statusCode !== 201) throw new Error(`POST firmware ${kind} ${version}: ${response.statusCode} ${response.body}`);
}

let versions = 0;
/** A firmware version no other test of the run uses. */
export const uniqueVersion = () => `1.${++versions}.0`;
