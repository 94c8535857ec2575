import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page, Request } from 'playwright-core';
import { loadSettings } from '../../src/config/settings.ts';
import { createCustomer } from '../../src/customers/repository.ts';
import { dialectFor, openDatabase, type DatabaseHandle } from '../../src/db/database.ts';
import { runKeyfleet } from '../helpers/cli.ts';
import { serveProcess, type ServerProcess } from '../helpers/server-process.ts';

/** A request the browser cancelled because the page was left (a refresh in flight): not a failure. */
export const cancelledByNavigation = (request: Request) => request.failure()?.errorText === 'net::ERR_ABORTED';

export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Bundles console/src into console/dist as `npm ci` does, so the server serves the sources under test. */
export function buildConsole(): void {
  execFileSync(process.execPath, ['console/build.mjs'], { cwd: PROJECT_ROOT, stdio: 'inherit' });
}

export interface ConsoleServer {
  base: string;
  /** The server's settings as environment variables, for `keyfleet …` commands and the database. */
  env: Record<string, string>;
  process: ServerProcess;
  /** The server's database, opened by the test process too. */
  database: DatabaseHandle;
  /** `keyfleet console ARGS --url BASE --json`: the sign-in URL and when its token expires (epoch seconds). */
  signIn(...args: string[]): Promise<{ url: string; expiresAt: number }>;
  stop(): Promise<void>;
}

/** A built console and `keyfleet serve` on a temp SQLite database and a real port. */
export async function startConsoleServer(extraEnv: Record<string, string> = {}): Promise<ConsoleServer> {
  buildConsole();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-console-'));
  const env = { DATA_DIR: dataDir, RATE_LIMIT_API_PER_MINUTE: '0', RATE_LIMIT_DEVICE_PER_MINUTE: '0', RATE_LIMIT_DEVICE_IP_PER_MINUTE: '0', ...extraEnv };
  // LOG_LEVEL info (serveProcess's): its "Server listening at" line gives the port.
  const server = serveProcess(env);
  const base = await server.listening;
  const database = openDatabase(dialectFor(loadSettings({ ...env, LOG_LEVEL: 'silent' })));
  return {
    base,
    env,
    process: server,
    database,
    async signIn(...args) {
      const run = await runKeyfleet(env, 'console', '--url', base, '--json', ...args);
      assert.equal(run.exitCode, 0, run.stderr);
      const printed = JSON.parse(run.stdout) as { url: string; expires_at: number };
      assert.deepEqual(Object.keys(printed), ['url', 'expires_at']);
      return { url: printed.url, expiresAt: printed.expires_at };
    },
    async stop() {
      await database.db.destroy();
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// ---- A seeded fleet -----------------------------------------------------------------------------

export interface FleetSpec {
  customers: string[];
  /** OKMs per customer, and how many of them are drifting, overdue, never polled (the rest in step). */
  perCustomer: { okms: number; drifting: number; overdue: number; neverPolled: number };
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

/** The customers and their OKMs, inserted straight into the database in multi-row statements. */
export async function seedFleet({ db }: DatabaseHandle, spec: FleetSpec): Promise<void> {
  const now = spec.now ?? Date.now();
  const interval = spec.fleetPollingInterval ?? 150;
  const random = generator(7);
  const pick = <T>(values: readonly T[]) => values[Math.floor(random() ** 1.6 * values.length)]!;
  for (const name of spec.customers) {
    const customer = await createCustomer(db, name);
    const { okms, drifting, overdue, neverPolled } = spec.perCustomer;
    const rows = Array.from({ length: okms }, (_unused, index) => {
      // States spread over the serial numbers (7 919 is a prime: the ranks are a permutation).
      const rank = (index * 7919) % okms;
      const isNeverPolled = rank < neverPolled;
      const isOverdue = !isNeverPolled && rank < neverPolled + overdue;
      const isDrifting = !isNeverPolled && !isOverdue && rank < neverPolled + overdue + drifting;
      const lastSync = isNeverPolled ? null : isOverdue ? now - (3 * interval + 600 + Math.floor(random() * 86_400)) * 1000 : now - Math.floor(random() * interval * 1000);
      const serial = `${spec.prefix ?? 'OKM'}-${name.toUpperCase()}-${String(index + 1).padStart(5, '0')}`;
      return {
        serial_number: serial,
        customer_id: customer.id,
        auditing_enabled: 1,
        status_urls: '[]',
        install_code: null,
        last_sync_time: lastSync,
        last_ip: isNeverPolled ? null : `10.${20 + (index % 200)}.${index % 250}.${(index * 7) % 250}`,
        firmware_version: isNeverPolled ? null : pick(KAS_VERSIONS),
        batch_key_firmware_version: isNeverPolled ? null : pick(BATCH_VERSIONS),
        wireless_key_firmware_version: isNeverPolled ? null : pick(WIRELESS_VERSIONS),
        last_correction: isDrifting ? pick(CORRECTIONS) : null,
        created_at: now - 30 * 86_400_000,
        updated_at: now - 30 * 86_400_000,
      };
    });
    for (let start = 0; start < rows.length; start += 500) await db.insertInto('okms').values(rows.slice(start, start + 500)).execute();
  }
}

// ---- Pages that fail on any error ---------------------------------------------------------------

export interface WatchedPage {
  page: Page;
  /** Every console error, page error, failed request and unexpected ≥ 400 answer so far. */
  problems: string[];
  /** Answers with this status to a URL containing `urlPart` are expected by the test (once each). */
  expect(status: number, urlPart: string): void;
  /** Fails the test if anything went wrong on the page. */
  assertClean(): void;
}

/**
 * A page in a fresh browser context (its own sessionStorage) that records console errors, page
 * errors, failed requests, and answers ≥ 400 the test did not announce with expect().
 */
export async function watchedPage(browser: Browser, viewport = { width: 1280, height: 800 }): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport, timezoneId: 'Europe/Berlin', locale: 'en-GB' });
  const page = await context.newPage();
  const problems: string[] = [];
  const expected: Array<{ status: number; urlPart: string }> = [];
  page.on('console', (message) => {
    if (message.type() === 'error') {
      // The browser reports each answer ≥ 400 as a console error too: those are judged below.
      if (/Failed to load resource: the server responded with a status of (\d+)/.test(message.text())) return;
      problems.push(`console error: ${message.text()}`);
    }
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('requestfailed', (request) => {
    if (cancelledByNavigation(request)) return;
    problems.push(`request failed: ${request.method()} ${request.url()} ${request.failure()?.errorText ?? ''}`);
  });
  page.on('response', (response) => {
    if (response.status() < 400) return;
    const index = expected.findIndex((entry) => entry.status === response.status() && response.url().includes(entry.urlPart));
    if (index >= 0) expected.splice(index, 1);
    else problems.push(`unexpected ${response.status()} for ${response.request().method()} ${response.url()}`);
  });
  return {
    page,
    problems,
    expect: (status, urlPart) => expected.push({ status, urlPart }),
    assertClean: () => assert.deepEqual(problems, []),
  };
}

// ---- The API and a device, over HTTP -------------------------------------------------------------

/** The token in a sign-in URL's fragment. */
export const tokenOf = (signInUrl: string) => new URL(signInUrl).hash.replace(/^#token=/, '');

/** A JSON API call with a bearer token; fails the test unless the answer is 2xx. */
export async function apiCall(base: string, token: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${text}`);
  return text === '' ? null : JSON.parse(text);
}

/** What an OKM that applied everything reports (docs/okm-config-protocol.md), with `overrides`. */
export function inStepReport(overrides: Record<string, string | number> = {}): Record<string, string | number> {
  return { kasDateTime: Date.now(), cacheMode: 1, auditUrl: '/api/v1/audit', pollingInterval: 150, retailCfg: 2, kasFirmware: '2.4.1', ...overrides };
}

/** One config poll of a device, as it sends it: GET /api/v1/config/{serial}?…; the reply body. */
export async function devicePoll(base: string, serial: string, report: Record<string, string | number>): Promise<unknown> {
  const query = new URLSearchParams(Object.entries(report).map(([key, value]) => [key, String(value)]));
  const response = await fetch(`${base}/api/v1/config/${serial}?${query}`);
  assert.ok(response.status === 200 || response.status === 204, `poll of ${serial}: ${response.status}`);
  return response.status === 204 ? null : response.json();
}
