/**
 * The fixture of every console end-to-end test: a real `keyfleet serve` on a temp database (the
 * console built beforehand by `npm run console:build`), the CLI and the database of that server,
 * API calls as the seeding operator or a device, a seeded fleet, and browser pages that fail the
 * test on any console error, page error, failed request or unexpected answer ≥ 400.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import type { Browser, Page, Request } from 'playwright-core';
import { loadSettings } from '../../src/config/settings.ts';
import { createCustomer } from '../../src/customers/service.ts';
import { NEVER_POLLED } from '../../src/okm/fleet-states.ts';
import { dialectFor, openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { parametersAfter } from '../../src/simulator/device.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { eventually } from '../helpers/eventually.ts';
import { serveProcess, type ServerProcess } from '../helpers/server-process.ts';

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CONSOLE_SOURCES = path.join(PROJECT_ROOT, 'console');
const CONSOLE_BUILD = path.join(CONSOLE_SOURCES, 'dist/index.html');

const newestChange = (directory: string): { file: string; mtimeMs: number } =>
  fs
    .readdirSync(directory, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .map((file) => ({ file, mtimeMs: fs.statSync(file).mtimeMs }))
    .reduce((newest, candidate) => (candidate.mtimeMs > newest.mtimeMs ? candidate : newest), { file: '', mtimeMs: 0 });

/**
 * Throws unless console/dist holds a build newer than every console source. The tests never build
 * it themselves: the build empties console/dist first, under the feet of a server another test
 * file runs at the same time.
 */
export function requireBuiltConsole(): void {
  if (!fs.existsSync(CONSOLE_BUILD)) throw new Error('console/dist is missing: run `npm run console:build` first');
  const built = fs.statSync(CONSOLE_BUILD).mtimeMs;
  const sources = [newestChange(path.join(CONSOLE_SOURCES, 'src')), ...['index.html', 'favicon.svg', 'build.mjs'].map((file) => ({ file: path.join(CONSOLE_SOURCES, file), mtimeMs: fs.statSync(path.join(CONSOLE_SOURCES, file)).mtimeMs }))];
  const stale = sources.find((source) => source.mtimeMs > built);
  if (stale) throw new Error(`console/dist is older than ${path.relative(PROJECT_ROOT, stale.file)}: run \`npm run console:build\` first`);
}

export interface ConsoleServer {
  base: string;
  /** The server's settings as environment variables, as `keyfleet …` commands get them. */
  env: Record<string, string>;
  /** The server's database, opened by the test process too (for seeding in bulk). */
  database: DatabaseHandle;
  /** `keyfleet ARGS --json` on the server's database; throws unless it exits 0. */
  cli(...args: string[]): Promise<Record<string, unknown>>;
  /** The sign-in URL `keyfleet console` prints (an operator's without a customer). */
  signInUrl(customer?: string): Promise<string>;
  /** One API call; throws unless the status is `expect` (default: any 2xx). The body as JSON.parse gives it; null when empty. A PATCH is a JSON merge patch. */
  api(token: string, method: string, path: string, body?: unknown, expect?: number): Promise<ReturnType<typeof JSON.parse>>;
  /** One config poll as the device makes it; the reply body, or null for a 204. */
  poll(serial: string, parameters: Record<string, unknown>): Promise<Record<string, unknown> | null>;
  stop(): Promise<void>;
  server: ServerProcess;
}

/** The token in a sign-in URL's fragment. */
export const tokenOf = (signInUrl: string) => new URL(signInUrl).hash.replace(/^#token=/, '');

/**
 * `keyfleet serve` on a fresh DATA_DIR and a real port, with pending OKMs (auto-enrol off, so
 * that every page has something to show) and no rate limits; `settings` overrides these.
 */
export async function startConsoleServer(settings: Record<string, string> = {}): Promise<ConsoleServer> {
  requireBuiltConsole();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-console-e2e-'));
  const env = {
    DATA_DIR: dataDir,
    OKM_AUTO_ENROL: 'false',
    RATE_LIMIT_API_PER_MINUTE: '0',
    RATE_LIMIT_DEVICE_PER_MINUTE: '0',
    RATE_LIMIT_DEVICE_IP_PER_MINUTE: '0',
    // The pages show the fleet summary, which the fleet pass counts: a pass a second, so that
    // what a test seeds shows up as an operator would see it, one pass later.
    FLEET_PASS_INTERVAL_MS: '1000',
    ...settings,
  };
  const server = serveProcess(env);
  const base = await server.listening;
  const database = openDatabase(dialectFor(loadSettings({ ...env, LOG_LEVEL: 'silent' })));

  const cli = async (...args: string[]) => {
    // Options go before a '--', after which every word is an argument (a key id may begin with '--').
    const end = args.indexOf('--');
    const run = await runKeyfleet(env, ...(end === -1 ? [...args, '--json'] : [...args.slice(0, end), '--json', ...args.slice(end)]));
    if (run.exitCode !== 0) throw new Error(`keyfleet ${args.join(' ')}: exit ${run.exitCode}: ${run.stderr}`);
    return JSON.parse(run.stdout) as Record<string, unknown>;
  };

  const api = async (token: string, method: string, apiPath: string, body?: unknown, expect?: number) => {
    const contentType = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
    const response = await fetch(`${base}${apiPath}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': contentType }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    const ok = expect === undefined ? response.ok : response.status === expect;
    if (!ok) throw new Error(`${method} ${apiPath}: ${response.status} ${text.slice(0, 300)}`);
    return text === '' ? null : JSON.parse(text);
  };

  const poll = async (serial: string, parameters: Record<string, unknown>) => {
    const query = new URLSearchParams(Object.entries(parameters).map(([name, value]) => [name, String(value)]));
    const response = await fetch(`${base}/api/v1/config/${encodeURIComponent(serial)}?${query}`);
    if (response.status === 204) return null;
    const text = await response.text();
    assert.equal(response.status, 200, `poll ${serial}: ${response.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };

  return {
    base,
    env,
    database,
    server,
    cli,
    signInUrl: async (customer) => (await cli('console', '--url', base, ...(customer === undefined ? [] : ['--customer', customer]))).url as string,
    api,
    poll,
    async stop() {
      await database.db.destroy();
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// ---- Devices -------------------------------------------------------------------------------------

/** What an OKM that applied everything reports (docs/okm-config-protocol.md), with `overrides`. */
export function inStepReport(overrides: Record<string, string | number> = {}): Record<string, string | number> {
  return { kasDateTime: Date.now(), cacheMode: 1, auditUrl: '/api/v1/audit', pollingInterval: 150, retailCfg: 2, kasFirmware: '2.4.1', ...overrides };
}

/**
 * A device that follows every correction it gets, as an OKM does; `converge` polls until the
 * answer is `{}` and returns the corrections on the way.
 */
export function device(server: ConsoleServer, serial: string, firmware = '1.0.0') {
  const reported: Record<string, unknown> = { kasFirmware: firmware, cacheMode: 1, pollingInterval: 150 };
  const pollOnce = async () => {
    reported.kasDateTime = Date.now();
    const reply = await server.poll(serial, reported);
    if (reply !== null) Object.assign(reported, parametersAfter(reply as never));
    return reply ?? {};
  };
  return {
    reported,
    pollOnce,
    async converge(limit = 20) {
      const corrections: Record<string, unknown>[] = [];
      for (let round = 0; round < limit; round++) {
        const reply = await pollOnce();
        if (Object.keys(reply).length === 0) return corrections;
        corrections.push(reply);
      }
      throw new Error(`${serial} did not converge: ${JSON.stringify(corrections.slice(-3))}`);
    },
  };
}

// ---- A seeded fleet -------------------------------------------------------------------------------

export interface FleetSpec {
  customers: string[];
  /**
   * OKMs per customer, and how many of them are drifting, overdue, never polled (the rest in
   * step), and of the drifting ones how many are stuck on their last correction (none if left out).
   */
  perCustomer: { okms: number; drifting: number; overdue: number; neverPolled: number; stuck?: number };
  /** Serial numbers begin with this and the customer's name. */
  prefix?: string;
  now?: number;
  fleetPollingInterval?: number;
}

const CORRECTIONS = ['kasFirmware', 'pollingInterval', 'kasDateTime', 'assetList', 'cacheMode', 'batchKeyFirmware'];
const KAS_VERSIONS = ['2.4.1', '2.4.0', '2.3.7', '2.3.2', '2.2.0', '1.9.8'];
const BATCH_VERSIONS = ['1.6.0', '1.5.2', '1.4.9'];
const WIRELESS_VERSIONS = ['3.1.0', '3.0.4'];

/** A small deterministic generator, so that a seeded fleet (and its screenshots) is the same every run. */
function generator(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state * 1_664_525 + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

/** The query values, as stored, of a seeded OKM that has everything the seeding configures (auditing on, the fleet's interval). */
const inStepReported = (lastSync: number, interval: number, kasFirmware: string | null): Record<string, string> => ({
  kasDateTime: String(lastSync),
  cacheMode: '1',
  retailCfg: '2',
  auditUrl: '/api/v1/audit',
  pollingInterval: String(interval),
  ...(kasFirmware === null ? {} : { kasFirmware }),
});

/** The reported value that its last correction was about, where the seeded configuration can differ from it. */
function driftedReport(correction: string, lastSync: number): Record<string, string> {
  if (correction === 'pollingInterval') return { pollingInterval: '300' };
  if (correction === 'kasDateTime') return { kasDateTime: String(lastSync - 3_600_000) };
  if (correction === 'cacheMode') return { cacheMode: '2' };
  return {};
}

/** The customers and their OKMs, inserted straight into the database in multi-row statements. */
export async function seedFleet({ db }: DatabaseHandle, spec: FleetSpec): Promise<void> {
  const now = spec.now ?? Date.now();
  const interval = spec.fleetPollingInterval ?? 150;
  const random = generator(7);
  const pick = <T>(values: readonly T[]) => values[Math.floor(random() ** 1.6 * values.length)]!;
  for (const name of spec.customers) {
    const customer = await createCustomer(db, name);
    const { okms, drifting, overdue, neverPolled, stuck = 0 } = spec.perCustomer;
    const rows = Array.from({ length: okms }, (_unused, index) => {
      // States spread over the serial numbers (7 919 is a prime: the ranks are a permutation).
      const rank = (index * 7919) % okms;
      const isNeverPolled = rank < neverPolled;
      const isOverdue = !isNeverPolled && rank < neverPolled + overdue;
      const isDrifting = !isNeverPolled && !isOverdue && rank < neverPolled + overdue + drifting;
      const isStuck = isDrifting && rank < neverPolled + overdue + stuck;
      const lastSync = isNeverPolled ? null : isOverdue ? now - (3 * interval + 600 + Math.floor(random() * 86_400)) * 1000 : now - Math.floor(random() * interval * 1000);
      const serial = `${spec.prefix ?? 'OKM'}-${name.toUpperCase()}-${String(index + 1).padStart(5, '0')}`;
      const okm = {
        serial_number: serial,
        customer_id: customer.id,
        auditing_enabled: 1,
        status_urls: '[]',
        // Never polled (0), or marked by the fleet pass once silent for 3 polling intervals.
        overdue_at: isNeverPolled ? NEVER_POLLED : isOverdue ? lastSync! + 3 * interval * 1000 : null,
        firmware_version: isNeverPolled ? null : pick(KAS_VERSIONS),
        batch_key_firmware_version: isNeverPolled ? null : pick(BATCH_VERSIONS),
        wireless_key_firmware_version: isNeverPolled ? null : pick(WIRELESS_VERSIONS),
        last_correction: isDrifting ? pick(CORRECTIONS) : null,
        created_at: now - 30 * 86_400_000,
        updated_at: now - 30 * 86_400_000,
      };
      // A stuck OKM's record as its polls leave it (src/device/poll-verdict.ts): its last correction
      // sent on the last `sentOn` of its `polls` polls, stuck since the third of those. Only the
      // stuck draw numbers, so that a fleet without any is the one seeded before they existed.
      const polls = 500;
      const sentOn = isStuck ? 3 + Math.floor(random() ** 2 * 60) : 0;
      const stuckColumns = isStuck
        ? { correction_digest: 'seeded', correction_since_poll: polls - sentOn + 1, stuck_resolver: okm.last_correction, stuck_since: lastSync! - (sentOn - 3) * interval * 1000 }
        : {};
      // What its last poll left, in its poll row: a report in step with what the seeding configures,
      // but for the value its last correction was about, so that its drift report reads as a real one.
      const reported = lastSync === null ? undefined : { ...inStepReported(lastSync, interval, okm.firmware_version), ...(okm.last_correction === null ? {} : driftedReport(okm.last_correction, lastSync)) };
      const poll = lastSync === null ? undefined : { serial_number: serial, last_sync_time: lastSync, last_ip: `10.${20 + (index % 200)}.${index % 250}.${(index * 7) % 250}`, reported: JSON.stringify(reported), polls };
      return { okm: { ...okm, ...stuckColumns }, poll };
    });
    for (let start = 0; start < rows.length; start += 500) {
      const slice = rows.slice(start, start + 500);
      await db.insertInto('okms').values(slice.map((row) => row.okm)).execute();
      const polls = slice.flatMap((row) => (row.poll === undefined ? [] : [row.poll]));
      if (polls.length > 0) await db.insertInto('okm_polls').values(polls).execute();
    }
  }
  await fleetPassesSince(db, Date.now());
}

/**
 * Waits until the server's fleet pass has counted what was stored before `since`: two passes
 * completed after it (the first may have started before), as an operator would see the
 * summary a pass later.
 */
export async function fleetPassesSince(db: DatabaseHandle['db'], since: number): Promise<void> {
  const completedAt = async () =>
    Number((await db.selectFrom('background_passes').select('completed_at').where('name', '=', 'fleet').executeTakeFirst())?.completed_at ?? 0);
  const first = await eventually(async () => {
    const at = await completedAt();
    return at > since ? at : false;
  }, 30_000, 'a fleet pass after the seeding');
  await eventually(async () => (await completedAt()) > first, 30_000, 'a fleet pass that started after the seeding');
}

/** An ACL body of `users` × `locks` with a mix of 0, 1 and 17, as a customer's shop would have. */
export function aclBody(customer: string, users: number, locks: number, seed = 1) {
  const serials = Array.from({ length: locks }, (_, index) => `DOOR-${String(index + 1).padStart(4, '0')}`);
  return {
    customer,
    locks: serials,
    users: Array.from({ length: users }, (_, index) => ({
      user_id: 100_000 + index * 7,
      pin_hash: `a9f${(index * 2654435761 + seed).toString(16).padStart(8, '0').slice(-8)}`,
      auth_time: [8, 12, 24, 4][index % 4],
      sounder: index % 5 === 0,
      sounder_delay: index % 5 === 0 ? 10 : 0,
      sounder_duration: index % 5 === 0 ? 30 : 0,
      sounder_volume: 2,
      permissions: serials.map((_, lock) => {
        const draw = (index * 31 + lock * 17 + seed) % 11;
        return draw < 5 ? 1 : draw < 6 ? 17 : 0;
      }),
    })),
  };
}

// ---- Pages that fail on any problem -----------------------------------------------------------------

/**
 * The one rule for requests that fail without an answer: the browser cancels what is in flight
 * when the page is left (a refresh, a list being loaded), which is no failure; anything else is.
 */
export const cancelledByNavigation = (request: Request) => request.failure()?.errorText === 'net::ERR_ABORTED';

export interface ConsolePage {
  page: Page;
  /** Opens a console page by its path below /console ("/acls"); the token stays in the tab's sessionStorage. */
  goto(consolePath: string): Promise<void>;
  /** Lets failing responses through (a 400 the test provokes on purpose, the 401 of a token that ended). */
  allowFailure(method: string, pathPattern: RegExp, status: number): void;
  /** Fails the test on any console error, page error or failed request so far. */
  assertNoProblems(): void;
  close(): Promise<void>;
}

/**
 * A page of the console at `base` in a fresh browser context (its own sessionStorage, Berlin
 * time, British English), not signed in, recording every console error, page error, failed
 * request and answer ≥ 400 that allowFailure did not let through.
 */
export async function watchConsole(browser: Browser, base: string, viewport = { width: 1280, height: 800 }): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport, timezoneId: 'Europe/Berlin', locale: 'en-GB' });
  const page = await context.newPage();
  const problems: string[] = [];
  const allowed: Array<{ method: string; pathPattern: RegExp; status: number }> = [];
  const isAllowed = (method: string, url: string, status: number) =>
    allowed.some((rule) => rule.method === method && rule.status === status && rule.pathPattern.test(new URL(url).pathname));

  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // Chromium logs every answer ≥ 400 as "Failed to load resource": the response handler judges those.
    if (/^Failed to load resource: the server responded with a status of \d+/.test(message.text())) return;
    problems.push(`console error: ${message.text()} (${message.location().url})`);
  });
  page.on('requestfailed', (request) => {
    if (!cancelledByNavigation(request)) problems.push(`request failed: ${request.method()} ${request.url()} ${request.failure()?.errorText}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400 && !isAllowed(response.request().method(), response.url(), response.status())) {
      problems.push(`${response.status()} ${response.request().method()} ${response.url()}`);
    }
  });
  return {
    page,
    goto: async (consolePath) => void (await page.goto(`${base}/console${consolePath}`)),
    allowFailure: (method, pathPattern, status) => void allowed.push({ method, pathPattern, status }),
    assertNoProblems: () => assert.deepEqual(problems, [], 'console errors or failed requests'),
    close: () => context.close(),
  };
}

/**
 * The serials a console table (`data-testid` `table`) links in its first column, read until they
 * are `expected` or `timeoutMs` has passed, whichever is first. A list whose filter changed keeps
 * its previous rows until the new page has loaded, then briefly shows none; one read right after
 * the URL changes can catch either. What it last read is returned, so a wrong list still fails the
 * caller's assertion with its diff.
 */
export async function listedSerials(page: Page, table: string, expected: readonly string[], timeoutMs = 15_000): Promise<string[]> {
  const links = page.getByTestId(table).locator('tbody tr td:first-child a');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const shown = await links.allInnerTexts();
    if (Date.now() > deadline || isDeepStrictEqual(shown, expected)) return shown;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A new browser page (see watchConsole) signed in with `signInUrl`. */
export async function openConsole(browser: Browser, signInUrl: string, viewport = { width: 1280, height: 800 }): Promise<ConsolePage> {
  const consolePage = await watchConsole(browser, new URL(signInUrl).origin, viewport);
  await consolePage.page.goto(signInUrl);
  await consolePage.page.getByRole('navigation', { name: 'Console pages' }).waitFor();
  return consolePage;
}
