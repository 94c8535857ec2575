import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { findCustomerByName } from '../customers/repository.ts';
import type { Db } from '../db/database.ts';
import { bearerCredential } from '../http/bearer.ts';
import { badRequest, forbidden, unauthorized } from '../http/errors.ts';
import { documentSecurity } from '../http/openapi.ts';

export type Scope = 'acl:read' | 'acl:create' | 'acl:delete' | 'okm:read' | 'okm:write' | 'lock:read' | 'admin';

/** Who a verified bearer token stands for. */
export interface Principal {
  subject: string;
  /** The only customer the token may act for; null for an operator (admin) token that names none. */
  customer: { id: number; name: string } | null;
  scopes: ReadonlySet<string>;
  /** Has the `admin` scope: every scope, acting for any customer. */
  isAdmin: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | undefined;
  }
}

function bearerToken(request: FastifyRequest): string {
  const bearer = bearerCredential(request.headers.authorization);
  if (bearer.ok) return bearer.credential;
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
      const principal = await request.server.tokenVerifier.verify(bearerToken(request));
      if (!principal.isAdmin && !scopes.every((scope) => principal.scopes.has(scope))) throw forbidden();
      request.principal = principal;
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
 * Admin token: requestedName absent → null (all customers); present → that customer, or 400
 * "customer: unknown customer <name>" if it does not exist.
 */
export async function actingCustomer(
  db: Db,
  principal: Principal,
  requestedName?: string,
): Promise<{ id: number; name: string } | null> {
  if (principal.isAdmin) {
    if (requestedName === undefined) return null;
    const customer = await findCustomerByName(db, requestedName);
    if (!customer) throw badRequest(`customer: unknown customer ${requestedName}`);
    return customer;
  }
  const own = principal.customer;
  if (!own) throw new Error('a non-admin principal always has a customer');
  if (requestedName !== undefined && requestedName !== own.name) throw forbidden(`Token may not act for customer ${requestedName}`);
  return own;
}
