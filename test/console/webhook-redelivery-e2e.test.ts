import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { eventually } from '../helpers/eventually.ts';
import { device, openConsole, PROJECT_ROOT, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

/** Set (UPDATE_SCREENSHOTS=1 with this file): the screenshots of what it walks through are written to docs/images. */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs/images') : undefined;
const PHONE = { width: 390, height: 844 };
const SERIAL = 'OKM-WH-0042';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: { id: string; type: string; data: Record<string, unknown> };
  status: number;
}

/** A webhook receiver on 127.0.0.1 that records every request and answers `status` (500 until told otherwise). */
async function startReceiver() {
  const state = { status: 500, received: [] as Received[] };
  const server = http.createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => {
      state.received.push({ headers: request.headers, body: JSON.parse(text), status: state.status });
      response.writeHead(state.status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/ops-events`, state, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** The page's width beyond the viewport: 0 when nothing scrolls sideways. */
const sidewaysScroll = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

describe('console: failing webhook endpoints, payloads, redelivery and fleet-latest confirmations', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let acmeUrl: string;
  let acmeToken: string;
  let adminUrl: string;
  let adminToken: string;
  let endpointId: number;

  before(async () => {
    receiver = await startReceiver();
    server = await startConsoleServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms', WEBHOOK_TIMEOUT_MS: '1000' });
    browser = await launchChromium();
    await server.cli('customer', 'create', 'acme');
    [acmeUrl, adminUrl] = [await server.signInUrl('acme'), await server.signInUrl()];
    [acmeToken, adminToken] = [tokenOf(acmeUrl), tokenOf(adminUrl)];
    endpointId = (await server.api(acmeToken, 'POST', '/api/v1/webhook-endpoints', { url: receiver.url, event_types: ['okm.overdue', 'okm.stuck'] }, 201)).data.id;
    await server.api(adminToken, 'PUT', `/api/v1/okms/${SERIAL}?customer=acme`, {}, 201);
    await device(server, SERIAL, '1.0.0').converge();
    // Silent for hours: the next fleet pass (one a second here) finds it overdue and queues okm.overdue.
    await server.database.db.updateTable('okm_polls').set({ last_sync_time: Date.now() - 6 * 3_600_000 }).where('serial_number', '=', SERIAL).execute();
    await eventually(async () => {
      const log = (await server.api(acmeToken, 'GET', `/api/v1/webhook-endpoints/${endpointId}/deliveries`)).data;
      return log[0]?.state === 'failed' && log;
    }, 30_000);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
    await receiver?.close();
  });

  test('the overview lists the failing endpoint and links to it; its failed okm.overdue delivery names the OKM, shows its payload, and is redelivered with the same event id', { timeout: 120_000 }, async () => {
    const consolePage = await openConsole(browser, acmeUrl);
    const { page } = consolePage;

    const failing = page.getByTestId('failing-endpoints');
    await failing.getByText(receiver.url).waitFor();
    await failing.getByText('gave up after 4 attempts').waitFor();
    if (SCREENSHOTS) await failing.screenshot({ path: path.join(SCREENSHOTS, 'console-overview-failing-endpoints.png') });
    const phone = await openConsole(browser, acmeUrl, PHONE);
    const phoneCard = phone.page.getByTestId('failing-endpoints');
    await phoneCard.getByText(receiver.url).waitFor();
    assert.ok((await phoneCard.boundingBox())!.width <= PHONE.width, 'the card fits a phone');
    if (SCREENSHOTS) await phoneCard.screenshot({ path: path.join(SCREENSHOTS, 'console-overview-failing-endpoints-phone.png') });
    phone.assertNoProblems();
    await phone.close();
    await failing.getByTestId('failing-endpoint-link').click();
    await page.waitForURL(new RegExp(`/console/events\\?endpoint=${endpointId}$`));
    await page.getByText(`Endpoint ${endpointId} only.`).waitFor();

    const endpoint = page.getByRole('region', { name: receiver.url });
    const row = endpoint.getByRole('row').filter({ hasText: 'okm.overdue' });
    await row.getByText('Failed').waitFor();
    assert.equal(await row.getByTestId('delivery-okm').innerText(), SERIAL);
    assert.equal(await row.getByTestId('delivery-okm').getAttribute('href'), `/console/okms/${SERIAL}`);

    await row.getByRole('button', { name: /^View the payload of okm.overdue delivery/ }).click();
    const dialog = page.getByRole('dialog', { name: /^okm.overdue msg_/ });
    const payload = JSON.parse(await dialog.getByTestId('delivery-payload').innerText());
    const [failed] = receiver.state.received;
    assert.deepEqual(payload, failed!.body);
    assert.equal(payload.data.serial_number, SERIAL);
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-events-payload.png') });
    await dialog.getByRole('button', { name: 'Close' }).click();

    receiver.state.status = 204;
    await row.getByRole('button', { name: /^Redeliver okm.overdue delivery/ }).click();
    await page.getByText(new RegExp(`^okm.overdue ${failed!.body.id} queued again for`)).waitFor();
    const rows = endpoint.getByRole('row').filter({ hasText: 'okm.overdue' });
    await rows.filter({ hasText: 'Delivered' }).waitFor({ timeout: 30_000 });
    assert.equal(await rows.filter({ hasText: 'Failed' }).count(), 1, 'the original stays failed');
    const delivered = receiver.state.received.filter((request) => request.status === 204);
    assert.equal(delivered.length, 1);
    assert.equal(delivered[0]!.body.id, failed!.body.id);
    assert.equal(delivered[0]!.headers['webhook-id'], failed!.body.id);
    assert.equal(await rows.filter({ hasText: 'Delivered' }).getByRole('button', { name: /^Redeliver/ }).count(), 0, 'Redeliver is offered on failed deliveries only');
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-events-redelivered.png') });

    await page.goto(`${server.base}/console/`);
    await page.getByText('Every webhook endpoint accepted its latest delivery.').waitFor();
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('at 390 px the failed delivery and its payload fit the screen', { timeout: 60_000 }, async () => {
    const consolePage = await openConsole(browser, acmeUrl, PHONE);
    const { page } = consolePage;
    await consolePage.goto(`/events?endpoint=${endpointId}`);
    const row = page.getByRole('row').filter({ hasText: 'okm.overdue' }).filter({ hasText: 'Failed' });
    await row.getByRole('button', { name: /^View the payload/ }).click();
    await page.getByTestId('delivery-payload').waitFor();
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-events-payload-phone.png') });
    assert.equal(await sidewaysScroll(page), 0);
    consolePage.assertNoProblems();
    await consolePage.close();
  });

  test('"Clear" and "Make latest" on the Firmware page ask first, naming the OKMs the server counts; Cancel changes nothing', { timeout: 60_000 }, async () => {
    for (const version of ['2.0.0', '2.1.0']) {
      const url = `https://firmware.example.com/kas/${version}.bin`;
      await server.api(adminToken, 'POST', '/api/v1/firmware', { kind: 'kas', version, url, sha256: createHash('sha256').update(url).digest('hex') }, 201);
    }
    await server.api(adminToken, 'PUT', '/api/v1/firmware/kas/latest', { version: '2.0.0' });
    const counted = (await server.api(adminToken, 'GET', '/api/v1/firmware/kas/latest/preview?version=2.1.0')).data;
    assert.ok(counted.okms >= 1);
    const consolePage = await openConsole(browser, adminUrl);
    const { page } = consolePage;
    await consolePage.goto('/firmware');

    await page.getByRole('button', { name: 'Clear the fleet latest OKM (KAS) firmware…' }).click();
    const clear = page.getByRole('dialog', { name: 'Clear the fleet latest OKM (KAS) firmware?' });
    await clear.getByTestId('latest-preview-count').getByText(`${counted.okms} OKM`).waitFor();
    await clear.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await server.api(adminToken, 'GET', '/api/v1/firmware')).latest.kas, '2.0.0');

    await page.getByRole('button', { name: 'Make 2.1.0 the fleet latest OKM (KAS) firmware…' }).click();
    const make = page.getByRole('dialog', { name: 'Make 2.1.0 the fleet latest OKM (KAS) firmware?' });
    await make.getByTestId('latest-preview-count').getByText(`${counted.okms} OKM`).waitFor();
    await make.getByText(`${counted.offered} OKM`).first().waitFor();
    if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, 'console-firmware-confirm.png') });
    assert.equal((await server.api(adminToken, 'GET', '/api/v1/firmware')).latest.kas, '2.0.0');
    await make.getByRole('button', { name: 'Make 2.1.0 latest' }).click();
    await page.getByTestId('latest-kas').getByText('2.1.0').waitFor();
    assert.equal((await server.api(adminToken, 'GET', '/api/v1/firmware')).latest.kas, '2.1.0');
    consolePage.assertNoProblems();
    await consolePage.close();

    const phone = await openConsole(browser, adminUrl, PHONE);
    await phone.goto('/firmware');
    await phone.page.getByRole('button', { name: 'Clear the fleet latest OKM (KAS) firmware…' }).click();
    await phone.page.getByTestId('latest-preview-count').waitFor();
    if (SCREENSHOTS) await phone.page.screenshot({ path: path.join(SCREENSHOTS, 'console-firmware-confirm-phone.png') });
    phone.assertNoProblems();
    await phone.close();
  });
});
