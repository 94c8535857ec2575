import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, test } from 'node:test';
import { loadSettings, SettingsError } from '../../src/config/settings.ts';
import { KEYFLEET_SOURCES } from '../helpers/cli.ts';


function errorFor(env: Record<string, string>): SettingsError {
  try {
    loadSettings(env);
  } catch (error) {
    assert.ok(error instanceof SettingsError);
    return error;
  }
  assert.fail('expected a SettingsError');
}

describe('settings', () => {
  test('with no variables set, the defaults of contract §1.4 apply', () => {
    const settings = loadSettings({});

    assert.equal(settings.port, 8080);
    assert.equal(settings.host, '0.0.0.0');
    assert.equal(settings.dataDir, path.resolve('./data'));
    assert.equal(settings.databaseUrl, undefined);
    assert.equal(settings.configPath, '/api/v1/config');
    assert.equal(settings.auditUrl, '/api/v1/audit');
    assert.equal(settings.trustProxy, false);
    assert.equal(settings.webhookAllowPrivateNetworks, false);
    assert.equal(settings.logLevel, 'info');
    assert.equal(settings.fleetPollingInterval, 150);
    assert.equal(settings.serveWorkers, 1);
    assert.equal(settings.okmAutoEnrol, true);
    assert.equal(settings.okmDeviceTokens, 'off');
    assert.equal(settings.aclMaxUsers, 5000);
    assert.equal(settings.aclMaxLocks, 1000);
  });

  test('each bad value is reported with the name of its variable', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ PORT: 'eighty' }, 'PORT'],
      [{ PORT: '70000' }, 'PORT'],
      [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
      [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
      [{ DATABASE_URL: 'postgres://[x' }, 'DATABASE_URL'],
      [{ DATABASE_URL: 'postgres://x/keyfleet?query_timeout=0' }, 'DATABASE_URL'],
      [{ DATABASE_URL: 'postgres://x/keyfleet?query_timeout=soon' }, 'DATABASE_URL'],
      [{ DATABASE_URL: 'postgres://x/keyfleet?query_timeout=86400001' }, 'DATABASE_URL'],
      [{ MASTER_KEY: 'short' }, 'MASTER_KEY'],
      [{ CONFIG_PATH: 'api/v1/config' }, 'CONFIG_PATH'],
      [{ AUDIT_URL: '/audit/' }, 'AUDIT_URL'],
      [{ TRUST_PROXY: 'maybe' }, 'TRUST_PROXY'],
      [{ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'yes' }, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS'],
      [{ PUBLIC_BASE_URL: 'ftp://x' }, 'PUBLIC_BASE_URL'],
      [{ JWT_EXTERNAL_ISSUERS: '[{"issuer":"x"}]' }, 'JWT_EXTERNAL_ISSUERS'],
      [{ FLEET_POLLING_INTERVAL: '4' }, 'FLEET_POLLING_INTERVAL'],
      [{ SERVE_WORKERS: '0' }, 'SERVE_WORKERS'],
      [{ SERVE_WORKERS: '65' }, 'SERVE_WORKERS'],
      [{ SERVE_WORKERS: 'auto' }, 'SERVE_WORKERS'],
      [{ OKM_AUTO_ENROL: 'no' }, 'OKM_AUTO_ENROL'],
      [{ OKM_DEVICE_TOKENS: 'on' }, 'OKM_DEVICE_TOKENS'],
      [{ ACL_MAX_USERS: '0' }, 'ACL_MAX_USERS'],
      [{ ACL_MAX_USERS: 'many' }, 'ACL_MAX_USERS'],
      [{ ACL_MAX_LOCKS: '10001' }, 'ACL_MAX_LOCKS'],
      [{ FIRMWARE_RETRY_POLICY: '{"offers": 1.5}' }, 'FIRMWARE_RETRY_POLICY'],
      [{ FIRMWARE_RETRY_POLICY: '{"backoff_polls": [1]}' }, 'FIRMWARE_RETRY_POLICY'],
      [{ FIRMWARE_RETRY_POLICY: 'off' }, 'FIRMWARE_RETRY_POLICY'],
      [{ STUCK_AFTER_POLLS: '0' }, 'STUCK_AFTER_POLLS'],
    ];
    for (const [env, variable] of cases) {
      const error = errorFor(env);

      assert.equal(error.variable, variable);
      assert.match(error.message, new RegExp(`^${variable}: `));
    }
  });

  test('single sign-on settings: off without OIDC_ISSUER; each mistake stops the start naming its variable and what to do', () => {
    const oidc = { OIDC_ISSUER: 'https://idp.example.com/realms/acme', OIDC_CLIENT_ID: 'keyfleet', PUBLIC_BASE_URL: 'https://keyfleet.example.com' };
    const cases: Array<[Record<string, string>, string, RegExp]> = [
      [{ OIDC_CLIENT_ID: 'keyfleet' }, 'OIDC_CLIENT_ID', /OIDC_ISSUER is not/],
      [{ ...oidc, OIDC_ISSUER: 'http://idp.example.com' }, 'OIDC_ISSUER', /OIDC_ALLOW_HTTP=true/],
      [{ ...oidc, OIDC_ISSUER: 'idp.example.com' }, 'OIDC_ISSUER', /issuer URL/],
      [{ ...oidc, OIDC_CLIENT_ID: '' }, 'OIDC_CLIENT_ID', /client id/],
      [{ ...oidc, PUBLIC_BASE_URL: '' }, 'PUBLIC_BASE_URL', /auth\/oidc\/callback/],
      [{ ...oidc, OIDC_SCOPES: 'email profile' }, 'OIDC_SCOPES', /openid/],
      [{ ...oidc, OIDC_TOKEN_ENDPOINT_AUTH: 'private_key_jwt' }, 'OIDC_TOKEN_ENDPOINT_AUTH', /client_secret_basic/],
      [{ SESSION_IDLE_TIMEOUT: '10s' }, 'SESSION_IDLE_TIMEOUT', /duration/],
      [{ SESSION_LIFETIME: 'forever' }, 'SESSION_LIFETIME', /duration/],
    ];
    for (const [env, variable, message] of cases) {
      const error = errorFor(env);

      assert.equal(error.variable, variable, JSON.stringify(env));
      assert.match(error.message, message);
    }
    assert.equal(loadSettings({}).oidc, undefined);
    assert.deepEqual(loadSettings({ ...oidc, OIDC_CLIENT_SECRET: 's' }).oidc, {
      issuer: oidc.OIDC_ISSUER,
      clientId: 'keyfleet',
      clientSecret: 's',
      tokenEndpointAuth: 'client_secret_basic',
      scopes: 'openid email profile offline_access',
      groupsClaim: 'groups',
      allowHttp: false,
      redirectUri: 'https://keyfleet.example.com/auth/oidc/callback',
    });
    assert.equal(loadSettings({ ...oidc, OIDC_ISSUER: 'http://127.0.0.1:9000', OIDC_ALLOW_HTTP: 'true' }).oidc?.issuer, 'http://127.0.0.1:9000');
    assert.deepEqual([loadSettings({}).sessionIdleMs, loadSettings({}).sessionLifetimeMs, loadSettings({}).sessionRefreshMs], [30 * 60_000, 12 * 3_600_000, 5 * 60_000]);
  });

  test('the firmware retry policy is the contract\'s default (contract §15.2) unless FIRMWARE_RETRY_POLICY says otherwise; what it leaves out is the default\'s', () => {
    assert.deepEqual(loadSettings({}).firmwareRetryPolicy, { offers: 3, backoffPolls: [1, 2, 4, 8], maxBackoffPolls: 32 });
    assert.deepEqual(loadSettings({ FIRMWARE_RETRY_POLICY: '{"offers": 0}' }).firmwareRetryPolicy, { offers: 0, backoffPolls: [1, 2, 4, 8], maxBackoffPolls: 32 });
    assert.equal(loadSettings({}).stuckAfterPolls, 3);
  });

  test('DATABASE_URL may ask for a read timeout of 1 ms to a day (query_timeout)', () => {
    for (const url of ['postgres://x/keyfleet?query_timeout=1', 'postgresql://x/keyfleet?statement_timeout=600000&query_timeout=86400000']) {
      assert.equal(loadSettings({ DATABASE_URL: url }).databaseUrl, url);
    }
  });

  test('MASTER_KEY is accepted as 64 hex digits or as base64 of 32 bytes', () => {
    const hex = 'ab'.repeat(32);

    assert.equal(loadSettings({ MASTER_KEY: hex }).masterKey?.toString('hex'), hex);
    assert.equal(loadSettings({ MASTER_KEY: Buffer.from(hex, 'hex').toString('base64') }).masterKey?.toString('hex'), hex);
  });

  test('device hardening is turned on by OKM_AUTO_ENROL=false and OKM_DEVICE_TOKENS=required', () => {
    const settings = loadSettings({ OKM_AUTO_ENROL: 'false', OKM_DEVICE_TOKENS: 'required' });

    assert.equal(settings.okmAutoEnrol, false);
    assert.equal(settings.okmDeviceTokens, 'required');
    assert.equal(errorFor({ OKM_DEVICE_TOKENS: 'on' }).message, 'OKM_DEVICE_TOKENS: expected one of off, required, got "on"');
  });

  test('device rate limits default to 60 a minute per OKM and 30 000 a minute per address (a NATed chain)', () => {
    const settings = loadSettings({});

    assert.equal(settings.deviceRateLimitPerMinute, 60);
    assert.equal(settings.deviceIpRateLimitPerMinute, 30_000);
    assert.equal(settings.apiRateLimitPerMinute, 1200);
  });

  test('a per-address device ceiling below the per-OKM limit is refused at start; 0 turns either off', () => {
    const error = errorFor({ RATE_LIMIT_DEVICE_PER_MINUTE: '100', RATE_LIMIT_DEVICE_IP_PER_MINUTE: '50' });

    assert.equal(error.variable, 'RATE_LIMIT_DEVICE_IP_PER_MINUTE');
    assert.equal(errorFor({ RATE_LIMIT_DEVICE_IP_PER_MINUTE: '-1' }).variable, 'RATE_LIMIT_DEVICE_IP_PER_MINUTE');
    assert.equal(loadSettings({ RATE_LIMIT_DEVICE_PER_MINUTE: '100', RATE_LIMIT_DEVICE_IP_PER_MINUTE: '0' }).deviceIpRateLimitPerMinute, 0);
    assert.equal(loadSettings({ RATE_LIMIT_DEVICE_PER_MINUTE: '0', RATE_LIMIT_DEVICE_IP_PER_MINUTE: '10' }).deviceRateLimitPerMinute, 0);
  });

  test('TRUST_PROXY takes true, a hop count or a list of proxy addresses', () => {
    assert.equal(loadSettings({ TRUST_PROXY: 'true' }).trustProxy, true);
    assert.equal(loadSettings({ TRUST_PROXY: '2' }).trustProxy, 2);
    assert.equal(loadSettings({ TRUST_PROXY: '10.0.0.1, 192.168.0.0/16' }).trustProxy, '10.0.0.1, 192.168.0.0/16');
  });

  test('when a setting is bad, the server stops with one line naming the variable', () => {
    const result = spawnSync(process.execPath, [...KEYFLEET_SOURCES, 'serve'], {
      env: { ...process.env, PORT: 'abc' },
      encoding: 'utf8',
      timeout: 30_000,
    });

    assert.notEqual(result.status, 0);
    assert.equal(result.stderr, 'keyfleet: PORT: expected an integer, got "abc"\n');
  });

  test('with PostgreSQL and no MASTER_KEY, the server refuses to start', () => {
    const result = spawnSync(process.execPath, [...KEYFLEET_SOURCES, 'serve'], {
      env: { ...process.env, DATABASE_URL: 'postgres://root@127.0.0.1:5432/test', MASTER_KEY: '' },
      encoding: 'utf8',
      timeout: 30_000,
    });

    assert.notEqual(result.status, 0);
    assert.match(result.stderr, /^keyfleet: MASTER_KEY: required when DATABASE_URL is set/);
  });
});
