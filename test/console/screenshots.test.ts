import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { inStepReport, PROJECT_ROOT, seedFleet, startConsoleServer, tokenOf, watchConsole, type ConsoleServer } from './e2e-fixture.ts';
import { shootAclFirmwarePages } from './screenshots-acls-firmware.ts';
import { ROLLOUT_SCREENSHOT_SETTINGS, shootRolloutEventPages } from './screenshots-rollouts-events.ts';

/**
 * `npm run console:screenshots` (UPDATE_SCREENSHOTS=1): a realistic fleet (3 500 OKMs of five
 * customers, several firmware versions, some drifting (a few of them stuck), overdue and never polled, failing
 * subscribers) and a PNG of every console page at 1280×800, under docs/images/.
 */
const update = process.env.UPDATE_SCREENSHOTS === '1';
const skip = update ? browserTestSkip() : 'screenshots are taken on request: UPDATE_SCREENSHOTS=1 (npm run console:screenshots)';
const IMAGES = path.join(PROJECT_ROOT, 'docs/images');
const SHOWCASE = 'OKM-ACME-STORE-0412';

test('screenshots of every console page over a realistic fleet', { skip, timeout: 600_000 }, async () => {
  const server = await startConsoleServer({ OKM_AUTO_ENROL: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  try {
    await shootEverything(server);
  } finally {
    await server.stop();
  }
});

test('screenshots of the ACLs, ACL, pending OKMs, firmware and locks pages over a seeded fleet', { skip, timeout: 600_000 }, async () => {
  const [server, browser] = await Promise.all([startConsoleServer(), launchChromium()]);
  try {
    await shootAclFirmwarePages(browser, server, IMAGES);
  } finally {
    await browser.close();
    await server.stop();
  }
});

test('screenshots of the rollouts and events pages over a fleet with rollouts part-way and webhook endpoints', { skip, timeout: 600_000 }, async () => {
  const [server, browser] = await Promise.all([startConsoleServer(ROLLOUT_SCREENSHOT_SETTINGS), launchChromium()]);
  try {
    await shootRolloutEventPages(browser, server, IMAGES);
  } finally {
    await browser.close();
    await server.stop();
  }
});

async function shootEverything(server: ConsoleServer) {
  await seedFleet(server.database, {
    customers: ['acme', 'globex', 'initech', 'umbrella', 'wayne'],
    perCustomer: { okms: 700, drifting: 64, overdue: 23, neverPolled: 11, stuck: 7 },
  });
  const adminUrl = await server.signInUrl();
  const admin = tokenOf(adminUrl);

  // One OKM lived through the API and a device: drifting on its polling interval, a message
  // delivered and one waiting, audit records, a subscriber that cannot be reached.
  await server.poll(SHOWCASE, inStepReport());
  await server.api(admin, 'PUT', `/api/v1/okms/${SHOWCASE}/customer`, { customer: 'acme' });
  await server.api(admin, 'PATCH', `/api/v1/okms/${SHOWCASE}`, {
    asset_list: ['LOCK-0412-01', 'LOCK-0412-02', 'LOCK-0412-03'],
    subscribe_urls: { status: ['http://127.0.0.1:9/keyfleet-status'] },
  });
  await server.api(admin, 'POST', `/api/v1/okms/${SHOWCASE}/messages`, { type: 'delete-assets' });
  for (const report of [inStepReport(), inStepReport(), inStepReport({ assetListDigest: 'x' })]) await server.poll(SHOWCASE, report);
  await server.api(admin, 'PATCH', `/api/v1/okms/${SHOWCASE}`, { polling_interval: 300 });
  await server.api(admin, 'POST', `/api/v1/okms/${SHOWCASE}/messages`, { type: 'delete-assets' });
  const audit = await fetch(`${server.base}/api/v1/audit/${SHOWCASE}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([
      { event: 'key_out', lock: 'LOCK-0412-02', user: 'u-1043', at: '2026-11-22T08:14:03Z' },
      { event: 'key_in', lock: 'LOCK-0412-02', user: 'u-1043', at: '2026-11-22T08:31:47Z' },
      { event: 'door_open', lock: 'LOCK-0412-01', user: 'u-2210', at: '2026-11-22T09:02:11Z' },
    ]),
  });
  assert.equal(audit.status, 201);
  // Failing subscribers of a few hundred OKMs, as the dispatcher leaves them.
  const failing = await server.database.db.selectFrom('okm_polls').select('serial_number').limit(260).execute();
  await server.database.db
    .insertInto('status_events')
    .values(
      failing.map(({ serial_number }, index) => {
        const url = index % 4 === 0 ? 'https://hooks.globex-retail.example/keyfleet' : 'https://alerts.acme-stores.example/okm-status';
        const lastAttempt = Date.now() - (index % 50) * 60_000;
        return { okm_serial: serial_number, url, host: new URL(url).host, state: index % 3 === 0 ? 'failed' : 'pending', attempts: 3 + (index % 5), next_attempt_at: lastAttempt + 300_000, last_attempt_at: lastAttempt, last_status_code: index % 4 === 0 ? 503 : null, last_error: index % 4 === 0 ? 'HTTP 503' : 'connect ETIMEDOUT' } as const;
      }),
    )
    .execute();

  const browser = await launchChromium();
  try {
    await shootPages(browser, server.base, adminUrl);
  } finally {
    await browser.close();
  }
}

async function shootPages(browser: Browser, base: string, adminUrl: string) {
  const shoot = async (name: string, url: string, ready: string, viewport = { width: 1280, height: 800 }) => {
    const watched = await watchConsole(browser, base, viewport);
    await watched.page.goto(url);
    await watched.page.waitForSelector(ready, { timeout: 20_000 });
    await watched.page.waitForTimeout(400);
    await watched.page.screenshot({ path: path.join(IMAGES, `console-${name}.png`) });
    watched.assertNoProblems();
    await watched.close();
  };
  const signedIn = (page: string) => `${adminUrl.replace('/console/#', `/console${page}#`)}`;

  await shoot('sign-in', `${base}/console/`, '#token');
  await shoot('overview', signedIn('/'), '[data-testid="fleet-counts"] canvas, .chart-box canvas');
  await shoot('okms', signedIn('/okms'), '[data-testid="okm-list"]');
  await shoot('okm-detail', signedIn(`/okms/${SHOWCASE}`), '[data-testid="drift-table"]');
  await shoot('okms-tablet', signedIn('/okms'), '[data-testid="okm-list"]', { width: 768, height: 1024 });
}
