import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { aclBody, openConsole, PROJECT_ROOT, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs/images') : undefined;
const ACL_SAVE = /^\/api\/v1\/acls\/[0-9a-f-]+$/;

/** How much wider than the window the page is (0: no sideways scroll). */
const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

describe('console: a save that meets another writer\'s change shows the conflict instead of overwriting', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let customerUrl: string;
  let token: string;

  before(async () => {
    server = await startConsoleServer();
    browser = await launchChromium();
    await server.cli('customer', 'create', 'acme');
    customerUrl = await server.signInUrl('acme');
    token = tokenOf(customerUrl);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** An ACL, and the same ACL with a user added by an API writer while the console has it open (no If-Match: the call of contract §0.6). */
  async function aclChangedByTheApi(aclId: string, userId: number) {
    const current = (await server.api(token, 'GET', `/api/v1/acls/${aclId}`)).data;
    const added = { ...current.users[0], user_id: userId, pin_hash: 'c0ffee42', permissions: current.locks.map(() => 1) };
    await server.api(token, 'PUT', `/api/v1/acls/${aclId}`, { ...current, users: [...current.users, added] }, 200);
  }

  test('ACL editor: their added user and your edited cell both survive a merge; the conflict view at 1280 and 390 px', async () => {
    const aclId: string = (await server.api(token, 'POST', '/api/v1/acls', { ...aclBody('acme', 6, 5), name: 'Store 412' }, 201)).data.id;
    const consolePage = await openConsole(browser, customerUrl);
    const { page } = consolePage;
    consolePage.allowFailure('PUT', ACL_SAVE, 412);
    await consolePage.goto(`/acls/${aclId}`);
    await page.getByRole('button', { name: 'User 100000, lock DOOR-0001: access' }).click();
    await page.getByRole('button', { name: 'User 100000, lock DOOR-0001: dual authentication' }).waitFor();

    await aclChangedByTheApi(aclId, 777);
    await page.getByRole('button', { name: 'Save ACL' }).click();

    const conflict = page.getByTestId('version-conflict');
    await conflict.waitFor();
    const text = await conflict.innerText();
    assert.match(text, /Someone else changed this ACL while you were editing/);
    assert.match(text, /Their changes \(saved\)\s+Added user 777/);
    assert.match(text, /Your changes \(not saved\)\s+Changed 1 permission \(100000 × DOOR-0001\)/);
    assert.equal((await server.api(token, 'GET', `/api/v1/acls/${aclId}`)).data.users.length, 7, 'the API writer\'s user is still there');
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-acl-conflict.png') });
    await page.setViewportSize({ width: 390, height: 844 });
    await conflict.scrollIntoViewIfNeeded();
    assert.equal(await overflow(page), 0, 'no sideways scroll at 390 px');
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-acl-conflict-phone.png') });
    await page.setViewportSize({ width: 1280, height: 800 });

    await conflict.getByRole('button', { name: 'Merge: apply my changes on top of theirs' }).click();
    await page.getByTestId('merge-notice').waitFor();
    await page.getByRole('button', { name: 'Save ACL' }).click();
    await page.getByText('Saved.').waitFor();

    const saved = (await server.api(token, 'GET', `/api/v1/acls/${aclId}`)).data;
    assert.deepEqual(saved.users.map((user: { user_id: number }) => user.user_id).slice(-1), [777]);
    assert.equal(saved.users.length, 7);
    assert.equal(saved.users[0].permissions[0], 17);
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('OKM form: the other operator\'s window and your polling interval both survive a merge', async () => {
    const serial = 'CONFLICT-OKM-1';
    const adminToken = tokenOf(await server.signInUrl());
    await server.api(adminToken, 'PUT', `/api/v1/okms/${serial}?customer=acme`, {}, 201);
    const consolePage = await openConsole(browser, customerUrl);
    const { page } = consolePage;
    consolePage.allowFailure('PATCH', new RegExp(`^/api/v1/okms/${serial}$`), 412);
    await consolePage.goto(`/okms/${serial}`);
    const polling = page.getByLabel('Polling interval (s)', { exact: true });
    await polling.fill('300');

    await server.api(token, 'PATCH', `/api/v1/okms/${serial}`, { key_checkout_window: { time: 60, contact: 'open' } }, 200);
    await page.getByRole('button', { name: 'Save changes' }).click();

    const conflict = page.getByTestId('version-conflict');
    await conflict.waitFor();
    const text = await conflict.innerText();
    assert.match(text, /Someone else changed this OKM configuration/);
    assert.match(text, /Their changes \(saved\)\s+Changed key checkout window\s+Changed window contact/);
    assert.match(text, /Your changes \(not saved\)\s+Changed polling interval/);
    await conflict.evaluate((element) => element.scrollIntoView({ block: 'start' }));
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-okm-conflict.png') });
    await conflict.getByRole('button', { name: 'Merge: apply my changes on top of theirs' }).click();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();

    const saved = (await server.api(token, 'GET', `/api/v1/okms/${serial}`)).data;
    assert.equal(saved.polling_interval, 300);
    assert.deepEqual(saved.key_checkout_window, { time: 60, contact: 'open' });
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('rollout thresholds: the other operator\'s error threshold and your success threshold both survive a merge', async () => {
    const adminToken = tokenOf(await server.signInUrl());
    for (const version of ['1.0.0', '2.0.0']) {
      const url = `https://firmware.example.com/kas/${version}.bin`;
      await server.api(adminToken, 'POST', '/api/v1/firmware', { kind: 'kas', version, url, sha256: createHash('sha256').update(url).digest('hex') }, 201);
    }
    await server.api(adminToken, 'PUT', '/api/v1/okms/CONFLICT-RO-1?customer=acme', {}, 201);
    const rolloutId: number = (await server.api(token, 'POST', '/api/v1/rollouts', { kind: 'kas', version: '2.0.0', groups: [{ percent: 100 }], filter: { serial_numbers: ['CONFLICT-RO-1'] } }, 201)).data.id;
    const consolePage = await openConsole(browser, customerUrl);
    const { page } = consolePage;
    consolePage.allowFailure('PATCH', new RegExp(`^/api/v1/rollouts/${rolloutId}$`), 412);
    await consolePage.goto(`/rollouts/${rolloutId}`);
    const recovery = page.getByTestId('rollout-recovery');
    await recovery.getByLabel('Success threshold (%)').fill('80');

    await server.api(token, 'PATCH', `/api/v1/rollouts/${rolloutId}`, { error_threshold: 20 }, 200);
    await recovery.getByRole('button', { name: 'Save thresholds' }).click();

    const conflict = page.getByTestId('version-conflict');
    await conflict.waitFor();
    const text = await conflict.innerText();
    assert.match(text, /Their changes \(saved\)\s+Set the error threshold to 20/);
    assert.match(text, /Your changes \(not saved\)\s+Set the success threshold to 80/);
    await conflict.evaluate((element) => element.scrollIntoView({ block: 'start' }));
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-rollout-conflict.png') });
    await conflict.getByRole('button', { name: 'Merge: apply my changes on top of theirs' }).click();
    await recovery.getByRole('button', { name: 'Save thresholds' }).click();
    await page.getByRole('status').filter({ hasText: 'Thresholds saved.' }).waitFor();

    const saved = (await server.api(token, 'GET', `/api/v1/rollouts/${rolloutId}`)).data;
    assert.deepEqual([saved.success_threshold, saved.error_threshold], [80, 20]);
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('ACL editor: reload shows their version and drops yours; nothing is written by the console', async () => {
    const aclId: string = (await server.api(token, 'POST', '/api/v1/acls', aclBody('acme', 3, 2), 201)).data.id;
    const consolePage = await openConsole(browser, customerUrl);
    const { page } = consolePage;
    consolePage.allowFailure('PUT', ACL_SAVE, 412);
    await consolePage.goto(`/acls/${aclId}`);
    await page.getByRole('button', { name: 'User 100000, lock DOOR-0001: access' }).click();
    await aclChangedByTheApi(aclId, 888);
    const before = await server.api(token, 'GET', `/api/v1/acls/${aclId}`);

    await page.getByRole('button', { name: 'Save ACL' }).click();
    await page.getByTestId('version-conflict').getByRole('button', { name: 'Reload theirs (drop my changes)' }).click();

    await page.getByRole('button', { name: 'User 100000, lock DOOR-0001: access' }).waitFor();
    await page.getByRole('button', { name: 'User 888, lock DOOR-0001: access' }).waitFor();
    assert.equal(await page.getByTestId('version-conflict').count(), 0);
    assert.deepEqual(await server.api(token, 'GET', `/api/v1/acls/${aclId}`), before);
    consolePage.assertNoProblems();
    await consolePage.close();
  });
});
