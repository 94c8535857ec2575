import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { forEachDatabase, type TestApp } from '../helpers/app.ts';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { eventually } from '../helpers/eventually.ts';
import type { ProviderPerson } from '../helpers/openid-provider.ts';
import { appWithSingleSignOn, type SingleSignOnWorld } from '../helpers/single-sign-on.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';
import { requireBuiltConsole, watchConsole } from './e2e-fixture.ts';

const PEOPLE: ProviderPerson[] = [{ sub: 'erin', email: 'erin@example.com', name: 'Erin Auditor', groups: ['kf-audit'] }];

/**
 * A person signed in by single sign-on reads History as themselves: their own sign-in is an
 * entry of theirs, and the CSV download is a plain link that their session cookie authenticates
 * (no bearer token, nothing fetched into the page first).
 */
forEachDatabase('console: History for a person signed in by single sign-on', (kind) => {
  describe('in Chromium', { skip: browserTestSkip() }, () => {
    let world: SingleSignOnWorld;
    let t: TestApp;
    let browser: Browser;
    let base: string;
    let admin: string;

    before(async () => {
      requireBuiltConsole();
      world = await appWithSingleSignOn(kind, PEOPLE);
      ({ t, base } = world);
      browser = await launchChromium();
      await createTestCustomer(t, 'acme');
      admin = await issueTestToken(t, { scopes: ['admin'] });
      const created = await fetch(`${base}/api/v1/role-bindings`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'group', value: 'kf-audit', role: 'auditor' }),
      });
      assert.equal(created.status, 201, await created.text());
    });
    after(async () => {
      await browser?.close();
      await world?.close();
    });

    test("an auditor sees their own sign-in in History and downloads the selection's CSV through a link the session cookie authenticates", { timeout: 60_000 }, async () => {
      const consolePage = await watchConsole(browser, base);
      consolePage.allowFailure('GET', /^\/api\/v1\/me$/, 401);
      const { page } = consolePage;
      await consolePage.goto('/history');
      await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
      await page.getByLabel('Who').fill('erin');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByTestId('signed-in-person').waitFor();
      assert.equal(new URL(page.url()).pathname, '/console/history');

      const table = page.getByTestId('history');
      const signIn = table.locator('tbody tr[data-action="session.started"]').first();
      await signIn.waitFor();
      assert.equal(await signIn.getByRole('cell').nth(1).innerText(), 'Erin Auditor (person)');
      await signIn.getByRole('link', { name: 'Erin Auditor (person)' }).click();
      await page.waitForURL(/\/console\/history\?actor=person%3A\d+$/);
      await eventually(async () => {
        const actions = await table.locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-action')));
        return actions.length > 0 && actions.every((action) => action === 'session.started');
      }, 15_000, "only Erin's entries");

      const link = page.getByTestId('history-csv');
      assert.match((await link.getAttribute('href'))!, /^\/api\/v1\/audit-log\/export\?actor=person%3A\d+&format=csv$/);
      const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
      const [header, ...records] = fs.readFileSync((await download.path())!, 'utf8').trim().split('\n');
      assert.match(header!, /^id,time,/);
      assert.ok(records.length >= 1 && records.every((record) => record.includes('session.started')), records.join('\n'));
      assert.match(download.suggestedFilename(), /^keyfleet-audit-\d{4}-\d{2}-\d{2}\.csv$/);
      // The same address without the browser's cookie is refused: the cookie authenticated the download, the console holds no token.
      assert.equal((await fetch(`${base}${await link.getAttribute('href')}`)).status, 401);
      assert.deepEqual(await page.evaluate(() => ({ session: sessionStorage.length, local: localStorage.length })), { session: 0, local: 0 });
      consolePage.assertNoProblems();
      await consolePage.close();
    });
  });
});
