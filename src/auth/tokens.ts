import { randomUUID } from 'node:crypto';
import {
  SignJWT,
  createRemoteJWKSet,
  customFetch,
  decodeJwt,
  errors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { FastifyBaseLogger } from 'fastify';
import type { Settings } from '../config/settings.ts';
import { findCustomerByName } from '../customers/repository.ts';
import type { Db } from '../db/database.ts';
import { isDatabaseUnavailable } from '../db/connection-errors.ts';
import { badRequest, unauthorized } from '../http/errors.ts';
import { recordChange, type ChangeSource } from '../audit/trail.ts';
import type { Actor } from './actor.ts';
import { recordToken, revokeTokenInTransaction, type TokenRevocations, type TokenView } from './api-tokens.ts';
import { FLEET_ONLY_SCOPES } from './roles.ts';
import type { Principal, Scope } from './guard.ts';
import { ensureActiveSigningKey, loadActiveSigningKey, loadOwnKeySet, type OwnKeySet } from './signing-keys.ts';
import type { KeyRing } from '../secrets/key-ring.ts';
import { fetchAtMost } from '../shared/outside-answers.ts';

export const KNOWN_SCOPES: readonly Scope[] = [
  'acl:read',
  'acl:create',
  'acl:delete',
  'okm:read',
  'okm:write',
  'lock:read',
  'firmware:write',
  'rollout:write',
  'rollout:approve',
  'audit:read',
  'admin',
];

/**
 * Rollouts were written and approved with okm:write before they had scopes of their own: a
 * token's okm:write still grants them, so that tokens issued then keep their meaning. A
 * person's scopes come from the role table alone (src/auth/roles.ts).
 */
const SCOPES_IMPLIED_FOR_TOKENS: Readonly<Record<string, readonly Scope[]>> = { 'okm:write': ['rollout:write', 'rollout:approve'] };

/** The longest a token may live: every token expires, and a lost one is revoked by its id. */
export const MAX_TOKEN_TTL_SECONDS = 366 * 24 * 3600;

const ACCEPTED_ALGORITHMS = ['EdDSA', 'ES256', 'RS256'];

export interface TokenRequest {
  /** Customer name the token acts for; absent for an operator token, which needs `admin`. */
  customer?: string;
  scopes: string[];
  ttlSeconds: number;
  /** `sub`: who acts (an operator's name, for the records of who did what); default admin or customer:<name>. */
  subject?: string;
  /** What the token is for, as lists show it; default its subject. */
  name?: string;
}

export interface IssuedToken {
  token: string;
  /** The token's id (`jti`): what lists show and revocation names. */
  id: string;
  /** Epoch seconds. */
  expiresAt: number;
}

/**
 * Signs a token with the deployment's active key (creating the key if this is the first use) and
 * adds it to the registry, with its token.issued entry (the token itself never recorded) under
 * `source`, who issues it. Without a source nothing is recorded: only for tokens a test seeds.
 */
export async function issueToken(db: Db, keyRing: KeyRing, settings: Settings, request: TokenRequest, source?: ChangeSource): Promise<IssuedToken> {
  const unknownScopes = request.scopes.filter((scope) => !(KNOWN_SCOPES as readonly string[]).includes(scope));
  if (unknownScopes.length > 0) {
    throw badRequest(`scope: unknown scope ${unknownScopes.join(', ')} (known: ${KNOWN_SCOPES.join(' ')})`);
  }
  if (request.scopes.length === 0) throw badRequest('scope: at least one scope is required');
  if (request.customer === undefined && !request.scopes.includes('admin')) {
    throw badRequest('scope: a token for no particular customer must have the admin scope');
  }
  // The guard lets admin act for every customer, whatever the token's customer claim says.
  if (request.customer !== undefined && request.scopes.includes('admin')) {
    throw badRequest('scope: admin is not for a customer token: an admin token acts for every customer; issue it without --customer');
  }
  const fleetOnly = request.scopes.filter((scope) => FLEET_ONLY_SCOPES.has(scope));
  if (request.customer !== undefined && fleetOnly.length > 0) {
    throw badRequest(`scope: ${fleetOnly.join(', ')} acts on the whole fleet and is not for a customer token`);
  }
  const customer = request.customer === undefined ? undefined : await findCustomerByName(db, request.customer);
  if (request.customer !== undefined && !customer) throw badRequest(`customer: unknown customer ${request.customer}`);
  if (request.subject !== undefined && !/^[\x21-\x7e]{1,128}$/.test(request.subject)) {
    throw badRequest(`subject: expected 1-128 printable ASCII characters without spaces, got "${request.subject}"`);
  }
  if (!Number.isInteger(request.ttlSeconds) || request.ttlSeconds <= 0) {
    throw badRequest(`ttl: expected a positive number of seconds, got ${request.ttlSeconds}`);
  }
  if (request.ttlSeconds > MAX_TOKEN_TTL_SECONDS) {
    throw badRequest(`ttl: at most ${MAX_TOKEN_TTL_SECONDS / 86_400} days (${MAX_TOKEN_TTL_SECONDS} s), got ${request.ttlSeconds} s: every token expires`);
  }
  if (request.name !== undefined && !/^[^\p{Cc}]{1,128}$/u.test(request.name)) {
    throw badRequest('name: expected 1-128 characters without control characters');
  }

  await ensureActiveSigningKey(db, keyRing);
  const signingKey = await loadActiveSigningKey(db, keyRing);
  const issuedAt = Math.floor(Date.now() / 1000);
  const expiresAt = issuedAt + request.ttlSeconds;
  const id = randomUUID();
  const subject = request.subject ?? (request.customer === undefined ? 'admin' : `customer:${request.customer}`);
  const token = await new SignJWT({
    scope: request.scopes.join(' '),
    ...(request.customer === undefined ? {} : { customer: request.customer }),
  })
    .setProtectedHeader({ alg: signingKey.algorithm, kid: signingKey.kid, typ: 'JWT' })
    .setIssuer(settings.jwtIssuer)
    .setAudience(settings.jwtAudience)
    .setSubject(subject)
    .setIssuedAt(issuedAt)
    .setExpirationTime(expiresAt)
    .setJti(id)
    .sign(signingKey.privateKey);
  const row = {
    id,
    name: request.name ?? subject,
    subject,
    customer_id: customer?.id ?? null,
    scopes: request.scopes.join(' '),
    created_at: issuedAt * 1000,
    expires_at: expiresAt * 1000,
  };
  if (source === undefined) {
    await recordToken(db, row);
  } else {
    // Signed before the transaction, which holds only the row and its entry; the token is handed out once both have committed.
    await db.transaction().execute(async (trx) => {
      await recordToken(trx, row);
      await recordChange(trx, source, {
        action: 'token.issued',
        customer: request.customer ?? null,
        entity: { type: 'token', id },
        after: { name: row.name, subject, customer: request.customer ?? null, scopes: request.scopes, expires_at: new Date(row.expires_at).toISOString() },
      });
    });
  }
  return { token, id, expiresAt };
}

export interface TokenVerifier {
  /** The principal a bearer token stands for; throws a 401 HttpError saying why it is refused. */
  verify(token: string): Promise<Principal>;
}

interface TrustedIssuer {
  keys: JWTVerifyGetKey;
  audience: string;
}

/**
 * Verifies the deployment's own tokens against its public keys, and external identity
 * providers' tokens against their JWKS URLs; the token's (unverified) `iss` picks which.
 */
export function createTokenVerifier(db: Db, settings: Settings, ownKeys: OwnKeySet, log: FastifyBaseLogger, revocations: TokenRevocations): TokenVerifier {
  const trustedIssuers = new Map<string, TrustedIssuer>();
  for (const external of settings.jwtExternalIssuers) {
    // A JWKS is a few KiB: at most 64 KiB of the answer is read (contract §16), within jose's 5 s timeout.
    const keys = createRemoteJWKSet(new URL(external.jwksUrl), { [customFetch]: fetchAtMost });
    trustedIssuers.set(external.issuer, { keys, audience: external.audience });
  }
  trustedIssuers.set(settings.jwtIssuer, { keys: ownKeys.getKey, audience: settings.jwtAudience });

  return {
    async verify(token) {
      const issuer = unverifiedIssuer(token);
      const trusted = trustedIssuers.get(issuer);
      if (!trusted) throw unauthorized('Token issuer is not trusted');
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, trusted.keys, {
          algorithms: ACCEPTED_ALGORITHMS,
          issuer,
          audience: trusted.audience,
          clockTolerance: settings.jwtClockToleranceSeconds,
          requiredClaims: ['exp'],
        }));
      } catch (error) {
        // Our own keys are read from the database: a failure to read them is the server's (the
        // 503 of an unavailable database, or a 500), never the token's: a client that drops its
        // token on a 401 would sign its user out because the database blinked.
        if (isDatabaseUnavailable(error) || (issuer === settings.jwtIssuer && !(error instanceof errors.JOSEError))) throw error;
        if (!(error instanceof errors.JOSEError) || error instanceof errors.JWKSTimeout) {
          log.warn({ err: error, issuer }, 'could not fetch the JWKS of a trusted token issuer');
        }
        throw unauthorized(describeVerificationFailure(error));
      }
      const ownToken = issuer === settings.jwtIssuer;
      if (ownToken && typeof payload.jti === 'string' && (await revocations.isRevoked(payload.jti))) throw unauthorized('Token has been revoked');
      return principalFrom(db, payload, ownToken);
    },
  };
}

function unverifiedIssuer(token: string): string {
  let payload: JWTPayload;
  try {
    payload = decodeJwt(token);
  } catch {
    throw unauthorized('Malformed token');
  }
  if (typeof payload.iss !== 'string') throw unauthorized('Token has no issuer');
  return payload.iss;
}

function describeVerificationFailure(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'Token expired';
  if (error instanceof errors.JWTClaimValidationFailed) return `Token claim ${error.claim} is ${error.reason === 'missing' ? 'missing' : 'invalid'}`;
  if (error instanceof errors.JOSEAlgNotAllowed) return 'Token algorithm not allowed';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'Token signature is invalid';
  if (error instanceof errors.JWKSNoMatchingKey) return 'Token signing key is unknown';
  if (error instanceof errors.JWKSTimeout) return 'Token issuer keys could not be fetched in time';
  if (error instanceof errors.JOSEError) return 'Token is invalid';
  return 'Token issuer keys could not be fetched';
}

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), printable ASCII without space, `"` or `\`. */
const SCOPE_TOKEN = '[\\x21\\x23-\\x5b\\x5d-\\x7e]+';
/** scope = scope-token *( SP scope-token ): single spaces between names, none before or after. */
const SCOPE_LIST = new RegExp(`^${SCOPE_TOKEN}(?: ${SCOPE_TOKEN})*$`);
const ONE_SCOPE = new RegExp(`^${SCOPE_TOKEN}$`);

const invalidScopeClaim = (claim: string) =>
  unauthorized(`Token claim ${claim} is invalid: scope names are printable ASCII, separated by single spaces (RFC 6749 §3.3)`);

/**
 * The token's scopes. A scope list split on anything but single spaces (a tab, a newline, a
 * no-break space, two spaces) refuses the token: splitting it on any whitespace once read
 * "okm:read<TAB>admin" as admin, and reading it as one unknown name would hide the mistake.
 */
function scopesFrom(payload: JWTPayload): Set<string> {
  const scopes = new Set<string>();
  // `scope` is the OAuth form (space-separated); `scp` is an array at most providers, a string at some.
  for (const [name, claim] of [['scope', payload.scope], ['scp', payload.scp]] as const) {
    if (typeof claim === 'string') {
      if (claim === '') continue;
      if (!SCOPE_LIST.test(claim)) throw invalidScopeClaim(name);
      for (const value of claim.split(' ')) scopes.add(value);
    } else if (Array.isArray(claim)) {
      for (const value of claim as unknown[]) {
        if (typeof value !== 'string') continue;
        if (!ONE_SCOPE.test(value)) throw invalidScopeClaim(name);
        scopes.add(value);
      }
    }
  }
  return scopes;
}

async function principalFrom(db: Db, payload: JWTPayload, ownToken: boolean): Promise<Principal> {
  const scopes = scopesFrom(payload);
  for (const [scope, implied] of Object.entries(SCOPES_IMPLIED_FOR_TOKENS)) if (scopes.has(scope)) for (const each of implied) scopes.add(each);
  const isAdmin = scopes.has('admin');
  const subject = payload.sub ?? '';
  // A token of ours is named by its id; another issuer's by its subject there.
  const actor: Actor = { kind: 'token', id: ownToken && typeof payload.jti === 'string' ? payload.jti : `${payload.iss}#${subject}`, name: subject };
  const customerName = payload.customer;
  if (customerName === undefined) {
    if (!isAdmin) throw unauthorized('Token names no customer and lacks the admin scope');
    return { subject, actor, customer: null, scopes, isAdmin };
  }
  if (typeof customerName !== 'string') throw unauthorized('Token claim customer must be a string');
  const customer = await findCustomerByName(db, customerName);
  if (!customer) throw unauthorized(`Token customer ${customerName} does not exist`);
  // The fleet's catalog is no customer's, whatever another issuer's token claims.
  for (const scope of FLEET_ONLY_SCOPES) scopes.delete(scope);
  return { subject, actor, customer, scopes, isAdmin };
}

/**
 * Revokes a token of this deployment given the token itself: one signed before the registry
 * existed has no row, so it is named by its signature, and gets a row, revoked, with what it
 * claims. A token of the registry is revoked as by its id. Refused (400) unless the token's
 * signature is the deployment's and it has not expired.
 */
export async function revokeTokenItself(db: Db, settings: Settings, token: string, { now, source }: { now: number; source: ChangeSource }): Promise<TokenView> {
  const ownKeys = await loadOwnKeySet(db);
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, ownKeys.getKey, { algorithms: ACCEPTED_ALGORITHMS, issuer: settings.jwtIssuer, audience: settings.jwtAudience, requiredClaims: ['exp', 'jti'] }));
  } catch (error) {
    if (isDatabaseUnavailable(error) || !(error instanceof errors.JOSEError)) throw error;
    throw badRequest(`token: not a live token of this deployment (${describeVerificationFailure(error)})`);
  }
  const id = payload.jti!;
  // The row made for an unregistered token and its revocation commit together, with one token.revoked entry.
  return db.transaction().execute(async (trx) => {
    if (!(await trx.selectFrom('api_tokens').select('id').where('id', '=', id).executeTakeFirst())) {
      const customer = typeof payload.customer === 'string' ? await findCustomerByName(trx, payload.customer) : undefined;
      await recordToken(trx, {
        id,
        name: 'unregistered (signed before the token registry)',
        subject: payload.sub ?? '',
        customer_id: customer?.id ?? null,
        scopes: typeof payload.scope === 'string' ? payload.scope : '',
        created_at: (payload.iat ?? Math.floor(now / 1000)) * 1000,
        expires_at: payload.exp! * 1000,
      });
    }
    return revokeTokenInTransaction(trx, id, { now, source });
  });
}
