import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { aclBody, openConsole, PROJECT_ROOT, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs/images') : undefined;
const PHONE = { width: 390, height: 844 };

const fitsTheWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

describe('console: offboarding a user and bulk actions on OKMs (preview, confirm, result)', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let adminUrl: string;
  let acmeUrl: string;
  let adminToken: string;
  const aclIds: Record<string, string> = {};
  const serials = ['SHOP-BERLIN-01', 'SHOP-BERLIN-02', 'SHOP-BERLIN-03', 'SHOP-HAMBURG-01'];
  const DEAD = 'https://hooks.example.com/retired-monitor';
  const LEAVING = 100_014;

  before(async () => {
    server = await startConsoleServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    browser = await launchChromium();
    await server.cli('customer', 'create', 'acme');
    [adminUrl, acmeUrl] = await Promise.all([server.signInUrl(), server.signInUrl('acme')]);
    adminToken = tokenOf(adminUrl);
    for (const serial of serials) {
      const status = serial.startsWith('SHOP-BERLIN') ? [DEAD, 'https://hooks.example.com/alive'] : ['https://hooks.example.com/alive'];
      await server.api(adminToken, 'PUT', `/api/v1/okms/${serial}?customer=acme`, { polling_interval: 150, subscribe_urls: { status } }, 201);
    }
    // aclBody's users are 100 000 + 7 × index: user 100 014 is in the ACLs of 3 and more users.
    const shops = [
      { key: 'berlin', name: 'Store 412 Berlin', users: 4, okm: 'SHOP-BERLIN-01' },
      { key: 'hamburg', name: 'Store 87 Hamburg', users: 5, okm: undefined },
      { key: 'kiosk', name: 'Kiosk Hbf', users: 2, okm: undefined },
    ];
    for (const [index, shop] of shops.entries()) {
      const body = { ...aclBody('acme', shop.users, 3, index + 1), name: shop.name, ...(shop.okm === undefined ? {} : { okm_id: shop.okm }) };
      aclIds[shop.key] = (await server.api(adminToken, 'POST', '/api/v1/acls', body, 201)).data.id;
    }
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  const usersOf = async (id: string) => ((await server.api(adminToken, 'GET', `/api/v1/acls/${id}?customer=acme`)).data.users as { user_id: number }[]).map((user) => user.user_id);

  for (const viewport of [{ width: 1280, height: 800 }, PHONE]) {
    const phone = viewport.width === PHONE.width;
    test(`offboarding at ${viewport.width} px: the preview names the ACLs and the OKM, the confirmation the count, the result what was done`, async () => {
      const leaving = phone ? LEAVING + 7 : LEAVING;
      const consolePage = await openConsole(browser, acmeUrl, viewport);
      const { page } = consolePage;
      await consolePage.goto('/acls');
      await page.getByRole('button', { name: 'Remove a user from every ACL' }).click();
      const panel = page.getByTestId('acl-user-removal');
      await panel.getByLabel('User id').fill(String(leaving));
      await panel.getByRole('button', { name: 'Preview' }).click();
      const preview = page.getByTestId('acl-user-removal-preview');
      await preview.getByText(`User ${leaving} is in 2 ACLs`).waitFor();
      assert.deepEqual((await preview.locator('li > a:first-child').allInnerTexts()).sort(), ['Store 412 Berlin', 'Store 87 Hamburg']);
      assert.equal(await preview.getByRole('link', { name: 'SHOP-BERLIN-01' }).count(), 1, 'the linked OKM is named');
      assert.ok(await fitsTheWidth(page), 'no sideways scroll');
      if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, phone ? 'console-offboarding-phone.png' : 'console-offboarding.png'), fullPage: true });

      await preview.getByRole('button', { name: 'Remove from 2 ACLs' }).click();
      const dialog = page.getByRole('dialog', { name: `Remove user ${leaving}?` });
      await dialog.getByText('loses access through 2 ACLs of acme and 1 OKM').waitFor();
      await dialog.getByRole('button', { name: 'Remove from 2 ACLs' }).click();
      await panel.getByText(`User ${leaving} removed from 2 ACLs of acme.`).waitFor();
      for (const key of ['berlin', 'hamburg']) assert.equal((await usersOf(aclIds[key]!)).includes(leaving), false);
      assert.ok((await usersOf(aclIds.kiosk!)).length === 2, 'an ACL without the user is untouched');
      consolePage.assertNoProblems();
      await consolePage.close();
    });
  }

  test('bulk action at 1280 px: a setting on the OKMs a serial prefix selects, previewed, confirmed, applied', async () => {
    const consolePage = await openConsole(browser, acmeUrl);
    const { page } = consolePage;
    await consolePage.goto('/okms?serial_prefix=SHOP-BERLIN');
    await page.getByRole('button', { name: 'Act on these OKMs' }).click();
    const panel = page.getByTestId('okm-bulk-action');
    await panel.getByLabel('Action', { exact: true }).selectOption({ label: 'Set a setting' });
    await panel.getByLabel('Setting').selectOption('polling_interval');
    await panel.getByLabel('Value').fill('300');
    await panel.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByTestId('okm-bulk-preview');
    await preview.getByText('3 OKMs would change: set polling_interval to 300.').waitFor();
    assert.deepEqual(await preview.locator('li a').allInnerTexts(), ['SHOP-BERLIN-01', 'SHOP-BERLIN-02', 'SHOP-BERLIN-03']);
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-okm-bulk-action.png'), fullPage: true });

    await preview.getByRole('button', { name: 'Apply to 3 OKMs' }).click();
    const dialog = page.getByRole('dialog', { name: 'Change 3 OKMs?' });
    await dialog.getByRole('button', { name: 'Apply to 3 OKMs' }).click();
    await panel.getByText('Done: set polling_interval to 300 on 3 OKMs.').waitFor();
    for (const serial of serials) {
      const okm = (await server.api(adminToken, 'GET', `/api/v1/okms/${serial}`)).data;
      assert.equal(okm.polling_interval, serial.startsWith('SHOP-BERLIN') ? 300 : 150);
    }
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('bulk action at 390 px: a dead subscriber URL removed from every OKM holding it, without sideways scroll', async () => {
    const consolePage = await openConsole(browser, adminUrl, PHONE);
    const { page } = consolePage;
    await consolePage.goto(`/okms?subscriber_url=${encodeURIComponent(DEAD)}`);
    await page.getByRole('button', { name: 'Act on these OKMs' }).click();
    const panel = page.getByTestId('okm-bulk-action');
    assert.equal(await panel.getByLabel('Subscriber URL').inputValue(), DEAD, 'the filter\'s URL is the one to remove');
    await panel.getByRole('button', { name: 'Preview' }).click();
    const preview = page.getByTestId('okm-bulk-preview');
    await preview.getByText(`3 OKMs would change: remove the subscriber ${DEAD}.`).waitFor();
    assert.ok(await fitsTheWidth(page), 'no sideways scroll at 390 px');
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-okm-bulk-action-phone.png'), fullPage: true });

    await preview.getByRole('button', { name: 'Apply to 3 OKMs' }).click();
    await page.getByRole('dialog', { name: 'Change 3 OKMs?' }).getByRole('button', { name: 'Apply to 3 OKMs' }).click();
    await panel.getByText(`Done: remove the subscriber ${DEAD} on 3 OKMs.`).waitFor();
    const holding = await server.api(adminToken, 'GET', `/api/v1/okms?subscriber_url=${encodeURIComponent(DEAD)}`);
    assert.deepEqual(holding.data, []);
    const kept = (await server.api(adminToken, 'GET', '/api/v1/okms/SHOP-BERLIN-02')).data;
    assert.deepEqual(kept.subscribe_urls.status, ['https://hooks.example.com/alive']);
    consolePage.assertNoProblems();
    await consolePage.close();
  });
});
