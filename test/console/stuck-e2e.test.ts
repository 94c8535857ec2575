import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { stuckReason } from '../../console/src/format.ts';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { eventually } from '../helpers/eventually.ts';
import { fleetPassesSince, inStepReport, openConsole, PROJECT_ROOT, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

const FLEET = ['OKM-STUCK-001', 'OKM-STUCK-002', 'OKM-STUCK-003', 'OKM-STUCK-004', 'OKM-STUCK-005'];
/** The OKM list's order: the refuser sorts before the others. */
const LISTED = ['OKM-REFUSER-01', ...FLEET];

/** Their devices keep polling every 300 s whatever they are told; the fleet's interval, 150 s, is desired. */
const STUCK = ['OKM-STUCK-002', 'OKM-STUCK-004'];
/** Stuck, in the list's order: three offers not taken make the refuser stuck on kasFirmware too. */
const LISTED_STUCK = ['OKM-REFUSER-01', ...STUCK];
/** Told the interval once, and took it. */
const TOOK_IT = 'OKM-STUCK-005';
/** Pinned to a KAS release it never installs, and otherwise as every OKM of the fleet but its clock. */
const REFUSER = 'OKM-REFUSER-01';
const PINNED_KAS = '2.5.0';
/** Set (UPDATE_SCREENSHOTS=1 with this file): the screenshot of a stuck OKM's page is written to docs/images. */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs/images') : undefined;

const listedSerials = (page: Page) => page.getByTestId('okm-list').locator('tbody tr td:first-child a').allInnerTexts();
/** Waits for the list to show exactly these OKMs: a new filter's page replaces the one shown before it. */
const listShows = (page: Page, serials: string[]) =>
  eventually(async () => JSON.stringify(await listedSerials(page)) === JSON.stringify(serials), 20_000, `the list of ${serials.join(', ')}`);

/** contract §15 in the console: the OKM page's "Stuck" badge and reason, the list's filter, the overview's count. */
describe('console: stuck OKMs', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let acmeUrl: string;
  let acme: string;

  before(async () => {
    server = await startConsoleServer();
    browser = await launchChromium();
    await server.cli('customer', 'create', 'acme');
    acmeUrl = await server.signInUrl('acme');
    acme = tokenOf(acmeUrl);
    const admin = tokenOf(await server.signInUrl());
    for (const serial of FLEET) {
      await server.api(admin, 'PUT', `/api/v1/okms/${serial}?customer=acme`, {}, 201);
      assert.deepEqual(await server.poll(serial, inStepReport()), {});
    }
    for (const serial of STUCK) {
      for (let round = 0; round < 3; round++) assert.deepEqual(await server.poll(serial, inStepReport({ pollingInterval: 300 })), { pollingInterval: 150 });
    }
    assert.deepEqual(await server.poll(TOOK_IT, inStepReport({ pollingInterval: 300 })), { pollingInterval: 150 });
    assert.deepEqual(await server.poll(TOOK_IT, inStepReport()), {});
    const url = `https://firmware.example.com/kas/${PINNED_KAS}.bin`;
    await server.api(admin, 'POST', '/api/v1/firmware', { kind: 'kas', version: PINNED_KAS, url, sha256: createHash('sha256').update(url).digest('hex') }, 201);
    await server.api(admin, 'PUT', `/api/v1/okms/${REFUSER}?customer=acme`, { firmware: { kas: PINNED_KAS, batch_key: null, wireless_key: null } }, 201);
    // The default retry policy: three offers not taken, then the offer is held back a poll.
    for (let round = 0; round < 3; round++) assert.deepEqual(Object.keys((await server.poll(REFUSER, inStepReport({ kasDateTime: Date.now() - 600_000 }))) ?? {}), ['kasFirmware']);
    await fleetPassesSince(server.database.db, Date.now());
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("the overview's stuck count leads to the list filtered by state=stuck, each listed OKM badged Stuck", { timeout: 120_000 }, async () => {
    const consolePage = await openConsole(browser, acmeUrl);
    const { page } = consolePage;

    const count = page.getByTestId('count-stuck');
    assert.equal(await count.innerText(), String(LISTED_STUCK.length));
    await count.click();
    await page.waitForURL(/\/console\/okms\?state=stuck$/);

    await listShows(page, LISTED_STUCK);
    assert.equal(await page.getByLabel('State').inputValue(), 'stuck');
    const badges = page.getByTestId('okm-list').locator('tbody tr td:nth-child(5)');
    // One badge per OKM: stuck wins over drifting (and over in step), the title names the rest.
    assert.deepEqual(await badges.allInnerTexts(), LISTED_STUCK.map(() => 'Stuck'));
    assert.match((await badges.first().locator('.badge-stuck').getAttribute('title')) ?? '', /^stuck: sent kasFirmware on 3 polls in a row without effect, since \d\d:\d\d; the last poll sent kasFirmware/);
    assert.match((await badges.nth(1).locator('.badge-stuck').getAttribute('title')) ?? '', /^stuck: sent pollingInterval on 3 polls in a row without effect, since \d\d:\d\d; the last poll sent pollingInterval/);

    // The filter is the list's own too.
    await page.getByRole('link', { name: 'Clear filters' }).click();
    await listShows(page, LISTED);
    await page.getByLabel('State').selectOption('stuck');
    await page.waitForURL(/state=stuck/);
    await listShows(page, LISTED_STUCK);
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test("a stuck OKM's page shows the Stuck badge and why: the resolver, how many polls, since when; one that took its correction shows neither", { timeout: 120_000 }, async () => {
    const serial = STUCK[0]!;
    const { stuck } = (await server.api(acme, 'GET', `/api/v1/okms/${serial}`)).data;
    // More polls without effect: the count goes on.
    await server.poll(serial, inStepReport({ pollingInterval: 300 }));
    await server.poll(serial, inStepReport({ pollingInterval: 300 }));
    const consolePage = await openConsole(browser, acmeUrl);
    const { page } = consolePage;
    await consolePage.goto(`/okms/${serial}`);

    const reason = page.getByTestId('stuck-reason');
    await reason.waitFor();
    assert.equal(await page.getByRole('heading', { level: 1 }).locator('.badge-stuck').innerText(), 'Stuck');
    // The browser's zone and language (e2e-fixture: Berlin, British English).
    const expected = stuckReason({ ...stuck, polls: 5 }, Date.now(), { locale: 'en-GB', timeZone: 'Europe/Berlin' });
    assert.equal(await reason.innerText(), `Stuck: ${expected}.`);
    assert.match(expected, /^sent pollingInterval on 5 polls in a row without effect, since \d\d:\d\d$/);
    await page.getByTestId('drift-table').waitFor();
    assert.equal(
      await page.locator('[data-testid="drift-table"] tbody tr[data-resolver="pollingInterval"]').getByTestId('sent-on-last-poll').innerText(),
      'Also sent on the last poll, without effect: the OKM is stuck on it.',
    );
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-okm-stuck.png') });

    await consolePage.goto(`/okms/${TOOK_IT}`);
    await page.getByTestId('drift-table').waitFor();
    assert.equal(await page.getByRole('heading', { level: 1 }).locator('.badge').allInnerTexts().then((labels) => labels.join(' ')), 'In step');
    assert.equal(await page.getByTestId('stuck-reason').count(), 0);
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test("a firmware offer held back by the retry policy says so in the drift table, and the correction after it is the one sent next", { timeout: 120_000 }, async () => {
    const consolePage = await openConsole(browser, acmeUrl);
    const { page } = consolePage;
    await consolePage.goto(`/okms/${REFUSER}`);

    const table = page.getByTestId('drift-table');
    await table.waitFor();
    const rowOf = (resolver: string) => table.locator(`tbody tr[data-resolver="${resolver}"]`);
    await rowOf('kasFirmware').getByText('Held back by the retry policy').waitFor();
    await rowOf('kasDateTime').getByText('Will be sent next').waitFor();
    // It was offered on the last poll too, and the configuration has not changed since.
    assert.equal(await rowOf('kasFirmware').getByTestId('sent-on-last-poll').innerText(), 'Offered on the last poll and not taken; the retry policy skips it on the next polls.');
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-okm-held-back.png'), fullPage: true });
    // What the page said is what the next poll does.
    assert.deepEqual(Object.keys((await server.poll(REFUSER, inStepReport({ kasDateTime: Date.now() - 600_000 }))) ?? {}), ['kasDateTime']);
    consolePage.assertNoProblems();
    await consolePage.close();
  });
});
