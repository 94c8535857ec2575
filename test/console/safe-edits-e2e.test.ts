import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Dialog, Page } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { aclBody, device, openConsole, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

/**
 * Issue 26: edits survive the pages' automatic refresh and are not left behind without a
 * question, and the drift view tells what the last poll sent apart from what the next one
 * will send, the same way in the header's badge, the drift table and the OKM list.
 *
 * Every OKM here is enrolled by its device's first poll and then follows every correction it
 * gets until it is in step.
 */
const EDITED = 'SAFE-EDIT-1';
const LEFT = 'SAFE-LEAVE-1';
const CORRECTED = 'SAFE-DRIFT-1';
const OTHER_OPERATOR_WINDOW = { time: 60, contact: 'open' };

/** Waits for the page's next GET of the OKM record (its automatic refresh). */
const nextRecordFetch = (page: Page, serial: string) =>
  page.waitForResponse((response) => response.request().method() === 'GET' && new URL(response.url()).pathname === `/api/v1/okms/${serial}`);

/** The dialog the next action opens, answered with `answer`; undefined when none opens within `ms`. */
function nextDialog(page: Page, answer: 'accept' | 'dismiss', ms = 2_000): Promise<{ type: string; message: string } | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      page.off('dialog', onDialog);
      resolve(undefined);
    }, ms);
    const onDialog = (dialog: Dialog) => {
      clearTimeout(timer);
      resolve({ type: dialog.type(), message: dialog.message() });
      void (answer === 'accept' ? dialog.accept() : dialog.dismiss());
    };
    page.once('dialog', onDialog);
  });
}

/** Types into a field as a person does (a click first: a page may only ask before unload after a user gesture). */
async function typeInto(page: Page, label: string, text: string) {
  const field = page.getByLabel(label, { exact: true });
  await field.click();
  await field.press('ControlOrMeta+a');
  await page.keyboard.type(text);
}

/** The OKM list's row of `serial`: its state, what the last poll sent, what the next poll sends. */
async function listRow(page: Page, serial: string) {
  const row = page.locator('[data-testid="okm-list"] tbody tr').filter({ has: page.getByRole('link', { name: serial, exact: true }) });
  await row.waitFor();
  const cells = await row.locator('td').allInnerTexts();
  return { state: cells[4], sent: cells[5], next: cells[6] };
}

describe('console: edits are safe and the drift view tells the truth', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let adminUrl: string;
  let adminToken: string;
  /** Each OKM's device, which remembers what it applied. */
  const devices = new Map<string, ReturnType<typeof device>>();

  before(async () => {
    server = await startConsoleServer({ OKM_AUTO_ENROL: 'true' });
    browser = await launchChromium();
    for (const serial of [EDITED, LEFT, CORRECTED]) {
      const okm = device(server, serial);
      await okm.pollOnce();
      await okm.converge();
      devices.set(serial, okm);
    }
    await server.cli('customer', 'create', 'acme');
    adminUrl = await server.signInUrl();
    adminToken = tokenOf(adminUrl);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('the automatic refresh keeps what is typed in the OKM form, says when the server changed the OKM meanwhile, and loads the server’s values on request', async () => {
    const consolePage = await openConsole(browser, adminUrl);
    const { page } = consolePage;
    await page.clock.install();
    await consolePage.goto(`/okms/${EDITED}`);
    await page.getByTestId('drift-table').waitFor();

    await typeInto(page, 'Polling interval (s)', '300');
    await page.getByLabel('Cache mode').selectOption('2');
    await typeInto(page, 'Status-event subscriber URLs (one a line)', 'https://hooks.example.com/okm');
    let refreshed = nextRecordFetch(page, EDITED);
    await page.clock.fastForward(10_000);
    await refreshed;
    await page.waitForTimeout(300);
    const afterQuietRefresh = {
      polling: await page.getByLabel('Polling interval (s)').inputValue(),
      cache: await page.getByLabel('Cache mode').inputValue(),
      urls: await page.getByLabel('Status-event subscriber URLs (one a line)').inputValue(),
      saveEnabled: await page.getByRole('button', { name: 'Save changes' }).isEnabled(),
      notices: await page.getByText('changed on the server since you started editing').count(),
    };

    // Another operator changes a field this one did not touch.
    await server.api(adminToken, 'PATCH', `/api/v1/okms/${EDITED}`, { key_checkout_window: OTHER_OPERATOR_WINDOW });
    refreshed = nextRecordFetch(page, EDITED);
    await page.clock.fastForward(10_000);
    await refreshed;
    const notice = page.getByText('changed on the server since you started editing');
    await notice.waitFor({ timeout: 3_000 }).catch(() => undefined);
    const afterServerChange = {
      polling: await page.getByLabel('Polling interval (s)').inputValue(),
      cache: await page.getByLabel('Cache mode').inputValue(),
      urls: await page.getByLabel('Status-event subscriber URLs (one a line)').inputValue(),
      saveEnabled: await page.getByRole('button', { name: 'Save changes' }).isEnabled(),
      notice: await notice.isVisible(),
    };

    assert.deepEqual(afterQuietRefresh, { polling: '300', cache: '2', urls: 'https://hooks.example.com/okm', saveEnabled: true, notices: 0 });
    assert.deepEqual(afterServerChange, { polling: '300', cache: '2', urls: 'https://hooks.example.com/okm', saveEnabled: true, notice: true });

    await page.getByRole('button', { name: 'Load the server’s values' }).click();
    await notice.waitFor({ state: 'hidden' });
    assert.equal(await page.getByLabel('Polling interval (s)').inputValue(), '');
    assert.equal(await page.getByLabel('Key checkout window (s)').inputValue(), '60');
    assert.equal(await page.getByRole('button', { name: 'Save changes' }).isEnabled(), false);

    // A save after such a notice sends only this operator's own changes: the other's window stays.
    await typeInto(page, 'Polling interval (s)', '45');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    const saved = (await server.api(adminToken, 'GET', `/api/v1/okms/${EDITED}`)).data;
    assert.equal(saved.polling_interval, 45);
    assert.deepEqual(saved.key_checkout_window, OTHER_OPERATOR_WINDOW);
    // The confirmation is brief.
    await page.clock.fastForward(10_000);
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor({ state: 'hidden' });
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('leaving an OKM page with unsaved changes asks first, in the console and when the browser leaves; staying keeps the edits', async () => {
    const consolePage = await openConsole(browser, adminUrl);
    const { page } = consolePage;
    await consolePage.goto(`/okms/${LEFT}`);
    await page.getByTestId('drift-table').waitFor();
    const okmsLink = page.getByRole('navigation', { name: 'Console pages' }).getByRole('link', { name: 'OKMs', exact: true });

    // Nothing changed: no question.
    const unchangedDialog = nextDialog(page, 'dismiss', 1_000);
    await okmsLink.click();
    await page.waitForURL(/\/console\/okms$/);
    assert.equal(await unchangedDialog, undefined);

    await page.getByRole('link', { name: LEFT }).click();
    await page.getByTestId('drift-table').waitFor();
    await typeInto(page, 'Polling interval (s)', '120');
    const stayed = nextDialog(page, 'dismiss');
    await okmsLink.click();
    const stayQuestion = await stayed;
    await page.waitForTimeout(300);
    assert.match(stayQuestion?.message ?? 'no question', /unsaved changes/i);
    assert.equal(stayQuestion?.type, 'confirm');
    assert.deepEqual({ url: new URL(page.url()).pathname, polling: await page.getByLabel('Polling interval (s)').inputValue() }, { url: `/console/okms/${LEFT}`, polling: '120' });

    const unload = nextDialog(page, 'dismiss');
    await page.close({ runBeforeUnload: true });
    assert.equal((await unload)?.type, 'beforeunload');
    assert.equal(page.isClosed(), false);

    const left = nextDialog(page, 'accept');
    await okmsLink.click();
    assert.equal((await left)?.type, 'confirm');
    await page.waitForURL(/\/console\/okms$/);
    const record = (await server.api(adminToken, 'GET', `/api/v1/okms/${LEFT}`)).data;
    assert.equal(record.polling_interval, null, 'leaving discarded the edit');
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('leaving the ACL editor with unsaved changes asks first, in the console and when the browser leaves', async () => {
    const created = await server.api(adminToken, 'POST', '/api/v1/acls', aclBody('acme', 3, 3), 201);
    const aclId: string = created.data.id;
    const consolePage = await openConsole(browser, await server.signInUrl('acme'));
    const { page } = consolePage;
    await consolePage.goto(`/acls/${aclId}`);
    const cell = page.getByRole('button', { name: 'User 100000, lock DOOR-0001: access' });
    await cell.click();
    await page.getByText('Unsaved changes').waitFor();

    const stayed = nextDialog(page, 'dismiss');
    await page.getByRole('link', { name: '← ACLs' }).click();
    const stayQuestion = await stayed;
    await page.waitForTimeout(300);
    assert.match(stayQuestion?.message ?? 'no question', /unsaved changes/i);
    assert.deepEqual({ url: new URL(page.url()).pathname, unsaved: await page.getByText('Unsaved changes').isVisible() }, { url: `/console/acls/${aclId}`, unsaved: true });

    const unload = nextDialog(page, 'dismiss');
    await page.close({ runBeforeUnload: true });
    assert.equal((await unload)?.type, 'beforeunload');
    assert.equal(page.isClosed(), false);

    const left = nextDialog(page, 'accept');
    await page.getByRole('navigation', { name: 'Console pages' }).getByRole('link', { name: 'Overview' }).click();
    assert.equal((await left)?.type, 'confirm');
    await page.waitForURL(/\/console\/$/);
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('after a save the badge, the drift table and the list agree on what the next poll sends; once the device got it, it is shown as sent on the last poll, not as next', async () => {
    const okm = devices.get(CORRECTED)!;
    const consolePage = await openConsole(browser, adminUrl);
    const { page } = consolePage;
    const view = async () => {
      await page.getByRole('button', { name: 'Refresh', disabled: false }).waitFor();
      const highlighted = page.locator('[data-testid="drift-table"] tr.highlight');
      return {
        badge: await page.locator('h1 .badges').innerText(),
        last: (await page.getByTestId('drift-last').count()) === 0 ? null : await page.getByTestId('drift-last').innerText(),
        next: await page.getByTestId('drift-verdict').innerText(),
        nextRow: (await highlighted.count()) === 0 ? null : await highlighted.getAttribute('data-resolver'),
        cacheModeRow: (await page.locator('tr[data-resolver="cacheMode"] td').last().innerText()).replace(/\s+/g, ' '),
      };
    };
    const listed = async () => {
      await consolePage.goto(`/okms?serial_prefix=${CORRECTED}`);
      return listRow(page, CORRECTED);
    };

    await consolePage.goto(`/okms/${CORRECTED}`);
    await page.getByTestId('drift-table').waitFor();
    await page.getByLabel('Cache mode').selectOption('2');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await page.getByTestId('drift-verdict').filter({ hasText: 'cacheMode' }).waitFor();
    const afterSave = await view();
    const listAfterSave = await listed();

    const sent = await okm.pollOnce();
    await consolePage.goto(`/okms/${CORRECTED}`);
    await page.getByTestId('drift-table').waitFor();
    const afterSending = await view();
    const listAfterSending = await listed();

    const inStep = await okm.pollOnce();
    await consolePage.goto(`/okms/${CORRECTED}`);
    await page.getByTestId('drift-table').waitFor();
    const afterReport = await view();
    const listAfterReport = await listed();

    // One comparison of everything seen, so that a failure shows every view that disagrees.
    assert.deepEqual(
      { afterSave, listAfterSave, sent, afterSending, listAfterSending, inStep, afterReport, listAfterReport },
      {
        afterSave: { badge: 'Correction due', last: 'Sent on the last poll: nothing', next: 'Next poll: cacheMode: set cache mode 2', nextRow: 'cacheMode', cacheModeRow: 'Will be sent next set cache mode 2' },
        listAfterSave: { state: 'Correction due', sent: '—', next: 'cacheMode' },
        sent: { cacheMode: 2 },
        afterSending: { badge: 'Drifting', last: 'Sent on the last poll: cacheMode', next: 'Next poll: nothing to correct', nextRow: null, cacheModeRow: 'Sent on the last poll set cache mode 2' },
        listAfterSending: { state: 'Drifting', sent: 'cacheMode', next: '—' },
        inStep: {},
        afterReport: { badge: 'In step', last: 'Sent on the last poll: nothing', next: 'Next poll: nothing to correct', nextRow: null, cacheModeRow: 'In step' },
        listAfterReport: { state: 'In step', sent: '—', next: '—' },
      },
    );
    consolePage.assertNoProblems();
    await consolePage.close();
  });
});
