import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { findCustomerByName } from '../customers/repository.ts';
import type { Db } from '../db/database.ts';
import { bearerCredential } from '../http/bearer.ts';
import { badRequest, forbidden, unauthorized } from '../http/errors.ts';
import { documentSecurity } from '../http/openapi.ts';
import type { Actor } from './actor.ts';

export type Scope =
  | 'acl:read'
  | 'acl:create'
  | 'acl:delete'
  | 'okm:read'
  | 'okm:write'
  | 'lock:read'
  | 'firmware:write'
  | 'rollout:write'
  | 'rollout:approve'
  | 'audit:read'
  | 'admin';

/** Who a verified credential (a bearer token, a session cookie) stands for. */
export interface Principal {
  /** Who acts, as the records of who did what name them (a rollout's creator and approver). */
  subject: string;
  actor: Actor;
  /** The only customer the principal may act for; null: every customer (an operator token, a fleet-wide role). */
  customer: { id: number; name: string } | null;
  scopes: ReadonlySet<string>;
  /** Has the `admin` scope: every scope, acting for any customer. */
  isAdmin: boolean;
  /** A person's roles (src/auth/roles.ts), in the role table's order; absent for tokens. */
  roles?: readonly string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | undefined;
  }
}

/**
 * Verifies the request's credential: a bearer token, or else the session cookie of a person
 * signed in through the OpenID Provider (src/auth/sessions.ts).
 */
export interface CredentialCheck {
  /** The principal of the request's session cookie, or undefined when it carries none. Throws a 401 for an ended, expired or unknown session. */
  sessionPrincipal(request: FastifyRequest): Promise<Principal | undefined>;
}

declare module 'fastify' {
  interface FastifyInstance {
    credentialCheck: CredentialCheck;
  }
}

async function verifiedPrincipal(request: FastifyRequest): Promise<Principal> {
  const bearer = bearerCredential(request.headers.authorization);
  if (bearer.ok) return request.server.tokenVerifier.verify(bearer.credential);
  if (bearer.reason === 'missing') {
    const fromSession = await request.server.credentialCheck.sessionPrincipal(request);
    if (fromSession) return fromSession;
  }
  throw unauthorized(bearer.reason === 'missing' ? 'Missing bearer token' : 'Authorization header is not a Bearer token');
}

/**
 * preHandler: 401 (missing/invalid token, header WWW-Authenticate: Bearer error="invalid_token",
 * body {error_code:"UNAUTHORIZED", error_msg:<why>}) or 403 {error_code:"UNAUTHORIZED_ACCESS",
 * error_msg:"Missing required scopes"} unless the token has ALL the scopes (or `admin`).
 * Sets request.principal.
 */
export function requireScopes(...scopes: Scope[]): preHandlerAsyncHookHandler {
  return documentSecurity(
    async function guard(request) {
      const principal = await verifiedPrincipal(request);
      if (!principal.isAdmin && !scopes.every((scope) => principal.scopes.has(scope))) throw forbidden();
      request.principal = principal;
      request.actor = principal.actor;
    },
    { jwt: scopes },
  );
}

/** The principal set by requireScopes (throws if the route forgot the guard). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error(`route ${request.routeOptions.url ?? request.url} has no requireScopes guard`);
  return request.principal;
}

/**
 * The customer a request acts for. Customer-bound token: requestedName absent or equal → its
 * customer; different → 403 "Token may not act for customer <name>".
 * Admin or fleet-wide principal: requestedName absent → null (all customers); present → that customer, or 400
 * "customer: unknown customer <name>" if it does not exist.
 */
export async function actingCustomer(
  db: Db,
  principal: Principal,
  requestedName?: string,
): Promise<{ id: number; name: string } | null> {
  if (principal.isAdmin || principal.customer === null) {
    if (requestedName === undefined) return null;
    const customer = await findCustomerByName(db, requestedName);
    if (!customer) throw badRequest(`customer: unknown customer ${requestedName}`);
    return customer;
  }
  const own = principal.customer;
  if (requestedName !== undefined && requestedName !== own.name) throw forbidden(`Token may not act for customer ${requestedName}`);
  return own;
}
