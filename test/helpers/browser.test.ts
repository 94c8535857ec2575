import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { browserTestSkip, findChromium } from './browser.ts';

describe('finding Chromium for browser tests', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-browser-'));
  after(() => fs.rmSync(root, { recursive: true, force: true }));
  const directory = (name: string, executables: string[]) => {
    const dir = path.join(root, name);
    fs.mkdirSync(dir);
    for (const executable of executables) fs.writeFileSync(path.join(dir, executable), '#!/bin/sh\n', { mode: 0o755 });
    return dir;
  };
  const empty = directory('empty', []);
  const debian = directory('debian', ['chromium']);
  const ubuntu = directory('ubuntu', ['chromium-browser']);
  const custom = directory('custom', ['my-chrome']);

  test('when `chromium` is on PATH, it is found', () => {
    assert.equal(findChromium({ PATH: [empty, debian].join(path.delimiter) }), path.join(debian, 'chromium'));
  });

  test('when only `chromium-browser` is on PATH, it is found', () => {
    assert.equal(findChromium({ PATH: [empty, ubuntu].join(path.delimiter) }), path.join(ubuntu, 'chromium-browser'));
  });

  test('when CHROMIUM_PATH is set, it wins over PATH', () => {
    const chosen = path.join(custom, 'my-chrome');
    assert.equal(findChromium({ CHROMIUM_PATH: chosen, PATH: debian }), chosen);
  });

  test('when CHROMIUM_PATH names no executable, that is an error rather than a skip', () => {
    assert.throws(() => browserTestSkip({ CHROMIUM_PATH: path.join(empty, 'nothing'), PATH: debian }), /CHROMIUM_PATH/);
  });

  test('when no Chromium is found, the browser test is skipped outside CI and fails in CI', () => {
    assert.match(String(browserTestSkip({ PATH: empty })), /no Chromium/);
    assert.match(String(browserTestSkip({ PATH: empty, CI: 'false' })), /no Chromium/);
    assert.throws(() => browserTestSkip({ PATH: empty, CI: 'true' }), /CI requires it/);
  });

  test('when a Chromium is found, the browser test runs', () => {
    assert.equal(browserTestSkip({ PATH: debian, CI: 'true' }), false);
  });
});
