import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page, Response } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { aclBody, device, openConsole, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

const SERIAL = 'OKM-STORE-412';
const USERS_PER_PAGE = 25;
/** At most this many lock columns are rendered, however wide the window. */
const MAX_COLUMNS = 40;

/** The matrix's cell count and its lock column count; it must fit its box without a horizontal scroll. */
async function renderedMatrix(page: Page) {
  return page.evaluate(() => {
    const wrap = document.querySelector('.acl-matrix-wrap')!;
    return {
      cells: document.querySelectorAll('.acl-matrix td').length,
      columns: document.querySelectorAll('.acl-matrix thead th.acl-lock').length,
      fits: wrap.scrollWidth <= wrap.clientWidth,
    };
  });
}

/** Milliseconds from a click on `selector` (in the page) until the frame after the re-render. */
const renderTime = (page: Page, selector: string) =>
  page.evaluate(
    (target) =>
      new Promise<number>((resolve) => {
        const started = performance.now();
        document.querySelector<HTMLElement>(target)!.click();
        requestAnimationFrame(() => setTimeout(() => resolve(Math.round(performance.now() - started))));
      }),
    selector,
  );

/** The accessible name of the focused element: its aria-label, else its label, else its text. */
const focusedName = (page: Page) =>
  page.evaluate(() => {
    const focused = document.activeElement as HTMLElement & { labels?: NodeListOf<HTMLLabelElement> };
    return (focused.getAttribute('aria-label') ?? focused.labels?.[0]?.textContent ?? focused.textContent ?? '').trim();
  });

/** Presses Tab until the focused element's accessible name is `name` (or matches it); fails after 80 presses. */
async function tabTo(page: Page, name: string | RegExp) {
  for (let presses = 0; presses < 80; presses++) {
    await page.keyboard.press('Tab');
    const focused = await focusedName(page);
    if (typeof name === 'string' ? focused === name : name.test(focused)) return;
  }
  throw new Error(`Tab never reached ${name}`);
}

describe('console: ACL pages', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let customerUrl: string;
  let adminToken: string;

  before(async () => {
    // One after the other: a server that cannot start must not leave a browser running that keeps the file's process alive.
    server = await startConsoleServer();
    browser = await launchChromium();
    await server.cli('customer', 'create', 'acme');
    const [adminUrl, acmeUrl] = await Promise.all([server.signInUrl(), server.signInUrl('acme')]);
    adminToken = tokenOf(adminUrl);
    customerUrl = acmeUrl;
    await server.api(adminToken, 'PUT', `/api/v1/okms/${SERIAL}?customer=acme`, {}, 201);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('an invalid value shows the API\'s message at its field; the fixed ACL saves, links the OKM, whose next polls send the new lists; delete warns of delete-assets', async () => {
    const created = await server.api(adminToken, 'POST', '/api/v1/acls', aclBody('acme', 6, 5), 201);
    const aclId: string = created.data.id;
    const okm = device(server, SERIAL);
    await okm.converge();
    const consolePage = await openConsole(browser, customerUrl);
    const { page } = consolePage;

    await consolePage.goto('/acls');
    await page.getByRole('link', { name: aclId }).click();
    const firstCell = page.getByRole('button', { name: 'User 100000, lock DOOR-0001: access' });
    await firstCell.waitFor();
    await firstCell.click();
    await page.getByRole('button', { name: 'User 100000, lock DOOR-0001: dual authentication' }).waitFor();
    await page.getByLabel('Linked OKM (serial number)').fill(SERIAL);
    await page.getByLabel('New user id').fill('555');
    await page.getByLabel('PIN hash', { exact: true }).first().fill('12-34');
    await page.getByRole('button', { name: 'Add user' }).click();

    consolePage.allowFailure('PUT', /^\/api\/v1\/acls\/[0-9a-f-]+$/, 400);
    const refused = page.waitForResponse((response) => response.request().method() === 'PUT' && response.status() === 400);
    await page.getByRole('button', { name: 'Save ACL' }).click();
    const apiMessage: string = (await (await refused).json()).error_msg;
    assert.match(apiMessage, /^users\[6\]\.pin_hash: /);
    const pinField = page.locator('#acl-user-pin_hash');
    await page.locator('#error-users-6--pin_hash').waitFor();
    assert.equal(await page.locator('#error-users-6--pin_hash').innerText(), apiMessage.replace('users[6].pin_hash: ', ''));
    assert.equal(await pinField.getAttribute('aria-invalid'), 'true');
    assert.equal(await pinField.getAttribute('aria-describedby'), 'error-users-6--pin_hash');

    await pinField.fill('f00d1234');
    await page.getByRole('button', { name: 'Save ACL' }).click();
    await page.getByText(`Saved. OKM ${SERIAL} gets the new lists on its next poll.`).waitFor();

    const saved = (await server.api(adminToken, 'GET', `/api/v1/acls/${aclId}`)).data;
    assert.equal(saved.users.length, 7);
    assert.equal(saved.users[0].permissions[0], 17);
    assert.deepEqual(saved.users[6], { ...saved.users[6], user_id: 555, pin_hash: 'f00d1234', permissions: [0, 0, 0, 0, 0] });
    assert.equal((await server.api(adminToken, 'GET', `/api/v1/acls/${aclId}/okm`)).data.okm_id, SERIAL);
    const [assets, users] = [await okm.pollOnce(), await okm.pollOnce()];
    assert.deepEqual(assets.assetList, saved.locks);
    assert.deepEqual(users.usersAssets, saved.users);

    await page.getByRole('button', { name: 'Delete ACL' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete this ACL?' });
    await dialog.waitFor();
    assert.match(await dialog.innerText(), new RegExp(`linked to OKM ${SERIAL}: a delete-assets message follows`));
    await dialog.getByRole('button', { name: 'Delete ACL' }).click();
    await page.getByText('acme has no ACLs yet.').waitFor();
    const next = await okm.pollOnce();
    assert.equal((next.message as { type: string }).type, 'delete-assets');
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('a 5 000 users × 1 000 locks ACL renders one page of the matrix: the cells in the page stay bounded while paging, at 1280 and 768 px', async (t) => {
    const big = await server.api(adminToken, 'POST', '/api/v1/acls', aclBody('acme', 5000, 1000, 7), 201);
    const aclId: string = big.data.id;
    const consolePage = await openConsole(browser, customerUrl);
    const { page } = consolePage;
    const cells = page.locator('.acl-matrix td');
    const apiAnswers: Promise<string>[] = [];
    const readAclAnswer = (response: Response) => {
      const url = new URL(response.url());
      if (url.pathname.startsWith('/api/v1/acl')) apiAnswers.push(response.body().then((body) => `${url.pathname} ${body.length}`));
    };
    page.on('response', readAclAnswer);

    await consolePage.goto('/acls');
    const listedRow = page.locator('table.acl-list tbody tr').filter({ has: page.getByRole('link', { name: aclId }) });
    await listedRow.waitFor();
    const listed = await listedRow.getByRole('cell').allInnerTexts();
    // Every body read is awaited: one begun later would fail unobserved once the page closes.
    page.off('response', readAclAnswer);
    const listAnswers = await Promise.all(apiAnswers.splice(0));
    assert.deepEqual(listed.slice(1, 4), ['5,000', '1,000', 'none']);
    assert.equal(listAnswers.length, 1, listAnswers.join(', '));
    assert.match(listAnswers[0]!, /^\/api\/v1\/acl-summaries \d+$/);
    assert.ok(Number(listAnswers[0]!.split(' ')[1]) < 10_000, listAnswers[0]);

    const started = Date.now();
    await consolePage.goto(`/acls/${aclId}`);
    await page.locator('.acl-matrix').waitFor({ timeout: 60_000 });
    const openMs = Date.now() - started;
    const wide = await renderedMatrix(page);
    assert.ok(wide.columns >= 20 && wide.columns <= MAX_COLUMNS, `${wide.columns} columns at 1280 px`);
    assert.deepEqual(wide, { cells: USERS_PER_PAGE * wide.columns, columns: wide.columns, fits: true });
    assert.match(await page.getByTestId('acl-counts').innerText(), /5,000 users × 1,000 locks/);

    const userPageTurnMs = await renderTime(page, 'button[aria-label="Next users"]');
    await page.getByRole('button', { name: 'Next users' }).click();
    await page.getByRole('button', { name: 'Next users' }).click();
    const lockPageTurnMs = await renderTime(page, 'button[aria-label="Next locks"]');
    const firstLockShown = `DOOR-${String(wide.columns + 1).padStart(4, '0')}`;
    await page.getByRole('button', { name: `User ${100_000 + 3 * USERS_PER_PAGE * 7}, lock ${firstLockShown}: `, exact: false }).first().waitFor();
    assert.equal(await cells.count(), USERS_PER_PAGE * wide.columns);

    await page.getByLabel('Find user (id begins with)').fill('134');
    await page.getByLabel('Find lock (serial contains)').fill('DOOR-09');
    const filteredCells = await cells.count();
    assert.ok(filteredCells > 0 && filteredCells <= USERS_PER_PAGE * wide.columns, `${filteredCells} cells`);

    const toggleMs = await renderTime(page, '.acl-matrix td button');
    await page.getByText('Unsaved changes').waitFor();
    const elements = await page.evaluate(() => document.getElementsByTagName('*').length);
    assert.ok(elements < 5000, `${elements} elements in the page`);

    await page.setViewportSize({ width: 768, height: 1024 });
    await consolePage.goto(`/acls/${aclId}`);
    await page.locator('.acl-matrix').waitFor({ timeout: 60_000 });
    const narrow = await renderedMatrix(page);
    assert.ok(narrow.columns >= 8 && narrow.columns < wide.columns, `${narrow.columns} columns at 768 px`);
    assert.deepEqual(narrow, { cells: USERS_PER_PAGE * narrow.columns, columns: narrow.columns, fits: true });
    t.diagnostic(`5000×1000 ACL: open ${openMs} ms (load, parse, first render); in the browser: next users ${userPageTurnMs} ms, next locks ${lockPageTurnMs} ms, one cell toggled ${toggleMs} ms; ${elements} DOM elements; ${wide.columns} lock columns at 1280 px, ${narrow.columns} at 768 px`);
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('with the keyboard alone, a customer opens New ACL, adds users and locks, sets cells with Space and the arrow keys, creates the ACL and finds it in the list', async () => {
    const consolePage = await openConsole(browser, customerUrl);
    const { page } = consolePage;
    await consolePage.goto('/acls');
    await page.getByRole('heading', { name: 'ACLs of acme' }).waitFor();

    await tabTo(page, 'New ACL');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'New ACL' }).waitFor();
    for (const [userId, pinHash] of [['2001', 'b0b0b0b0'], ['2002', 'c0c0c0c0']] as const) {
      await tabTo(page, 'New user id');
      await page.keyboard.type(userId);
      await page.keyboard.press('Tab');
      await page.keyboard.type(pinHash);
      await page.keyboard.press('Enter');
    }
    await tabTo(page, 'New lock serial');
    for (const serial of ['KEYPAD-B', 'KEYPAD-A']) {
      await page.keyboard.type(serial);
      await page.keyboard.press('Enter');
    }
    await tabTo(page, /^User 2001, lock KEYPAD-A: /);
    await page.keyboard.press('Space');
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Space');
    await page.keyboard.press('Space');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Space');
    await page.locator(':focus').and(page.getByRole('button', { name: 'User 2002, lock KEYPAD-B: access' })).waitFor();
    await tabTo(page, 'Create ACL');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: /^ACL [0-9a-f-]{36}$/ }).waitFor();
    const aclId = /\/acls\/([0-9a-f-]{36})/.exec(page.url())![1]!;
    await tabTo(page, '← ACLs');
    await page.keyboard.press('Enter');
    const row = page.locator('table.acl-list tbody tr').filter({ has: page.getByRole('link', { name: aclId }) });
    await row.waitFor();
    const listed = await row.getByRole('cell').allInnerTexts();
    const saved = (await server.api(adminToken, 'GET', `/api/v1/acls/${aclId}`)).data;

    assert.deepEqual(saved.locks, ['KEYPAD-A', 'KEYPAD-B']);
    assert.deepEqual(saved.users.map((user: { user_id: number; permissions: number[] }) => [user.user_id, user.permissions]), [[2001, [1, 17]], [2002, [0, 1]]]);
    assert.deepEqual(listed.slice(0, 3), [aclId, '2', '2']);
    consolePage.assertNoProblems();
    await consolePage.close();
  });
});
