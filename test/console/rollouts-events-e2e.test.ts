import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { device, openConsole, startConsoleServer, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

const FLEET = Array.from({ length: 20 }, (_, index) => `OKM-RO-${String(index + 1).padStart(3, '0')}`);

interface Received {
  headers: http.IncomingHttpHeaders;
  body: { id: string; type: string; data: Record<string, unknown> };
}

/** A webhook receiver on a local port that records every request and answers 204. */
async function startReceiver(): Promise<{ url: string; received: Received[]; close: () => Promise<void> }> {
  const received: Received[] = [];
  const server = http.createServer((request, response) => {
    let text = '';
    request.on('data', (chunk) => (text += chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: JSON.parse(text) });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/keyfleet-events`, received, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('console: rollouts and events pages', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let acmeUrl: string;
  let acmeToken: string;

  before(async () => {
    // One after the other: a server that cannot start must not leave a browser running that keeps the file's process alive.
    server = await startConsoleServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    browser = await launchChromium();
    await server.cli('customer', 'create', 'acme');
    acmeUrl = await server.signInUrl('acme');
    acmeToken = tokenOf(acmeUrl);
    const admin = tokenOf(await server.signInUrl());
    const url = 'https://firmware.example.com/kas/2.0.0.bin';
    await server.api(admin, 'POST', '/api/v1/firmware', { kind: 'kas', version: '2.0.0', url, sha256: createHash('sha256').update(url).digest('hex') }, 201);
    for (const serial of FLEET) {
      await server.api(admin, 'PUT', `/api/v1/okms/${serial}?customer=acme`, {}, 201);
      await device(server, serial, '1.0.0').converge();
    }
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('an operator creates a rollout seeing the group sizes, starts it, watches group 1 update, then pauses and aborts it after confirming', { timeout: 120_000 }, async () => {
    const consolePage = await openConsole(browser, acmeUrl);
    const { page } = consolePage;

    await page.getByRole('navigation', { name: 'Console pages' }).getByRole('link', { name: 'Rollouts' }).click();
    await page.getByText('No rollout yet.').waitFor();
    await page.getByRole('link', { name: 'New rollout' }).click();
    const form = page.getByRole('form', { name: 'New rollout' });
    assert.equal(await form.getByLabel('Version', { exact: true }).inputValue(), '2.0.0');
    const preview = page.getByTestId('rollout-preview');
    await preview.getByText('20 OKMs would be updated').waitFor();
    assert.deepEqual(await previewSizes(), [['Group 1', '1 %', '1', '1'], ['Group 2', '10 %', '1', '2'], ['Group 3', '100 %', '18', '20']]);

    await form.getByLabel('Groups (cumulative % of the OKMs)').fill('25, 100');
    await preview.getByRole('cell', { name: '15', exact: true }).waitFor();
    assert.deepEqual(await previewSizes(), [['Group 1', '25 %', '5', '5'], ['Group 2', '100 %', '15', '20']]);
    await form.getByLabel('Groups (cumulative % of the OKMs)').fill('25, 20');
    await form.getByText('Percents are cumulative: 20 must be greater than 25, the group before it.').waitFor();
    await form.getByLabel('Groups (cumulative % of the OKMs)').fill('25, 100');

    // The API's 400 shows next to the field it names.
    await form.getByLabel('Success threshold (%)').fill('101');
    consolePage.allowFailure('POST', /^\/api\/v1\/rollouts$/, 400);
    await form.getByRole('button', { name: 'Create rollout' }).click();
    await form.getByText('must be <= 100').waitFor();
    assert.equal(await form.getByLabel('Success threshold (%)').getAttribute('aria-invalid'), 'true');
    await form.getByLabel('Success threshold (%)').fill('95');
    await form.getByLabel('Start the next group by itself when a group passes').uncheck();
    await form.getByRole('button', { name: 'Create rollout' }).click();

    await page.getByRole('heading', { name: /^Rollout #\d+ Ready$/ }).waitFor();
    const id = Number(/\/rollouts\/(\d+)$/.exec(new URL(page.url()).pathname)![1]);
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await page.getByText('Started: group 1 is offered the version').waitFor();
    const group1 = page.getByRole('progressbar', { name: 'Group 1' });
    assert.equal(await group1.getAttribute('aria-valuenow'), '0');
    assert.equal(await group1.getAttribute('aria-valuetext'), '0 of 5 updated (0 %)');

    // Every device polls twice: group 1 is offered 2.0.0, installs it and reports it; the others keep 1.0.0.
    const offered: string[] = [];
    for (const serial of FLEET) {
      const okm = device(server, serial, '1.0.0');
      if ((await okm.converge()).some((correction) => 'kasFirmware' in correction)) offered.push(serial);
    }
    assert.equal(offered.length, 5);
    // The page refreshes by itself (every 10 s): the bar moves without a reload.
    await page.locator('[role="progressbar"][aria-label="Group 1"][aria-valuenow="100"]').waitFor({ timeout: 25_000 });
    assert.equal(await group1.getAttribute('aria-valuetext'), '5 of 5 updated (100 %)');
    assert.equal(await page.getByRole('progressbar', { name: 'Group 2' }).getAttribute('aria-valuenow'), '0');

    await page.getByRole('button', { name: 'Pause…' }).click();
    const pauseDialog = page.getByRole('dialog', { name: 'Pause this rollout?' });
    await pauseDialog.getByText('no OKM is offered the version while the rollout is paused').waitFor();
    await pauseDialog.getByRole('button', { name: 'Cancel' }).click();
    await pauseDialog.waitFor({ state: 'hidden' });
    assert.equal((await server.api(acmeToken, 'GET', `/api/v1/rollouts/${id}`)).data.state, 'running', 'Cancel pauses nothing');
    await page.getByRole('button', { name: 'Pause…' }).click();
    await pauseDialog.getByRole('button', { name: 'Pause rollout' }).click();
    await page.getByRole('heading', { name: `Rollout #${id} Paused` }).waitFor();

    await page.getByRole('button', { name: 'Abort…' }).click();
    const abortDialog = page.getByRole('dialog', { name: 'Abort this rollout?' });
    await abortDialog.getByText('no OKM that has not updated will be offered the version from its next poll on').waitFor();
    await abortDialog.getByRole('button', { name: 'Abort rollout' }).click();
    await page.getByRole('heading', { name: `Rollout #${id} Aborted` }).waitFor();
    assert.equal(await page.getByRole('group', { name: 'Rollout actions' }).count(), 0, 'an aborted rollout offers no action');
    assert.equal((await server.api(acmeToken, 'GET', `/api/v1/rollouts/${id}`)).data.state, 'aborted');

    await page.getByRole('link', { name: 'All rollouts' }).click();
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: `#${id}` }) });
    await row.getByText('Aborted').waitFor();
    assert.equal(await row.getByRole('progressbar', { name: `Rollout ${id}, group 1 (25 %)` }).getAttribute('aria-valuenow'), '100');
    consolePage.assertNoProblems();
    await consolePage.close();

    async function previewSizes() {
      return preview.getByRole('row').evaluateAll((rows) =>
        rows.slice(1).map((row) => [...row.querySelectorAll('th, td')].map((cell) => (cell as HTMLElement).innerText.trim())),
      );
    }
  });

  test('a rollout that needs approval offers Approve; its creator is refused with the API\'s reason, another operator approves and can then start it', { timeout: 60_000 }, async () => {
    const created = (await server.api(acmeToken, 'POST', '/api/v1/rollouts', { kind: 'kas', version: '2.0.0', groups: [{ percent: 100 }], approval_required: true }, 201)).data;

    const creator = await openConsole(browser, acmeUrl);
    await creator.goto(`/rollouts/${created.id}`);
    await creator.page.getByText('It needs the approval of an operator other than').waitFor();
    assert.equal(await creator.page.getByRole('button', { name: 'Start', exact: true }).count(), 0, 'no Start before approval');
    creator.allowFailure('POST', new RegExp(`^/api/v1/rollouts/${created.id}/approve$`), 409);
    await creator.page.getByRole('button', { name: 'Approve' }).click();
    await creator.page.getByRole('alert').getByText('another operator (token subject) must approve it').waitFor();
    creator.assertNoProblems();
    await creator.close();

    const operator = await openConsole(browser, await server.signInUrl());
    await operator.goto(`/rollouts/${created.id}`);
    await operator.page.getByRole('button', { name: 'Approve' }).click();
    await operator.page.getByText('Approved: it can be started now.').waitFor();
    await operator.page.getByRole('button', { name: 'Start', exact: true }).click();
    await operator.page.getByRole('heading', { name: `Rollout #${created.id} Running` }).waitFor();
    const rollout = (await server.api(acmeToken, 'GET', `/api/v1/rollouts/${created.id}`)).data;
    assert.equal(rollout.state, 'running');
    assert.notEqual(rollout.approved_by, rollout.created_by);
    await server.api(acmeToken, 'POST', `/api/v1/rollouts/${created.id}/abort`);
    operator.assertNoProblems();
    await operator.close();
  });

  test('an operator adds a webhook endpoint, sends it a test event, sees the delivery, and deletes the endpoint after confirming', { timeout: 120_000 }, async () => {
    const receiver = await startReceiver();
    try {
      const consolePage = await openConsole(browser, acmeUrl);
      const { page } = consolePage;

      await page.getByRole('navigation', { name: 'Console pages' }).getByRole('link', { name: 'Events' }).click();
      await page.getByText('No webhook endpoint yet').waitFor();
      const form = page.getByRole('form', { name: 'Add an endpoint' });
      await form.getByLabel('URL', { exact: true }).fill('ftp://files.example.com/events');
      consolePage.allowFailure('POST', /^\/api\/v1\/webhook-endpoints$/, 400);
      await form.getByRole('button', { name: 'Add endpoint' }).click();
      await form.getByText('must be an http or https URL').waitFor();
      assert.equal(await form.getByLabel('URL', { exact: true }).getAttribute('aria-invalid'), 'true');

      await form.getByLabel('URL', { exact: true }).fill(receiver.url);
      await form.getByRole('checkbox', { name: /rollout\.finished/ }).check();
      await form.getByRole('button', { name: 'Add endpoint' }).click();
      const endpoint = page.getByRole('region', { name: receiver.url });
      await endpoint.waitFor();
      assert.deepEqual(await endpoint.getByLabel('Event types').locator('code').allInnerTexts(), ['okm.overdue', 'okm.back_online', 'rollout.paused', 'rollout.finished', 'rollout.aborted']);
      await endpoint.getByText('No delivery yet.').waitFor();

      await endpoint.getByRole('button', { name: `Send a test event to ${receiver.url}` }).click();
      const queued = await page.getByText(/^Test event msg_\w+ queued/).innerText();
      const eventId = /(msg_\w+)/.exec(queued)![1]!;
      const delivered = endpoint.getByRole('row').filter({ hasText: 'webhook.test' });
      await delivered.getByText('Delivered').waitFor({ timeout: 30_000 });
      assert.deepEqual((await delivered.getByRole('cell').allInnerTexts()).slice(0, 4), ['webhook.test', 'Delivered', '1', '204']);
      const got = receiver.received.find((request) => request.body.type === 'webhook.test');
      assert.ok(got, 'the receiver got the test event');
      assert.equal(got.body.id, eventId);
      assert.equal(got.headers['webhook-id'], eventId);
      assert.match(String(got.headers['webhook-signature']), /^v1,/);

      // Another operator changes the endpoint after this list was loaded: the delete, based on the endpoint as listed, is refused.
      const [listed] = (await server.api(acmeToken, 'GET', '/api/v1/webhook-endpoints')).data as { id: number }[];
      await server.api(acmeToken, 'PATCH', `/api/v1/webhook-endpoints/${listed!.id}`, { event_types: ['okm.overdue'] });
      await endpoint.getByRole('button', { name: `Delete ${receiver.url}…` }).click();
      let dialog = page.getByRole('dialog', { name: 'Delete this endpoint?' });
      await dialog.getByRole('button', { name: 'Delete endpoint' }).click();
      await page.getByText(/was changed since this list was loaded .* nothing was deleted/).waitFor();
      assert.equal((await server.api(acmeToken, 'GET', '/api/v1/webhook-endpoints')).data.length, 1);
      // The list shows it as it now is; deleting that goes through.
      await endpoint.getByLabel('Event types').getByText('okm.overdue').waitFor();
      assert.deepEqual(await endpoint.getByLabel('Event types').locator('code').allInnerTexts(), ['okm.overdue']);

      await endpoint.getByRole('button', { name: `Delete ${receiver.url}…` }).click();
      dialog = page.getByRole('dialog', { name: 'Delete this endpoint?' });
      await dialog.getByText('Its queued deliveries and its delivery log go with it').waitFor();
      await dialog.getByRole('button', { name: 'Delete endpoint' }).click();
      await page.getByText('No webhook endpoint yet').waitFor();
      assert.deepEqual((await server.api(acmeToken, 'GET', '/api/v1/webhook-endpoints')).data, []);
      consolePage.assertNoProblems();
      await consolePage.close();
    } finally {
      await receiver.close();
    }
  });
});
