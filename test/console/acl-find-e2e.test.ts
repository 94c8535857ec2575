import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { aclBody, openConsole, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

/** The first cell of each row of the ACL list, as the operator reads it. */
const listedNames = (page: Page) => page.locator('table.acl-list tbody tr td:first-child a').allInnerTexts();

describe('console: finding ACLs by name, user id and lock serial', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let customerUrl: string;
  let adminToken: string;
  const ids: Record<string, string> = {};

  before(async () => {
    server = await startConsoleServer();
    browser = await launchChromium();
    await server.cli('customer', 'create', 'acme');
    const [adminUrl, acmeUrl] = await Promise.all([server.signInUrl(), server.signInUrl('acme')]);
    adminToken = tokenOf(adminUrl);
    customerUrl = acmeUrl;
    const shops = [
      { key: 'berlin', name: 'Store 412 Berlin', users: 3, locks: 4, seed: 1 },
      { key: 'hamburg', name: 'Store 87 Hamburg', users: 5, locks: 2, seed: 2 },
      { key: 'unnamed', name: undefined, users: 2, locks: 6, seed: 3 },
    ];
    for (const shop of shops) {
      const body = { ...aclBody('acme', shop.users, shop.locks, shop.seed), ...(shop.name === undefined ? {} : { name: shop.name }) };
      // Each shop has its own lock range, so that a lock serial finds one ACL.
      body.locks = body.locks.map((serial) => `${shop.key.toUpperCase()}-${serial}`);
      const created = await server.api(adminToken, 'POST', '/api/v1/acls', body, 201);
      ids[shop.key] = created.data.id;
    }
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('the list shows each ACL by its name (its id when it has none) and finds ACLs by name, user id and lock serial', async () => {
    const consolePage = await openConsole(browser, customerUrl);
    const { page } = consolePage;
    await consolePage.goto('/acls');
    await page.locator('table.acl-list tbody tr').first().waitFor();

    const shown = await listedNames(page);
    assert.deepEqual([...shown].sort(), ['Store 412 Berlin', 'Store 87 Hamburg', ids.unnamed!].sort());
    assert.equal(await page.getByRole('link', { name: 'Store 412 Berlin' }).getAttribute('href'), `/console/acls/${ids.berlin}`);

    const search = page.getByRole('search', { name: 'Find ACLs' });
    await search.getByLabel('Search by').selectOption({ label: 'Name contains' });
    await search.getByLabel('Search for').fill('berlin');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/name_contains=berlin/);
    await page.getByText('1 ACL matches').waitFor();
    assert.deepEqual(await listedNames(page), ['Store 412 Berlin']);

    // The user ids of aclBody are 100 000 + 7 × index: user 100 014 is in the ACLs of 3 and 5 users.
    await search.getByLabel('Search by').selectOption({ label: 'User id' });
    await search.getByLabel('Search for').fill('100014');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/user_id=100014/);
    await page.getByText('2 ACLs match').waitFor();
    assert.deepEqual([...(await listedNames(page))].sort(), ['Store 412 Berlin', 'Store 87 Hamburg']);

    await search.getByLabel('Search by').selectOption({ label: 'Lock serial' });
    await search.getByLabel('Search for').fill('UNNAMED-DOOR-0006');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/lock=UNNAMED-DOOR-0006/);
    await page.getByText('1 ACL matches').waitFor();
    assert.deepEqual(await listedNames(page), [ids.unnamed]);

    await search.getByLabel('Search for').fill('NOWHERE-1');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No ACL of acme holds lock NOWHERE-1.').waitFor();

    // A user id that is no number is refused in the form, with no request sent.
    await search.getByLabel('Search by').selectOption({ label: 'User id' });
    await search.getByLabel('Search for').fill('12ab');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.getByText('A user id is a whole number from 0 to 999 999 999.').waitFor();

    await search.getByRole('button', { name: 'Clear' }).click();
    await page.waitForURL((url) => url.search === '');
    await page.locator('table.acl-list tbody tr').nth(2).waitFor();
    assert.equal((await listedNames(page)).length, 3);
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('the editor names an ACL, the list then shows the name, and the PIN field says what to enter', async () => {
    const consolePage = await openConsole(browser, customerUrl);
    const { page } = consolePage;
    await consolePage.goto(`/acls/${ids.unnamed}`);
    await page.locator('.acl-matrix').waitFor();

    const hint = await page.locator('#acl-new-pin-hint').innerText();
    assert.match(hint, /not the PIN itself/);
    assert.match(hint, /letters and digits/);
    assert.equal(await page.getByLabel('PIN hash', { exact: true }).first().getAttribute('aria-describedby'), 'acl-new-pin-hint');

    await page.getByLabel('Name', { exact: true }).fill('Kiosk at the station');
    await page.getByRole('button', { name: 'Save ACL' }).click();
    await page.getByText('Saved.').waitFor();
    const saved = (await server.api(adminToken, 'GET', `/api/v1/acls/${ids.unnamed}`)).data;
    assert.equal(saved.name, 'Kiosk at the station');
    await page.getByRole('heading', { name: 'ACL Kiosk at the station' }).waitFor();

    await page.getByRole('link', { name: '← ACLs' }).click();
    await page.getByRole('link', { name: 'Kiosk at the station' }).waitFor();

    // Emptying the name removes it: the list shows the id again.
    await page.getByRole('link', { name: 'Kiosk at the station' }).click();
    await page.getByLabel('Name', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Save ACL' }).click();
    await page.getByText('Saved.').waitFor();
    assert.equal('name' in (await server.api(adminToken, 'GET', `/api/v1/acls/${ids.unnamed}`)).data, false);
    consolePage.assertNoProblems();
    await consolePage.close();
  });
});
