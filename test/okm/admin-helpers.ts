import type { InjectOptions } from 'fastify';
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

/** Creates (PUT) an OKM with the given settings; throws unless the service answers 201. */
export async function createOkm(t: TestApp, token: string, serial: string, settings: Record<string, unknown> = {}, query = '') {
  const response = await call(t, 'PUT', `${OKMS}/${serial}${query}`, { token, payload: settings });
  if (response.statusCode !== 201) throw new Error(`PUT ${serial}: ${response.statusCode} ${response.body}`);
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
