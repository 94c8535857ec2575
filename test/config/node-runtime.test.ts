import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import packageJson from '../../package.json' with { type: 'json' };
import { minimumNodeMajor, unsupportedRuntime } from '../../src/config/node-runtime.ts';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('the minimum Node.js major is the one package.json engines declares, and 22 or newer', () => {
  assert.equal(minimumNodeMajor(), Number(/\d+/.exec(packageJson.engines.node)![0]));
  assert.ok(minimumNodeMajor() >= 22);
  assert.equal(minimumNodeMajor('>=24'), 24);
  assert.throws(() => minimumNodeMajor('^22'), /engines\.node/);
});

test('Node.js 22 and 24 are supported; 20 and 18 are refused with a message naming the version and what to do', () => {
  for (const version of ['22.0.0', '22.23.3', '24.21.0', '26.1.0']) assert.equal(unsupportedRuntime(version, 22), undefined, version);
  for (const version of ['20.20.2', '18.20.8', '21.7.3']) {
    const problem = unsupportedRuntime(version, 22);
    assert.match(problem ?? '', new RegExp(`needs Node\\.js 22 or newer .* this is Node\\.js ${version.replaceAll('.', '\\.')}`));
    assert.match(problem ?? '', /operator-guide/);
  }
});

test('the pinned runtime is the one the suite runs on: node_modules/.bin/node is Node.js 24, as .nvmrc says', () => {
  assert.equal(fs.readFileSync(path.join(PROJECT_ROOT, '.nvmrc'), 'utf8').trim(), '24');
  const pinned = execFileSync(path.join(PROJECT_ROOT, 'node_modules/.bin/node'), ['--version'], { encoding: 'utf8' }).trim();
  assert.match(pinned, /^v24\./);
  assert.equal(process.version, pinned, 'npm test runs under the pinned node');
});

/** A node on PATH outside node_modules (the host's own), with its version, if it is older than keyfleet supports. */
function hostNodeTooOld(): { binary: string; version: string } | undefined {
  for (const directory of (process.env.PATH ?? '').split(path.delimiter)) {
    if (directory.includes('node_modules')) continue;
    const binary = path.join(directory, 'node');
    if (!fs.existsSync(binary)) continue;
    const version = execFileSync(binary, ['--version'], { encoding: 'utf8' }).trim();
    return Number(version.slice(1).split('.')[0]) < minimumNodeMajor() ? { binary, version } : undefined;
  }
  return undefined;
}

const tooOld = hostNodeTooOld();

test(
  'on a host Node.js older than supported, the production start exits 1 with the message, before the SQLite driver can crash it',
  { skip: tooOld ? false : 'no Node.js older than the supported one on this host' },
  () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-old-node-'));
    try {
      const run = spawnSync(tooOld!.binary, ['bin/keyfleet.js', 'serve'], { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: '0' }, encoding: 'utf8', timeout: 30_000 });
      assert.equal(run.signal, null, `ended by ${run.signal}: ${run.stderr}`);
      assert.equal(run.status, 1, run.stderr);
      assert.match(run.stderr, new RegExp(`needs Node\\.js ${minimumNodeMajor()} or newer .* this is Node\\.js ${tooOld!.version.slice(1).replaceAll('.', '\\.')}`));
      assert.deepEqual(fs.readdirSync(dataDir), [], 'nothing was written');
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  },
);
