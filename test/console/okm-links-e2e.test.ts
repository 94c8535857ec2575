import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { device, fleetPassesSince, listedSerials, openConsole, PROJECT_ROOT, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

const FLEET = Array.from({ length: 10 }, (_, index) => `OKM-LINK-${String(index + 1).padStart(3, '0')}`);
const DRIFTING = ['OKM-LINK-002', 'OKM-LINK-007'];
const SUBSCRIBED = ['OKM-LINK-003', 'OKM-LINK-004', 'OKM-LINK-009'];
const FAILING_URL = 'https://alerts.acme-stores.example/okm-status?site=all';
/** Set (UPDATE_SCREENSHOTS=1 with this file): the screenshots of the pages it visits are written to docs/images. */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs/images') : undefined;

/**
 * Issue 26, "numbers are dead ends": every count of the overview and of a rollout's page leads to
 * the list of the OKMs it counts.
 */
describe('console: every number is a link to the OKMs behind it', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let acmeUrl: string;
  let rolloutId: number;
  let silent: string[];
  let updated: string;

  before(async () => {
    server = await startConsoleServer({ OKM_AUTO_ENROL: 'true' });
    browser = await launchChromium();
    await server.cli('customer', 'create', 'acme');
    acmeUrl = await server.signInUrl('acme');
    const acme = tokenOf(acmeUrl);
    const admin = tokenOf(await server.signInUrl());
    const url = 'https://firmware.example.com/kas/2.0.0.bin';
    await server.api(admin, 'POST', '/api/v1/firmware', { kind: 'kas', version: '2.0.0', url, sha256: createHash('sha256').update(url).digest('hex') }, 201);
    const devices = new Map(FLEET.map((serial) => [serial, device(server, serial, '1.0.0')]));
    for (const serial of FLEET) {
      await server.api(admin, 'PUT', `/api/v1/okms/${serial}?customer=acme`, SUBSCRIBED.includes(serial) ? { subscribe_urls: { status: [FAILING_URL] } } : {}, 201);
      await devices.get(serial)!.converge();
    }
    // Two OKMs told a new polling interval on their last poll.
    for (const serial of DRIFTING) {
      await server.api(acme, 'PATCH', `/api/v1/okms/${serial}`, { polling_interval: 300 });
      assert.deepEqual(await devices.get(serial)!.pollOnce(), { pollingInterval: 300 });
    }
    // The subscriber fails for two of its three OKMs, as the dispatcher leaves them.
    const now = Date.now();
    await server.database.db.deleteFrom('status_events').where('url', '=', FAILING_URL).execute();
    await server.database.db
      .insertInto('status_events')
      .values(
        SUBSCRIBED.slice(0, 2).map((serial) => ({
          okm_serial: serial,
          url: FAILING_URL,
          host: new URL(FAILING_URL).host,
          state: 'pending',
          attempts: 4,
          next_attempt_at: now + 300_000,
          last_attempt_at: now - 60_000,
          last_status_code: 503,
          last_error: 'HTTP 503',
        })),
      )
      .execute();
    await fleetPassesSince(server.database.db, Date.now());

    // A rollout to half the fleet, then the other half: one OKM of the first group updates, the others have not polled since.
    const rollout = (await server.api(acme, 'POST', '/api/v1/rollouts', { kind: 'kas', version: '2.0.0', groups: [{ percent: 50 }, { percent: 100 }], auto_advance: false }, 201)).data;
    rolloutId = rollout.id;
    await server.api(acme, 'POST', `/api/v1/rollouts/${rolloutId}/start`);
    const firstGroup = (await server.database.db.selectFrom('rollout_members').select('serial_number').where('rollout_id', '=', rolloutId).where('group_index', '=', 0).orderBy('serial_number').execute()).map((row) => row.serial_number);
    [updated, ...silent] = firstGroup as [string, ...string[]];
    const okm = devices.get(updated)!;
    await okm.pollOnce();
    await okm.pollOnce();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('from the overview, corrections by resolver and a failing subscriber lead to the OKM list filtered by them', { timeout: 120_000 }, async () => {
    const consolePage = await openConsole(browser, acmeUrl);
    const { page } = consolePage;

    await page.getByTestId('corrections-pollingInterval').click();
    await page.waitForURL(/\/console\/okms\?last_correction=pollingInterval$/);
    assert.deepEqual(await listedSerials(page, 'okm-list', DRIFTING), DRIFTING);
    assert.equal(await page.getByLabel('Sent on the last poll').inputValue(), 'pollingInterval');
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-okms-by-correction.png') });

    await page.goBack();
    await page.getByTestId('failing-subscriber-okms').click();
    await page.waitForURL((url) => url.pathname === '/console/okms' && url.searchParams.get('subscriber_url') === FAILING_URL);
    assert.deepEqual(await listedSerials(page, 'okm-list', SUBSCRIBED), SUBSCRIBED);
    assert.equal(await page.getByLabel('Status subscriber URL').inputValue(), FAILING_URL);

    // The filters are the page's own too: a correction picked in the list's form filters by that
    // correction alone, even when picked as soon as Clear filters has rendered (before any effect
    // of that render has run: a slow browser's user sees this) and not by the cleared subscriber too.
    await page.evaluate(async () => {
      document.querySelector<HTMLAnchorElement>('form[aria-label="Filter OKMs"] a')!.click();
      await new Promise((resolve) => setTimeout(resolve, 0));
      const correction = document.querySelector<HTMLSelectElement>('#filter-correction')!;
      correction.value = 'pollingInterval';
      correction.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await page.waitForURL(/last_correction=pollingInterval/);
    assert.equal(new URL(page.url()).search, '?last_correction=pollingInterval');
    assert.deepEqual(await listedSerials(page, 'okm-list', DRIFTING), DRIFTING);
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test("from a rollout's page, each group count leads to that group's OKMs in that state, with their offer time", { timeout: 120_000 }, async () => {
    const consolePage = await openConsole(browser, acmeUrl);
    const { page } = consolePage;
    await consolePage.goto(`/rollouts/${rolloutId}`);

    const group1 = page.getByTestId('group-counts-0');
    // Within one polling interval of the group's start its OKMs with no poll read as waiting for their first poll; later, silent.
    const silentCount = group1.getByRole('link', { name: new RegExp(`^${silent.length} (silent|waiting for their first poll)`) });
    await silentCount.waitFor();
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-rollout-counts.png') });
    await silentCount.click();
    await page.waitForURL(new RegExp(`/console/rollouts/${rolloutId}/okms\\?group=0&state=silent$`));
    await page.getByRole('heading', { name: `Rollout #${rolloutId}: Silent OKMs of group 1` }).waitFor();
    assert.deepEqual(await listedSerials(page, 'rollout-okm-list', silent), silent);
    assert.deepEqual(await page.getByTestId('rollout-okm-list').locator('tbody tr td:nth-child(4)').allInnerTexts(), silent.map(() => 'not yet'));
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-rollout-okms.png') });

    await page.getByRole('link', { name: 'Back to the rollout' }).click();
    await group1.getByRole('link', { name: '1 updated' }).click();
    await page.waitForURL(new RegExp(`/okms\\?group=0&state=updated$`));
    assert.deepEqual(await listedSerials(page, 'rollout-okm-list', [updated]), [updated]);
    const row = page.getByTestId('rollout-okm-list').locator('tbody tr').first();
    assert.equal(await row.locator('td:nth-child(3)').innerText(), 'Updated');
    assert.match(await row.locator('td:nth-child(4) time').getAttribute('datetime') ?? '', /^\d{4}-\d\d-\d\dT/);
    assert.equal(await row.locator('td:nth-child(6)').innerText(), '2.0.0');

    // The second group has not started: its OKMs are not offered yet, none silent.
    await page.getByLabel('State').selectOption('scheduled');
    await page.getByLabel('Group').selectOption('1');
    await page.waitForURL(new RegExp(`/okms\\?group=1&state=scheduled$`));
    const secondGroup = FLEET.filter((serial) => serial !== updated && !silent.includes(serial));
    assert.deepEqual(await listedSerials(page, 'rollout-okm-list', secondGroup), secondGroup);
    consolePage.assertNoProblems();
    await consolePage.close();
  });
});
