/**
 * Every page of the console fits a 390 px phone and a 1280×800 window without sideways scrolling
 * of the page (a wide table scrolls inside its own frame): each route of the console's own route
 * table (console/src/pages.ts) is visited at both sizes over a realistic fleet (long serial
 * numbers, many columns, a rollout, webhook endpoints that fail, locks, ACLs, history). A route
 * added to the table without a URL here fails the test, so a new page is covered by it.
 *
 * UPDATE_SCREENSHOTS=1 with this file writes each page's first screen at both sizes to docs/images
 * (console-page-NAME.png and console-page-NAME-phone.png); FULL_PAGE_SCREENSHOTS=DIR writes whole
 * pages to DIR, to look at a long page to its end.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { inStepReport, PROJECT_ROOT, seedFleet, startConsoleServer, tokenOf, watchConsole, type ConsoleServer } from './e2e-fixture.ts';
import { seedAclFirmwareFleet } from './screenshots-acls-firmware.ts';

const SIZES = [
  { name: 'phone', viewport: { width: 390, height: 844 } },
  { name: 'desktop', viewport: { width: 1280, height: 800 } },
] as const;
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs/images') : undefined;
const FULL_PAGES = process.env.FULL_PAGE_SCREENSHOTS || undefined;

/** The longest serial numbers the API takes are 64 characters; shops' real ones run to 40 and more. */
const SHOWCASE = 'OKM-LEEDS-WAREHOUSE-NORTH-DOCK-07-CABINET-000412';
const LONG_LOCK = 'CAB-LEEDS-WAREHOUSE-NORTH-DOCK-07-KEYCABINET-0042';
const ENROLMENT_CODE = '0a1b2c3d4e5f60718293a4b5c6d7e8f9';

/** The paths of the console's route table, read from its source (the router and the navigation are made from it). */
export function consoleRoutePaths(): string[] {
  const source = fs.readFileSync(path.join(PROJECT_ROOT, 'console/src/pages.ts'), 'utf8');
  const table = source.slice(source.indexOf('export const PAGES'));
  return [...table.matchAll(/\{\s*path:\s*'([^']+)'/g)].map((match) => match[1]!);
}

interface Seeded {
  adminUrl: string;
  acmeUrl: string;
  aclId: string;
  rolloutId: number;
  endpointId: number;
}

/**
 * The URLs (below /console) each route of the route table is visited at, as the operator it is
 * visited by: a route can be visited at several (a list and its filtered views).
 */
function urlsOf(seeded: Seeded): Record<string, Array<{ name: string; url: string; as: 'admin' | 'acme' }>> {
  return {
    '/': [{ name: 'overview', url: '/', as: 'admin' }],
    '/okms': [
      { name: 'okms', url: '/okms', as: 'admin' },
      { name: 'okms-long-serials', url: '/okms?serial_prefix=OKM-NORTHWEST', as: 'admin' },
    ],
    '/okms/:serial': [{ name: 'okm-detail', url: `/okms/${SHOWCASE}`, as: 'admin' }],
    '/acls': [{ name: 'acls', url: '/acls', as: 'acme' }],
    '/acls/:id': [{ name: 'acl', url: `/acls/${seeded.aclId}`, as: 'acme' }],
    '/pending-okms': [{ name: 'pending', url: '/pending-okms', as: 'admin' }],
    '/firmware': [{ name: 'firmware', url: '/firmware', as: 'admin' }],
    '/locks': [{ name: 'locks', url: '/locks', as: 'acme' }],
    '/locks/:serial': [{ name: 'lock', url: `/locks/${LONG_LOCK}`, as: 'admin' }],
    '/rollouts': [{ name: 'rollouts', url: '/rollouts', as: 'admin' }],
    '/rollouts/new': [{ name: 'rollout-new', url: '/rollouts/new', as: 'acme' }],
    '/rollouts/:id': [{ name: 'rollout', url: `/rollouts/${seeded.rolloutId}`, as: 'acme' }],
    '/rollouts/:id/okms': [{ name: 'rollout-okms', url: `/rollouts/${seeded.rolloutId}/okms`, as: 'acme' }],
    '/events': [
      { name: 'events', url: '/events', as: 'acme' },
      { name: 'events-endpoint', url: `/events?endpoint=${seeded.endpointId}`, as: 'acme' },
    ],
    '/history': [{ name: 'history', url: '/history', as: 'admin' }],
    '/people': [{ name: 'people', url: '/people', as: 'admin' }],
  };
}

/** Waits until the page has shown what it loads: its heading, no spinner, the network quiet. */
export async function settled(page: Page): Promise<void> {
  await page.locator('main h1').first().waitFor({ timeout: 20_000 });
  await page.waitForLoadState('networkidle', { timeout: 10_000 }).catch(() => undefined);
  await page.waitForFunction(() => document.querySelector('.spinner') === null, undefined, { timeout: 20_000 });
  await page.waitForTimeout(150);
}

/** How far the page reaches past the window, and the elements that reach furthest (to name the culprit). */
const overflowOf = (page: Page) =>
  page.evaluate(() => {
    const width = window.innerWidth;
    const overflow = document.documentElement.scrollWidth - width;
    const culprits: string[] = [];
    if (overflow > 0) {
      for (const element of document.querySelectorAll('body *')) {
        const box = element.getBoundingClientRect();
        if (box.right > width + 0.5 && box.width > 0) {
          const parent = element.parentElement;
          const parentBox = parent?.getBoundingClientRect();
          if (parentBox && parentBox.right > width + 0.5 && parent !== document.body) continue;
          culprits.push(`${element.tagName.toLowerCase()}${element.className ? `.${String(element.className).split(' ').join('.')}` : ''} right=${Math.round(box.right)}`);
        }
      }
    }
    return { overflow, culprits: culprits.slice(0, 6) };
  });

async function seed(server: ConsoleServer): Promise<Seeded> {
  const { adminUrl, acmeUrl, aclId } = await seedAclFirmwareFleet(server);
  const admin = tokenOf(adminUrl);
  const acme = tokenOf(acmeUrl);
  // Hundreds more OKMs with long serial numbers, in every state.
  await seedFleet(server.database, {
    customers: ['umbrella'],
    prefix: 'OKM-NORTHWEST-DISTRIBUTION-CENTRE',
    perCustomer: { okms: 400, drifting: 40, overdue: 20, neverPolled: 10, stuck: 6 },
  });

  // One OKM with everything a page can show: long subscriber URLs, messages, users, audit records, drift.
  await server.api(admin, 'PUT', `/api/v1/okms/${SHOWCASE}?customer=acme`, {}, 201);
  await server.poll(SHOWCASE, inStepReport());
  await server.api(admin, 'PATCH', `/api/v1/okms/${SHOWCASE}`, {
    asset_list: ['LOCK-LEEDS-WAREHOUSE-NORTH-DOCK-07-01', 'LOCK-LEEDS-WAREHOUSE-NORTH-DOCK-07-02', LONG_LOCK],
    subscribe_urls: { status: ['http://127.0.0.1:9/keyfleet/status-notifications/leeds-warehouse-north/dock-07?format=json&source=okm'] },
  });
  await server.api(admin, 'POST', `/api/v1/okms/${SHOWCASE}/messages`, { type: 'delete-assets' });
  for (const report of [inStepReport(), inStepReport({ assetListDigest: 'x' })]) await server.poll(SHOWCASE, report);
  await server.api(admin, 'PATCH', `/api/v1/okms/${SHOWCASE}`, { polling_interval: 300 });
  const audit = await fetch(`${server.base}/api/v1/audit/${SHOWCASE}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([
      { event: 'key_out', lock: LONG_LOCK, user: 'u-1043', at: '2026-11-22T08:14:03Z' },
      { event: 'key_in', lock: LONG_LOCK, user: 'u-1043', at: '2026-11-22T08:31:47Z' },
    ]),
  });
  assert.equal(audit.status, 201);

  // A DLock with a long serial number.
  const apiKey = (await server.cli('apikey', 'create', '--customer', 'acme')).key as string;
  const enrolled = await fetch(`${server.base}/v1/dlock`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ serial_no: LONG_LOCK, type: 'cabinet', certificate: 'acme-stores-2026', enrolment_code: ENROLMENT_CODE, base64: false }),
  });
  assert.ok(enrolled.status < 300, `enrol ${LONG_LOCK}: ${enrolled.status}`);

  // A rollout under way, and a webhook endpoint with a long URL whose deliveries fail.
  const rolloutId = (await server.api(acme, 'POST', '/api/v1/rollouts', { kind: 'kas', version: '2.5.0', groups: [{ percent: 5 }, { percent: 25 }, { percent: 100 }], success_threshold: 90, error_threshold: 5 }, 201)).data.id as number;
  await server.api(acme, 'POST', `/api/v1/rollouts/${rolloutId}/start`);
  const endpointId = (await server.api(acme, 'POST', '/api/v1/webhook-endpoints', { url: 'http://localhost:9/integrations/keyfleet/fleet-events/acme-stores-north-region/pager-bridge', event_types: ['okm.overdue', 'okm.stuck', 'okm.back_online', 'rollout.started', 'rollout.paused', 'subscriber.failing'] }, 201)).data.id as number;
  await server.api(acme, 'POST', `/api/v1/webhook-endpoints/${endpointId}/test`, undefined, 202);
  for (let round = 0; round < 100; round++) {
    const deliveries = (await server.api(acme, 'GET', `/api/v1/webhook-endpoints/${endpointId}/deliveries`)).data as Array<{ attempts: number }>;
    if (deliveries.some((delivery) => delivery.attempts > 0)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { adminUrl, acmeUrl, aclId, rolloutId, endpointId };
}

describe('console: every page fits a 390 px phone and a 1280×800 window', { skip: browserTestSkip() }, () => {
  let server: ConsoleServer;
  let browser: Browser;
  let seeded: Seeded;

  before(async () => {
    [server, browser] = await Promise.all([startConsoleServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }), launchChromium()]);
    seeded = await seed(server);
  });
  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test('every route of the console has a URL here (a new page must be added to this test)', () => {
    const routes = consoleRoutePaths();
    assert.ok(routes.length >= 10, `the route table was read: ${routes.join(', ')}`);
    assert.deepEqual(Object.keys(urlsOf(seeded)).sort(), [...routes].sort());
  });

  for (const size of SIZES) {
    test(`every page at ${size.viewport.width}×${size.viewport.height}: the page is no wider than the window`, { timeout: 300_000 }, async () => {
      const urls = urlsOf(seeded);
      const tooWide: string[] = [];
      const visits = [
        ...consoleRoutePaths().flatMap((route) => urls[route] ?? []),
        { name: 'not-found', url: '/no-such-page', as: 'admin' as const },
      ];
      for (const visit of visits) {
        const signInUrl = visit.as === 'admin' ? seeded.adminUrl : seeded.acmeUrl;
        const watched = await watchConsole(browser, server.base, size.viewport);
        const { page } = watched;
        await page.goto(`${server.base}/console${visit.url}${new URL(signInUrl).hash}`);
        await settled(page);
        const { overflow, culprits } = await overflowOf(page);
        if (overflow > 0) tooWide.push(`${visit.url}: ${overflow} px too wide (${culprits.join(', ')})`);
        const suffix = size.name === 'phone' ? '-phone' : '';
        if (SCREENSHOTS) await page.screenshot({ path: path.join(SCREENSHOTS, `console-page-${visit.name}${suffix}.png`) });
        if (FULL_PAGES) await page.screenshot({ path: path.join(FULL_PAGES, `${visit.name}${suffix}.png`), fullPage: true });
        watched.assertNoProblems();
        await watched.close();
      }
      // The sign-in page, signed out.
      const signedOut = await watchConsole(browser, server.base, size.viewport);
      await signedOut.page.goto(`${server.base}/console/`);
      await signedOut.page.locator('#token').waitFor();
      const signIn = await overflowOf(signedOut.page);
      if (signIn.overflow > 0) tooWide.push(`sign-in: ${signIn.overflow} px too wide (${signIn.culprits.join(', ')})`);
      if (SCREENSHOTS) await signedOut.page.screenshot({ path: path.join(SCREENSHOTS, `console-page-sign-in${size.name === 'phone' ? '-phone' : ''}.png`) });
      await signedOut.close();
      assert.deepEqual(tooWide, []);
    });
  }
});
