import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { device, listedSerials, openConsole, PROJECT_ROOT, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

const FLEET = Array.from({ length: 5 }, (_, index) => `OKM-BLOCKED-${String(index + 1).padStart(3, '0')}`);
const BLOCKED = FLEET.slice(0, 2);
/** Set (UPDATE_SCREENSHOTS=1 with this file): the screenshots of the pages it visits are written to docs/images. */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs/images') : undefined;

/**
 * A rollout group's blocked OKMs (contract §13, §15): stuck on a correction before the rollout's, so
 * never offered the version. Their count on the rollout's page leads to them, each with the
 * resolver that blocks it.
 */
describe('console: a rollout’s blocked OKMs', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let acmeUrl: string;
  let rolloutId: number;

  before(async () => {
    server = await startConsoleServer({ OKM_AUTO_ENROL: 'true' });
    browser = await launchChromium();
    await server.cli('customer', 'create', 'acme');
    acmeUrl = await server.signInUrl('acme');
    const acme = tokenOf(acmeUrl);
    const admin = tokenOf(await server.signInUrl());
    const url = 'https://firmware.example.com/batch_key/2.0.0.bin';
    await server.api(admin, 'POST', '/api/v1/firmware', { kind: 'batch_key', version: '2.0.0', url, sha256: createHash('sha256').update(url).digest('hex') }, 201);
    const devices = new Map(FLEET.map((serial) => [serial, device(server, serial, '1.0.0')]));
    for (const serial of FLEET) {
      await server.api(admin, 'PUT', `/api/v1/okms/${serial}?customer=acme`, {}, 201);
      await devices.get(serial)!.converge();
    }

    const rollout = (await server.api(acme, 'POST', '/api/v1/rollouts', { kind: 'batch_key', version: '2.0.0', groups: [{ percent: 100 }], retry_policy: { offers: 2 } }, 201)).data;
    rolloutId = rollout.id;
    await server.api(acme, 'POST', `/api/v1/rollouts/${rolloutId}/start`);
    // Told a new cache mode, which these two never take: the cacheMode correction answers each of their polls, and the batch key offer (later in seed order) is never sent.
    for (const serial of BLOCKED) {
      await server.api(acme, 'PATCH', `/api/v1/okms/${serial}`, { cache_mode: 2 });
      const reported = devices.get(serial)!.reported;
      for (let poll = 0; poll < 3; poll++) assert.deepEqual(await server.poll(serial, { ...reported, kasDateTime: Date.now() }), { cacheMode: 2 });
    }
    for (const serial of FLEET.slice(BLOCKED.length)) await devices.get(serial)!.converge();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("the group's blocked count links to its blocked OKMs, each with the resolver it is stuck on", { timeout: 120_000 }, async () => {
    const consolePage = await openConsole(browser, acmeUrl);
    const { page } = consolePage;
    await consolePage.goto(`/rollouts/${rolloutId}`);

    const group1 = page.getByTestId('group-counts-0');
    const blockedLink = group1.getByRole('link', { name: `${BLOCKED.length} blocked` });
    await blockedLink.waitFor();
    assert.equal(await group1.getByRole('link', { name: `${FLEET.length - BLOCKED.length} updated` }).count(), 1);
    assert.equal(await page.getByTestId('rollout-counts').getByRole('link', { name: `${BLOCKED.length} blocked` }).count(), 1);
    await page.getByText('2 offers not taken, then held back 1, 2, 4, 8 polls (at most 32)').waitFor();
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-rollout-blocked-counts.png'), fullPage: true });

    await blockedLink.click();
    await page.waitForURL(new RegExp(`/console/rollouts/${rolloutId}/okms\\?group=0&state=blocked$`));
    await page.getByRole('heading', { name: `Rollout #${rolloutId}: Blocked OKMs of group 1` }).waitFor();
    assert.deepEqual(await listedSerials(page, 'rollout-okm-list', BLOCKED), BLOCKED);
    const states = await page.getByTestId('rollout-okm-list').locator('tbody tr td:nth-child(3)').allInnerTexts();
    assert.deepEqual(states, BLOCKED.map(() => 'Blocked by cacheMode'));
    assert.deepEqual(await page.getByTestId('rollout-okm-list').locator('tbody tr td:nth-child(4)').allInnerTexts(), BLOCKED.map(() => 'not yet'));
    assert.equal(await page.getByLabel('State').inputValue(), 'blocked');
    await page.getByText(/Blocked: the OKM polls, but it is stuck on an earlier correction/).waitFor();
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-rollout-blocked-okms.png'), fullPage: true });

    // The OKMs that updated say nothing of a resolver.
    await page.getByLabel('State').selectOption('updated');
    await page.waitForURL(/state=updated$/);
    assert.deepEqual(await listedSerials(page, 'rollout-okm-list', FLEET.slice(BLOCKED.length)), FLEET.slice(BLOCKED.length));
    assert.equal(await page.getByTestId('blocked-by').count(), 0);
    consolePage.assertNoProblems();
    await consolePage.close();
  });
});
