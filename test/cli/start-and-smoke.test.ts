import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { eventually } from '../helpers/eventually.ts';
import { freePort } from '../helpers/server-process.ts';

/**
 * The production start (`node bin/keyfleet.js serve`, the compiled dist/) on one Node.js,
 * taken through a device's first poll, a DLock enrolment, an ACL and a SIGTERM. It runs in the
 * suite on the Node.js the suite runs on (the pinned 24), and CI runs it again on the oldest
 * supported LTS: KEYFLEET_SMOKE_NODE names that node binary (.ci/run).
 */
const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const NODE = process.env.KEYFLEET_SMOKE_NODE ?? process.execPath;
const NODE_VERSION = execFileSync(NODE, ['--version'], { encoding: 'utf8' }).trim();

let dataDir: string;
let port: number;
let base: string;

function cli(...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(NODE, ['bin/keyfleet.js', ...args], { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH, DATA_DIR: dataDir, LOG_LEVEL: 'silent' } }, (error, stdout, stderr) =>
      error ? reject(new Error(`keyfleet ${args.join(' ')}: ${stderr}`)) : resolve(stdout.trim()),
    );
  });
}

before(async () => {
  assert.ok(fs.existsSync(path.join(PROJECT_ROOT, 'dist/src/cli/main.js')), 'dist/ is missing: run npm run build (npm ci does)');
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-smoke-'));
  port = await freePort();
  base = `http://127.0.0.1:${port}`;
});
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

test(`on Node.js ${NODE_VERSION}, the production start serves a poll, a DLock enrolment and an ACL, then drains on SIGTERM and exits 0`, async () => {
  const server = spawn(NODE, ['bin/keyfleet.js', 'serve'], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  server.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  server.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => server.once('exit', (code, signal) => resolve({ code, signal })));
  try {
    await eventually(
      () => {
        if (server.exitCode !== null || server.signalCode !== null) throw new Error(`the server exited before serving:\n${output}`);
        return fetch(`${base}/readyz`).then((response) => response.ok, () => false);
      },
      60_000,
      'the server answering /readyz',
    );
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const served = /nodejs_version_info\{version="(v[\d.]+)"/.exec(metrics)?.[1];
    assert.equal(served, NODE_VERSION, 'the server runs on the Node.js under test');

    const first = await fetch(`${base}/api/v1/config/SMOKE-OKM-1?installCode=12345678`);
    assert.equal(first.status, 204, 'the first poll of a new serial enrols it');
    const second = await fetch(`${base}/api/v1/config/SMOKE-OKM-1?installCode=12345678`);
    assert.equal(second.status, 200);
    assert.equal(second.headers.get('content-type'), 'application/json; charset=utf-8');

    await cli('customer', 'create', 'acme');
    await cli('cert', 'create', '--customer', 'acme', '--name', 'acme-main');
    const apiKey = JSON.parse(await cli('apikey', 'create', '--customer', 'acme', '--json')) as { key: string };
    const enrol = await fetch(`${base}/v1/dlock`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ serial_no: 'SMOKE-LOCK-1', type: 'padlock', certificate: 'acme-main', enrolment_code: '00112233445566778899aabbccddeeff', base64: false }),
    });
    const enrolled = (await enrol.json()) as { msg: string; data: { key: { signature: string } } };
    assert.equal(enrol.status, 200, JSON.stringify(enrolled));
    assert.equal(enrolled.msg, 'DLock registered successfully');
    assert.ok(enrolled.data.key.signature.length > 0);

    const token = await cli('token', 'issue', '--customer', 'acme', '--scope', 'acl:read acl:create');
    const acl = {
      customer: 'acme',
      users: [{ user_id: 7, pin_hash: 'pin7hash', auth_time: 8, sounder: false, sounder_delay: 10, sounder_duration: 30, sounder_volume: 2, permissions: [1] }],
      locks: ['SMOKE-LOCK-1'],
      user_data: { site: 'north' },
    };
    const created = await fetch(`${base}/api/v1/acls`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(acl) });
    assert.equal(created.status, 201, await created.clone().text());
    assert.equal(((await created.json()) as { message: string }).message, 'Resource created successfully');
  } finally {
    server.kill('SIGTERM');
  }
  const { code, signal } = await exited;
  assert.equal(signal, null, `the server was ended by ${signal}:\n${output}`);
  assert.equal(code, 0, output);
  assert.match(output, /"msg":"stopped"/);
});
