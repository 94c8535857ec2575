/**
 * Screenshots of the rollouts and events pages (docs/images/console-rollout*.png,
 * console-events.png) over a seeded fleet: a rollout part-way through its groups, one
 * finished, one aborted, one waiting for approval; webhook endpoints with deliveries.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { device, openConsole, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

/** The server settings the seeding needs: a quick sweep (groups advance within a second) and a local receiver. */
export const ROLLOUT_SCREENSHOT_SETTINGS = { ROLLOUT_SWEEP_INTERVAL_MS: '300', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' };

type Device = ReturnType<typeof device>;

async function inBatches<T>(items: T[], size: number, work: (item: T) => Promise<unknown>) {
  for (let start = 0; start < items.length; start += size) await Promise.all(items.slice(start, start + size).map(work));
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let round = 0; round < 200; round++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export async function shootRolloutEventPages(browser: Browser, server: ConsoleServer, images: string, viewport = { width: 1280, height: 800 }) {
  const receiver = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(204).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  try {
    await seedAndShoot(browser, server, images, viewport, `http://localhost:${(receiver.address() as AddressInfo).port}/keyfleet-events`);
  } finally {
    await new Promise((resolve) => receiver.close(resolve));
  }
}

async function seedAndShoot(browser: Browser, server: ConsoleServer, images: string, viewport: { width: number; height: number }, receiverUrl: string) {
  for (const name of ['acme', 'globex', 'initech']) await server.cli('customer', 'create', name);
  const [adminUrl, acmeUrl, initechUrl] = await Promise.all([server.signInUrl(), server.signInUrl('acme'), server.signInUrl('initech')]);
  const admin = tokenOf(adminUrl);
  const acme = tokenOf(acmeUrl);
  for (const [kind, version] of [['kas', '2.4.1'], ['kas', '2.5.0'], ['batch_key', '1.8.1'], ['batch_key', '1.8.2'], ['wireless_key', '3.0.5']] as const) {
    const url = `https://firmware.example.com/${kind}/${version}.bin`;
    await server.api(admin, 'POST', '/api/v1/firmware', { kind, version, url, sha256: createHash('sha256').update(url).digest('hex') }, 201);
  }
  await server.api(admin, 'PUT', '/api/v1/firmware/kas/latest', { version: '2.4.1' });
  await server.api(admin, 'PUT', '/api/v1/firmware/batch_key/latest', { version: '1.8.1' });

  // Endpoints first, so that the rollouts' events are delivered to them.
  const live = (await server.api(acme, 'POST', '/api/v1/webhook-endpoints', { url: receiverUrl, event_types: ['okm.overdue', 'okm.back_online', 'rollout.started', 'rollout.group_started', 'rollout.paused', 'rollout.aborted', 'rollout.finished'] }, 201)).data;
  const broken = (await server.api(acme, 'POST', '/api/v1/webhook-endpoints', { url: 'http://localhost:9/pager-bridge', event_types: ['okm.overdue', 'subscriber.failing'] }, 201)).data;

  const enrol = async (customer: string, count: number, prefix: string) => {
    const devices = Array.from({ length: count }, (_, index) => {
      const serial = `${prefix}-${String(1040 + index * 7)}`;
      const okm = device(server, serial, '2.4.1');
      okm.reported.batchKeyFirmware = '1.8.1';
      return { serial, okm };
    });
    await inBatches(devices, 8, async ({ serial, okm }) => {
      await server.api(admin, 'PUT', `/api/v1/okms/${serial}?customer=${customer}`, {}, 201);
      await okm.converge();
    });
    return devices;
  };
  const acmeFleet = await enrol('acme', 120, 'OKM-ACME');
  const globexFleet = await enrol('globex', 40, 'OKM-GLBX');
  await enrol('initech', 260, 'OKM-INIT');
  const rollout = (id: number) => server.api(admin, 'GET', `/api/v1/rollouts/${id}`).then((answer) => answer.data);
  const pollAll = (devices: { okm: Device }[]) => inBatches(devices, 8, ({ okm }) => okm.converge());

  // Globex: a batch-key rollout that ran to the end.
  const finished = (await server.api(admin, 'POST', '/api/v1/rollouts', { customer: 'globex', kind: 'batch_key', version: '1.8.2', groups: [{ percent: 10 }, { percent: 100 }] }, 201)).data;
  await server.api(admin, 'POST', `/api/v1/rollouts/${finished.id}/start`);
  await pollAll(globexFleet);
  await until('group 2 of the batch-key rollout', async () => ((await rollout(finished.id)).current_group === 1 ? true : undefined));
  await pollAll(globexFleet);
  await until('the batch-key rollout to finish', async () => ((await rollout(finished.id)).state === 'finished' ? true : undefined));

  // Acme: a first KAS rollout to ten stores, aborted after it started.
  const aborted = (await server.api(acme, 'POST', '/api/v1/rollouts', { kind: 'kas', version: '2.5.0', filter: { serial_numbers: acmeFleet.slice(0, 10).map(({ serial }) => serial) }, groups: [{ percent: 100 }] }, 201)).data;
  await server.api(acme, 'POST', `/api/v1/rollouts/${aborted.id}/start`);
  await server.api(acme, 'POST', `/api/v1/rollouts/${aborted.id}/abort`);
  for (const { okm } of acmeFleet.slice(0, 10)) await okm.converge();

  // Acme: the KAS rollout part-way: groups 1 and 2 done, group 3 under way.
  const running = (await server.api(acme, 'POST', '/api/v1/rollouts', {
    kind: 'kas',
    version: '2.5.0',
    groups: [{ percent: 2 }, { percent: 10 }, { percent: 50 }, { percent: 100 }],
    success_threshold: 90,
    error_threshold: 5,
    update_timeout: '2h',
  }, 201)).data;
  await server.api(acme, 'POST', `/api/v1/rollouts/${running.id}/start`);
  await pollAll(acmeFleet);
  await until('group 2 of the KAS rollout', async () => ((await rollout(running.id)).current_group === 1 ? true : undefined));
  await pollAll(acmeFleet);
  await until('group 3 of the KAS rollout', async () => ((await rollout(running.id)).current_group === 2 ? true : undefined));
  let taken = 0;
  for (const { okm } of acmeFleet) {
    if (taken >= 29) break;
    if ('kasFirmware' in (await okm.pollOnce())) {
      await okm.pollOnce();
      taken++;
    }
  }

  // Globex: a wireless-key rollout waiting for a second operator's approval.
  await server.api(admin, 'POST', '/api/v1/rollouts', {
    customer: 'globex',
    kind: 'wireless_key',
    version: '3.0.5',
    groups: [{ percent: 5 }, { percent: 25 }, { percent: 100 }],
    approval_required: true,
    maintenance_window: { from: '22:00', to: '05:00' },
  }, 201);

  await server.api(acme, 'POST', `/api/v1/webhook-endpoints/${live.id}/test`, undefined, 202);
  await until('the deliveries to the live endpoint', async () => {
    const deliveries = (await server.api(acme, 'GET', `/api/v1/webhook-endpoints/${live.id}/deliveries`)).data as Array<{ state: string }>;
    return deliveries.length > 0 && deliveries.every((delivery) => delivery.state === 'delivered') ? true : undefined;
  });
  await server.api(acme, 'POST', `/api/v1/webhook-endpoints/${broken.id}/test`, undefined, 202);
  await until('a failed attempt at the broken endpoint', async () => {
    const deliveries = (await server.api(acme, 'GET', `/api/v1/webhook-endpoints/${broken.id}/deliveries`)).data as Array<{ attempts: number }>;
    return deliveries.some((delivery) => delivery.attempts > 0) ? true : undefined;
  });

  const shoot = (name: string) => path.join(images, name);
  const operator = await openConsole(browser, adminUrl, viewport);
  await operator.goto('/rollouts');
  await operator.page.locator('[data-testid="rollout-list"] tbody tr').nth(3).waitFor();
  await operator.page.screenshot({ path: shoot('console-rollouts.png') });
  operator.assertNoProblems();
  await operator.close();

  const customer = await openConsole(browser, acmeUrl, viewport);
  await customer.goto(`/rollouts/${running.id}`);
  await customer.page.getByRole('progressbar', { name: 'Group 3' }).waitFor();
  await customer.page.screenshot({ path: shoot('console-rollout.png'), fullPage: true });
  await customer.goto('/events');
  await customer.page.getByText('Delivered').first().waitFor();
  await customer.page.screenshot({ path: shoot('console-events.png'), fullPage: true });
  customer.assertNoProblems();
  await customer.close();

  // Initech's fleet is in no rollout yet: the create form shows the groups it would get.
  const planner = await openConsole(browser, initechUrl, viewport);
  await planner.goto('/rollouts/new');
  await planner.page.getByTestId('rollout-preview').locator('tbody tr').first().waitFor();
  await planner.page.screenshot({ path: shoot('console-rollout-new.png'), fullPage: true });
  planner.assertNoProblems();
  await planner.close();
}
