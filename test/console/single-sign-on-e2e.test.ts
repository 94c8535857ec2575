import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { issueToken } from '../../src/auth/tokens.ts';
import { forEachDatabase, type TestApp } from '../helpers/app.ts';
import { browserTestSkip, launchChromium } from '../helpers/browser.ts';
import { eventually } from '../helpers/eventually.ts';
import type { OpenIdProvider, ProviderPerson } from '../helpers/openid-provider.ts';
import { appWithSingleSignOn, type SingleSignOnWorld } from '../helpers/single-sign-on.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';
import { PROJECT_ROOT, requireBuiltConsole, watchConsole, type ConsolePage } from './e2e-fixture.ts';

const PEOPLE: ProviderPerson[] = [
  { sub: 'alice', email: 'alice@example.com', name: 'Alice Operator', groups: ['kf-operators'] },
  { sub: 'bob', email: 'bob@example.com', name: 'Bob Viewer', groups: ['kf-acme-viewers'] },
  { sub: 'ada', email: 'ada@example.com', name: 'Ada Admin', groups: ['it'] },
  { sub: 'erin', email: 'erin@example.com', name: 'Erin Auditor', groups: ['kf-audit'] },
];
const OKM = 'SSO-OKM-0001';
/** Short enough for a test to see a group change at the provider through a session's refresh. */
const SESSION_REFRESH_MS = 1_500;
/** Set (UPDATE_SCREENSHOTS=1 with this file): the sign-in, signed-in and People & access pictures are written to docs/images. */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PROJECT_ROOT, 'docs/images') : undefined;

/**
 * Single sign-on in the console, in Chromium, against a real OpenID Provider (oidc-provider on
 * 127.0.0.1, its sign-in page a one-field form) and keyfleet on a real port: people sign in as
 * themselves, see their role, do what it allows and are refused what it does not; a group lost
 * at the provider, a session revoked and a sign-out each end what the browser may do.
 */
forEachDatabase('console: single sign-on', (kind) => {
  describe('in Chromium', { skip: browserTestSkip() }, () => {
    let world: SingleSignOnWorld;
    let t: TestApp;
    let idp: OpenIdProvider;
    let browser: Browser;
    let base: string;
    let admin: string;

    before(async () => {
      requireBuiltConsole();
      world = await appWithSingleSignOn(kind, PEOPLE, { env: { SESSION_REFRESH: `${SESSION_REFRESH_MS}ms` } });
      ({ t, idp, base } = world);
      browser = await launchChromium();
      for (const customer of ['acme', 'globex']) await createTestCustomer(t, customer);
      admin = await issueTestToken(t, { scopes: ['admin'] });
      for (const binding of [
        { kind: 'group', value: 'kf-operators', role: 'device-operator' },
        { kind: 'group', value: 'kf-acme-viewers', role: 'viewer', customer: 'acme' },
        { kind: 'email', value: 'ada@example.com', role: 'admin' },
        { kind: 'group', value: 'kf-audit', role: 'auditor' },
      ]) {
        await api('POST', '/api/v1/role-bindings', binding);
      }
      await api('PUT', `/api/v1/okms/${OKM}?customer=acme`, { polling_interval: 150 });
    });
    after(async () => {
      await browser?.close();
      await world?.close();
    });

    /** One API call as the operator's token; throws unless 2xx. */
    async function api(method: string, apiPath: string, body?: unknown) {
      const response = await fetch(`${base}${apiPath}`, {
        method,
        headers: { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      assert.ok(response.ok, `${method} ${apiPath}: ${response.status} ${text}`);
      return text === '' ? null : JSON.parse(text);
    }

    /** A fresh browser context on the console, whose start asks who is signed in (a 401 without a session cookie). */
    async function openConsole(consolePath: string, viewport?: { width: number; height: number }): Promise<ConsolePage> {
      const consolePage = await watchConsole(browser, base, viewport);
      consolePage.allowFailure('GET', /^\/api\/v1\/me$/, 401);
      // The provider's sign-out page imports a web font: the test answers it, so that nothing leaves the machine.
      await consolePage.page.route(/^https:\/\/fonts\.googleapis\.com\//, (route) => route.fulfill({ status: 200, contentType: 'text/css', body: '' }));
      await consolePage.goto(consolePath);
      return consolePage;
    }

    /** From the console's sign-in page through the provider's form, back in the console as `login`. */
    async function signInWithSingleSignOn(page: Page, login: string): Promise<void> {
      await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
      await page.getByLabel('Who').fill(login);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByTestId('signed-in-person').waitFor();
    }

    const navLink = (page: Page, label: string) => page.getByRole('navigation', { name: 'Console pages' }).getByRole('link', { name: label, exact: true });
    const sessionsOf = async (subject: string) => ((await api('GET', '/api/v1/sessions')).data as Array<{ id: string; person: { id: number; subject: string } }>).filter((session) => session.person.subject === subject);

    test('a device operator signs in with single sign-on from the page asked for, sees their name and role, and saves a change to an OKM by cookie and anti-CSRF token, with nothing in script-readable storage', { timeout: 60_000 }, async () => {
      const consolePage = await openConsole(`/okms/${OKM}`);
      const { page } = consolePage;
      const apiRequests: Array<{ method: string; path: string; authorization: string | undefined; csrf: string | undefined }> = [];
      page.on('request', (request) => {
        const url = new URL(request.url());
        if (url.origin === base && url.pathname.startsWith('/api/')) apiRequests.push({ method: request.method(), path: url.pathname, authorization: request.headers().authorization, csrf: request.headers()['x-csrf-token'] });
      });

      const offered = await page.getByRole('link', { name: 'Sign in with single sign-on' }).getAttribute('href');
      if (SCREENSHOTS && kind === 'sqlite') await page.screenshot({ path: path.join(SCREENSHOTS, 'console-sign-in-sso.png') });
      const tokenFieldToo = await page.getByLabel('Token', { exact: true }).isVisible();
      await signInWithSingleSignOn(page, 'alice');
      const landedOn = new URL(page.url()).pathname;
      const who = await page.getByTestId('signed-in-person').innerText();
      const nav = await page.getByRole('navigation', { name: 'Console pages' }).innerText();
      if (SCREENSHOTS && kind === 'sqlite') await page.screenshot({ path: path.join(SCREENSHOTS, 'console-signed-in-person.png') });
      await page.getByLabel('Polling interval (s)').fill('300');
      await page.getByRole('button', { name: 'Save changes' }).click();
      await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
      const stored = (await api('GET', `/api/v1/okms/${OKM}`)).data;
      const storage = await page.evaluate(() => ({ session: sessionStorage.length, local: localStorage.length, cookies: document.cookie }));
      const [sessionCookie] = (await page.context().cookies(base)).filter((cookie) => cookie.name === 'keyfleet_session');

      assert.equal(offered, `/auth/oidc/login?return_to=${encodeURIComponent(`/console/okms/${OKM}`)}`);
      assert.ok(tokenFieldToo, 'the token way in stays on the page');
      assert.equal(landedOn, `/console/okms/${OKM}`);
      assert.match(who, /Alice Operator\s+device-operator\s+Sign out/);
      assert.doesNotMatch(nav, /People & access|Pending OKMs/);
      assert.equal(stored.polling_interval, 300);
      assert.deepEqual(storage, { session: 0, local: 0, cookies: '' });
      assert.ok(sessionCookie?.httpOnly, 'the session cookie is HttpOnly');
      assert.deepEqual(apiRequests.filter((request) => request.authorization !== undefined), [], 'no request carries a bearer token');
      const writes = apiRequests.filter((request) => request.method !== 'GET');
      assert.deepEqual(writes.map((write) => `${write.method} ${write.path}`), [`PATCH /api/v1/okms/${OKM}`]);
      assert.ok(writes.every((write) => write.csrf !== undefined && write.csrf.length > 10), 'every write sends the anti-CSRF token');
      consolePage.assertNoProblems();
      await consolePage.close();
    });

    test('what the role does not allow is refused: a device operator opening Pending OKMs gets the API’s 403 message, a viewer of acme is offered no change to an OKM and sees acme only', { timeout: 60_000 }, async () => {
      const operator = await openConsole('/pending-okms');
      operator.allowFailure('GET', /^\/api\/v1\/pending-okms$/, 403);
      await signInWithSingleSignOn(operator.page, 'alice');
      const refusal = await operator.page.locator('.state-error').innerText();
      const whoAfterRefusal = await operator.page.getByTestId('signed-in-person').innerText();
      operator.assertNoProblems();
      await operator.close();

      const viewer = await openConsole(`/okms/${OKM}`);
      await signInWithSingleSignOn(viewer.page, 'bob');
      const noWrite = await viewer.page.getByTestId('no-okm-write').innerText();
      const form = await viewer.page.getByRole('button', { name: 'Save changes' }).count();
      const who = await viewer.page.getByTestId('signed-in-person').innerText();
      viewer.assertNoProblems();
      await viewer.close();

      assert.match(refusal, /Could not load \(403\): Missing required scopes/);
      assert.match(whoAfterRefusal, /Alice Operator\s+device-operator/, 'a refusal of one request does not sign the person out');
      assert.match(noWrite, /You may not change OKMs/);
      assert.equal(form, 0);
      assert.match(who, /Bob Viewer\s+viewer · acme/);
    });

    test('a person whose group is removed at the provider is refused after their session’s next refresh: the console shows the API’s 403 message', { timeout: 60_000 }, async () => {
      const consolePage = await openConsole('/');
      const { page } = consolePage;
      await signInWithSingleSignOn(page, 'alice');
      await page.getByTestId('count-total').waitFor();
      try {
        idp.people.get('alice')!.groups = [];
        await page.waitForTimeout(SESSION_REFRESH_MS + 200);
        consolePage.allowFailure('GET', /^\/api\/v1\//, 403);
        await navLink(page, 'OKMs').click();
        const refusal = await page.getByTestId('session-ended').innerText({ timeout: 15_000 });
        const offeredAgain = await page.getByRole('link', { name: 'Sign in with single sign-on' }).isVisible();

        assert.match(refusal, /^keyfleet refused your session \(403\): Your session gives no access: no role is bound to you/);
        assert.match(refusal, /\(the provider sent none\)/);
        assert.ok(offeredAgain);
      } finally {
        idp.people.get('alice')!.groups = ['kf-operators'];
      }
      consolePage.assertNoProblems();
      await consolePage.close();
    });

    test('a session an administrator revokes through the API: the console’s next request lands on the sign-in page with the reason (401)', { timeout: 60_000 }, async () => {
      const consolePage = await openConsole('/okms');
      const { page } = consolePage;
      await signInWithSingleSignOn(page, 'alice');
      await page.getByTestId('okm-list').waitFor();
      const [newest] = await sessionsOf('alice');

      await api('DELETE', `/api/v1/sessions/${newest!.id}`);
      consolePage.allowFailure('GET', /^\/api\/v1\//, 401);
      // Every process sees a revocation within a second.
      await page.waitForTimeout(1_100);
      await navLink(page, 'Overview').click();
      const ended = await page.getByTestId('session-ended').innerText({ timeout: 15_000 });
      await page.reload();
      const afterReload = await page.getByTestId('session-ended').innerText();

      assert.equal(ended, 'You were signed out: session has ended. Sign in again to go on.');
      assert.equal(afterReload, ended, 'the ended session is not taken up again by a reload');
      consolePage.assertNoProblems();
      await consolePage.close();
    });

    test('sign-out ends the session on the server and at the provider (RP-initiated logout), back on the sign-in page; the old cookie is refused', { timeout: 60_000 }, async () => {
      const consolePage = await openConsole('/');
      const { page } = consolePage;
      await signInWithSingleSignOn(page, 'bob');
      const [cookie] = (await page.context().cookies(base)).filter((each) => each.name === 'keyfleet_session');

      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL((url) => url.origin === idp.issuer);
      await page.getByRole('button', { name: 'Yes, sign me out' }).click();
      await page.waitForURL(`${base}/console/`);
      await page.getByRole('link', { name: 'Sign in with single sign-on' }).waitFor();
      const noticeShown = await page.getByTestId('session-ended').count();
      const withOldCookie = await fetch(`${base}/api/v1/me`, { headers: { cookie: `keyfleet_session=${cookie!.value}` } });
      const cookiesLeft = (await page.context().cookies(base)).filter((each) => each.name === 'keyfleet_session');
      // Signed out at the provider too: single sign-on asks who signs in again.
      await page.getByRole('link', { name: 'Sign in with single sign-on' }).click();
      const askedAgain = await page.getByLabel('Who').isVisible();

      assert.equal(noticeShown, 0, 'a deliberate sign-out is no problem to report');
      assert.equal(withOldCookie.status, 401);
      assert.equal((await withOldCookie.json()).error_msg, 'Session has ended: sign in again');
      assert.deepEqual(cookiesLeft, []);
      assert.ok(askedAgain);
      consolePage.assertNoProblems();
      await consolePage.close();
    });

    test('an administrator signed in with single sign-on manages People & access: adds and removes a role binding, signs a person out everywhere, revokes an API token', { timeout: 90_000 }, async () => {
      const { token: deskToken } = await issueToken(t.db, t.app.keyRing, t.settings, { customer: 'acme', scopes: ['okm:read', 'acl:read'], ttlSeconds: 3600, name: 'acme service desk' });
      // A page that does not refresh itself (the overview does, every 10 s): the click below, not a refresh, is then Erin's next request.
      const erin = await openConsole('/acls');
      await signInWithSingleSignOn(erin.page, 'erin');
      const consolePage = await openConsole('/');
      const { page } = consolePage;
      await signInWithSingleSignOn(page, 'ada');
      const who = await page.getByTestId('signed-in-person').innerText();
      await navLink(page, 'People & access').click();
      await page.getByTestId('role-bindings').waitFor();
      const bound = await page.getByTestId('role-bindings').locator('tbody th').allInnerTexts();

      await page.getByLabel('Bind', { exact: true }).selectOption('email');
      await page.getByLabel('Email address', { exact: true }).fill('frank@example.com');
      await page.getByLabel('Role', { exact: true }).selectOption('acl-manager');
      await page.getByLabel('Customer', { exact: true }).fill('nobody-inc');
      consolePage.allowFailure('POST', /^\/api\/v1\/role-bindings$/, 400);
      await page.getByRole('button', { name: 'Add binding' }).click();
      const customerProblem = await page.locator('#error-customer').innerText();
      await page.getByLabel('Customer', { exact: true }).fill('globex');
      await page.getByRole('button', { name: 'Add binding' }).click();
      await page.getByTestId('role-bindings').getByText('frank@example.com').waitFor();
      const frank = (await api('GET', '/api/v1/role-bindings')).data.find((binding: { value: string }) => binding.value === 'frank@example.com');

      await page.getByRole('button', { name: 'Remove the binding of frank@example.com to acl-manager…' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Remove binding' }).click();
      await page.getByTestId('people-notice').filter({ hasText: 'frank@example.com' }).waitFor();
      const afterRemoval = (await api('GET', '/api/v1/role-bindings')).data.map((binding: { value: string }) => binding.value);

      await page.getByRole('button', { name: 'Sign Erin Auditor out everywhere…' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Sign out everywhere' }).click();
      const signedOut = await page.getByTestId('people-notice').innerText();
      const erinSessions = await sessionsOf('erin');
      erin.allowFailure('GET', /^\/api\/v1\//, 401);
      await page.waitForTimeout(1_100);
      await navLink(erin.page, 'OKMs').click();
      const erinEnded = await erin.page.getByTestId('session-ended').innerText({ timeout: 15_000 });

      await page.getByRole('button', { name: 'Revoke the token acme service desk…' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
      await page.getByTestId('people-notice').filter({ hasText: 'acme service desk' }).waitFor();
      const deskRow = page.getByTestId('api-tokens').locator('tr', { hasText: 'acme service desk' });
      await deskRow.locator('.badge-token-revoked').waitFor();
      const state = await deskRow.locator('.badge').innerText();
      const revokeOffered = await deskRow.getByRole('button').count();
      if (SCREENSHOTS && kind === 'sqlite') {
        await page.reload();
        await page.getByTestId('api-tokens').locator('.badge-token-revoked').waitFor();
        await page.getByTestId('sessions').waitFor();
        await page.screenshot({ path: path.join(SCREENSHOTS, 'console-people.png'), fullPage: true });
      }
      const deskRefused = await eventually(async () => (await fetch(`${base}/api/v1/okms`, { headers: { authorization: `Bearer ${deskToken}` } })).status === 401, 5_000, 'the revoked token refused');

      assert.match(who, /Ada Admin\s+admin\s+Sign out/);
      assert.deepEqual(bound.map((text) => text.replace(/\s+/g, ' ')), ['IdP group kf-operators', 'IdP group kf-acme-viewers', 'Email ada@example.com', 'IdP group kf-audit']);
      assert.equal(customerProblem, 'unknown customer nobody-inc');
      assert.deepEqual({ kind: frank.kind, role: frank.role, customer: frank.customer }, { kind: 'email', role: 'acl-manager', customer: 'globex' });
      assert.ok(!afterRemoval.includes('frank@example.com'));
      assert.match(signedOut, /^Erin Auditor is signed out everywhere \(1 session ended\)\.$/);
      assert.deepEqual(erinSessions, []);
      assert.equal(erinEnded, 'You were signed out: session has ended. Sign in again to go on.');
      assert.equal(state, 'Revoked');
      assert.equal(revokeOffered, 0, 'a revoked token offers no second revocation');
      assert.ok(deskRefused);
      erin.assertNoProblems();
      consolePage.assertNoProblems();
      await erin.close();
      await consolePage.close();
    });

    test('at 390 px wide nothing needs sideways scrolling: the sign-in page, the header with the person, People & access (nor at 768 px)', { timeout: 60_000 }, async () => {
      const phone = { width: 390, height: 844 };
      const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      const consolePage = await openConsole('/people', phone);
      const { page } = consolePage;
      await page.getByRole('link', { name: 'Sign in with single sign-on' }).waitFor();
      const signInOverflow = await overflow(page);
      if (SCREENSHOTS && kind === 'sqlite') await page.screenshot({ path: path.join(SCREENSHOTS, 'console-sign-in-sso-phone.png') });
      await signInWithSingleSignOn(page, 'ada');
      await page.getByTestId('role-bindings').waitFor();
      await page.getByTestId('sessions').waitFor();
      await page.getByTestId('api-tokens').waitFor();
      const peopleOverflow = await overflow(page);
      if (SCREENSHOTS && kind === 'sqlite') await page.screenshot({ path: path.join(SCREENSHOTS, 'console-people-phone.png'), fullPage: true });
      await page.setViewportSize({ width: 768, height: 1024 });
      const tabletOverflow = await overflow(page);
      if (process.env.TABLET_SHOT) await page.screenshot({ path: process.env.TABLET_SHOT, fullPage: true });

      assert.equal(signInOverflow, 0);
      assert.equal(peopleOverflow, 0);
      assert.equal(tabletOverflow, 0);
      consolePage.assertNoProblems();
      await consolePage.close();
    });

    test('a role that narrows while the person is signed in: the first refused write makes the console ask again, and the header and the page follow the new role', { timeout: 60_000 }, async () => {
      const consolePage = await openConsole(`/okms/${OKM}`);
      const { page } = consolePage;
      await signInWithSingleSignOn(page, 'alice');
      await page.getByLabel('Polling interval (s)').fill('240');
      const bindings = (await api('GET', '/api/v1/role-bindings')).data as Array<{ id: string; value: string; role: string }>;
      const operators = bindings.find((binding) => binding.value === 'kf-operators' && binding.role === 'device-operator')!;
      await api('DELETE', `/api/v1/role-bindings/${operators.id}`);
      const viewers = (await api('POST', '/api/v1/role-bindings', { kind: 'group', value: 'kf-operators', role: 'viewer' })).data as { id: string };
      try {
        // Every process sees a binding change within a second.
        await page.waitForTimeout(1_100);
        consolePage.allowFailure('PATCH', new RegExp(`^/api/v1/okms/${OKM}$`), 403);
        await page.getByRole('button', { name: 'Save changes' }).click();
        // Well before the page's own 10 s refresh: the answer of /api/v1/me re-renders it.
        await page.getByTestId('no-okm-write').waitFor({ timeout: 5_000 });
        const who = await page.getByTestId('signed-in-person').innerText();
        const stored = (await api('GET', `/api/v1/okms/${OKM}`)).data;

        assert.match(who, /Alice Operator\s+viewer\s+Sign out/);
        assert.notEqual(stored.polling_interval, 240);
      } finally {
        await api('DELETE', `/api/v1/role-bindings/${viewers.id}`);
        await api('POST', '/api/v1/role-bindings', { kind: 'group', value: 'kf-operators', role: 'device-operator' });
      }
      consolePage.assertNoProblems();
      await consolePage.close();
    });
  });
});
