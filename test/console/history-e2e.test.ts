import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { eventually } from '../helpers/eventually.ts';
import { device, openConsole, PROJECT_ROOT, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

/** Set (UPDATE_SCREENSHOTS=1 with this file): the History page's and an ACL page's screenshots are written to docs/images. */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs/images') : undefined;

const SERIAL = 'OKM-STORE-412';
const LOCK = 'CAB-0007';
const ENROLMENT_CODE = '00112233445566778899aabbccddeeff';
const PHONE = { width: 390, height: 844 };

const user = (userId: number, permissions: number[], pin = 'a9f0c3d2') => ({
  user_id: userId,
  pin_hash: pin,
  auth_time: 8,
  sounder: false,
  sounder_delay: 0,
  sounder_duration: 0,
  sounder_volume: 2,
  permissions,
});

/** An ACL of locks L1, L7 and L9: user 9 opens L1 and L7, user 1234 L1 only. */
const STORE_ACL = { customer: 'acme', name: 'Store 412', locks: ['L1', 'L7', 'L9'], users: [user(9, [1, 1, 0]), user(1234, [1, 0, 0])] };
/** The change an auditor asks about: user 1234 may now open L7, user 9 is gone, user 55 came, and 1234's PIN changed. */
const STORE_ACL_CHANGED = { ...STORE_ACL, users: [user(55, [1, 1, 0]), user(1234, [1, 1, 0], 'b7e1aa90')] };

/** The rows of a history table as (action, change lines), top to bottom. */
async function historyRows(table: Locator) {
  return table.locator('tbody tr').evaluateAll((rows) =>
    rows.map((row) => ({
      action: row.getAttribute('data-action'),
      id: Number(row.getAttribute('data-entry')),
      lines: [...row.querySelectorAll('[data-testid="change-lines"] li')].map((line) => line.textContent),
    })),
  );
}

/** The rows once they are `count` (a list that changed keeps its rows until the new ones arrive), or what is there after `timeoutMs`. */
async function rowsOnceThere(table: Locator, count: number, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await historyRows(table);
    if (rows.length === count || Date.now() > deadline) return rows;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Nothing on the page is wider than the window: no sideways scroll. */
const fitsTheWidth = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

describe('console: History and the history of an OKM, an ACL, a rollout and a lock', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let adminUrl: string;
  let adminToken: string;
  let aclId: string;
  let rolloutId: number;

  before(async () => {
    // One after the other: a server that cannot start must not leave a browser running that keeps the file's process alive.
    server = await startConsoleServer();
    browser = await launchChromium();
    await server.cli('customer', 'create', 'acme');
    await server.cli('customer', 'create', 'beta');
    await server.cli('cert', 'create', '--customer', 'acme', '--name', 'acme-main');
    const apiKey = (await server.cli('apikey', 'create', '--customer', 'acme')).key as string;
    adminUrl = await server.signInUrl();
    adminToken = tokenOf(adminUrl);

    const firmwareUrl = 'https://firmware.example.com/kas/2.0.0.bin';
    await server.api(adminToken, 'POST', '/api/v1/firmware', { kind: 'kas', version: '2.0.0', url: firmwareUrl, sha256: createHash('sha256').update(firmwareUrl).digest('hex') }, 201);
    await server.api(adminToken, 'PUT', `/api/v1/okms/${SERIAL}?customer=acme`, {}, 201);
    await device(server, SERIAL, '1.0.0').converge();
    await server.api(adminToken, 'PUT', '/api/v1/okms/OKM-BETA-1?customer=beta', {}, 201);
    const enrolled = await fetch(`${server.base}/v1/dlock`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ serial_no: LOCK, type: 'cabinet', certificate: 'acme-main', enrolment_code: ENROLMENT_CODE, base64: false }),
    });
    assert.equal(enrolled.status, 200, await enrolled.text());
    rolloutId = (await server.api(adminToken, 'POST', '/api/v1/rollouts', { kind: 'kas', version: '2.0.0', customer: 'acme', groups: [{ percent: 100 }] }, 201)).data.id;
    await server.api(adminToken, 'POST', `/api/v1/rollouts/${rolloutId}/start`);
    await server.api(adminToken, 'PATCH', `/api/v1/okms/${SERIAL}`, { polling_interval: 300 });
    aclId = (await server.api(adminToken, 'POST', '/api/v1/acls', STORE_ACL, 201)).data.id;
    await server.api(adminToken, 'PUT', `/api/v1/acls/${aclId}`, STORE_ACL_CHANGED);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('History lists the changes made through the API, newest first, an ACL change per user and lock', async () => {
    const consolePage = await openConsole(browser, adminUrl);
    const { page } = consolePage;
    await page.getByRole('navigation', { name: 'Console pages' }).getByRole('link', { name: 'History' }).click();
    const table = page.getByTestId('history');
    await table.waitFor();
    const rows = await historyRows(table);
    assert.deepEqual(
      rows.map((row) => row.id),
      [...rows].map((row) => row.id).sort((a, b) => b - a),
      'newest first',
    );
    assert.deepEqual(rows.slice(0, 2).map((row) => row.action), ['acl.updated', 'acl.created']);
    for (const action of ['okm.configured', 'rollout.started', 'rollout.created', 'dlock.enrolled', 'customer.created']) {
      assert.ok(rows.some((row) => row.action === action), `an entry ${action}: ${rows.map((row) => row.action).join(', ')}`);
    }
    assert.deepEqual(rows[0]!.lines, ['user 9 removed', 'user 55 added (access to L1, L7)', 'user 1234: PIN changed', 'user 1234: lock L7 no access → access']);

    const changed = table.locator('tbody tr').first();
    assert.match(await changed.getByRole('cell').nth(1).innerText(), /\(API token\)$/);
    assert.equal(await changed.getByRole('link', { name: aclId }).getAttribute('href'), `/console/acls/${aclId}?customer=acme`);
    const enrolment = table.locator('tbody tr[data-action="dlock.enrolled"]');
    assert.match(await enrolment.getByRole('cell').nth(1).innerText(), /\(DLock API key\)$/);
    assert.match(await table.locator('tbody tr[data-action="customer.created"]').first().getByRole('cell').nth(1).innerText(), /\(command line\)$/);
    // Secrets are never on the page, not even redacted.
    assert.doesNotMatch(await table.innerText(), /redacted|a9f0c3d2|b7e1aa90/);
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-history.png') });
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('a filter narrows the list and stays in the address; the CSV download is the same selection', async () => {
    const consolePage = await openConsole(browser, adminUrl);
    const { page } = consolePage;
    await consolePage.goto('/history');
    const table = page.getByTestId('history');
    await table.waitFor();
    const form = page.getByRole('form', { name: 'Filter the history' });

    await form.getByLabel('Who (kind:id)').fill('Alice');
    await form.getByRole('button', { name: 'Show' }).click();
    await form.getByText('Write the kind and the id').waitFor();
    assert.equal(new URL(page.url()).search, '', 'nothing sent');

    await form.getByLabel('Who (kind:id)').fill('');
    await form.getByLabel('Kind of thing').selectOption('acl');
    await form.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/\/console\/history\?entity_type=acl$/);
    assert.deepEqual((await rowsOnceThere(table, 2)).map((row) => row.action), ['acl.updated', 'acl.created']);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('history-csv').click()]);
    assert.match(download.suggestedFilename(), /^keyfleet-audit-\d{4}-\d{2}-\d{2}\.csv$/);
    const csv = fs.readFileSync((await download.path())!, 'utf8');
    const [header, ...records] = csv.trim().split('\n');
    assert.match(header!, /^id,time,/);
    assert.equal(records.length, 2, csv);
    assert.ok(records[0]!.includes('acl.updated') && records[1]!.includes('acl.created'), csv);

    await form.getByLabel('Action').selectOption('acl.created');
    await form.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/entity_type=acl&action=acl\.created$/);
    assert.deepEqual((await rowsOnceThere(table, 1)).map((row) => row.action), ['acl.created']);
    assert.deepEqual((await historyRows(table))[0]!.lines, ['name: Store 412', '3 locks: L1, L7, L9', 'user 9: access to L1, L7', 'user 1234: access to L1']);

    // Back undoes the filter; an actor named in a row filters to what they did.
    await page.goBack();
    await rowsOnceThere(table, 2);
    await table.locator('tbody tr').first().getByRole('cell').nth(1).getByRole('link').click();
    await page.waitForURL(/\/console\/history\?actor=token%3A/);
    assert.equal(await form.getByLabel('Kind of thing').inputValue(), '', 'the form says what the list shows');
    const byToken = await eventually(async () => {
      const rows = await historyRows(table);
      return rows.length > 0 && rows.every((row) => row.action !== 'customer.created' && row.action !== 'dlock.enrolled') && rows;
    }, 15_000, "the token's entries only");
    assert.ok(byToken.some((row) => row.action === 'acl.created'));
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test("a customer's auditor sees History with its own customer's changes only; a token without audit:read has no History", async () => {
    const auditor = (await server.cli('console', '--url', server.base, '--customer', 'acme', '--scope', 'okm:read acl:read lock:read audit:read')).url as string;
    const consolePage = await openConsole(browser, auditor);
    const { page } = consolePage;
    await page.getByRole('navigation', { name: 'Console pages' }).getByRole('link', { name: 'History' }).click();
    await page.getByTestId('history').locator('tbody tr').first().waitFor();
    const rows = await historyRows(page.getByTestId('history'));
    assert.ok(rows.length > 0);
    assert.equal(await page.getByLabel('Customer', { exact: true }).count(), 0, 'no customer to choose');
    assert.doesNotMatch(await page.getByTestId('history').innerText(), /OKM-BETA-1/);
    consolePage.assertNoProblems();
    await consolePage.close();

    const desk = await openConsole(browser, await server.signInUrl('acme'));
    assert.equal(await desk.page.getByRole('navigation', { name: 'Console pages' }).getByRole('link', { name: 'History' }).count(), 0);
    await desk.goto(`/okms/${SERIAL}`);
    await desk.page.getByRole('heading', { name: 'Configuration' }).waitFor();
    assert.equal(await desk.page.getByTestId('entity-history').count(), 0, 'no history section without audit:read');
    desk.assertNoProblems();
    await desk.close();
  });

  test("an ACL's page shows its history, a save adds to it, and it links to History filtered to the ACL", async () => {
    const consolePage = await openConsole(browser, adminUrl);
    const { page } = consolePage;
    await consolePage.goto(`/acls/${aclId}?customer=acme`);
    const history = page.getByTestId('entity-history');
    const table = history.getByTestId('history');
    const before = await rowsOnceThere(table, 2);
    assert.deepEqual(before[0]!.lines, ['user 9 removed', 'user 55 added (access to L1, L7)', 'user 1234: PIN changed', 'user 1234: lock L7 no access → access']);

    await page.getByLabel('Name', { exact: true }).fill('Store 412 Leeds');
    await page.getByRole('button', { name: 'Save ACL' }).click();
    await page.getByText('Saved.').waitFor();
    const after = await rowsOnceThere(table, 3);
    assert.deepEqual(after[0], { action: 'acl.updated', id: after[0]!.id, lines: ['name: Store 412 → Store 412 Leeds'] });
    if (SCREENSHOTS) {
      // The whole page in one window: a full-page capture would paint the sticky save bar over the matrix.
      await page.setViewportSize({ width: 1280, height: await page.evaluate(() => document.documentElement.scrollHeight) });
      await page.screenshot({ path: path.join(SCREENSHOTS, 'console-acl-history.png') });
      await page.setViewportSize({ width: 1280, height: 800 });
    }

    await history.getByRole('link', { name: 'All changes of this ACL →' }).click();
    await page.waitForURL(`**/console/history?entity_type=acl&entity_id=${aclId}`);
    assert.deepEqual((await rowsOnceThere(page.getByTestId('history'), 3)).map((row) => row.action), ['acl.updated', 'acl.updated', 'acl.created']);
    await page.getByRole('link', { name: 'open its page' }).click();
    await page.waitForURL(`**/console/acls/${aclId}`);
    await page.getByTestId('entity-history').getByTestId('history').waitFor();
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test("an OKM's, a rollout's and a lock's pages each show their own history", async () => {
    const consolePage = await openConsole(browser, adminUrl);
    const { page } = consolePage;
    await consolePage.goto(`/okms/${SERIAL}`);
    const okmRows = await rowsOnceThere(page.getByTestId('entity-history').getByTestId('history'), 2);
    assert.deepEqual(okmRows.map((row) => row.action), ['okm.configured', 'okm.configured']);
    assert.ok(okmRows[0]!.lines.some((line) => /^polling_interval: .+ → 300$/.test(line!)), okmRows[0]!.lines.join('\n'));

    await consolePage.goto(`/rollouts/${rolloutId}`);
    const rolloutRows = await rowsOnceThere(page.getByTestId('entity-history').getByTestId('history'), 2);
    assert.deepEqual(rolloutRows.map((row) => row.action), ['rollout.started', 'rollout.created']);
    assert.ok(rolloutRows[0]!.lines.includes('state: ready → running'), rolloutRows[0]!.lines.join('\n'));

    await consolePage.goto('/locks');
    await page.getByRole('link', { name: LOCK }).click();
    await page.getByTestId('lock-facts').getByText('acme-main').waitFor();
    assert.match(await page.getByTestId('lock-facts').innerText(), /cabinet/);
    const lockRows = await rowsOnceThere(page.getByTestId('entity-history').getByTestId('history'), 1);
    assert.deepEqual(lockRows.map((row) => row.action), ['dlock.enrolled']);
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('History and an ACL page with its history fit a 390 px phone, and History a 1280×800 window, without sideways scrolling', async () => {
    const wide = await openConsole(browser, adminUrl);
    await wide.goto('/history');
    await wide.page.getByTestId('history').waitFor();
    assert.ok(await fitsTheWidth(wide.page), 'History at 1280 px');
    wide.assertNoProblems();
    await wide.close();

    const phone = await openConsole(browser, adminUrl, PHONE);
    const { page } = phone;
    await phone.goto('/history');
    await page.getByTestId('history').waitFor();
    assert.ok(await fitsTheWidth(page), 'History at 390 px');
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-history-phone.png') });

    await phone.goto(`/acls/${aclId}?customer=acme`);
    const history = page.getByTestId('entity-history');
    await history.getByTestId('history').waitFor();
    assert.ok(await history.evaluate((section) => section.scrollWidth <= section.clientWidth), 'the ACL history section at 390 px');
    assert.ok(await fitsTheWidth(page), 'the ACL page at 390 px');
    if (SCREENSHOTS) {
      await history.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(SCREENSHOTS, 'console-acl-history-phone.png') });
    }
    phone.assertNoProblems();
    await phone.close();
  });
});
