/**
 * End-to-end fixture of the console pages ACLs, pending OKMs, firmware and locks: a real
 * `keyfleet serve` on a temp database (the console built beforehand by `npm run
 * console:build`), the CLI on the same database, API calls as the seeding operator or a
 * device, and browser pages that record every console error and failed request.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { runKeyfleet } from '../helpers/cli.ts';
import { serveProcess, type ServerProcess } from '../helpers/server-process.ts';
import { cancelledByNavigation } from './helpers.ts';
import { parametersAfter } from '../../src/simulator/device.ts';

const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Throws unless console/dist holds a build (the server would serve no console). */
export function requireBuiltConsole(): void {
  if (!fs.existsSync(path.join(PROJECT_ROOT, 'console/dist/index.html'))) throw new Error('console/dist is missing: run `npm run console:build` first');
}

export interface ConsoleServer {
  base: string;
  /** `keyfleet ARGS --json` on the server's database; throws unless it exits 0. */
  cli(...args: string[]): Promise<Record<string, unknown>>;
  /** The sign-in URL `keyfleet console` prints (an operator's without a customer). */
  signInUrl(customer?: string): Promise<string>;
  /** One API call; throws unless the status is `expect` (default: any 2xx). The body as JSON.parse gives it; null when empty. */
  api(token: string, method: string, path: string, body?: unknown, expect?: number): Promise<ReturnType<typeof JSON.parse>>;
  /** One config poll as the device makes it; the reply body, or null for a 204. */
  poll(serial: string, parameters: Record<string, unknown>): Promise<Record<string, unknown> | null>;
  stop(): Promise<void>;
  server: ServerProcess;
}

export const tokenOf = (signInUrl: string) => new URL(signInUrl).hash.replace(/^#token=/, '');

/** `keyfleet serve` on a fresh DATA_DIR, with pending OKMs (auto-enrol off) so that every page has something to show. */
export async function startConsoleServer(settings: Record<string, string> = {}): Promise<ConsoleServer> {
  requireBuiltConsole();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'keyfleet-console2-e2e-'));
  const env = { DATA_DIR: dataDir, OKM_AUTO_ENROL: 'false', ...settings };
  const server = serveProcess(env);
  const base = await server.listening;

  const cli = async (...args: string[]) => {
    const run = await runKeyfleet(env, ...args, '--json');
    if (run.exitCode !== 0) throw new Error(`keyfleet ${args.join(' ')}: exit ${run.exitCode}: ${run.stderr}`);
    return JSON.parse(run.stdout) as Record<string, unknown>;
  };

  const api = async (token: string, method: string, apiPath: string, body?: unknown, expect?: number) => {
    const response = await fetch(`${base}${apiPath}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
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
    server,
    cli,
    signInUrl: async (customer) => (await cli('console', '--url', base, ...(customer === undefined ? [] : ['--customer', customer]))).url as string,
    api,
    poll,
    async stop() {
      await server.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
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

export interface ConsolePage {
  page: Page;
  /** Opens a console page by its path below /console ("/acls"); the token stays in the tab's sessionStorage. */
  goto(consolePath: string): Promise<void>;
  /** Lets one failing response through (a 400 the test provokes on purpose). */
  allowFailure(method: string, pathPattern: RegExp, status: number): void;
  /** Fails the test on any console error, page error or failed request so far. */
  assertNoProblems(): void;
  close(): Promise<void>;
}

/** A new browser page signed in with `signInUrl`, recording every console error and failed request. */
export async function openConsole(browser: Browser, signInUrl: string, viewport = { width: 1280, height: 800 }): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems: string[] = [];
  const allowed: Array<{ method: string; pathPattern: RegExp; status: number }> = [];
  const isAllowed = (method: string, url: string, status: number) =>
    allowed.some((rule) => rule.method === method && rule.status === status && rule.pathPattern.test(new URL(url).pathname));
  const allowedStatuses = () => new Set(allowed.map((rule) => rule.status));

  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    // Chromium logs every 4xx as "Failed to load resource"; the response handler judges those.
    const status = /the server responded with a status of (\d+)/.exec(message.text());
    if (status && allowedStatuses().has(Number(status[1]))) return;
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
  await page.goto(signInUrl);
  await page.getByRole('navigation', { name: 'Console pages' }).waitFor();
  return {
    page,
    goto: async (consolePath) => void (await page.goto(`${new URL(signInUrl).origin}/console${consolePath}`)),
    allowFailure: (method, pathPattern, status) => void allowed.push({ method, pathPattern, status }),
    assertNoProblems: () => assert.deepEqual(problems, [], 'console errors or failed requests'),
    close: () => context.close(),
  };
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
