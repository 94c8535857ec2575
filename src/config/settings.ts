import path from 'node:path';
import { parse as parseConnectionString } from 'pg-connection-string';
import { parseDuration } from '../shared/duration.ts';
import { DEFAULT_RETRY_POLICY, parseRetryPolicy, type RetryPolicy } from '../shared/retry-policy.ts';

export interface ExternalIssuer {
  issuer: string;
  jwksUrl: string;
  audience: string;
}

export interface Settings {
  port: number;
  host: string;
  dataDir: string;
  databaseUrl: string | undefined;
  masterKey: Buffer | undefined;
  logLevel: string;
  publicBaseUrl: string | undefined;
  configPath: string;
  auditUrl: string;
  /** false, true (trust every proxy), a hop count, or a comma-separated list of proxy addresses/CIDRs. */
  trustProxy: boolean | number | string;
  webhookAllowPrivateNetworks: boolean;
  /** Time a subscriber has to answer a status event, in ms. */
  webhookTimeoutMs: number;
  /** Delays before each retry of a status event, in ms; after the last one the delivery has failed. */
  webhookRetrySchedule: number[];
  /** Status events in flight at once, per destination host and per process. */
  webhookConcurrencyPerHost: number;
  webhookConcurrency: number;
  /** Whether `keyfleet serve` runs a dispatcher too (`keyfleet dispatch` runs one alone). */
  webhookDispatchInServer: boolean;
  /** How long failed delivery attempts stay in the delivery log, in days. */
  webhookLogRetentionDays: number;
  /** How often a server process sweeps the rollouts (timeouts, thresholds, scheduled starts), in ms; 0: never (another process does). */
  rolloutSweepIntervalMs: number;
  /**
   * The pause between two fleet passes (overdue marks, the fleet summary: src/fleet/fleet-pass.ts),
   * in ms; 0: this process runs none (another does). One process at a time runs the pass.
   */
  fleetPassIntervalMs: number;
  jwtIssuer: string;
  jwtAudience: string;
  jwtClockToleranceSeconds: number;
  jwtExternalIssuers: ExternalIssuer[];
  fleetPollingInterval: number;
  /** The fleet's default retry policy of firmware offers (contract §15); a customer's or a rollout's own takes precedence. */
  firmwareRetryPolicy: RetryPolicy;
  /** Polls in a row sent one correction without effect after which an OKM is stuck (contract §15). */
  stuckAfterPolls: number;
  /** Processes `keyfleet serve` runs on its port (1: the server runs in the process itself). */
  serveWorkers: number;
  /** Whether a poll from an unknown serial number inserts the OKM (the rule of contract §0.4), or records it as pending for an operator to accept. */
  okmAutoEnrol: boolean;
  /** Whether device calls (poll, audit) must carry the OKM's device token. */
  okmDeviceTokens: DeviceTokenMode;
  /** Largest firmware file the catalog accepts for upload, in bytes. */
  firmwareMaxBytes: number;
  /** Validity of the deployment root CA made on first start, in days. */
  pkiRootValidityDays: number;
  /** Validity of customer intermediate certificates made by `keyfleet cert create`, in days. */
  pkiIntermediateValidityDays: number;
  /** Validity of DLock key certificates issued by POST /v1/dlock, in days. */
  dlockCertificateValidityDays: number;
  /** Requests per minute per OKM serial number on the device routes (config poll, bootstrap, audit intake); 0 = no limit. */
  deviceRateLimitPerMinute: number;
  /** Requests per minute per client IP on the device routes, firmware downloads included: the ceiling of a NATed fleet; 0 = no limit. */
  deviceIpRateLimitPerMinute: number;
  /** Requests per minute per credential on the APIs, and per IP for requests without a valid one; 0 = no limit. */
  apiRateLimitPerMinute: number;
  /** Time a client has to send a request's headers, in seconds (slow-loris clients are cut off). */
  headersTimeoutSeconds: number;
  /** Time a client has to send a whole request, body included, in seconds. */
  requestTimeoutSeconds: number;
  /** Most users one ACL may hold. */
  aclMaxUsers: number;
  /** Most locks one ACL may hold (and so permissions per user). */
  aclMaxLocks: number;
  /** Most OKMs one bulk action, and most ACLs one removal of a user, may change in its one transaction. */
  bulkActionMax: number;
  /** Single sign-on through the company's OpenID Provider (contract §17); undefined: not set up. */
  oidc: OidcSettings | undefined;
  /** A session ends after this long without a request, in ms. */
  sessionIdleMs: number;
  /** A session ends this long after its sign-in whatever happens, in ms. */
  sessionLifetimeMs: number;
  /** A session's IdP groups (and so its role) are read from the provider again after this long, in ms. */
  sessionRefreshMs: number;
  /** Audit entries older than this many days are pruned down to a signed checkpoint; null: kept for ever (the default). */
  auditRetentionDays: number | null;
}

export interface OidcSettings {
  issuer: string;
  clientId: string;
  /** Undefined for a public client (PKCE alone). */
  clientSecret: string | undefined;
  tokenEndpointAuth: 'client_secret_basic' | 'client_secret_post';
  /** Space-separated. */
  scopes: string;
  /** The ID token claim that lists the person's groups. */
  groupsClaim: string;
  /** Whether an http: issuer is accepted (local trials and tests). */
  allowHttp: boolean;
  /** PUBLIC_BASE_URL + /auth/oidc/callback. */
  redirectUri: string;
}

const DEVICE_TOKEN_MODES = ['off', 'required'] as const;
export type DeviceTokenMode = (typeof DEVICE_TOKEN_MODES)[number];

export class SettingsError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable}: ${detail}`);
    this.name = 'SettingsError';
  }
}

type Env = Record<string, string | undefined>;

export const MAX_SERVE_WORKERS = 64;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const URL_PATH = /^\/[A-Za-z0-9._~\-/]*[A-Za-z0-9._~-]$/;

function text(env: Env, name: string, fallback: string): string {
  const value = env[name];
  return value === undefined || value === '' ? fallback : value;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new SettingsError(name, `expected an integer, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new SettingsError(name, `expected ${min}–${max}, got ${value}`);
  return value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new SettingsError(name, `expected true or false, got "${raw}"`);
}

function oneOf<const T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = text(env, name, fallback);
  if (!values.includes(raw as T)) throw new SettingsError(name, `expected one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** A comma-separated list of durations such as `5s,5m,30m,2h` (units ms, s, m, h, d), in ms. */
function durationList(env: Env, name: string, fallback: string): number[] {
  const raw = text(env, name, fallback);
  return raw.split(',').map((item) => {
    const duration = parseDuration(item);
    if (duration === undefined) throw new SettingsError(name, `expected comma-separated durations such as 5s,5m,2h (units ms, s, m, h, d), got "${raw}"`);
    return duration;
  });
}

function trustProxy(env: Env): boolean | number | string {
  const raw = env.TRUST_PROXY;
  if (raw === undefined || raw === '' || raw === 'false' || raw === '0') return false;
  if (raw === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  if (/^[0-9A-Fa-f.:/]+(\s*,\s*[0-9A-Fa-f.:/]+)*$/.test(raw)) return raw;
  throw new SettingsError('TRUST_PROXY', `expected true, false, a hop count or a comma-separated list of addresses, got "${raw}"`);
}

function urlPath(env: Env, name: string, fallback: string): string {
  const value = text(env, name, fallback);
  if (!URL_PATH.test(value)) throw new SettingsError(name, `expected an absolute URL path such as ${fallback}, got "${value}"`);
  return value;
}

function httpUrl(name: string, value: string): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new SettingsError(name, `expected an http(s) URL, got "${value}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new SettingsError(name, `expected an http(s) URL, got "${value}"`);
  }
  return value.replace(/\/+$/, '');
}

/** The longest client-side read timeout DATABASE_URL may ask for (`query_timeout`): a day. */
const MAX_QUERY_TIMEOUT_MS = 86_400_000;

function databaseUrl(env: Env): string | undefined {
  const value = env.DATABASE_URL;
  if (value === undefined || value === '') return undefined;
  const notAUrl = new SettingsError('DATABASE_URL', 'expected a postgres:// or postgresql:// URL');
  if (!/^postgres(ql)?:\/\//.test(value)) throw notAUrl;
  let readTimeout: unknown;
  try {
    readTimeout = parseConnectionString(value).query_timeout;
  } catch {
    throw notAUrl;
  }
  if (readTimeout !== undefined && !(typeof readTimeout === 'string' && /^\d+$/.test(readTimeout) && Number(readTimeout) >= 1 && Number(readTimeout) <= MAX_QUERY_TIMEOUT_MS)) {
    throw new SettingsError('DATABASE_URL', `query_timeout: expected 1–${MAX_QUERY_TIMEOUT_MS} milliseconds, got "${String(readTimeout)}"`);
  }
  return value;
}

/** A master key is 32 bytes, given as 64 hex digits or as base64. */
export function parseMasterKey(variable: string, value: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(value)
    ? Buffer.from(value, 'hex')
    : /^[A-Za-z0-9+/]{43}=?$/.test(value)
      ? Buffer.from(value, 'base64')
      : undefined;
  if (key?.length !== 32) {
    throw new SettingsError(variable, 'expected 32 bytes as 64 hex digits or base64 (openssl rand -hex 32)');
  }
  return key;
}

function masterKey(env: Env): Buffer | undefined {
  const value = env.MASTER_KEY;
  return value === undefined || value === '' ? undefined : parseMasterKey('MASTER_KEY', value);
}

function externalIssuers(env: Env): ExternalIssuer[] {
  const raw = env.JWT_EXTERNAL_ISSUERS;
  if (raw === undefined || raw === '') return [];
  const fail = (detail: string): never => {
    throw new SettingsError('JWT_EXTERNAL_ISSUERS', detail);
  };
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return fail('expected a JSON array of {"issuer","jwks_url","audience"}');
  }
  if (!Array.isArray(parsed)) return fail('expected a JSON array of {"issuer","jwks_url","audience"}');
  return parsed.map((entry: unknown, index) => {
    const item = entry as Record<string, unknown> | null;
    for (const key of ['issuer', 'jwks_url', 'audience']) {
      if (typeof item?.[key] !== 'string' || item[key] === '') fail(`[${index}].${key} must be a non-empty string`);
    }
    const { issuer, jwks_url, audience } = item as Record<string, string>;
    return { issuer: issuer!, jwksUrl: httpUrl('JWT_EXTERNAL_ISSUERS', jwks_url!), audience: audience! };
  });
}

function retryPolicy(env: Env): RetryPolicy {
  const text = env.FIRMWARE_RETRY_POLICY;
  if (text === undefined || text === '') return DEFAULT_RETRY_POLICY;
  const policy = parseRetryPolicy(text);
  if ('error' in policy) throw new SettingsError('FIRMWARE_RETRY_POLICY', policy.error);
  return policy;
}

const TOKEN_ENDPOINT_AUTH = ['client_secret_basic', 'client_secret_post'] as const;

/** OIDC_* settings; undefined when OIDC_ISSUER is not set. Every mistake is named at start. */
function oidc(env: Env, publicBaseUrl: string | undefined): OidcSettings | undefined {
  const issuer = env.OIDC_ISSUER;
  if (issuer === undefined || issuer === '') {
    const stray = ['OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET'].find((name) => env[name]);
    if (stray) throw new SettingsError(stray, 'is set but OIDC_ISSUER is not: set both to enable single sign-on, or neither');
    return undefined;
  }
  const allowHttp = boolean(env, 'OIDC_ALLOW_HTTP', false);
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new SettingsError('OIDC_ISSUER', `expected the provider's issuer URL (https://…), got "${issuer}"`);
  }
  if (url.protocol === 'http:' && !allowHttp) {
    throw new SettingsError('OIDC_ISSUER', 'an http: issuer sends ID tokens and codes in the clear; use https, or set OIDC_ALLOW_HTTP=true for a local trial');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new SettingsError('OIDC_ISSUER', `expected an https: URL, got "${issuer}"`);
  const clientId = env.OIDC_CLIENT_ID;
  if (!clientId) throw new SettingsError('OIDC_CLIENT_ID', 'is required with OIDC_ISSUER: the client id keyfleet is registered under at the provider');
  if (!publicBaseUrl) {
    throw new SettingsError('PUBLIC_BASE_URL', 'is required with OIDC_ISSUER: the provider sends people back to PUBLIC_BASE_URL/auth/oidc/callback');
  }
  const scopes = text(env, 'OIDC_SCOPES', 'openid email profile offline_access');
  if (!scopes.split(' ').includes('openid')) throw new SettingsError('OIDC_SCOPES', `must include openid, got "${scopes}"`);
  return {
    issuer,
    clientId,
    clientSecret: env.OIDC_CLIENT_SECRET || undefined,
    tokenEndpointAuth: oneOf(env, 'OIDC_TOKEN_ENDPOINT_AUTH', TOKEN_ENDPOINT_AUTH, 'client_secret_basic'),
    scopes,
    groupsClaim: text(env, 'OIDC_GROUPS_CLAIM', 'groups'),
    allowHttp,
    redirectUri: new URL('/auth/oidc/callback', publicBaseUrl).toString(),
  };
}

function duration(env: Env, name: string, fallback: string, minMs: number, maxMs: number): number {
  const value = env[name] === undefined || env[name] === '' ? fallback : env[name]!;
  const ms = parseDuration(value);
  if (ms === undefined || ms < minMs || ms > maxMs) throw new SettingsError(name, `expected a duration from ${minMs / 1000} s to ${maxMs / 3_600_000} h such as 30m or 12h, got "${value}"`);
  return ms;
}

/** Reads and validates the settings; throws a SettingsError naming the first bad variable. */
export function loadSettings(env: Env = process.env): Settings {
  const publicBaseUrl = env.PUBLIC_BASE_URL ? httpUrl('PUBLIC_BASE_URL', env.PUBLIC_BASE_URL) : undefined;
  const headersTimeoutSeconds = integer(env, 'HTTP_HEADERS_TIMEOUT_SECONDS', 10, 1, 600);
  const requestTimeoutSeconds = integer(env, 'HTTP_REQUEST_TIMEOUT_SECONDS', 300, 1, 86_400);
  if (requestTimeoutSeconds < headersTimeoutSeconds) {
    throw new SettingsError('HTTP_REQUEST_TIMEOUT_SECONDS', `expected at least HTTP_HEADERS_TIMEOUT_SECONDS (${headersTimeoutSeconds}), got ${requestTimeoutSeconds}`);
  }
  // A device polls at most every 5 s (12 a minute): 60 leaves room for audit uploads and retries.
  const deviceRateLimitPerMinute = integer(env, 'RATE_LIMIT_DEVICE_PER_MINUTE', 60, 0, 1_000_000_000);
  // 30 000 a minute: 75 000 OKMs behind one address at the 150 s interval (docs/operator-guide.md).
  const deviceIpRateLimitPerMinute = integer(env, 'RATE_LIMIT_DEVICE_IP_PER_MINUTE', 30_000, 0, 1_000_000_000);
  if (deviceIpRateLimitPerMinute > 0 && deviceIpRateLimitPerMinute < deviceRateLimitPerMinute) {
    throw new SettingsError(
      'RATE_LIMIT_DEVICE_IP_PER_MINUTE',
      `expected 0 (no limit) or at least RATE_LIMIT_DEVICE_PER_MINUTE (${deviceRateLimitPerMinute}): one address must allow at least one device, got ${deviceIpRateLimitPerMinute}`,
    );
  }
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: text(env, 'HOST', '0.0.0.0'),
    dataDir: path.resolve(text(env, 'DATA_DIR', './data')),
    databaseUrl: databaseUrl(env),
    masterKey: masterKey(env),
    logLevel: oneOf(env, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    publicBaseUrl,
    configPath: urlPath(env, 'CONFIG_PATH', '/api/v1/config'),
    auditUrl: urlPath(env, 'AUDIT_URL', '/api/v1/audit'),
    trustProxy: trustProxy(env),
    webhookAllowPrivateNetworks: boolean(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS', false),
    webhookTimeoutMs: integer(env, 'WEBHOOK_TIMEOUT_MS', 15_000, 100, 120_000),
    webhookRetrySchedule: durationList(env, 'WEBHOOK_RETRY_SCHEDULE', '5s,5m,30m,2h,5h,10h,10h'),
    webhookConcurrencyPerHost: integer(env, 'WEBHOOK_CONCURRENCY_PER_HOST', 16, 1, 1000),
    webhookConcurrency: integer(env, 'WEBHOOK_CONCURRENCY', 256, 1, 10_000),
    webhookDispatchInServer: boolean(env, 'WEBHOOK_DISPATCH_IN_SERVER', true),
    webhookLogRetentionDays: integer(env, 'WEBHOOK_LOG_RETENTION_DAYS', 7, 1, 3650),
    rolloutSweepIntervalMs: integer(env, 'ROLLOUT_SWEEP_INTERVAL_MS', 10_000, 0, 3_600_000),
    fleetPassIntervalMs: integer(env, 'FLEET_PASS_INTERVAL_MS', 30_000, 0, 3_600_000),
    jwtIssuer: text(env, 'JWT_ISSUER', 'keyfleet'),
    jwtAudience: text(env, 'JWT_AUDIENCE', 'keyfleet'),
    jwtClockToleranceSeconds: integer(env, 'JWT_CLOCK_TOLERANCE_SECONDS', 30, 0, 300),
    jwtExternalIssuers: externalIssuers(env),
    fleetPollingInterval: integer(env, 'FLEET_POLLING_INTERVAL', 150, 5, 3600),
    firmwareRetryPolicy: retryPolicy(env),
    stuckAfterPolls: integer(env, 'STUCK_AFTER_POLLS', 3, 1, 1000),
    serveWorkers: integer(env, 'SERVE_WORKERS', 1, 1, MAX_SERVE_WORKERS),
    okmAutoEnrol: boolean(env, 'OKM_AUTO_ENROL', true),
    okmDeviceTokens: oneOf(env, 'OKM_DEVICE_TOKENS', DEVICE_TOKEN_MODES, 'off'),
    firmwareMaxBytes: integer(env, 'FIRMWARE_MAX_BYTES', 256 * 1024 * 1024, 1, 4 * 1024 * 1024 * 1024),
    pkiRootValidityDays: integer(env, 'PKI_ROOT_VALIDITY_DAYS', 7305, 1, 36_525),
    pkiIntermediateValidityDays: integer(env, 'PKI_INTERMEDIATE_VALIDITY_DAYS', 3653, 1, 36_525),
    dlockCertificateValidityDays: integer(env, 'DLOCK_CERTIFICATE_VALIDITY_DAYS', 365, 1, 36_525),
    deviceRateLimitPerMinute,
    deviceIpRateLimitPerMinute,
    apiRateLimitPerMinute: integer(env, 'RATE_LIMIT_API_PER_MINUTE', 1200, 0, 1_000_000_000),
    headersTimeoutSeconds,
    requestTimeoutSeconds,
    aclMaxUsers: integer(env, 'ACL_MAX_USERS', 5000, 1, 100_000),
    aclMaxLocks: integer(env, 'ACL_MAX_LOCKS', 1000, 1, 10_000),
    bulkActionMax: integer(env, 'BULK_ACTION_MAX', 1000, 1, 10_000),
    oidc: oidc(env, publicBaseUrl),
    sessionIdleMs: duration(env, 'SESSION_IDLE_TIMEOUT', '30m', 60_000, 24 * 3_600_000),
    sessionLifetimeMs: duration(env, 'SESSION_LIFETIME', '12h', 60_000, 30 * 24 * 3_600_000),
    sessionRefreshMs: duration(env, 'SESSION_REFRESH', '5m', 1_000, 24 * 3_600_000),
    auditRetentionDays: env.AUDIT_RETENTION_DAYS === undefined || env.AUDIT_RETENTION_DAYS === '' ? null : integer(env, 'AUDIT_RETENTION_DAYS', 0, 1, 36_500),
  };
}
