import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Response } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { inStepReport, listedSerials, seedFleet, startConsoleServer, tokenOf, watchConsole, type ConsoleServer } from './e2e-fixture.ts';

/**
 * The console in Chromium against `keyfleet serve` on a temp database and a real port, signed
 * in with what `keyfleet console` prints. Any console error, page error, failed request or
 * answer ≥ 400 the test did not allow fails the test that caused it (e2e-fixture.ts).
 *
 * The fleet: acme and globex with 6 OKMs each (1 never polled, 1 overdue and in step, 2
 * drifting, 2 in step), and DRIFTING, enrolled by its first poll (no customer), whose device
 * reports a polling interval of 999 s against the fleet's 150 s.
 */
const DRIFTING = 'E2E-DRIFTING-1';
const EXPECTED_COUNTS = { total: 13, 'in-step': 6, drifting: 5, overdue: 2, 'never-polled': 2, pending: 0 };

describe('operator console in a browser', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let adminUrl: string;
  before(async () => {
    // No clock tolerance: a token is refused the moment it expires. DRIFTING enrols by polling.
    server = await startConsoleServer({ JWT_CLOCK_TOLERANCE_SECONDS: '0', OKM_AUTO_ENROL: 'true' });
    await seedFleet(server.database, { customers: ['acme', 'globex'], perCustomer: { okms: 6, drifting: 2, overdue: 1, neverPolled: 1 }, prefix: 'E2E' });
    await server.poll(DRIFTING, inStepReport({ pollingInterval: 999, kasFirmware: '9.9.9' }));
    await server.poll(DRIFTING, inStepReport({ pollingInterval: 999, kasFirmware: '9.9.9' }));
    adminUrl = await server.signInUrl();
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('the URL of `keyfleet console` signs in, leaves no token in the address bar, loads under 500 KB, and the overview counts the seeded fleet', async (context) => {
    const { page, assertNoProblems, close } = await watchConsole(browser, server.base);
    const consoleBytes: Promise<number>[] = [];
    const countConsoleFile = (answer: Response) => {
      if (new URL(answer.url()).pathname.startsWith('/console/')) consoleBytes.push(answer.body().then((body) => body.length));
    };
    page.on('response', countConsoleFile);

    const response = await page.goto(adminUrl);
    await page.getByTestId('count-total').waitFor();
    // Every body read is awaited: one begun later would fail unobserved once the page closes.
    page.off('response', countConsoleFile);
    const firstLoad = (await Promise.all(consoleBytes)).reduce((sum, bytes) => sum + bytes, 0);

    assert.match(response?.headers()['content-security-policy'] ?? '', /default-src 'self'/);
    assert.equal(new URL(page.url()).hash, '');
    const counts: Record<string, number> = {};
    for (const tone of Object.keys(EXPECTED_COUNTS)) counts[tone] = Number((await page.getByTestId(`count-${tone}`).innerText()).replace(/\D/g, ''));
    assert.deepEqual(counts, EXPECTED_COUNTS);
    assert.ok(await page.locator('.chart-box canvas').first().isVisible(), 'the firmware chart is drawn');
    // contract §12's budget (bench/RESULTS.md): the console's own files, uncompressed.
    assert.ok(firstLoad > 100_000 && firstLoad < 500_000, `first load ${firstLoad} bytes`);
    context.diagnostic(`console first load: ${firstLoad} bytes`);
    assertNoProblems();
    await close();
  });

  test('the OKM list filters by customer and by KAS firmware, from the URL and from the form', async () => {
    const { page, assertNoProblems, close } = await watchConsole(browser, server.base);
    await page.goto(adminUrl.replace('/console/#', '/console/okms#'));
    await page.getByTestId('okm-list').waitFor();

    await page.getByLabel('Customer', { exact: true }).fill('globex');
    await page.getByLabel('Customer', { exact: true }).press('Enter');
    await page.waitForURL(/customer=globex/);
    // Not vacuously: between the old page and the new one the table can have no rows at all.
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('[data-testid="okm-list"] tbody tr')];
      return rows.length > 0 && rows.every((row) => row.children[1]?.textContent === 'globex');
    });
    const globexRows = await page.locator('[data-testid="okm-list"] tbody tr').count();

    await page.getByRole('link', { name: 'Clear filters' }).click();
    await page.getByLabel('KAS firmware').fill('9.9.9');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/firmware_version=9\.9\.9/);
    assert.deepEqual(await listedSerials(page, 'okm-list', [DRIFTING]), [DRIFTING]);
    const firmwareRows = await page.locator('[data-testid="okm-list"] tbody tr').allInnerTexts();

    assert.equal(globexRows, 6);
    assert.equal(firmwareRows.length, 1);
    assert.match(firmwareRows[0]!, /E2E-DRIFTING-1\s+none\s+.*9\.9\.9\s+Drifting\s+pollingInterval/s);
    assertNoProblems();
    await close();
  });

  test('an OKM shows its drift; the form refuses a wrong interval with the API’s message at the field, saves a right one, and a device poll clears the drift', async () => {
    const watched = await watchConsole(browser, server.base);
    const { page } = watched;
    await page.goto(adminUrl.replace('/console/#', '/console/okms?firmware_version=9.9.9#'));
    await page.getByRole('link', { name: DRIFTING }).click();
    await page.getByTestId('drift-table').waitFor();
    // Its device was sent pollingInterval on its last poll and has not reported since: sent, not next.
    const sentBefore = await page.locator('tr.sent').getAttribute('data-resolver');
    const nextBeforeSave = await page.getByTestId('drift-verdict').innerText();

    watched.allowFailure('PATCH', new RegExp(`^/api/v1/okms/${DRIFTING}$`), 400);
    await page.getByLabel('Polling interval (s)').fill('99999');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const fieldMessage = await page.locator('#error-polling_interval').innerText();
    const invalid = await page.getByLabel('Polling interval (s)').getAttribute('aria-invalid');

    await page.getByLabel('Polling interval (s)').fill('300');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    // The configuration changed after the poll that sent pollingInterval: what was sent is not what is configured, so it is due again.
    await page.getByTestId('drift-verdict').filter({ hasText: 'Next poll: pollingInterval' }).waitFor();
    const correctionShown = await page.locator('tr[data-resolver="pollingInterval"]').innerText();

    const reply = await server.poll(DRIFTING, inStepReport({ pollingInterval: 300, kasFirmware: '9.9.9' }));
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.getByTestId('drift-verdict').filter({ hasText: 'Next poll: nothing to correct' }).waitFor();
    // The record (and its badge) is a fetch of its own beside the drift's: Refresh is enabled again once both have answered.
    await page.getByRole('button', { name: 'Refresh', disabled: false }).waitFor();
    const badge = await page.locator('h1 .badges').innerText();

    assert.equal(sentBefore, 'pollingInterval');
    assert.equal(nextBeforeSave, 'Next poll: nothing to correct');
    assert.equal(fieldMessage, 'must be <= 3600');
    assert.equal(invalid, 'true');
    assert.match(correctionShown, /poll every 300 s/);
    assert.deepEqual(reply, {});
    assert.equal(badge, 'In step');
    watched.assertNoProblems();
    await watched.close();
  });

  test('a token that expires while the console is open lands on the sign-in page saying so at the next refresh; sign-out forgets a pasted token', async () => {
    const shortLived = (await server.cli('console', '--url', server.base, '--customer', 'acme', '--ttl', '20s')) as { url: string; expires_at: number };
    const watched = await watchConsole(browser, server.base);
    const { page } = watched;
    await page.goto(shortLived.url);
    await page.getByTestId('count-total').waitFor();
    const acmeTotal = await page.getByTestId('count-total').innerText();
    // The overview's next refresh after the expiry (both of its requests) gets the 401.
    watched.allowFailure('GET', /^\/api\/v1\/fleet\//, 401);
    const ended = await page.getByTestId('session-ended').innerText({ timeout: shortLived.expires_at * 1000 - Date.now() + 15_000 });

    await page.getByLabel('Token').fill(tokenOf(adminUrl));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Token').waitFor();
    await page.reload();
    const afterReload = await page.getByLabel('Token').isVisible();

    assert.equal(acmeTotal, '6');
    assert.match(ended, /expired/);
    assert.ok(afterReload, 'the token was forgotten');
    watched.assertNoProblems();
    await watched.close();
  });

  // Last: it adds a customer of 120 OKMs, which the overview's counts above do not expect.
  test('the OKM list pages with Next and Previous, 50 a page, without page numbers or a total; a new filter starts at the first page', async () => {
    await seedFleet(server.database, { customers: ['pager'], perCustomer: { okms: 120, drifting: 10, overdue: 5, neverPolled: 5 }, prefix: 'E2E' });
    const serials = Array.from({ length: 120 }, (_, index) => `E2E-PAGER-${String(index + 1).padStart(5, '0')}`);
    const { page, assertNoProblems, close } = await watchConsole(browser, server.base);
    const rows = page.locator('[data-testid="okm-list"] tbody tr');
    const shownSerials = () => rows.locator('td:first-child').allInnerTexts();
    /** Waits until the table shows the page that begins with `first`. */
    const pageStartingAt = async (first: string) => {
      await page.locator(`[data-testid="okm-list"] tbody tr:first-child a:text-is("${first}")`).waitFor();
      return shownSerials();
    };
    const pager = page.getByRole('navigation', { name: 'OKMs pages' });
    await page.goto(adminUrl.replace('/console/#', '/console/okms?customer=pager#'));

    const first = await pageStartingAt(serials[0]!);
    const previousOnFirst = await pager.getByRole('button', { name: '← Previous' }).isDisabled();
    await pager.getByRole('button', { name: 'Next →' }).click();
    const second = await pageStartingAt(serials[50]!);
    await pager.getByRole('button', { name: 'Next →' }).click();
    const third = await pageStartingAt(serials[100]!);
    const nextOnLast = await pager.getByRole('button', { name: 'Next →' }).isDisabled();
    await pager.getByRole('button', { name: '← Previous' }).click();
    const backToSecond = await pageStartingAt(serials[50]!);
    await pager.getByRole('button', { name: 'Next →' }).click();
    await pageStartingAt(serials[100]!);
    await pager.getByRole('button', { name: 'First page' }).click();
    const backToFirst = await pageStartingAt(serials[0]!);
    await pager.getByRole('button', { name: 'Next →' }).click();
    await pageStartingAt(serials[50]!);
    await page.getByLabel('State').selectOption('never_polled');
    await page.waitForURL(/state=never_polled/);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="okm-list"] tbody tr').length === 5);
    const neverPolledBadges = await page.locator('[data-testid="okm-list"] tbody tr .badges').allInnerTexts();
    const filteredPager = await pager.count();
    const pagerText = await page.locator('.pager').allInnerTexts();
    const sortBy = await page.getByLabel('Sort by').count();

    assert.equal(previousOnFirst, true);
    assert.deepEqual(first, serials.slice(0, 50));
    assert.deepEqual(second, serials.slice(50, 100));
    assert.deepEqual(third, serials.slice(100));
    assert.equal(nextOnLast, true);
    assert.deepEqual(backToSecond, second);
    assert.deepEqual(backToFirst, first);
    assert.deepEqual(neverPolledBadges, Array(5).fill('Never polled'), "each row shows the record's state, the one its list filters on");
    assert.equal(filteredPager, 0, 'five never-polled OKMs fit one page: no pager');
    assert.deepEqual(pagerText, []);
    assert.equal(sortBy, 0, 'no Sort by: the list is by serial number');
    assertNoProblems();
    await close();
  });
});
