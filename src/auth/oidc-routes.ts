import { createHash } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { Type } from 'typebox';
import * as client from 'openid-client';
import type { FreshCopy } from '../shared/fresh-copy.ts';
import { changeSourceOf } from '../audit/trail.ts';
import { ProviderUnavailableError, SignInRefusedError, type OidcClient } from './oidc.ts';
import type { RoleBinding } from './role-bindings.ts';
import { sendSignInProblem } from './sign-in-pages.ts';
import { actorOf, cookieOf, sessionCookieName, signInPerson, signOutSession, type SessionCheck } from './sessions.ts';
import { isDatabaseUnavailable } from '../db/connection-errors.ts';

/** The cookie that carries a sign-in's `state` from the redirect to the callback, in this browser only. */
const SIGN_IN_COOKIE = 'keyfleet_sign_in';
/** A sign-in not completed within this is forgotten. */
const SIGN_IN_WINDOW_MS = 10 * 60_000;
/** Where a signed-in person lands when the sign-in named no page. */
const DEFAULT_RETURN_TO = '/console/';
/** A console page, and nothing else (no other host, no `//`, no backslash that a browser reads as a slash). */
const CONSOLE_PATH = /^\/console(?:\/[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?$/;

const hash = (text: string) => createHash('sha256').update(text).digest('hex');

export interface OidcRoutesOptions {
  oidc: OidcClient | undefined;
  bindings: FreshCopy<RoleBinding[]>;
  /** The sessions, to end the request's at sign-out. */
  sessions: SessionCheck;
}

const LoginQuery = Type.Object({ return_to: Type.Optional(Type.String({ maxLength: 2048, description: 'The console page to show once signed in (a path under /console)' })) });
const CallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: 4096 })),
    state: Type.Optional(Type.String({ maxLength: 1024 })),
    error: Type.Optional(Type.String({ maxLength: 256 })),
    error_description: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: true },
);
const LogoutAnswer = Type.Object({
  message: Type.String(),
  data: Type.Object({ end_session_url: Type.Union([Type.String(), Type.Null()], { description: "The provider's sign-out page (RP-initiated logout), where it has one" }) }),
});

/**
 * Single sign-on (contract §17): GET /auth/oidc/login, GET /auth/oidc/callback, POST
 * /auth/logout. Pages, not JSON: a browser follows them. Without OIDC settings the first two
 * answer 404 with a page that says so.
 */
const oidcRoutes: FastifyPluginAsyncTypebox<OidcRoutesOptions> = async (app, { oidc, bindings, sessions }) => {
  const { settings, db, keyRing } = app;
  const secureCookies = settings.publicBaseUrl?.startsWith('https:') ?? false;
  const sessionCookie = sessionCookieName(settings);
  const notSetUp = (reply: FastifyReply) => sendSignInProblem(reply, 404, 'Single sign-on is not set up', 'This keyfleet has no OpenID Provider configured (OIDC_ISSUER). An operator signs in with a link from keyfleet console.');
  const providerDown = (reply: FastifyReply) => sendSignInProblem(reply, 503, 'The sign-in service is unavailable', 'keyfleet could not reach your company\'s sign-in service. Try again in a minute; if it persists, tell your administrator.');

  app.get('/auth/oidc/login', { schema: { operationId: 'startSignIn', summary: 'Start single sign-on: a redirect to the OpenID Provider', tags: ['people'], querystring: LoginQuery, hide: true } }, async (request, reply) => {
    if (!oidc) return notSetUp(reply);
    const returnTo = request.query.return_to ?? DEFAULT_RETURN_TO;
    if (!CONSOLE_PATH.test(returnTo) || returnTo.includes('//')) return sendSignInProblem(reply, 400, 'This sign-in link is not valid', 'return_to must be a page of the console (a path that starts with /console).');
    const state = client.randomState();
    const nonce = client.randomNonce();
    const codeVerifier = client.randomPKCECodeVerifier();
    let location: URL;
    try {
      location = await oidc.authorizationUrl({ state, nonce, codeVerifier });
    } catch (error) {
      if (error instanceof ProviderUnavailableError) {
        request.log.warn({ err: { message: error.message } }, 'sign-in: the identity provider is unavailable');
        return providerDown(reply);
      }
      if (error instanceof SignInRefusedError) {
        // The provider's metadata failed a check (another issuer, no authorization endpoint): the settings or the provider are wrong.
        request.log.error({ reason: error.message }, 'sign-in: the identity provider\'s configuration failed a check; see OIDC_ISSUER');
        return sendSignInProblem(reply, 502, 'Sign-in is misconfigured', 'keyfleet could not use the answer of your company\'s sign-in service. Tell your administrator: the log says why.');
      }
      throw error;
    }
    const now = Date.now();
    await db.deleteFrom('sign_in_attempts').where('created_at', '<', now - SIGN_IN_WINDOW_MS).execute();
    await db.insertInto('sign_in_attempts').values({ id: hash(state), nonce, code_verifier: codeVerifier, return_to: returnTo, created_at: now }).execute();
    reply.setCookie(SIGN_IN_COOKIE, state, { httpOnly: true, sameSite: 'lax', secure: secureCookies, path: '/auth/oidc', maxAge: SIGN_IN_WINDOW_MS / 1000 });
    return reply.header('cache-control', 'no-store').redirect(location.toString(), 302);
  });

  app.get('/auth/oidc/callback', { schema: { operationId: 'completeSignIn', summary: 'The OpenID Provider sends the browser back here; starts a session', tags: ['people'], querystring: CallbackQuery, hide: true } }, async (request, reply) => {
    if (!oidc) return notSetUp(reply);
    reply.clearCookie(SIGN_IN_COOKIE, { path: '/auth/oidc' });
    const state = cookieOf(request, SIGN_IN_COOKIE);
    if (!state) return sendSignInProblem(reply, 400, 'This sign-in has expired', 'It was not started in this browser, or more than 10 minutes ago. Start it again.');
    if (request.query.state !== state) return sendSignInProblem(reply, 400, 'This sign-in does not match', 'The answer of the sign-in service is for another sign-in (its state differs). Start it again.');
    // Each sign-in is used once: a replayed callback finds nothing.
    const attempt = await db.selectFrom('sign_in_attempts').selectAll().where('id', '=', hash(state)).executeTakeFirst();
    const claimed = attempt && Number((await db.deleteFrom('sign_in_attempts').where('id', '=', attempt.id).executeTakeFirst()).numDeletedRows) === 1;
    if (!attempt || !claimed || Date.now() - Number(attempt.created_at) > SIGN_IN_WINDOW_MS) {
      return sendSignInProblem(reply, 400, 'This sign-in has expired', 'It was completed already or started more than 10 minutes ago. Start it again.');
    }
    const now = Date.now();
    let identity;
    try {
      identity = await oidc.signIn(new URL(request.url, settings.publicBaseUrl), { state, nonce: attempt.nonce, codeVerifier: attempt.code_verifier });
    } catch (error) {
      if (error instanceof ProviderUnavailableError) {
        request.log.warn({ err: { message: error.message } }, 'sign-in: the identity provider is unavailable');
        return providerDown(reply);
      }
      if (error instanceof SignInRefusedError) {
        request.log.info({ reason: error.message }, 'sign-in refused');
        return sendSignInProblem(reply, 400, 'Sign-in failed', `${error.message[0]!.toUpperCase()}${error.message.slice(1)}. Start it again; if it fails again, tell your administrator.`);
      }
      throw error;
    }
    const signedIn = await signInPerson(db, keyRing, settings, await bindings.get(), identity, now, (person) => {
      request.actor = actorOf(person);
      return changeSourceOf(request);
    });
    if ('refused' in signedIn) {
      request.log.info({ person: signedIn.person.id }, 'sign-in refused: no role bound to the person');
      return sendSignInProblem(reply, 403, 'You have no access to keyfleet', `You signed in as ${identity.email ?? identity.subject}, but ${signedIn.refused}`);
    }
    reply.setCookie(sessionCookie, signedIn.secret, { httpOnly: true, sameSite: 'lax', secure: secureCookies, path: '/', expires: new Date(signedIn.expiresAt) });
    return reply.header('cache-control', 'no-store').redirect(attempt.return_to, 302);
  });

  app.post(
    '/auth/logout',
    {
      schema: { operationId: 'signOut', summary: 'Sign out: ends the session on the server (and gives the provider\'s sign-out page, where it has one)', tags: ['people'], response: { 200: LogoutAnswer }, security: [] },
    },
    async (request, reply) => {
      // A session that may be used (its anti-CSRF token included) is ended, also one that no longer grants anything.
      const session = await sessions.validSession(request).catch((error: unknown) => {
        // An outage is a 503 (the session still lasts); a session that is no longer valid has nothing to end.
        if (isDatabaseUnavailable(error)) throw error;
        return undefined;
      });
      let endSessionUrl: string | null = null;
      if (session) {
        request.actor = session.actor;
        await signOutSession(db, session.id, { now: Date.now(), source: changeSourceOf(request) });
        sessions.forget(session.id);
        endSessionUrl = (await oidc?.endSessionUrl(new URL('/console/', settings.publicBaseUrl).toString()).catch(() => undefined))?.toString() ?? null;
      }
      reply.clearCookie(sessionCookie, { path: '/', secure: secureCookies });
      return { message: session ? 'Signed out' : 'No session to sign out of', data: { end_session_url: endSessionUrl } };
    },
  );
};

export default oidcRoutes;
