/**
 * Screenshots of the ACLs, ACL, pending OKMs, firmware and locks pages (docs/images/console-*.png)
 * over a realistic fleet: several customers, a few hundred OKMs on several firmware versions,
 * ACLs of shops, OKMs waiting to be accepted, enrolled DLocks.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { aclBody, openConsole, tokenOf, type ConsoleServer } from './e2e-fixture.ts';

const SITES = ['Store 412 Leeds', 'Store 118 York', 'Store 205 Hull', 'Warehouse North', 'Store 033 Bradford', 'Store 377 Sheffield', 'Pharmacy 12 Leeds'];
const KAS_VERSIONS: Array<[string, number]> = [
  ['2.4.1', 140],
  ['2.4.0', 64],
  ['2.3.7', 31],
  ['2.2.0', 9],
];
const ENROLMENT_CODE = '0a1b2c3d4e5f60718293a4b5c6d7e8f9';

async function inBatches<T>(items: T[], size: number, work: (item: T) => Promise<unknown>) {
  for (let start = 0; start < items.length; start += size) await Promise.all(items.slice(start, start + size).map(work));
}

/** Seeds the fleet the five screenshots show; returns the sign-in URLs and the ACL shown on its own. */
export async function seedAclFirmwareFleet(server: ConsoleServer) {
  for (const name of ['acme', 'globex', 'initech']) await server.cli('customer', 'create', name);
  await server.cli('cert', 'create', '--customer', 'acme', '--name', 'acme-stores-2026');
  const [adminUrl, acmeUrl, apiKey] = await Promise.all([
    server.signInUrl(),
    server.signInUrl('acme'),
    server.cli('apikey', 'create', '--customer', 'acme').then((created) => created.key as string),
  ]);
  const admin = tokenOf(adminUrl);

  for (const [kind, version, url] of [
    ['kas', '2.4.1', 'https://firmware.example.com/kas/2.4.1.bin'],
    ['kas', '2.4.0', 'https://firmware.example.com/kas/2.4.0.bin'],
    ['kas', '2.3.7', 'https://firmware.example.com/kas/2.3.7.bin'],
    ['batch_key', '1.8.2', 'https://firmware.example.com/batch-key/1.8.2.bin'],
    ['wireless_key', '3.0.5', 'https://firmware.example.com/lora-key/3.0.5.bin'],
  ] as const) {
    await server.api(admin, 'POST', '/api/v1/firmware', { kind, version, url, sha256: createHash('sha256').update(url).digest('hex') }, 201);
  }
  await uploadRelease(server, admin, 'kas', '2.5.0', 1_843_200);
  await server.api(admin, 'PUT', '/api/v1/firmware/kas/latest', { version: '2.4.1' });
  await server.api(admin, 'PUT', '/api/v1/firmware/batch_key/latest', { version: '1.8.2' });

  const okms: Array<{ serial: string; customer: string; version: string }> = [];
  let number = 0;
  for (const [version, count] of KAS_VERSIONS) {
    for (let index = 0; index < count; index++) {
      number++;
      okms.push({ serial: `OKM-${String(10_400 + number * 3)}`, customer: ['acme', 'acme', 'globex', 'initech'][number % 4]!, version });
    }
  }
  await inBatches(okms, 8, async ({ serial, customer, version }) => {
    await server.api(admin, 'PUT', `/api/v1/okms/${serial}?customer=${customer}`, {}, 201);
    await server.poll(serial, { kasFirmware: version, batchKeyFirmware: version === '2.2.0' ? '1.7.9' : '1.8.2', wirelessKeyFirmware: serial.endsWith('1') ? '3.0.5' : '3.0.4' });
  });
  for (const [index, serial] of ['OKM-20991', 'OKM-20994', 'OKM-21003', 'OKM-21017', 'OKM-21020', 'OKM-21102'].entries()) {
    await server.poll(serial, { kasFirmware: index < 4 ? '2.4.1' : '2.3.7', installCode: `55${index}7781` }).catch(() => null);
  }

  const acmeOkms = okms.filter((okm) => okm.customer === 'acme');
  let shown = '';
  for (const [index, site] of SITES.entries()) {
    // Most ACLs are named after their site; the warehouse's is not, and the list shows its id.
    const name = site === 'Warehouse North' ? {} : { name: site };
    const body = { ...aclBody('acme', index === 0 ? 64 : 20 + index * 37, index === 0 ? 40 : 12 + index * 9, index + 3), ...name, user_data: { site, region: index < 4 ? 'north' : 'yorkshire' } };
    const created = await server.api(admin, 'POST', '/api/v1/acls', { ...body, okm_id: acmeOkms[index]!.serial }, 201);
    if (index === 0) shown = created.data.id;
  }

  for (let index = 0; index < 18; index++) {
    const serial = `${index % 3 === 2 ? 'PAD' : 'CAB'}-${String(4100 + index * 13).padStart(5, '0')}`;
    await fetch(`${server.base}/v1/dlock`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ serial_no: serial, type: index % 3 === 2 ? 'padlock' : 'cabinet', certificate: 'acme-stores-2026', enrolment_code: ENROLMENT_CODE, base64: false }),
    });
  }
  return { adminUrl, acmeUrl, aclId: shown, linkedOkm: acmeOkms[0]!.serial };
}

async function uploadRelease(server: ConsoleServer, token: string, kind: string, version: string, size: number) {
  const response = await fetch(`${server.base}/api/v1/firmware/${kind}/${version}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream' },
    body: Buffer.alloc(size, 3),
  });
  if (response.status !== 201) throw new Error(`upload ${kind} ${version}: ${response.status}`);
}

/** Writes console-acls.png, console-acls-search.png, console-acl.png, console-pending.png, console-firmware.png and console-locks.png into `directory`. */
export async function shootAclFirmwarePages(browser: Browser, server: ConsoleServer, directory: string): Promise<string[]> {
  const { adminUrl, acmeUrl, aclId } = await seedAclFirmwareFleet(server);
  const written: string[] = [];
  const shoot = (name: string) => {
    const file = path.join(directory, name);
    written.push(file);
    return file;
  };

  const customer = await openConsole(browser, acmeUrl, { width: 1280, height: 800 });
  await customer.goto('/acls');
  await customer.page.locator('table.acl-list tbody tr').first().waitFor();
  await customer.page.screenshot({ path: shoot('console-acls.png'), fullPage: true });

  // The ACLs that let user 100 021 in: every site's ACL holds the first users of aclBody, so the search finds several.
  await customer.goto('/acls?user_id=100021');
  await customer.page.getByRole('status').filter({ hasText: /match/ }).waitFor();
  await customer.page.screenshot({ path: shoot('console-acls-search.png'), fullPage: true });

  await customer.goto(`/acls/${aclId}`);
  await customer.page.locator('.acl-matrix').waitFor();
  await customer.page.getByRole('button', { name: '100021', exact: true }).click();
  // The save bar sticks to the window's bottom: a window tall enough for the matrix, not a full-page shot.
  await customer.page.setViewportSize({ width: 1280, height: 1180 });
  // Selecting the user scrolled the matrix into view; the shot shows the page from its top (name, customer, link).
  await customer.page.evaluate(() => window.scrollTo(0, 0));
  await customer.page.screenshot({ path: shoot('console-acl.png') });
  await customer.page.setViewportSize({ width: 1280, height: 800 });

  await customer.goto('/locks');
  await customer.page.locator('table.locks-table tbody tr').first().waitFor();
  await customer.page.screenshot({ path: shoot('console-locks.png'), fullPage: true });
  customer.assertNoProblems();
  await customer.close();

  const operator = await openConsole(browser, adminUrl, { width: 1280, height: 800 });
  await operator.goto('/pending-okms');
  await operator.page.locator('table.pending-table tbody tr').first().waitFor();
  await operator.page.screenshot({ path: shoot('console-pending.png'), fullPage: true });

  await operator.goto('/firmware');
  await operator.page.getByRole('region', { name: 'OKM (KAS) firmware' }).waitFor();
  await operator.page.screenshot({ path: shoot('console-firmware.png'), fullPage: true });
  operator.assertNoProblems();
  await operator.close();
  return written;
}
