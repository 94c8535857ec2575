import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { parseCsv } from '../helpers/csv.ts';
import { aclBody, openConsole, PROJECT_ROOT, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

/** Set (UPDATE_SCREENSHOTS=1 with this file): the screenshots of what it walks through are written to docs/images. */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs/images') : undefined;
const PHONE = { width: 390, height: 844 };
const DAY = 86_400_000;
const fitsTheWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
/** The yyyy-mm-dd of a time in Berlin, where the console's browser is. */
const berlinDay = (time: number) => new Date(time).toLocaleDateString('sv-SE', { timeZone: 'Europe/Berlin' });

/** What `read` gives once it equals `expected` (a list being reloaded shows Loading first), or what it last gave after 10 s. */
async function once<T>(read: () => Promise<T>, expected: T): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (JSON.stringify(value) === JSON.stringify(expected) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The text of the CSV file a button downloads. */
async function downloaded(page: Page, button: Locator): Promise<{ name: string; rows: string[][] }> {
  const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
  const file = await download.path();
  return { name: download.suggestedFilename(), rows: parseCsv(fs.readFileSync(file, 'utf8')) };
}

describe('console: customer pickers, ACLs by name, lock search ignoring case, audit records newest first, CSV downloads', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let adminUrl: string;
  let acmeUrl: string;
  let adminToken: string;
  const SERIAL = 'SHOP-AUDIT-01';
  const now = Date.now();

  before(async () => {
    server = await startConsoleServer();
    browser = await launchChromium();
    for (const name of ['acme', 'acme-west', 'globex']) await server.cli('customer', 'create', name);
    [adminUrl, acmeUrl] = await Promise.all([server.signInUrl(), server.signInUrl('acme')]);
    adminToken = tokenOf(adminUrl);
    for (const serial of [SERIAL, 'SHOP-AUDIT-02', 'SHOP-AUDIT-03']) await server.api(adminToken, 'PUT', `/api/v1/okms/${serial}?customer=acme`, { polling_interval: 150 }, 201);
    await server.api(adminToken, 'PUT', '/api/v1/okms/GLOBEX-01?customer=globex', {}, 201);
    for (const [index, name] of ['Zeta depot', 'alpha store', 'Mid site', undefined].entries()) {
      const body = { ...aclBody('acme', 2, 2, index + 1), ...(name === undefined ? {} : { name }) };
      // One ACL's locks in another case: the search finds it whatever the case typed.
      if (index === 2) body.locks = ['GATE-0001', 'GATE-0002'];
      await server.api(adminToken, 'POST', '/api/v1/acls', body, 201);
    }
    const { db } = server.database;
    for (const [ago, record] of [
      [10 * DAY, '{"event":"open","door":1}'],
      [3 * DAY, '{"event":"close","door":1}'],
      [1_800_000, '{"event":"alarm","door":2}'],
    ] as const) {
      await db.insertInto('okm_audit_records').values({ okm_serial: SERIAL, received_at: now - ago, record }).execute();
    }
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  for (const viewport of [{ width: 1280, height: 800 }, PHONE]) {
    const phone = viewport.width === PHONE.width;
    const suffix = phone ? '-phone' : '';

    test(`customer picker at ${viewport.width} px: the names offered as one types, a typo named at once with the names it may mean`, async () => {
      const consolePage = await openConsole(browser, adminUrl, viewport);
      const { page } = consolePage;
      await consolePage.goto(`/okms/${SERIAL}`);
      const field = page.getByLabel('Customer', { exact: true });
      await field.fill('acm');
      const hint = page.getByTestId('assign-customer-unknown');
      await hint.getByText('No customer is named “acm”: did you mean').waitFor();
      assert.deepEqual(await page.getByTestId('assign-customer-customers').locator('option').evaluateAll((options) => options.map((option) => (option as HTMLOptionElement).value)), ['acme', 'acme-west']);
      assert.ok(await fitsTheWidth(page), 'no sideways scroll');
      if (SCREENSHOTS) await page.getByRole('heading', { name: 'Operator' }).locator('..').screenshot({ path: path.join(SCREENSHOTS, `console-customer-picker${suffix}.png`) });
      await hint.getByRole('button', { name: 'acme-west' }).click();
      assert.equal(await field.inputValue(), 'acme-west');
      await hint.waitFor({ state: 'detached' });
      await field.fill('acmee');
      await page.getByTestId('assign-customer-unknown').getByText('No customer is named “acmee”.').waitFor();
      consolePage.assertNoProblems();
      await consolePage.close();
    });

    test(`ACL list at ${viewport.width} px: by name ignoring case, unnamed last; a lock found whatever its case, and the form says so`, async () => {
      const consolePage = await openConsole(browser, acmeUrl, viewport);
      const { page } = consolePage;
      await consolePage.goto('/acls');
      const names = page.locator('table tbody tr th a, table tbody tr td:first-child a');
      await page.getByRole('link', { name: 'alpha store' }).waitFor();
      const shown = (await names.allInnerTexts()).map((text) => text.trim());
      assert.deepEqual(shown.slice(0, 3), ['alpha store', 'Mid site', 'Zeta depot']);
      assert.equal(shown.length, 4);
      await page.getByLabel('Search by').selectOption('lock');
      await page.getByText('The whole serial number, upper or lower case alike.').waitFor();
      await page.getByLabel('Search for').fill('gate-0002');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForURL(/lock=gate-0002/);
      const listed = async () => (await names.allInnerTexts()).map((text) => text.trim());
      assert.deepEqual(await once(listed, ['Mid site']), ['Mid site']);
      assert.ok(await fitsTheWidth(page), 'no sideways scroll');
      if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, `console-acls-lock-search${suffix}.png`), fullPage: !phone });
      consolePage.assertNoProblems();
      await consolePage.close();
    });

    test(`audit records at ${viewport.width} px: newest first, the days chosen, and the same selection as CSV`, async () => {
      const consolePage = await openConsole(browser, acmeUrl, viewport);
      const { page } = consolePage;
      await consolePage.goto(`/okms/${SERIAL}`);
      const table = page.getByTestId('audit');
      await table.getByText('"alarm"').waitFor();
      // The events the table shows once they are `expected` (a new window shows Loading first), or what it last showed.
      const events = (expected: string[]) =>
        once(async () => (await page.getByTestId('audit').locator('tbody tr pre').allInnerTexts()).map((text) => JSON.parse(text).event as string), expected);
      assert.deepEqual(await events(['alarm', 'close', 'open']), ['alarm', 'close', 'open']);

      await page.getByLabel('Received from').fill(berlinDay(now - 5 * DAY));
      assert.deepEqual(await events(['alarm', 'close']), ['alarm', 'close']);
      const csv = await downloaded(page, page.getByTestId('audit-csv'));
      assert.match(csv.name, new RegExp(`^keyfleet-${SERIAL}-audit-\\d{4}-\\d{2}-\\d{2}\\.csv$`));
      assert.deepEqual(csv.rows[0], ['id', 'received_at', 'record']);
      assert.deepEqual(csv.rows.slice(1).map((row) => JSON.parse(row[2]!).event), ['alarm', 'close']);

      await page.getByLabel('to', { exact: true }).fill(berlinDay(now - 2 * DAY));
      assert.deepEqual(await events(['close']), ['close']);
      assert.ok(await fitsTheWidth(page), 'no sideways scroll');
      if (SCREENSHOTS) await page.getByRole('heading', { name: 'Audit records' }).locator('..').screenshot({ path: path.join(SCREENSHOTS, `console-okm-audit-records${suffix}.png`) });
      consolePage.assertNoProblems();
      await consolePage.close();
    });
  }

  test("a rollout's OKM list downloads as CSV with its state filter", async () => {
    const url = 'https://firmware.example.com/kas/9.0.0.bin';
    await server.api(adminToken, 'POST', '/api/v1/firmware', { kind: 'kas', version: '9.0.0', url, sha256: createHash('sha256').update(url).digest('hex') }, 201);
    const acmeToken = tokenOf(acmeUrl);
    const rollout = (await server.api(acmeToken, 'POST', '/api/v1/rollouts', { kind: 'kas', version: '9.0.0', filter: { serial_numbers: ['SHOP-AUDIT-01', 'SHOP-AUDIT-02'] }, groups: [{ percent: 100 }] }, 201)).data;
    const consolePage = await openConsole(browser, acmeUrl);
    const { page } = consolePage;
    await consolePage.goto(`/rollouts/${rollout.id}/okms`);
    await page.getByText('SHOP-AUDIT-02').first().waitFor();
    const csv = await downloaded(page, page.getByTestId('rollout-okms-csv'));
    assert.match(csv.name, new RegExp(`^keyfleet-rollout-${rollout.id}-okms-\\d{4}-\\d{2}-\\d{2}\\.csv$`));
    assert.deepEqual(csv.rows[0]!.slice(0, 3), ['serial_number', 'group', 'state']);
    assert.deepEqual(csv.rows.slice(1).map((row) => [row[0], row[2]]), [['SHOP-AUDIT-01', 'scheduled'], ['SHOP-AUDIT-02', 'scheduled']]);
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test("the OKM list's CSV holds the OKMs its filters select, and a customer's session only its own", async () => {
    const consolePage = await openConsole(browser, acmeUrl);
    const { page } = consolePage;
    await consolePage.goto('/okms?serial_prefix=SHOP-AUDIT');
    await page.getByRole('link', { name: 'SHOP-AUDIT-03' }).waitFor();
    const csv = await downloaded(page, page.getByTestId('okms-csv'));
    assert.match(csv.name, /^keyfleet-okms-\d{4}-\d{2}-\d{2}\.csv$/);
    assert.deepEqual(csv.rows[0]!.slice(0, 2), ['serial_number', 'customer']);
    assert.deepEqual(csv.rows.slice(1).map((row) => row[0]), ['SHOP-AUDIT-01', 'SHOP-AUDIT-02', 'SHOP-AUDIT-03']);
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-okms-csv.png') });

    await consolePage.goto('/okms');
    await page.getByRole('link', { name: 'SHOP-AUDIT-01' }).waitFor();
    const all = await downloaded(page, page.getByTestId('okms-csv'));
    assert.ok(!all.rows.some((row) => row[0] === 'GLOBEX-01'), "another customer's OKM is not in the file");
    consolePage.assertNoProblems();
    await consolePage.close();
  });
});
