/**
 * The console walk: every page of the console loaded in Chromium over a fleet of 10 060 OKMs
 * (SQLite, `keyfleet serve` on a real port, the console as built in console/dist), each page's
 * load time printed as a table.
 *
 *   npx node console/build.mjs && npx node --import tsx bench/console-walk.ts [--rounds 5] [--before DIR] [--pages /,/okms/:serial]
 *
 * `--before DIR`: a checkout of an earlier commit (its node_modules and console/dist in place,
 * e.g. `git worktree add /tmp/walk-base <commit>`, node_modules symlinked, `npx node
 * console/build.mjs` there). Both servers then run side by side on the same fleet, and each
 * page is loaded on one and then the other, alternately first, so that whatever else the
 * machine is doing weighs on both alike; the table has both columns.
 *
 * A page's load time runs from the navigation's start until it shows what it loads: its
 * heading, no spinner and no API request in flight, held for HOLD_MS (so that a request a loaded
 * answer starts counts too, and the new-rollout form's preview, asked 350 ms after it shows).
 * Each page is loaded `rounds` times in one signed-in tab (the bundle cached, as an operator
 * moving between pages has it); the median is printed, and the slowest API call seen on the
 * page (what its time goes to); `--trace` lists the API calls of each page's last load. Only
 * the test fixture's helpers of each checkout are used (startConsoleServer, seedFleet,
 * seedAclFirmwareFleet), so that each server is seeded as its own code seeds.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { Browser, Page, Request } from 'playwright-core';
import type * as FixtureModule from '../test/console/e2e-fixture.ts';
import type * as AclFirmwareSeedModule from '../test/console/screenshots-acls-firmware.ts';
import { launchChromium } from '../test/helpers/browser.ts';

type Fixture = typeof FixtureModule;
type AclFirmwareSeed = typeof AclFirmwareSeedModule;

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' }, before: { type: 'string' }, pages: { type: 'string' }, trace: { type: 'boolean', default: false } } });
const ROUNDS = Number(values.rounds);
const HOLD_MS = 600;
const SHOWCASE = 'OKM-LEEDS-WAREHOUSE-NORTH-DOCK-07-CABINET-000412';
const LOCK = 'CAB-04100';
/** seedAclFirmwareFleet enrols 244 OKMs through the API; these and the showcase bring the fleet to 10 060. */
const BULK_CUSTOMERS = ['umbrella', 'wayne', 'stark', 'tyrell', 'cyberdyne'];
const BULK_PER_CUSTOMER = 1_963;

interface Visit {
  label: string;
  url: string;
  as: 'admin' | 'acme';
}

/** One checkout's server over the fleet, with a signed-in tab per identity; `load` times one page. */
async function side(root: string, browser: Browser) {
  const fixture = (await import(pathToFileURL(path.join(root, 'test/console/e2e-fixture.ts')).href)) as Fixture;
  const { seedAclFirmwareFleet } = (await import(pathToFileURL(path.join(root, 'test/console/screenshots-acls-firmware.ts')).href)) as AclFirmwareSeed;
  const server = await fixture.startConsoleServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  const { adminUrl, acmeUrl, aclId } = await seedAclFirmwareFleet(server);
  const admin = fixture.tokenOf(adminUrl);
  const acme = fixture.tokenOf(acmeUrl);
  await fixture.seedFleet(server.database, { customers: BULK_CUSTOMERS, perCustomer: { okms: BULK_PER_CUSTOMER, drifting: 150, overdue: 50, neverPolled: 20 } });
  await server.api(admin, 'PUT', `/api/v1/okms/${SHOWCASE}?customer=acme`, {}, 201);
  await server.poll(SHOWCASE, fixture.inStepReport());
  const rolloutId = (await server.api(acme, 'POST', '/api/v1/rollouts', { kind: 'kas', version: '2.5.0', groups: [{ percent: 5 }, { percent: 25 }, { percent: 100 }] }, 201)).data.id as number;
  await server.api(acme, 'POST', `/api/v1/rollouts/${rolloutId}/start`);
  await server.api(acme, 'POST', '/api/v1/webhook-endpoints', { url: 'http://localhost:9/pager-bridge', event_types: ['okm.overdue', 'rollout.started'] }, 201);
  const total = await server.database.db.selectFrom('okms').select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();

  /** API requests in flight in each tab: the other tab's refreshes are not this page's. */
  const inFlight = new Map<'admin' | 'acme', number>([['admin', 0], ['acme', 0]]);
  let loading: 'admin' | 'acme' = 'admin';
  const current: { slowest?: { call: string; ms: number }; loadStart: number; calls: string[] } = { loadStart: 0, calls: [] };
  const tabs = new Map<'admin' | 'acme', Page>();
  for (const [as, signInUrl] of [['admin', adminUrl], ['acme', acmeUrl]] as const) {
    const { page } = await fixture.watchConsole(browser, server.base);
    const startedAt = new Map<Request, number>();
    const isApi = (url: string) => new URL(url).pathname.startsWith('/api/');
    const finished = (request: Request) => {
      if (!isApi(request.url())) return;
      inFlight.set(as, inFlight.get(as)! - 1);
      if (as !== loading) return;
      const ms = performance.now() - (startedAt.get(request) ?? performance.now());
      const { pathname, search } = new URL(request.url());
      if (ms > (current.slowest?.ms ?? -1)) current.slowest = { call: `${request.method()} ${pathname}${search}`, ms };
      const from = (startedAt.get(request) ?? current.loadStart) - current.loadStart;
      current.calls.push(`${from.toFixed(0).padStart(5)} +${ms.toFixed(0).padStart(4)} ms  ${request.method()} ${pathname}${search}`);
    };
    page.on('request', (request) => {
      if (!isApi(request.url())) return;
      inFlight.set(as, inFlight.get(as)! + 1);
      startedAt.set(request, performance.now());
    });
    page.on('requestfinished', finished);
    page.on('requestfailed', finished);
    await page.goto(signInUrl);
    await page.getByRole('navigation', { name: 'Console pages' }).waitFor();
    tabs.set(as, page);
  }
  const times = new Map<string, number[]>();
  const slowestCall = new Map<string, { call: string; ms: number }>();
  /** The API calls of a page's last load: when each started after the navigation, and how long it took. */
  const lastCalls = new Map<string, string[]>();
  return {
    lastCalls,
    okms: Number(total.count),
    url: (visit: Visit) => visit.url.replace(':aclId', aclId).replace(':rolloutId', String(rolloutId)),
    async load(visit: Visit) {
      current.slowest = undefined;
      current.calls = [];
      current.loadStart = performance.now();
      loading = visit.as;
      const ms = await loadTime(tabs.get(visit.as)!, () => inFlight.get(visit.as)!, `${server.base}/console${this.url(visit)}`);
      times.set(visit.label, [...(times.get(visit.label) ?? []), ms]);
      lastCalls.set(visit.label, [`loaded in ${ms.toFixed(0)} ms`, ...current.calls]);
      const slowest = current.slowest as { call: string; ms: number } | undefined;
      if (slowest && slowest.ms > (slowestCall.get(visit.label)?.ms ?? -1)) {
        slowestCall.set(visit.label, { call: slowest.call.replace(SHOWCASE, ':serial').replace(LOCK, ':serial').replace(aclId, ':id'), ms: slowest.ms });
      }
    },
    times,
    slowestCall,
    stop: () => server.stop(),
  };
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
      if (performance.now() - readyAt >= HOLD_MS) return readyAt - started;
    } else {
      readyAt = undefined;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const VISITS: Visit[] = [
  { label: '/', url: '/', as: 'admin' },
  { label: '/okms', url: '/okms', as: 'admin' },
  { label: '/okms?state=drifting', url: '/okms?state=drifting', as: 'admin' },
  { label: '/okms/:serial', url: `/okms/${SHOWCASE}`, as: 'admin' },
  { label: '/acls', url: '/acls', as: 'acme' },
  { label: '/acls/:id', url: '/acls/:aclId', as: 'acme' },
  { label: '/pending-okms', url: '/pending-okms', as: 'admin' },
  { label: '/firmware', url: '/firmware', as: 'admin' },
  { label: '/locks', url: '/locks', as: 'acme' },
  { label: '/locks/:serial', url: `/locks/${LOCK}`, as: 'admin' },
  { label: '/rollouts', url: '/rollouts', as: 'admin' },
  { label: '/rollouts/new', url: '/rollouts/new', as: 'acme' },
  { label: '/rollouts/:id', url: '/rollouts/:rolloutId', as: 'acme' },
  { label: '/rollouts/:id/okms', url: '/rollouts/:rolloutId/okms', as: 'acme' },
  { label: '/events', url: '/events', as: 'acme' },
  { label: '/history', url: '/history', as: 'admin' },
  { label: '/people', url: '/people', as: 'admin' },
];

/** `--pages`: only these pages (their labels, comma-separated), for more rounds of a few. */
const WALKED = values.pages === undefined ? VISITS : VISITS.filter((visit) => values.pages!.split(',').includes(visit.label));
const browser = await launchChromium();
const sides: Array<{ name: string; walk: Awaited<ReturnType<typeof side>> }> = [];
try {
  if (values.before !== undefined) sides.push({ name: 'before', walk: await side(path.resolve(values.before), browser) });
  sides.push({ name: values.before === undefined ? 'this checkout' : 'after', walk: await side(path.resolve(import.meta.dirname, '..'), browser) });
  for (let round = 0; round < ROUNDS; round++) {
    for (const visit of WALKED) {
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const { walk } of order) await walk.load(visit);
    }
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
  console.log(`console walk: ${sides.map(({ name, walk }) => `${name} ${walk.okms.toLocaleString('en')} OKMs`).join(', ')}; SQLite; ${ROUNDS} loads a page; median ms (slowest API call of the last side, ms)`);
  console.log(`${'page'.padEnd(22)}${sides.map(({ name }) => name.padStart(15)).join('')}  slowest API call (${sides.map(({ name }) => name).join(', ')} ms)`);
  for (const { label } of WALKED) {
    const call = sides.at(-1)!.walk.slowestCall.get(label);
    const callMs = sides.map(({ walk }) => walk.slowestCall.get(label)?.ms.toFixed(0) ?? '-').join(', ');
    const medians = sides.map(({ walk }) => median(walk.times.get(label)!).toFixed(0).padStart(15)).join('');
    console.log(`${label.padEnd(22)}${medians}  ${call === undefined ? '' : `${call.call.slice(0, 64)} (${callMs})`}`);
  }
  if (values.trace) {
    for (const { label } of WALKED) {
      for (const { name, walk } of sides) console.log(`\n${label} (${name}), its last load:\n  ${(walk.lastCalls.get(label) ?? []).join('\n  ')}`);
    }
  }
} finally {
  await browser.close();
  for (const { walk } of sides) await walk.stop();
}
