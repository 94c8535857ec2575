import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { buildTestApp, forEachDatabase, type TestApp } from '../helpers/app.ts';
import { newSerial } from './config-helpers.ts';

forEachDatabase('config bootstrap', (kind) => {
  let t: TestApp;
  let custom: TestApp;
  before(async () => {
    t = await buildTestApp(kind);
    custom = await buildTestApp(kind, { CONFIG_PATH: '/kas/cfg' });
  });
  after(async () => {
    await t.close();
    await custom.close();
  });

  test('the hard-coded bootstrap URL answers with the default config path', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/embeddedv1/kas/config' });

    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(response.body, '{"configUrl":"/api/v1/config"}');
  });

  test('the bootstrap URL with a serial number, and with a trailing slash, answers the same', async () => {
    for (const url of ['/embeddedv1/kas/config/OKM-1', '/embeddedv1/kas/config/OKM-1/', '/embeddedv1/kas/config/']) {
      const response = await t.app.inject({ method: 'GET', url });

      assert.equal(response.statusCode, 200, url);
      assert.deepEqual(response.json(), { configUrl: '/api/v1/config' }, url);
    }
  });

  test('with CONFIG_PATH set, the bootstrap names it and the config route is served there', async () => {
    const bootstrap = await custom.app.inject({ method: 'GET', url: '/embeddedv1/kas/config/OKM-1' });
    const atCustomPath = await custom.app.inject({ method: 'GET', url: `/kas/cfg/${newSerial()}` });
    const atDefaultPath = await custom.app.inject({ method: 'GET', url: `/api/v1/config/${newSerial()}` });

    assert.deepEqual(bootstrap.json(), { configUrl: '/kas/cfg' });
    assert.equal(atCustomPath.statusCode, 204);
    assert.equal(atDefaultPath.statusCode, 404);
  });
});
