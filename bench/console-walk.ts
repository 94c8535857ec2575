/**
 * The console walk: every page of the console loaded in Chromium over a fleet of 10 060 OKMs
 * (SQLite, `keyfleet serve` on a real port, the console as built in console/dist), each page's
 * load time printed as a table.
 *
 *   npx node console/build.mjs && npx node --import tsx bench/console-walk.ts [--rounds 3]
 *
 * A page's load time runs from the navigation's start until it shows what it loads: its
 * heading, no spinner and no API request in flight (held for 400 ms, so that a request a loaded
 * answer starts counts too). Each page is loaded `rounds` times in one signed-in tab (the
 * bundle cached, as an operator moving between pages has it); the median and the slowest are
 * printed. To compare two commits, run this same file in a checkout of each (it uses only the
 * test fixture's helpers: startConsoleServer, seedFleet, seedAclFirmwareFleet).
 */
import { parseArgs } from 'node:util';
import type { Page, Request } from 'playwright-core';
import { launchChromium } from '../test/helpers/browser.ts';
import { inStepReport, seedFleet, startConsoleServer, tokenOf, watchConsole, type ConsoleServer } from '../test/console/e2e-fixture.ts';
import { seedAclFirmwareFleet } from '../test/console/screenshots-acls-firmware.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } });
const ROUNDS = Number(values.rounds);
const SHOWCASE = 'OKM-LEEDS-WAREHOUSE-NORTH-DOCK-07-CABINET-000412';
const LOCK = 'CAB-04100';
/** seedAclFirmwareFleet enrols 244 OKMs through the API; these bring the fleet to 10 060 (with the showcase). */
const BULK_CUSTOMERS = ['umbrella', 'wayne', 'stark', 'tyrell', 'cyberdyne'];
const BULK_PER_CUSTOMER = 1_963;

async function seed(server: ConsoleServer) {
  const { adminUrl, acmeUrl, aclId } = await seedAclFirmwareFleet(server);
  const admin = tokenOf(adminUrl);
  const acme = tokenOf(acmeUrl);
  await seedFleet(server.database, { customers: BULK_CUSTOMERS, perCustomer: { okms: BULK_PER_CUSTOMER, drifting: 150, overdue: 50, neverPolled: 20 } });
  await server.api(admin, 'PUT', `/api/v1/okms/${SHOWCASE}?customer=acme`, {}, 201);
  await server.poll(SHOWCASE, inStepReport());
  const rolloutId = (await server.api(acme, 'POST', '/api/v1/rollouts', { kind: 'kas', version: '2.5.0', groups: [{ percent: 5 }, { percent: 25 }, { percent: 100 }] }, 201)).data.id as number;
  await server.api(acme, 'POST', `/api/v1/rollouts/${rolloutId}/start`);
  await server.api(acme, 'POST', '/api/v1/webhook-endpoints', { url: 'http://localhost:9/pager-bridge', event_types: ['okm.overdue', 'rollout.started'] }, 201);
  const total = await server.database.db.selectFrom('okms').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
  return { adminUrl, acmeUrl, aclId, rolloutId, okms: Number(total.count) };
}

/** Milliseconds from the navigation's start until the page shows what it loads (see the file's comment). */
async function loadTime(page: Page, inFlight: () => number, url: string): Promise<number> {
  const started = performance.now();
  await page.goto(url, { waitUntil: 'commit' });
  const ready = () =>
    page.evaluate(() => document.querySelector('main h1') !== null && document.querySelector('.spinner') === null).catch(() => false);
  let readyAt: number | undefined;
  for (;;) {
    const now = performance.now();
    if (now - started > 30_000) throw new Error(`${url} did not load within 30 s`);
    if (inFlight() === 0 && (await ready())) {
      readyAt ??= now;
      if (performance.now() - readyAt >= 400) return readyAt - started;
    } else {
      readyAt = undefined;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const server = await startConsoleServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
const browser = await launchChromium();
try {
  const seeded = await seed(server);
  const visits: Array<{ url: string; as: 'admin' | 'acme' }> = [
    { url: '/', as: 'admin' },
    { url: '/okms', as: 'admin' },
    { url: '/okms?state=drifting', as: 'admin' },
    { url: `/okms/${SHOWCASE}`, as: 'admin' },
    { url: '/acls', as: 'acme' },
    { url: `/acls/${seeded.aclId}`, as: 'acme' },
    { url: '/pending-okms', as: 'admin' },
    { url: '/firmware', as: 'admin' },
    { url: '/locks', as: 'acme' },
    { url: `/locks/${LOCK}`, as: 'admin' },
    { url: '/rollouts', as: 'admin' },
    { url: '/rollouts/new', as: 'acme' },
    { url: `/rollouts/${seeded.rolloutId}`, as: 'acme' },
    { url: `/rollouts/${seeded.rolloutId}/okms`, as: 'acme' },
    { url: '/events', as: 'acme' },
    { url: '/history', as: 'admin' },
    { url: '/people', as: 'admin' },
  ];
  const times = new Map<string, number[]>();
  /** A page's slowest API call over its loads: what its time goes to. */
  const slowestCall = new Map<string, { call: string; ms: number }>();
  const current: { slowest?: { call: string; ms: number } } = {};
  for (const as of ['admin', 'acme'] as const) {
    const signInUrl = as === 'admin' ? seeded.adminUrl : seeded.acmeUrl;
    const watched = await watchConsole(browser, server.base);
    const { page } = watched;
    let inFlight = 0;
    const startedAt = new Map<Request, number>();
    const isApi = (url: string) => new URL(url).pathname.startsWith('/api/');
    const finished = (request: Request) => {
      if (!isApi(request.url())) return;
      inFlight--;
      const ms = performance.now() - (startedAt.get(request) ?? performance.now());
      const { pathname, search } = new URL(request.url());
      if (ms > (current.slowest?.ms ?? -1)) current.slowest = { call: `${request.method()} ${pathname}${search}`, ms };
    };
    page.on('request', (request) => {
      if (!isApi(request.url())) return;
      inFlight++;
      startedAt.set(request, performance.now());
    });
    page.on('requestfinished', finished);
    page.on('requestfailed', finished);
    await page.goto(signInUrl);
    await page.getByRole('navigation', { name: 'Console pages' }).waitFor();
    for (let round = 0; round < ROUNDS; round++) {
      for (const visit of visits.filter((candidate) => candidate.as === as)) {
        current.slowest = undefined;
        const ms = await loadTime(page, () => inFlight, `${server.base}/console${visit.url}`);
        times.set(visit.url, [...(times.get(visit.url) ?? []), ms]);
        const slowest = current.slowest as { call: string; ms: number } | undefined;
        if (slowest && slowest.ms > (slowestCall.get(visit.url)?.ms ?? -1)) slowestCall.set(visit.url, slowest);
      }
    }
    await watched.close();
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
  console.log(`console walk: ${seeded.okms.toLocaleString('en')} OKMs, SQLite, ${ROUNDS} loads a page`);
  console.log(`${'page'.padEnd(24)} ${'median ms'.padStart(10)} ${'slowest ms'.padStart(11)}  slowest API call (ms)`);
  for (const visit of visits) {
    const list = times.get(visit.url)!;
    const label = visit.url.replace(SHOWCASE, ':serial').replace(LOCK, ':serial').replace(seeded.aclId, ':id').replace(`/${seeded.rolloutId}`, '/:id');
    const call = slowestCall.get(visit.url);
    const callLabel = call === undefined ? '' : `${call.call.replace(SHOWCASE, ':serial').replace(LOCK, ':serial').replace(seeded.aclId, ':id').slice(0, 70)} (${call.ms.toFixed(0)})`;
    console.log(`${label.padEnd(24)} ${median(list).toFixed(0).padStart(10)} ${Math.max(...list).toFixed(0).padStart(11)}  ${callLabel}`);
  }
} finally {
  await browser.close();
  await server.stop();
}
