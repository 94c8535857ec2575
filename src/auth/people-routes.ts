import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ErrorResponse, IsoTime, MESSAGES, Nullable, resourceResponse } from '../http/schemas.ts';
import { CUSTOMER_NAME_PATTERN } from '../shared/identifiers.ts';
import { changeSourceOf } from '../audit/trail.ts';
import { listTokens, revokeToken } from './api-tokens.ts';
import { principalOf, requireScopes } from './guard.ts';
import { ROLE_NAMES } from './roles.ts';
import { createRoleBinding, deleteRoleBinding, listRoleBindings, type RoleBinding } from './role-bindings.ts';
import { SESSION_HANDLE_PATTERN, listSessions, revokePersonSessions, revokeSession } from './sessions.ts';

const errorResponses = { '4xx': ErrorResponse };

const ActorView = Type.Object({ kind: Type.Enum(['person', 'token', 'api_key', 'cli', 'system']), id: Type.String(), name: Type.String() });
const MeView = Type.Object({
  actor: ActorView,
  role: Nullable(Type.String({ description: "A person's role names, joined by \", \" in the role table's order; null for a token" })),
  customer: Nullable(Type.String({ description: 'The one customer the principal acts for; null: every customer' })),
  scopes: Type.Array(Type.String()),
});

const RoleBindingView = Type.Object({
  id: Type.String(),
  kind: Type.Enum(['group', 'email', 'subject']),
  value: Type.String(),
  role: Type.Enum(ROLE_NAMES),
  customer: Nullable(Type.String()),
  created_at: IsoTime,
  created_by: Type.String(),
});
const RoleBindingBody = Type.Object(
  {
    kind: Type.Enum(['group', 'email', 'subject'], { description: 'group: an IdP group (OIDC_GROUPS_CLAIM); email or subject: one person' }),
    value: Type.String({ minLength: 1, maxLength: 256 }),
    role: Type.String({ minLength: 1, maxLength: 64, description: `One of ${ROLE_NAMES.join(', ')}` }),
    customer: Type.Optional(Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'The one customer the role is for; omitted: every customer' })),
  },
  { additionalProperties: false },
);
const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9-]+$' }) });
const PersonId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });
const PersonParams = Type.Object({ id: PersonId });
const SessionParams = Type.Object({ id: Type.String({ pattern: SESSION_HANDLE_PATTERN, description: 'the session\'s id as listed' }) });
const SessionView = Type.Object({
  id: Type.String(),
  person: Type.Object({ id: Type.Integer(), email: Nullable(Type.String()), name: Nullable(Type.String()), subject: Type.String() }),
  created_at: IsoTime,
  seen_at: IsoTime,
  expires_at: IsoTime,
});
const SessionQuery = Type.Object({ person: Type.Optional(PersonId) }, { additionalProperties: false });
const TokenView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  subject: Type.String(),
  customer: Nullable(Type.String()),
  scopes: Type.Array(Type.String()),
  created_at: IsoTime,
  expires_at: IsoTime,
  revoked_at: Nullable(IsoTime),
});
const TokenQuery = Type.Object({ include_expired: Type.Optional(Type.Boolean()) }, { additionalProperties: false });
const RevokedCount = Type.Object({ revoked: Type.Integer() });

const bindingView = (binding: RoleBinding) => ({ ...binding, customer: binding.customer?.name ?? null, created_at: new Date(binding.created_at).toISOString() });

/**
 * Who is signed in, and the people, roles, sessions and tokens an admin manages (contract §17):
 * /api/v1/me, /api/v1/role-bindings, /api/v1/sessions, /api/v1/people/{id}/sessions, /api/v1/tokens.
 */
const peopleRoutes: FastifyPluginAsyncTypebox<{ csrfTokenFor(request: FastifyRequest): string | undefined }> = async (app, { csrfTokenFor }) => {
  const anyone = requireScopes();
  const canAdminister = requireScopes('admin');
  const now = () => Date.now();

  app.get(
    '/api/v1/me',
    { onRequest: anyone, schema: { operationId: 'getMe', summary: 'Who the request acts as: a person signed in or a token, with its role, customer and scopes', tags: ['people'], response: { 200: resourceResponse(MeView), ...errorResponses } } },
    async (request, reply) => {
      const principal = principalOf(request);
      // The console sends it back on its writes (the session cookie's anti-CSRF token).
      const csrfToken = csrfTokenFor(request);
      if (csrfToken !== undefined) reply.header('x-csrf-token', csrfToken);
      return {
        message: MESSAGES.fetched,
        data: {
          actor: principal.actor,
          role: principal.roles === undefined ? null : principal.roles.join(', '),
          customer: principal.customer?.name ?? null,
          scopes: [...principal.scopes].sort(),
        },
      };
    },
  );

  app.get(
    '/api/v1/role-bindings',
    { onRequest: canAdminister, schema: { operationId: 'listRoleBindings', summary: 'List the role bindings, oldest first', tags: ['people'], response: { 200: resourceResponse(Type.Array(RoleBindingView)), ...errorResponses } } },
    async () => ({ message: MESSAGES.fetched, data: (await listRoleBindings(app.db)).map(bindingView) }),
  );

  app.post(
    '/api/v1/role-bindings',
    { onRequest: canAdminister, schema: { operationId: 'createRoleBinding', summary: 'Bind an IdP group or one person to a role, for every customer or one', tags: ['people'], body: RoleBindingBody, response: { 201: resourceResponse(RoleBindingView), ...errorResponses } } },
    async (request, reply) => {
      const binding = await createRoleBinding(app.db, request.body, { now: now(), source: changeSourceOf(request) });
      return reply.code(201).send({ message: MESSAGES.created, data: bindingView(binding) });
    },
  );

  app.delete(
    '/api/v1/role-bindings/:id',
    { onRequest: canAdminister, schema: { operationId: 'deleteRoleBinding', summary: 'Remove a role binding: the people it bound lose that role within a second', tags: ['people'], params: IdParams, response: { 204: Type.Null(), ...errorResponses } } },
    async (request, reply) => {
      await deleteRoleBinding(app.db, request.params.id, { now: now(), source: changeSourceOf(request) });
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/api/v1/sessions',
    { onRequest: canAdminister, schema: { operationId: 'listSessions', summary: 'List the sessions that have not ended, newest first', tags: ['people'], querystring: SessionQuery, response: { 200: resourceResponse(Type.Array(SessionView)), ...errorResponses } } },
    async (request) => ({ message: MESSAGES.fetched, data: await listSessions(app.db, { now: now(), ...(request.query.person === undefined ? {} : { personId: request.query.person }) }) }),
  );

  app.delete(
    '/api/v1/sessions/:id',
    { onRequest: canAdminister, schema: { operationId: 'revokeSession', summary: 'End one session (its id as listed): its next request is a 401, on every process within a second', tags: ['people'], params: SessionParams, response: { 200: resourceResponse(RevokedCount), ...errorResponses } } },
    async (request) => ({ message: MESSAGES.updated, data: { revoked: await revokeSession(app.db, request.params.id, { now: now(), source: changeSourceOf(request) }) } }),
  );

  app.delete(
    '/api/v1/people/:id/sessions',
    { onRequest: canAdminister, schema: { operationId: 'revokePersonSessions', summary: "End every session of a person (offboarding)", tags: ['people'], params: PersonParams, response: { 200: resourceResponse(RevokedCount), ...errorResponses } } },
    async (request) => ({ message: MESSAGES.updated, data: { revoked: await revokePersonSessions(app.db, request.params.id, { now: now(), source: changeSourceOf(request) }) } }),
  );

  app.get(
    '/api/v1/tokens',
    { onRequest: canAdminister, schema: { operationId: 'listTokens', summary: 'List the API tokens this deployment signed, newest first (expired ones with include_expired)', tags: ['people'], querystring: TokenQuery, response: { 200: resourceResponse(Type.Array(TokenView)), ...errorResponses } } },
    async (request) => ({ message: MESSAGES.fetched, data: await listTokens(app.db, { now: now(), includeExpired: request.query.include_expired ?? false }) }),
  );

  app.delete(
    '/api/v1/tokens/:id',
    { onRequest: canAdminister, schema: { operationId: 'revokeToken', summary: 'Revoke an API token: a 401 on every process within a second', tags: ['people'], params: IdParams, response: { 200: resourceResponse(TokenView), ...errorResponses } } },
    async (request) => ({ message: MESSAGES.updated, data: await revokeToken(app.db, request.params.id, { now: now(), source: changeSourceOf(request) }) }),
  );
};

export default peopleRoutes;
