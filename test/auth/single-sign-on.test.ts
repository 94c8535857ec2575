import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { buildServer } from '../../src/server.ts';
import { forEachDatabase, type TestApp } from '../helpers/app.ts';
import { eventually } from '../helpers/eventually.ts';
import type { OpenIdProvider, ProviderPerson } from '../helpers/openid-provider.ts';
import { appWithSingleSignOn, type SingleSignOnWorld } from '../helpers/single-sign-on.ts';
import { SignInClient } from '../helpers/sign-in-client.ts';
import { createTestCustomer, issueTestToken } from '../helpers/tokens.ts';

const PEOPLE: ProviderPerson[] = [
  { sub: 'alice', email: 'alice@example.com', name: 'Alice Operator', groups: ['kf-operators'] },
  { sub: 'bob', email: 'bob@example.com', name: 'Bob Viewer', groups: ['kf-acme-viewers'] },
  { sub: 'carol', email: 'carol@example.com', name: 'Carol Nobody', groups: ['marketing'] },
  { sub: 'dave', email: 'Dave@Example.com', name: 'Dave Release', groups: [] },
  { sub: 'mallory', email: 'dave@example.com', name: 'Mallory', groups: [], emailVerified: false },
];

const bindAliceAsViewer = (t: TestApp) =>
  t.db.insertInto('role_bindings').values({ id: 'binding-alice', kind: 'email', value: 'alice@example.com', role: 'viewer', customer_id: null, created_at: Date.now(), created_by: 'test' }).execute();

/** A session's refresh interval short enough for a test to see a group change through it. */
const SESSION_REFRESH_MS = 1_500;

/**
 * Single sign-on against a real OpenID Provider (oidc-provider) on 127.0.0.1, and keyfleet on a
 * real port: the browser's part is played by SignInClient, which follows the redirects and fills
 * in the provider's form.
 */
forEachDatabase('single sign-on through an OpenID Provider', (kind) => {
  let world: SingleSignOnWorld;
  let t: TestApp;
  let idp: OpenIdProvider;
  let base: string;
  let admin: string;

  before(async () => {
    world = await appWithSingleSignOn(kind, PEOPLE, { env: { SESSION_REFRESH: `${SESSION_REFRESH_MS}ms` } });
    ({ t, idp, base } = world);
    await createTestCustomer(t, 'acme');
    await createTestCustomer(t, 'beta');
    admin = await issueTestToken(t, { scopes: ['admin'] });
    for (const binding of [
      { kind: 'group', value: 'kf-operators', role: 'device-operator' },
      { kind: 'group', value: 'kf-acme-viewers', role: 'viewer', customer: 'acme' },
      { kind: 'email', value: 'dave@example.com', role: 'release-manager' },
    ]) {
      const response = await api('POST', '/api/v1/role-bindings', { token: admin, body: binding });
      assert.equal(response.status, 201, await response.text());
    }
  });
  after(() => world?.close());

  async function api(method: string, path: string, { token, client, csrf, body }: { token?: string; client?: SignInClient; csrf?: string; body?: unknown } = {}) {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (csrf) headers['x-csrf-token'] = csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (client) return client.request(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  }

  async function signedIn(login: string) {
    const client = new SignInClient();
    const { response, url } = await client.signIn(base, login);
    assert.equal(response.status, 200, `${login}: ${url} ${response.status}`);
    const me = await api('GET', '/api/v1/me', { client });
    assert.equal(me.status, 200);
    return { client, me: (await me.json()).data, csrf: me.headers.get('x-csrf-token')! };
  }

  test('a person bound through a group signs in: an HttpOnly SameSite=Lax session cookie, the console page asked for, and /api/v1/me names them, their role and scopes', async () => {
    const client = new SignInClient();

    const { response, url } = await client.signIn(base, 'alice', '/console/okms?state=stuck');

    assert.equal(response.status, 200);
    assert.equal(url, `${base}/console/okms?state=stuck`);
    const callback = client.hops.find((hop) => hop.url.startsWith(`${base}/auth/oidc/callback`))!;
    assert.equal(callback.status, 302);
    const sessionCookie = client.hops.length > 0 && client.cookie(base, 'keyfleet_session');
    assert.ok(sessionCookie && sessionCookie.length >= 40);
    const setCookie = (await client.request(`${base}/auth/oidc/login`)).headers.getSetCookie().join('\n');
    assert.match(setCookie, /keyfleet_sign_in=[^;]+;.*HttpOnly/i);
    const me = await api('GET', '/api/v1/me', { client });
    const body = await me.json();
    assert.equal(me.status, 200);
    assert.deepEqual(body.data, {
      actor: { kind: 'person', id: body.data.actor.id, name: 'Alice Operator' },
      role: 'device-operator',
      customer: null,
      scopes: ['acl:read', 'lock:read', 'okm:read', 'okm:write'],
    });
    assert.ok(me.headers.get('x-csrf-token'));
    const stored = await t.db.selectFrom('people').selectAll().where('subject', '=', 'alice').executeTakeFirstOrThrow();
    assert.equal(stored.email, 'alice@example.com');
    assert.equal(stored.issuer, idp.issuer);
  });

  test('the session cookie is HttpOnly, SameSite=Lax, for the whole site, and not Secure on an http: base URL', async () => {
    const client = new SignInClient();
    const { response } = await client.signIn(base, 'alice');
    assert.equal(response.status, 200);
    const callback = client.hops.find((hop) => hop.url.startsWith(`${base}/auth/oidc/callback`))!;
    // Replaying the hop would be refused; read the attributes from a fresh sign-in's raw answer instead.
    const raw = new SignInClient();
    const start = await raw.follow(`${base}/auth/oidc/login`);
    const html = await start.response.text();
    const action = new URL(/action="([^"]+)"/.exec(html)![1]!, start.url).toString();
    let answer = await raw.request(action, { method: 'POST', body: 'login=alice' });
    let location = answer.headers.get('location')!;
    while (!location.startsWith(`${base}/auth/oidc/callback`)) {
      answer = await raw.request(new URL(location, action).toString());
      location = answer.headers.get('location')!;
    }
    const atCallback = await raw.request(location);
    const cookie = atCallback.headers.getSetCookie().find((line) => line.startsWith('keyfleet_session='))!;
    assert.ok(callback);
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Lax/);
    assert.match(cookie, /Path=\//);
    assert.doesNotMatch(cookie, /Secure/);
  });

  test('an allowed write with the session works with its anti-CSRF token, and is refused without it or with another session\'s', async () => {
    const { client, csrf } = await signedIn('alice');
    const other = await signedIn('alice');
    assert.equal((await api('PUT', '/api/v1/okms/SSO-OKM-1?customer=acme', { token: admin, body: { polling_interval: 200 } })).status, 201);
    const okm = { polling_interval: 300 };

    const withToken = await api('PATCH', '/api/v1/okms/SSO-OKM-1?customer=acme', { client, csrf, body: okm });
    const without = await api('PATCH', '/api/v1/okms/SSO-OKM-1?customer=acme', { client, body: { polling_interval: 400 } });
    const othersToken = await api('PATCH', '/api/v1/okms/SSO-OKM-1?customer=acme', { client, csrf: other.csrf, body: { polling_interval: 500 } });

    assert.equal(withToken.status, 200, await withToken.text());
    assert.equal(without.status, 403);
    assert.match((await without.json()).error_msg, /anti-CSRF/);
    assert.equal(othersToken.status, 403);
    assert.equal((await (await api('GET', '/api/v1/okms/SSO-OKM-1', { token: admin })).json()).data.polling_interval, 300);
  });

  test('a person of every customer who is not an admin does not do what only an admin does: assign an OKM, list unassigned ones, own deployment-wide webhook endpoints', async () => {
    const { client, csrf } = await signedIn('alice');

    const assign = await api('PUT', '/api/v1/okms/SSO-NEW-1?customer=acme', { client, csrf, body: { polling_interval: 300 } });
    const unassigned = await api('GET', '/api/v1/okms?unassigned=true', { client });
    const endpoint = await api('POST', '/api/v1/webhook-endpoints', { client, csrf, body: { url: 'https://hooks.example.com/kf', event_types: ['okm.stuck'] } });
    const endpoints = await api('GET', '/api/v1/webhook-endpoints', { client });
    const acmeEndpoint = await api('POST', '/api/v1/webhook-endpoints?customer=acme', { client, csrf, body: { url: 'https://hooks.example.com/acme', event_types: ['okm.stuck'] } });

    assert.equal(assign.status, 409, await assign.text());
    assert.equal(unassigned.status, 403);
    assert.equal(endpoint.status, 403);
    assert.equal(endpoints.status, 403);
    assert.equal(acmeEndpoint.status, 201, await acmeEndpoint.text());
  });

  test('an email the provider has not verified matches no email binding: someone who sets their email to another\'s gets nothing', async () => {
    const { response } = await new SignInClient().signIn(base, 'mallory');

    assert.equal(response.status, 403);
    assert.match(await response.text(), /no role is bound to you/);
  });

  test('a viewer of one customer reads that customer, is refused another customer\'s and any write', async () => {
    const { client, csrf, me } = await signedIn('bob');

    assert.deepEqual({ role: me.role, customer: me.customer }, { role: 'viewer', customer: 'acme' });
    assert.equal((await api('GET', '/api/v1/okms', { client })).status, 200);
    assert.equal((await api('GET', '/api/v1/okms?customer=beta', { client })).status, 403);
    assert.equal((await api('PUT', '/api/v1/okms/SSO-BOB-1?customer=acme', { client, csrf, body: { polling_interval: 300 } })).status, 403);
  });

  test('a person bound by email (any case) gets the role: a release manager writes firmware without being an admin', async () => {
    const { client, csrf, me } = await signedIn('dave');

    assert.equal(me.role, 'release-manager');
    assert.ok(me.scopes.includes('firmware:write') && !me.scopes.includes('admin'));
    const release = await api('POST', '/api/v1/firmware?kind=kas', { client, csrf, body: { version: '9.9.9', url: 'https://firmware.example.com/kas-9.9.9.bin', sha256: 'ab'.repeat(32), size: 1024 } });
    assert.notEqual(release.status, 403, await release.text());
  });

  test('a person no binding matches is refused at sign-in with a page that says why, and gets no session', async () => {
    const client = new SignInClient();

    const { response } = await client.signIn(base, 'carol');

    assert.equal(response.status, 403);
    assert.match(response.headers.get('content-type')!, /text\/html/);
    const page = await response.text();
    assert.match(page, /no access to keyfleet/);
    assert.match(page, /no role is bound to you/);
    assert.match(page, /marketing/);
    assert.equal(client.cookie(base, 'keyfleet_session'), undefined);
  });

  test('a binding removed takes the role away within a second; added again, it gives it back', async () => {
    const { client } = await signedIn('bob');
    const bindings = (await (await api('GET', '/api/v1/role-bindings', { token: admin })).json()).data as { id: string; value: string }[];
    const bobs = bindings.find((binding) => binding.value === 'kf-acme-viewers')!;
    try {
      assert.equal((await api('DELETE', `/api/v1/role-bindings/${bobs.id}`, { token: admin })).status, 204);
      const removedAt = Date.now();
      await eventually(async () => (await api('GET', '/api/v1/okms', { client })).status === 403, 3_000, 'the role gone');
      assert.ok(Date.now() - removedAt <= 1_500, `took ${Date.now() - removedAt} ms`);
    } finally {
      await api('POST', '/api/v1/role-bindings', { token: admin, body: { kind: 'group', value: 'kf-acme-viewers', role: 'viewer', customer: 'acme' } });
    }
    await eventually(async () => (await api('GET', '/api/v1/okms', { client })).status === 200, 3_000, 'the role back');
  });

  test('a group taken away at the provider takes the role away at the next session refresh', async () => {
    const { client } = await signedIn('alice');
    const alice = idp.people.get('alice')!;
    alice.groups = [];
    try {
      await eventually(async () => (await api('GET', '/api/v1/okms', { client })).status === 403, SESSION_REFRESH_MS + 3_000, 'the role gone after a refresh');
    } finally {
      alice.groups = ['kf-operators'];
    }
    await eventually(async () => (await api('GET', '/api/v1/okms', { client })).status === 200, SESSION_REFRESH_MS + 3_000, 'the role back after a refresh');
  });

  test('while the provider is down, a session due for its refresh keeps its groups and works; the refresh happens once it is back', async () => {
    const { client } = await signedIn('alice');
    idp.down = true;
    try {
      await new Promise((resolve) => setTimeout(resolve, SESSION_REFRESH_MS + 200));
      assert.equal((await api('GET', '/api/v1/okms', { client })).status, 200);
    } finally {
      idp.down = false;
    }
    assert.equal((await api('GET', '/api/v1/okms', { client })).status, 200);
  });

  test('two processes that find one session due for its refresh at once refresh it once: a rotating refresh token is spent by one of them', async () => {
    const { client } = await signedIn('alice');
    const second = await buildServer({ settings: t.settings, db: t.db, dialect: t.dialect, keyRing: t.app.keyRing });
    try {
      await second.ready();
      const cookies = { keyfleet_session: client.cookie(base, 'keyfleet_session')! };
      await new Promise((resolve) => setTimeout(resolve, SESSION_REFRESH_MS + 100));
      const before = idp.tokenRequests;

      const answers = await Promise.all([t.app, second, t.app, second].map((app) => app.inject({ method: 'GET', url: '/api/v1/me', cookies })));

      assert.deepEqual(answers.map((answer) => answer.statusCode), [200, 200, 200, 200]);
      assert.equal(idp.tokenRequests - before, 1, 'one refresh at the provider');
    } finally {
      await second.close();
    }
  });

  test('sign-out ends the session on the server (the old cookie is a 401 afterwards) and gives the provider\'s sign-out page', async () => {
    const { client, csrf } = await signedIn('alice');
    const cookie = client.cookie(base, 'keyfleet_session')!;

    const out = await api('POST', '/auth/logout', { client, csrf });

    assert.equal(out.status, 200);
    const { end_session_url } = (await out.json()).data;
    assert.ok(end_session_url.startsWith(`${idp.issuer}/session/end`), end_session_url);
    assert.equal(client.cookie(base, 'keyfleet_session'), undefined);
    const replayed = await fetch(`${base}/api/v1/me`, { headers: { cookie: `keyfleet_session=${cookie}` } });
    assert.equal(replayed.status, 401);
    assert.match((await replayed.json()).error_msg, /ended/);
  });

  test('sign-out ends a session that no longer grants anything (its binding removed), not only clears the cookie', async () => {
    const { client, csrf } = await signedIn('dave');
    const session = (await (await api('GET', '/api/v1/sessions', { token: admin })).json()).data.length;
    const daves = ((await (await api('GET', '/api/v1/role-bindings', { token: admin })).json()).data as { id: string; value: string }[]).find((binding) => binding.value === 'dave@example.com')!;
    await api('DELETE', `/api/v1/role-bindings/${daves.id}`, { token: admin });
    try {
      await eventually(async () => (await api('GET', '/api/v1/me', { client })).status === 403, 3_000, 'the session grants nothing');

      const out = await api('POST', '/auth/logout', { client, csrf });

      assert.equal(out.status, 200);
      assert.equal((await out.json()).message, 'Signed out');
      assert.equal((await (await api('GET', '/api/v1/sessions', { token: admin })).json()).data.length, session - 1);
    } finally {
      await api('POST', '/api/v1/role-bindings', { token: admin, body: { kind: 'email', value: 'dave@example.com', role: 'release-manager' } });
    }
  });

  test('an admin lists a person\'s sessions and revokes them: 401 within a second', async () => {
    const first = await signedIn('bob');
    const second = await signedIn('bob');
    const person = first.me.actor.id;
    const listed = (await (await api('GET', `/api/v1/sessions?person=${person}`, { token: admin })).json()).data as { id: string }[];
    assert.ok(listed.length >= 2);

    const one = await api('DELETE', `/api/v1/sessions/${listed[0]!.id}`, { token: admin });
    assert.equal(one.status, 200);
    const all = await api('DELETE', `/api/v1/people/${person}/sessions`, { token: admin });
    assert.equal(all.status, 200);
    const revokedAt = Date.now();

    for (const session of [first, second]) {
      await eventually(async () => (await api('GET', '/api/v1/me', { client: session.client })).status === 401, 3_000, 'the session refused');
    }
    assert.ok(Date.now() - revokedAt <= 1_500, `took ${Date.now() - revokedAt} ms`);
    assert.equal((await api('DELETE', '/api/v1/sessions/0123456789abcdef', { token: admin })).status, 404);
    assert.equal((await api('DELETE', '/api/v1/people/999999/sessions', { token: admin })).status, 404);
  });

  test('a session idle for SESSION_IDLE_TIMEOUT, or past SESSION_LIFETIME, is a 401 that says which, on every process within a second', async () => {
    const idle = await signedIn('alice');
    const old = await signedIn('alice');
    const idOf = (client: SignInClient) => createHash('sha256').update(client.cookie(base, 'keyfleet_session')!).digest('hex');
    const now = Date.now();
    await t.db.updateTable('sessions').set({ seen_at: now - t.settings.sessionIdleMs - 1 }).where('id', '=', idOf(idle.client)).execute();
    await t.db.updateTable('sessions').set({ expires_at: now - 1 }).where('id', '=', idOf(old.client)).execute();

    await eventually(async () => (await api('GET', '/api/v1/me', { client: idle.client })).status === 401, 3_000, 'the idle session refused');
    await eventually(async () => (await api('GET', '/api/v1/me', { client: old.client })).status === 401, 3_000, 'the expired session refused');

    assert.match((await (await api('GET', '/api/v1/me', { client: old.client })).json()).error_msg, /expired/);
    const ended = await t.db.selectFrom('sessions').select(['ended_at', 'ended_by']).where('id', '=', idOf(idle.client)).executeTakeFirstOrThrow();
    assert.equal(ended.ended_by, 'system:idle-timeout');
  });

  test('a tampered or unknown session cookie is a 401, and changes nothing', async () => {
    const { client } = await signedIn('alice');
    const cookie = client.cookie(base, 'keyfleet_session')!;
    const tampered = `${cookie.slice(0, -2)}${cookie.endsWith('AA') ? 'BB' : 'AA'}`;

    const response = await fetch(`${base}/api/v1/me`, { headers: { cookie: `keyfleet_session=${tampered}` } });

    assert.equal(response.status, 401);
    assert.match((await response.json()).error_msg, /unknown/);
    assert.equal((await api('GET', '/api/v1/me', { client })).status, 200);
  });

  test('a callback with another state, a replayed callback and a sign-in not started here are refused with a page, never a 500', async () => {
    const client = new SignInClient();
    const { response } = await client.signIn(base, 'alice');
    assert.equal(response.status, 200);
    const callback = client.hops.find((hop) => hop.url.startsWith(`${base}/auth/oidc/callback`))!;

    const replayed = await new SignInClient().request(callback.url);
    const wrongState = new SignInClient();
    await wrongState.follow(`${base}/auth/oidc/login`);
    const otherState = await wrongState.request(callback.url);

    assert.equal(replayed.status, 400);
    assert.match(await replayed.text(), /expired/);
    assert.equal(otherState.status, 400);
    assert.match(await otherState.text(), /does not match/);
  });

  test('a callback whose nonce does not match what the sign-in sent is refused: the ID token fails its check', async () => {
    const client = new SignInClient();
    const start = await client.follow(`${base}/auth/oidc/login`);
    const state = client.cookie(base, 'keyfleet_sign_in')!;
    await t.db.updateTable('sign_in_attempts').set({ nonce: 'another-nonce' }).where('id', '=', createHash('sha256').update(state).digest('hex')).execute();
    const action = new URL(/action="([^"]+)"/.exec(await start.response.text())![1]!, start.url).toString();

    const { response } = await client.follow(action, { method: 'POST', body: 'login=alice' });

    assert.equal(response.status, 400);
    assert.match(await response.text(), /Sign-in failed/);
    assert.equal(client.cookie(base, 'keyfleet_session'), undefined);
  });

  test('while the provider is down, sign-in answers a page that says so (503), never a 500; once it is back, sign-in works', async () => {
    idp.down = true;
    try {
      const response = await new SignInClient().request(`${base}/auth/oidc/login`);
      assert.ok(response.status === 503 || response.status === 302, String(response.status));
      if (response.status === 503) assert.match(await response.text(), /unavailable/);
      const { response: atEnd } = await new SignInClient().signIn(base, 'alice');
      assert.equal(atEnd.status, 503);
    } finally {
      idp.down = false;
    }
    const { response } = await new SignInClient().signIn(base, 'alice');
    assert.equal(response.status, 200);
  });

  test('a return_to outside the console is refused with a page, not followed', async () => {
    for (const target of ['https://evil.example.com/', '//evil.example.com/console', '/api/v1/okms', '/console//evil.example.com']) {
      const response = await new SignInClient().request(`${base}/auth/oidc/login?return_to=${encodeURIComponent(target)}`);
      assert.equal(response.status, 400, target);
    }
  });

  test('bad role bindings are refused with a clear error and change nothing', async () => {
    const before = (await (await api('GET', '/api/v1/role-bindings', { token: admin })).json()).data.length;
    const cases: [unknown, RegExp][] = [
      [{ kind: 'group', value: 'x', role: 'superuser' }, /unknown role "superuser"/],
      [{ kind: 'group', value: 'x', role: 'viewer', customer: 'nobody' }, /unknown customer nobody/],
      [{ kind: 'group', value: 'x', role: 'admin', customer: 'acme' }, /admin role acts for every customer/],
      [{ kind: 'team', value: 'x', role: 'viewer' }, /kind/],
    ];
    for (const [body, message] of cases) {
      const response = await api('POST', '/api/v1/role-bindings', { token: admin, body });
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.match((await response.json()).error_msg, message);
    }
    assert.equal((await api('DELETE', '/api/v1/role-bindings/00000000-0000-0000-0000-000000000000', { token: admin })).status, 404);
    assert.equal((await (await api('GET', '/api/v1/role-bindings', { token: admin })).json()).data.length, before);
  });
});

forEachDatabase('single sign-on with a provider that is not the configured issuer', (kind) => {
  let world: SingleSignOnWorld;
  let base: string;
  before(async () => {
    // The same server under another name: its metadata names an issuer that is not OIDC_ISSUER.
    world = await appWithSingleSignOn(kind, PEOPLE, { env: (idp) => ({ OIDC_ISSUER: idp.issuer.replace('127.0.0.1', 'localhost') }) });
    ({ base } = world);
  });
  after(() => world?.close());

  test('sign-in is refused with a page that says it is misconfigured (502), never a redirect to the provider or a 500', async () => {
    const response = await new SignInClient().request(`${base}/auth/oidc/login`);

    assert.equal(response.status, 502);
    assert.match(await response.text(), /misconfigured/);
  });
});

forEachDatabase('single sign-on with an ID token that expires on its way', (kind) => {
  let world: SingleSignOnWorld;
  let t: TestApp;
  let idp: OpenIdProvider;
  let base: string;
  before(async () => {
    // No leeway for clock skew, so that a second's delay expires the token.
    world = await appWithSingleSignOn(kind, PEOPLE, { idTokenTtlSeconds: 1, env: { JWT_CLOCK_TOLERANCE_SECONDS: '0' } });
    ({ t, idp, base } = world);
    await bindAliceAsViewer(t);
  });
  after(() => world?.close());

  test('an ID token already expired when keyfleet gets it is refused with a page, and no session starts', async () => {
    idp.tokenDelayMs = 2_500;
    const client = new SignInClient();

    const { response } = await client.signIn(base, 'alice');

    assert.equal(response.status, 400);
    assert.match(await response.text(), /Sign-in failed/);
    assert.equal(client.cookie(base, 'keyfleet_session'), undefined);
  });
});

forEachDatabase('single sign-on with a provider that gives no refresh token', (kind) => {
  let world: SingleSignOnWorld;
  let t: TestApp;
  let base: string;
  before(async () => {
    // Without offline_access the provider gives no refresh token, as Google does.
    world = await appWithSingleSignOn(kind, PEOPLE, { scopes: 'openid email profile groups', env: { SESSION_REFRESH: '1s' } });
    ({ t, base } = world);
    await bindAliceAsViewer(t);
  });
  after(() => world?.close());

  test('the session works until its first refresh, then ends: the groups cannot be read again, so the person signs in again', async () => {
    const client = new SignInClient();
    assert.equal((await client.signIn(base, 'alice')).response.status, 200);
    assert.equal((await client.request(`${base}/api/v1/me`)).status, 200);

    await eventually(async () => (await client.request(`${base}/api/v1/me`)).status === 401, 4_000, 'the session ended at its refresh');
    assert.equal((await client.signIn(base, 'alice')).response.status, 200);
  });
});

test('under an https base URL the session cookie is __Host-keyfleet_session (Secure, for the whole site, from this host only); under http keyfleet_session', async () => {
  const { sessionCookieName } = await import('../../src/auth/sessions.ts');

  assert.equal(sessionCookieName({ publicBaseUrl: 'https://keyfleet.example.com' }), '__Host-keyfleet_session');
  assert.equal(sessionCookieName({ publicBaseUrl: 'http://127.0.0.1:8080' }), 'keyfleet_session');
  assert.equal(sessionCookieName({ publicBaseUrl: undefined }), 'keyfleet_session');
});
