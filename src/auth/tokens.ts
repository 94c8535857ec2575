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
import type { Principal, Scope } from './guard.ts';
import { ensureActiveSigningKey, loadActiveSigningKey, type OwnKeySet } from './signing-keys.ts';
import type { KeyRing } from '../secrets/key-ring.ts';
import { fetchAtMost } from '../shared/outside-answers.ts';

export const KNOWN_SCOPES: readonly Scope[] = ['acl:read', 'acl:create', 'acl:delete', 'okm:read', 'okm:write', 'lock:read', 'admin'];

const ACCEPTED_ALGORITHMS = ['EdDSA', 'ES256', 'RS256'];

export interface TokenRequest {
  /** Customer name the token acts for; absent for an operator token, which needs `admin`. */
  customer?: string;
  scopes: string[];
  ttlSeconds: number;
  /** `sub`: who acts (an operator's name, for the records of who did what); default admin or customer:<name>. */
  subject?: string;
}

export interface IssuedToken {
  token: string;
  /** Epoch seconds. */
  expiresAt: number;
}

/** Signs a token with the deployment's active key (creating the key if this is the first use). */
export async function issueToken(db: Db, keyRing: KeyRing, settings: Settings, request: TokenRequest): Promise<IssuedToken> {
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
  if (request.customer !== undefined && !(await findCustomerByName(db, request.customer))) {
    throw badRequest(`customer: unknown customer ${request.customer}`);
  }
  if (request.subject !== undefined && !/^[\x21-\x7e]{1,128}$/.test(request.subject)) {
    throw badRequest(`subject: expected 1-128 printable ASCII characters without spaces, got "${request.subject}"`);
  }
  if (!Number.isInteger(request.ttlSeconds) || request.ttlSeconds <= 0) {
    throw badRequest(`ttl: expected a positive number of seconds, got ${request.ttlSeconds}`);
  }

  await ensureActiveSigningKey(db, keyRing);
  const signingKey = await loadActiveSigningKey(db, keyRing);
  const issuedAt = Math.floor(Date.now() / 1000);
  const expiresAt = issuedAt + request.ttlSeconds;
  const token = await new SignJWT({
    scope: request.scopes.join(' '),
    ...(request.customer === undefined ? {} : { customer: request.customer }),
  })
    .setProtectedHeader({ alg: signingKey.algorithm, kid: signingKey.kid, typ: 'JWT' })
    .setIssuer(settings.jwtIssuer)
    .setAudience(settings.jwtAudience)
    .setSubject(request.subject ?? (request.customer === undefined ? 'admin' : `customer:${request.customer}`))
    .setIssuedAt(issuedAt)
    .setExpirationTime(expiresAt)
    .setJti(randomUUID())
    .sign(signingKey.privateKey);
  return { token, expiresAt };
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
export function createTokenVerifier(db: Db, settings: Settings, ownKeys: OwnKeySet, log: FastifyBaseLogger): TokenVerifier {
  const trustedIssuers = new Map<string, TrustedIssuer>();
  for (const external of settings.jwtExternalIssuers) {
    // A JWKS is a few KiB: at most 64 KiB of the answer is read (SPEC §16), within jose's 5 s timeout.
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
      return principalFrom(db, payload);
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

async function principalFrom(db: Db, payload: JWTPayload): Promise<Principal> {
  const scopes = scopesFrom(payload);
  const isAdmin = scopes.has('admin');
  const customerName = payload.customer;
  if (customerName === undefined) {
    if (!isAdmin) throw unauthorized('Token names no customer and lacks the admin scope');
    return { subject: payload.sub ?? '', customer: null, scopes, isAdmin };
  }
  if (typeof customerName !== 'string') throw unauthorized('Token claim customer must be a string');
  const customer = await findCustomerByName(db, customerName);
  if (!customer) throw unauthorized(`Token customer ${customerName} does not exist`);
  return { subject: payload.sub ?? '', customer, scopes, isAdmin };
}
