import { createHash, randomBytes } from 'node:crypto';
import { parseCookie } from 'cookie';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { Settings } from '../config/settings.ts';
import type { Db } from '../db/database.ts';
import { forbidden, notFound, unauthorized } from '../http/errors.ts';
import type { KeyRing } from '../secrets/key-ring.ts';
import { open, seal } from '../secrets/sealed-box.ts';
import { sealedColumn } from '../secrets/sealed-columns.ts';
import type { FreshCopy } from '../shared/fresh-copy.ts';
import { recordChange, recordChanges, type ChangeSource } from '../audit/trail.ts';
import { actorText, type Actor } from './actor.ts';
import type { CredentialCheck, Principal } from './guard.ts';
import { ProviderUnavailableError, type OidcClient, type ProviderIdentity } from './oidc.ts';
import { grantOf, listRoleBindings, type Grant, type RoleBinding } from './role-bindings.ts';

/**
 * Sessions of people signed in through the OpenID Provider (contract §17): a row on the
 * server per session, found by the SHA-256 of the secret in an HttpOnly cookie. A process
 * re-reads a session's row at most SESSION_MAX_AGE_MS after it last did, so that a revocation
 * applies on every process within that, and the role from the bindings as they are at most
 * BINDINGS_MAX_AGE_MS ago: a request of a session costs a map lookup, not a query.
 */

/**
 * The session cookie's name: under https with the __Host- prefix, which browsers accept only
 * Secure, for the whole site and from this host, so that a sibling subdomain cannot plant one.
 */
export const sessionCookieName = (settings: Pick<Settings, 'publicBaseUrl'>) => (settings.publicBaseUrl?.startsWith('https:') ? '__Host-keyfleet_session' : 'keyfleet_session');
/** How stale a process's copy of a session row may be: a revocation or sign-out applies within this. */
export const SESSION_MAX_AGE_MS = 1_000;
/** `seen_at` (the idle timeout's start) is written at most this often, so that a session's requests do not each write. */
const SEEN_WRITE_INTERVAL_MS = 60_000;
/** A refresh that failed because the provider was down is tried again after this. */
const REFRESH_RETRY_MS = 30_000;
/** Sessions a process keeps in memory; past it the oldest are read again when used. */
const MAX_CACHED_SESSIONS = 10_000;

const refreshTokenData = (id: string) => `session-refresh:${id}`;

/** The sealed refresh tokens, for master-key rotation (src/key-ring.ts lists it). */
export const SESSION_REFRESH_TOKENS = sealedColumn({ table: 'sessions', column: 'refresh_token_sealed', key: 'id', reads: ['id'], associatedData: (row) => refreshTokenData(row.id as string) });

/**
 * A cookie of the request, parsed here rather than by a hook on every request: only requests
 * without a bearer token look for the session cookie, and a device poll never does.
 */
export function cookieOf(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (header === undefined || !header.includes(name)) return undefined;
  const value = parseCookie(header)[name];
  return value === '' ? undefined : value;
}

/** The session id (what the database keys) of a cookie's secret. */
export const sessionIdOf = (secret: string) => createHash('sha256').update(secret).digest('hex');

export interface Person {
  id: number;
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
}

/** Records the person of a sign-in (made at the first), with their email and name as the provider gives them now. */
export async function upsertPerson(db: Db, identity: ProviderIdentity, now: number): Promise<Person> {
  const values = { email: identity.email, name: identity.name, signed_in_at: now };
  await db
    .insertInto('people')
    .values({ issuer: identity.issuer, subject: identity.subject, created_at: now, ...values })
    .onConflict((conflict) => conflict.columns(['issuer', 'subject']).doUpdateSet(values))
    .execute();
  const row = await db.selectFrom('people').select(['id', 'issuer', 'subject', 'email', 'name']).where('issuer', '=', identity.issuer).where('subject', '=', identity.subject).executeTakeFirstOrThrow();
  return { ...row, id: Number(row.id) };
}

/**
 * A sign-in the provider vouched for: the person is recorded (also one without a role, so that
 * an administrator finds whom to bind), and gets a session if their bindings grant something.
 */
export async function signInPerson(
  db: Db,
  keyRing: KeyRing,
  settings: Settings,
  bindings: readonly RoleBinding[],
  identity: ProviderIdentity,
  now: number,
  /** Where the sign-in came from (its request), the person being its actor: for the audit trail's session.started. */
  sourceOf: (person: Person) => ChangeSource,
): Promise<{ person: Person } & ({ refused: string } | { secret: string; expiresAt: number })> {
  const grant = grantOf(bindings, identity);
  const person = await upsertPerson(db, identity, now);
  if (!grant.ok) return { person, refused: grant.reason };
  const session = await newSession(keyRing, settings, identity, now);
  const source = sourceOf(person);
  await db.transaction().execute(async (trx) => {
    await insertSession(trx, person, identity, session, now);
    await recordChange(
      trx,
      source,
      {
        action: 'session.started',
        customer: grant.customer?.name ?? null,
        // The row id is the SHA-256 of the cookie's secret, the key a cookie is looked up by: an entry
        // (exported, read by auditors) names the session by its handle instead, what the session
        // list shows and revocation takes, which cannot open it.
        entity: { type: 'session', id: sessionHandle(session.id) },
        after: { person: personView(person), role: grant.roles.join(', ') },
      },
      now,
    );
  });
  return { person, secret: session.secret, expiresAt: session.expiresAt };
}

interface NewSession {
  /** For the cookie only: the database keeps its hash, `id`. */
  secret: string;
  id: string;
  expiresAt: number;
  refreshTokenSealed: string | null;
}

/** A session's secret, id and sealed refresh token, made before the transaction that stores it (sealing may read the key ring). */
async function newSession(keyRing: KeyRing, settings: Settings, identity: ProviderIdentity, now: number): Promise<NewSession> {
  const secret = randomBytes(32).toString('base64url');
  const id = sessionIdOf(secret);
  const refreshTokenSealed = identity.refreshToken === undefined ? null : await seal(keyRing, identity.refreshToken, refreshTokenData(id));
  return { secret, id, expiresAt: now + settings.sessionLifetimeMs, refreshTokenSealed };
}

async function insertSession(db: Db, person: Person, identity: ProviderIdentity, session: NewSession, now: number): Promise<void> {
  await db
    .insertInto('sessions')
    .values({
      id: session.id,
      person_id: person.id,
      groups: JSON.stringify(identity.groups),
      refresh_token_sealed: session.refreshTokenSealed,
      created_at: now,
      seen_at: now,
      refreshed_at: now,
      expires_at: session.expiresAt,
      ended_at: null,
      ended_by: null,
    })
    .execute();
}

/** Starts a session without a sign-in (tests seed sessions so); the secret is for the cookie only (the database keeps its hash). */
export async function startSession(db: Db, keyRing: KeyRing, settings: Settings, person: Person, identity: ProviderIdentity, now: number): Promise<{ secret: string; expiresAt: number }> {
  const session = await newSession(keyRing, settings, identity, now);
  await insertSession(db, person, identity, session, now);
  return { secret: session.secret, expiresAt: session.expiresAt };
}

/**
 * Ends a session that keyfleet itself ends (idle too long, its groups no longer readable), as its
 * expiry does: without an audit entry, since the request that finds it so may be a read.
 */
export async function endSession(db: Db, id: string, { now, by }: { now: number; by: string }): Promise<void> {
  await db.updateTable('sessions').set({ ended_at: now, ended_by: by }).where('id', '=', id).where('ended_at', 'is', null).execute();
}

/** A person as a session's entry names them. */
const personView = (person: Pick<Person, 'id' | 'email' | 'name'>) => ({ id: person.id, email: person.email, name: person.name });

/** The sessions a sign-out or a revocation ends: one by its id, by its handle, or every one of a person. */
type SessionsToEnd = { id: string } | { handle: string } | { personId: number };

/**
 * Ends the selected sessions that last and appends one entry per session ended, in one
 * transaction; the count ended (0: nothing changed, nothing appended). An entry's customer is
 * the one the person's bindings grant now (null: every customer, or no grant left), so that a
 * customer's auditors see their people's sessions end as they saw them start.
 */
async function endSessionsRecorded(db: Db, which: SessionsToEnd, action: 'session.ended' | 'session.revoked', { now, source }: { now: number; source: ChangeSource }): Promise<number> {
  return db.transaction().execute(async (trx) => {
    let query = trx.updateTable('sessions').set({ ended_at: now, ended_by: actorText(source.actor) }).where('ended_at', 'is', null);
    if ('id' in which) query = query.where('id', '=', which.id);
    else if ('handle' in which) query = query.where('id', 'like', `${which.handle}%`);
    else query = query.where('person_id', '=', which.personId);
    const ended = await query.returning(['id', 'person_id', 'groups', 'created_at', 'expires_at']).execute();
    if (ended.length === 0) return 0;
    const people = await trx
      .selectFrom('people')
      .select(['id', 'subject', 'email', 'name'])
      .where('id', 'in', [...new Set(ended.map((row) => Number(row.person_id)))])
      .execute();
    const personOf = new Map(people.map((person) => [Number(person.id), person]));
    const bindings = await listRoleBindings(trx);
    ended.sort((a, b) => Number(a.created_at) - Number(b.created_at) || (a.id < b.id ? -1 : 1));
    await recordChanges(
      trx,
      source,
      ended.map((row) => {
        const person = personOf.get(Number(row.person_id))!;
        const grant = grantOf(bindings, { subject: person.subject, email: person.email, groups: JSON.parse(row.groups) as string[] });
        return {
          action,
          customer: grant.ok ? (grant.customer?.name ?? null) : null,
          entity: { type: 'session', id: sessionHandle(row.id) },
          before: { person: personView({ ...person, id: Number(person.id) }), created_at: iso(row.created_at), expires_at: iso(row.expires_at) },
        };
      }),
      now,
    );
    return ended.length;
  });
}

/** Sign-out: ends the person's own session, with its session.ended entry (none if it had ended already). */
export async function signOutSession(db: Db, id: string, { now, source }: { now: number; source: ChangeSource }): Promise<void> {
  await endSessionsRecorded(db, { id }, 'session.ended', { now, source });
}

export interface SessionView {
  /** A short public handle of the session (the first 16 hex digits of its id), what revocation names. */
  id: string;
  person: { id: number; email: string | null; name: string | null; subject: string };
  created_at: string;
  seen_at: string;
  expires_at: string;
}

/** The public handle: enough to name a session, never enough to open it (the id is itself a hash). */
export const sessionHandle = (id: string) => id.slice(0, 16);
/** What a handle looks like: the route's parameter and the command's argument are checked against it. */
export const SESSION_HANDLE_PATTERN = '^[0-9a-f]{16}$';

const iso = (ms: number) => new Date(Number(ms)).toISOString();

/** Sessions that have not ended or expired, newest first; of one person when `personId` is given. */
export async function listSessions(db: Db, { now, personId }: { now: number; personId?: number }): Promise<SessionView[]> {
  let query = db
    .selectFrom('sessions')
    .innerJoin('people', 'people.id', 'sessions.person_id')
    .select(['sessions.id', 'people.id as person_id', 'people.email', 'people.name', 'people.subject', 'sessions.created_at', 'sessions.seen_at', 'sessions.expires_at', 'sessions.ended_at'])
    .where('sessions.ended_at', 'is', null)
    .where('sessions.expires_at', '>', now)
    .orderBy('sessions.created_at', 'desc')
    .orderBy('sessions.id');
  if (personId !== undefined) query = query.where('sessions.person_id', '=', personId);
  return (await query.execute()).map((row) => ({
    id: sessionHandle(row.id),
    person: { id: Number(row.person_id), email: row.email, name: row.name, subject: row.subject },
    created_at: iso(row.created_at),
    seen_at: iso(row.seen_at),
    expires_at: iso(row.expires_at),
  }));
}

/** Ends the session with that handle, with its session.revoked entry; 404 (and no entry) when none lasts. */
export async function revokeSession(db: Db, handle: string, { now, source }: { now: number; source: ChangeSource }): Promise<number> {
  const revoked = await endSessionsRecorded(db, { handle }, 'session.revoked', { now, source });
  if (revoked === 0) throw notFound(`session ${handle} not found, or ended already`);
  return revoked;
}

/** Ends every session of the person (offboarding), one session.revoked entry each; the count ended; 404 for an unknown person. */
export async function revokePersonSessions(db: Db, personId: number, { now, source }: { now: number; source: ChangeSource }): Promise<number> {
  if (!(await db.selectFrom('people').select('id').where('id', '=', personId).executeTakeFirst())) throw notFound(`person ${personId} not found`);
  return endSessionsRecorded(db, { personId }, 'session.revoked', { now, source });
}

interface CachedSession {
  id: string;
  person: Person;
  groups: string[];
  refreshTokenSealed: string | null;
  seenAt: number;
  refreshedAt: number;
  expiresAt: number;
  endedAt: number | null;
  /** When this process read the row. */
  readAt: number;
  /** The principal of the grant computed from `bindings`, reused while they are the same copy. */
  principal?: { bindings: readonly RoleBinding[]; value: Principal | Error };
}

export interface SessionCheckOptions {
  db: Db;
  keyRing: KeyRing;
  settings: Settings;
  bindings: FreshCopy<RoleBinding[]>;
  /** The provider, to read a session's groups again; undefined without OIDC settings (no session can start then). */
  oidc: OidcClient | undefined;
  /** Whether the request carries a valid anti-CSRF token (src/auth/plugin.ts). */
  csrfTokenValid(request: FastifyRequest): boolean;
  log: FastifyBaseLogger;
  clock?: () => number;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export const actorOf = (person: Person): Actor => ({ kind: 'person', id: String(person.id), name: person.name ?? person.email ?? person.subject });

/** The principal of a person's grant, or the error that refuses it. */
function principalOfGrant(person: Person, grant: Grant): Principal | Error {
  if (!grant.ok) return forbidden(`Your session gives no access: ${grant.reason}`);
  const actor = actorOf(person);
  return {
    // Stable: the records of who did what (a rollout's creator and approver) must not change with an email.
    subject: `person:${person.id}`,
    actor,
    customer: grant.customer,
    scopes: grant.scopes,
    isAdmin: grant.scopes.has('admin'),
    roles: grant.roles,
  };
}

/** The CredentialCheck of session cookies, with a per-process cache of the sessions in use. */
export interface SessionCheck extends CredentialCheck {
  /** The request's session and its person if the session may be used, whatever it grants (sign-out ends one that grants nothing too). */
  validSession(request: FastifyRequest): Promise<{ id: string; actor: Actor } | undefined>;
  /** Forgets this process's copy of a session at once (signed out here). */
  forget(id: string): void;
}

export function sessionCheck(options: SessionCheckOptions): SessionCheck {
  const { db, keyRing, settings, bindings, oidc, log } = options;
  const clock = options.clock ?? Date.now;
  const cache = new Map<string, CachedSession>();
  const cookieName = sessionCookieName(settings);
  const refreshing = new Map<string, Promise<void>>();

  async function readSession(id: string, now: number): Promise<CachedSession | undefined> {
    const row = await db
      .selectFrom('sessions')
      .innerJoin('people', 'people.id', 'sessions.person_id')
      .select(['sessions.id', 'sessions.groups', 'sessions.refresh_token_sealed', 'sessions.seen_at', 'sessions.refreshed_at', 'sessions.expires_at', 'sessions.ended_at', 'people.id as person_id', 'people.issuer', 'people.subject', 'people.email', 'people.name'])
      .where('sessions.id', '=', id)
      .executeTakeFirst();
    if (!row) return undefined;
    const session: CachedSession = {
      id,
      person: { id: Number(row.person_id), issuer: row.issuer, subject: row.subject, email: row.email, name: row.name },
      groups: JSON.parse(row.groups) as string[],
      refreshTokenSealed: row.refresh_token_sealed,
      seenAt: Number(row.seen_at),
      refreshedAt: Number(row.refreshed_at),
      expiresAt: Number(row.expires_at),
      endedAt: row.ended_at === null ? null : Number(row.ended_at),
      readAt: now,
    };
    if (cache.size >= MAX_CACHED_SESSIONS) cache.delete(cache.keys().next().value!);
    cache.set(id, session);
    return session;
  }

  /**
   * Reads the person's groups from the provider again; ends the session if the provider refuses
   * its refresh token (the person disabled, the grant revoked), or if there is none. One process
   * refreshes a session at a time: it claims the refresh by moving `refreshed_at` on from the
   * value it read, so that two processes never spend one rotating refresh token. A provider that
   * cannot be reached leaves the session as it is, and is asked again after REFRESH_RETRY_MS; a
   * database error is the request's (a 503), never an ended session.
   */
  async function refresh(session: CachedSession, now: number): Promise<void> {
    const claimed = await db.updateTable('sessions').set({ refreshed_at: now }).where('id', '=', session.id).where('refreshed_at', '=', session.refreshedAt).where('ended_at', 'is', null).executeTakeFirst();
    if (Number(claimed.numUpdatedRows) === 0) return;
    if (!oidc || session.refreshTokenSealed === null) {
      // Without a refresh token the groups cannot be read again: the person signs in again.
      await endSession(db, session.id, { now, by: 'system:session-refresh' });
      return;
    }
    const refreshToken = (await open(keyRing, session.refreshTokenSealed, refreshTokenData(session.id))).toString('utf8');
    let identity;
    try {
      identity = await oidc.refresh(refreshToken);
    } catch (error) {
      if (error instanceof ProviderUnavailableError) {
        log.warn({ err: { message: error.message } }, 'session refresh: the identity provider is unavailable; the session keeps its groups for now');
        await db.updateTable('sessions').set({ refreshed_at: now - settings.sessionRefreshMs + REFRESH_RETRY_MS }).where('id', '=', session.id).execute();
        return;
      }
      log.info({ person: session.person.id, reason: (error as Error).message }, 'session refresh refused by the identity provider; the session ends');
      await endSession(db, session.id, { now, by: 'system:session-refresh' });
      return;
    }
    await db
      .updateTable('sessions')
      .set({
        groups: JSON.stringify(identity.groups),
        refresh_token_sealed: identity.refreshToken === undefined ? null : await seal(keyRing, identity.refreshToken, refreshTokenData(session.id)),
      })
      .where('id', '=', session.id)
      .execute();
  }

  /** This process's copy of the session, read again when a second old. */
  async function currentSession(id: string, now: number): Promise<CachedSession | undefined> {
    const cached = cache.get(id);
    return cached && now - cached.readAt < SESSION_MAX_AGE_MS ? cached : readSession(id, now);
  }

  /** The session with its groups refreshed if due (concurrent requests of this process share one refresh). */
  async function refreshedIfDue(session: CachedSession, now: number): Promise<CachedSession> {
    if (now - session.refreshedAt < settings.sessionRefreshMs) return session;
    let running = refreshing.get(session.id);
    if (!running) {
      running = refresh(session, now).finally(() => refreshing.delete(session.id));
      refreshing.set(session.id, running);
    }
    await running;
    const after = await readSession(session.id, now);
    if (!after || after.endedAt !== null) throw unauthorized('Session has ended: sign in again');
    return after;
  }

  /**
   * The request's session if it is one a request may use (known, not ended, expired or idle,
   * and for a write with its anti-CSRF token), whatever it grants; undefined without the cookie.
   */
  async function validSession(request: FastifyRequest): Promise<{ session: CachedSession } | undefined> {
    const secret = cookieOf(request, cookieName);
    if (secret === undefined) return undefined;
    const now = clock();
    const id = sessionIdOf(secret);
    const session = await currentSession(id, now);
    if (!session) throw unauthorized('Session is unknown: sign in again');
    if (session.endedAt !== null) throw unauthorized('Session has ended: sign in again');
    if (now >= session.expiresAt) throw unauthorized('Session has expired: sign in again');
    if (now - session.seenAt >= settings.sessionIdleMs) {
      await endSession(db, id, { now, by: 'system:idle-timeout' });
      cache.delete(id);
      throw unauthorized('Session was idle too long: sign in again');
    }
    // A cookie rides along with any request a page of another site makes; a write needs proof that the console made it.
    if (!SAFE_METHODS.has(request.method) && !options.csrfTokenValid(request)) throw forbidden('Missing or invalid anti-CSRF token (header x-csrf-token): reload the console');
    if (now - session.seenAt >= SEEN_WRITE_INTERVAL_MS) {
      session.seenAt = now;
      await db.updateTable('sessions').set({ seen_at: now }).where('id', '=', id).execute();
    }
    return { session: await refreshedIfDue(session, now) };
  }

  return {
    sessionPrincipal: async (request) => {
      const found = await validSession(request);
      if (!found) return undefined;
      const { session } = found;
      const current = await bindings.get();
      if (session.principal?.bindings !== current) {
        session.principal = { bindings: current, value: principalOfGrant(session.person, grantOf(current, { subject: session.person.subject, email: session.person.email, groups: session.groups })) };
      }
      const principal = session.principal.value;
      if (principal instanceof Error) throw principal;
      return principal;
    },
    validSession: async (request) => {
      const found = await validSession(request);
      return found && { id: found.session.id, actor: actorOf(found.session.person) };
    },
    forget: (id) => void cache.delete(id),
  };
}
