import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { startConsoleServer } from './e2e-fixture.ts';
import { shootAclFirmwarePages } from './screenshots-acls-firmware.ts';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The tracked images change only on request (npm run console:screenshots), never as a side effect of npm test. */
const imagesDirectory = () => (process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs/images') : fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-screens-')));

// ---- ACLs, ACL, pending OKMs, firmware, locks (console2) ------------------------------------
test('screenshots of the ACLs, ACL, pending OKMs, firmware and locks pages over a seeded fleet', { skip: browserTestSkip() }, async () => {
  const [server, browser] = await Promise.all([startConsoleServer(), launchChromium()]);
  try {
    await shootAclFirmwarePages(browser, server, imagesDirectory());
  } finally {
    await browser.close();
    await server.stop();
  }
});
// ---- end (console2) --------------------------------------------------------------------------
