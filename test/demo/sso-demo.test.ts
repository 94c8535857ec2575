import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { eventually } from '../helpers/eventually.ts';
import { freePort } from '../helpers/server-process.ts';
import { SignInClient } from '../helpers/sign-in-client.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-sso-demo-'));
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

test('npm run demo:sso starts a provider and keyfleet; both demo people sign in with their roles, and Ctrl-C stops it all', { timeout: 90_000 }, async () => {
  const [port, idpPort] = [await freePort(), await freePort()];
  const demo = spawn(process.execPath, ['--import', 'tsx', 'demo/sso.ts'], {
    env: { PATH: process.env.PATH, DEMO_PORT: String(port), DEMO_IDP_PORT: String(idpPort), DEMO_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  demo.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  demo.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => demo.once('exit', (code) => resolve(code)));
  try {
    const base = `http://127.0.0.1:${port}`;
    await eventually(async () => output.includes('keyfleet with single sign-on') && (await fetch(`${base}/readyz`).then((response) => response.ok, () => false)), 60_000, `the demo serving: ${output}`);

    const roles: Record<string, unknown> = {};
    for (const login of ['ada', 'grace']) {
      const client = new SignInClient();
      const { response } = await client.signIn(base, login);
      assert.equal(response.status, 200, `${login}: ${output}`);
      const { role, customer } = (await (await client.request(`${base}/api/v1/me`)).json()).data;
      roles[login] = { role, customer };
    }

    assert.deepEqual(roles, { ada: { role: 'admin', customer: null }, grace: { role: 'acl-manager', customer: 'demo' } });
    assert.match(output, new RegExp(`http://127\\.0\\.0\\.1:${port}/console/`));
    demo.kill('SIGINT');
    assert.equal(await exited, 0);
  } finally {
    demo.kill('SIGKILL');
  }
});
