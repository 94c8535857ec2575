import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const TRACKED_SCREENSHOT = path.join(PROJECT_ROOT, 'docs/images/api-docs.png');

test('`npm start` on an empty DATA_DIR serves a /docs page that renders the API in a browser', { skip: browserTestSkip() }, async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-docs-'));
  const server = spawn('npm', ['start'], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' },
    detached: true,
  });
  let output = '';
  server.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  server.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  // Listened for before the browser starts: a server that exits at once (no dist/) must fail the test, not hang it.
  const listening = new Promise<string>((resolve, reject) => {
    server.stdout.on('data', () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    server.once('exit', () => reject(new Error(`npm start exited: ${output}`)));
  });
  listening.catch(() => {});
  const browser = await launchChromium();
  try {
    const base = await listening;
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });

    await page.goto(`${base}/docs`);
    await page.waitForSelector('.opblock-summary-path', { timeout: 20_000 });
    const paths = await page.locator('.opblock-summary-path').allInnerTexts();
    // The tracked image changes only on request (UPDATE_SCREENSHOTS=1), never as a side effect of npm test.
    await page.screenshot({ path: process.env.UPDATE_SCREENSHOTS === '1' ? TRACKED_SCREENSHOT : path.join(dataDir, 'api-docs.png') });

    assert.ok(paths.some((text) => text.includes('/v1/dlock')), `paths shown: ${paths.join(' ')}`);
    assert.ok(paths.some((text) => text.includes('/api/v1/okms')));
    assert.equal(await page.locator('.title').first().innerText().then((title) => title.startsWith('keyfleet')), true);
  } finally {
    await browser.close();
    // npm start runs tsx, which runs node: signal the whole process group.
    if (server.exitCode === null) {
      process.kill(-server.pid!, 'SIGTERM');
      await new Promise((resolve) => server.once('exit', resolve));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});
