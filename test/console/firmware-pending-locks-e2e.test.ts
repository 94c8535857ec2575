import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { device, fleetPassesSince, openConsole, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

const ENROLMENT_CODE = '00112233445566778899aabbccddeeff';
const LOCKS = ['CAB-0001', 'CAB-0002', 'PAD-0001'];

describe('console: pending OKMs, firmware and locks pages', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let adminUrl: string;
  let acmeUrl: string;
  let adminToken: string;
  let apiKey: string;

  before(async () => {
    // One after the other: a server that cannot start must not leave a browser running that keeps the file's process alive.
    server = await startConsoleServer();
    browser = await launchChromium();
    await server.cli('customer', 'create', 'acme');
    await server.cli('cert', 'create', '--customer', 'acme', '--name', 'acme-main');
    [adminUrl, acmeUrl, apiKey] = await Promise.all([
      server.signInUrl(),
      server.signInUrl('acme'),
      server.cli('apikey', 'create', '--customer', 'acme').then((created) => created.key as string),
    ]);
    adminToken = tokenOf(adminUrl);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('an operator accepts a pending OKM for a customer; an unknown customer is the API\'s message at the row', async () => {
    assert.equal(await fetch(`${server.base}/api/v1/config/OKM-NEW-7?kasFirmware=1.0.0`).then((response) => response.status), 404);
    const consolePage = await openConsole(browser, adminUrl);
    const { page } = consolePage;

    await consolePage.goto('/pending-okms');
    const customer = page.getByLabel('Customer for OKM-NEW-7');
    await customer.fill('nobody');
    consolePage.allowFailure('POST', /^\/api\/v1\/pending-okms\/OKM-NEW-7\/accept$/, 400);
    await page.getByRole('button', { name: 'Accept OKM-NEW-7' }).click();
    await page.getByText('customer: unknown customer nobody').or(page.getByText('unknown customer nobody')).first().waitFor();
    assert.equal(await customer.getAttribute('aria-invalid'), 'true');
    await customer.fill('acme');
    await page.getByRole('button', { name: 'Accept OKM-NEW-7' }).click();
    await page.getByText('accepted for acme').waitFor();
    await page.getByText('No OKM is waiting to be accepted.').waitFor();

    assert.equal((await server.api(adminToken, 'GET', '/api/v1/okms/OKM-NEW-7')).data.customer, 'acme');
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('an operator uploads a release with its progress shown, sets it as the fleet latest, and sees how many OKMs run each version', async () => {
    for (const [serial, version] of [['OKM-FW-1', '1.0.0'], ['OKM-FW-2', '1.0.0'], ['OKM-FW-3', '1.2.0']] as const) {
      await server.api(adminToken, 'PUT', `/api/v1/okms/${serial}?customer=acme`, {}, 201);
      await device(server, serial, version).converge();
    }
    // The page and the summary show the versions once a fleet pass has counted these polls.
    await fleetPassesSince(server.database.db, Date.now());
    const consolePage = await openConsole(browser, adminUrl);
    const { page } = consolePage;
    // Slow uploads down, so that the progress is seen between 0 and 100 %.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 1024 * 1024 });

    await consolePage.goto('/firmware');
    const kas = page.getByRole('region', { name: 'OKM (KAS) firmware' });
    const running = (await server.api(adminToken, 'GET', '/api/v1/fleet/summary')).data.firmware.kas as Array<{ version: string; okms: number }>;
    await kas.getByRole('rowheader', { name: '1.2.0' }).waitFor();
    for (const { version, okms } of running) {
      const row = kas.getByRole('row').filter({ has: page.getByRole('rowheader', { name: version }) });
      assert.deepEqual((await row.getByRole('cell').allInnerTexts()).slice(0, 2), [String(okms), 'not in the catalog']);
    }
    assert.ok(running.some(({ version, okms }) => version === '1.2.0' && okms === 1), JSON.stringify(running));
    await page.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { progressSeen: string[] }).progressSeen = seen;
      new MutationObserver(() => {
        const shown = document.querySelector('[data-testid="upload-percent"]')?.textContent;
        if (shown) seen.push(shown);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    const upload = page.getByRole('form', { name: 'Upload a release file' });
    await upload.getByLabel('Kind').selectOption('kas');
    await upload.getByLabel('Version').fill('2.1.0');
    await upload.getByLabel('File', { exact: true }).setInputFiles({ name: 'kas-2.1.0.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(3 * 1024 * 1024, 7) });
    await upload.getByRole('button', { name: 'Upload' }).click();
    await page.getByText('Release 2.1.0 (OKM (KAS) firmware) added.').waitFor({ timeout: 30_000 });
    const progress = await page.evaluate(() => (window as unknown as { progressSeen: string[] }).progressSeen);
    assert.ok(progress.some((text) => /^([1-9]|[1-9]\d)% /.test(text)), `progress shown: ${progress.join(' | ')}`);

    await page.getByRole('button', { name: 'Make 2.1.0 the fleet latest OKM (KAS) firmware' }).click();
    // A change of every customer's fleet: asked first, naming the OKMs it reaches.
    const confirm = page.getByRole('dialog', { name: 'Make 2.1.0 the fleet latest OKM (KAS) firmware?' });
    await confirm.getByTestId('latest-preview-count').waitFor();
    await confirm.getByRole('button', { name: 'Make 2.1.0 latest' }).click();
    await page.getByTestId('latest-kas').getByText('2.1.0').waitFor();
    assert.equal((await server.api(adminToken, 'GET', '/api/v1/firmware')).latest.kas, '2.1.0');
    const offer = await device(server, 'OKM-FW-1', '1.0.0').pollOnce();
    assert.equal((offer.kasFirmware as { version: string }).version, '2.1.0');
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('a customer sees its enrolled locks with certificate and enrolment time, and no key material, also at 768 px', async () => {
    const keys: string[] = [];
    for (const [index, serial] of LOCKS.entries()) {
      const response = await fetch(`${server.base}/v1/dlock`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ serial_no: serial, type: index < 2 ? 'cabinet' : 'padlock', certificate: 'acme-main', enrolment_code: ENROLMENT_CODE, base64: false }),
      });
      assert.equal(response.status, 200);
      const certificate = (await response.json()).data.key;
      keys.push(certificate.key, certificate.signature);
    }
    const consolePage = await openConsole(browser, acmeUrl, { width: 768, height: 1024 });
    const { page } = consolePage;

    await consolePage.goto('/locks');
    const rows = page.locator('table.locks-table tbody tr');
    await rows.first().waitFor();
    assert.deepEqual(await rows.locator('th').allInnerTexts(), LOCKS);
    assert.match(await rows.first().innerText(), /cabinet\s+acme-main\s+(just now|\d+ seconds? ago)/);
    assert.ok(await rows.first().locator('time').first().getAttribute('title'));
    const html = await page.content();
    for (const secret of keys) assert.equal(html.includes(secret), false, 'key material in the page');
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'no page-wide horizontal scroll at 768 px');
    consolePage.assertNoProblems();
    await consolePage.close();
  });
});
