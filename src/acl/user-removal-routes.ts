import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { changeSourceOf } from '../audit/trail.ts';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { ErrorResponse, MESSAGES, Nullable, resourceResponse } from '../http/schemas.ts';
import { CUSTOMER_NAME_PATTERN } from '../shared/identifiers.ts';
import { UUID_PATTERN, USER_ID_MAX } from './schemas.ts';
import type { AclRequest } from './service.ts';
import { previewUserRemoval, removeUserFromAcls, type UserRemoval } from './user-removal.ts';

const UserParams = Type.Object(
  { user_id: Type.Integer({ minimum: 0, maximum: USER_ID_MAX, description: 'the user to remove, as the ACLs\' users name it' }) },
  { additionalProperties: false },
);

const RemovalQuery = Type.Object(
  { customer: Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'whose ACLs; a customer\'s token may name only its own' }) },
  { additionalProperties: false },
);

/** Most ids acl_ids may hold: BULK_ACTION_MAX's own upper bound. */
const MAX_EXPECTED_ACLS = 10_000;

const RemovalBody = Type.Object(
  {
    acl_ids: Type.Optional(
      Type.Array(Type.String({ pattern: UUID_PATTERN }), {
        maxItems: MAX_EXPECTED_ACLS,
        uniqueItems: true,
        description: 'the ACLs the preview listed: when given, the removal is refused with 409 (nothing changes) unless the ACLs holding the user are exactly these',
      }),
    ),
  },
  { additionalProperties: false },
);

const UserRemovalView = Type.Object({
  customer: Type.String(),
  user_id: Type.Integer(),
  acls: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Nullable(Type.String()),
      okm_id: Nullable(Type.String({ description: 'the OKM linked to the ACL, whose user asset list changes with it' })),
    }),
    { description: 'the ACLs that hold the user (preview) or held it (applied), by id' },
  ),
  okm_ids: Type.Array(Type.String(), { description: 'the OKMs linked to those ACLs: their next polls send the new user list' }),
  over_limit: Type.Boolean({ description: 'more than BULK_ACTION_MAX ACLs hold the user: acls holds the first of them, and the removal is refused with 409' }),
  applied: Type.Boolean({ description: 'false: a preview, nothing changed; true: the user is removed from every one of acls' }),
});

const removalJson = (removal: UserRemoval) => ({
  customer: removal.customer,
  user_id: removal.userId,
  acls: removal.acls.map((acl) => ({ id: acl.id, name: acl.name, okm_id: acl.okmSerial })),
  okm_ids: removal.okmSerials,
  over_limit: removal.overLimit,
  applied: removal.applied,
});

const errorResponses = { '4xx': ErrorResponse };

/**
 * Offboarding, mounted at /api/v1/acl-users: a user removed from every ACL of a customer at
 * once. GET …/{user_id}/removal previews it (which ACLs and OKMs), POST …/{user_id}/removal does
 * it in one transaction, each ACL changed recorded as acl.updated.
 */
const aclUserRemovalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const max = app.settings.bulkActionMax;
  const aclRequest = (request: FastifyRequest): AclRequest => ({ db: app.db, principal: principalOf(request), now: Date.now(), source: changeSourceOf(request), locking: app.dialect });

  app.get(
    '/:user_id/removal',
    {
      onRequest: requireScopes('acl:read'),
      schema: {
        operationId: 'previewAclUserRemoval',
        summary: 'Which ACLs of the customer, and which OKMs, removing the user from every ACL would change (nothing changes)',
        params: UserParams,
        querystring: RemovalQuery,
        response: { 200: resourceResponse(UserRemovalView), ...errorResponses },
      },
    },
    async (request) => ({
      message: MESSAGES.fetched,
      data: removalJson(await previewUserRemoval(aclRequest(request), request.query.customer, request.params.user_id, max)),
    }),
  );

  app.post(
    '/:user_id/removal',
    {
      onRequest: requireScopes('acl:read', 'acl:create'),
      schema: {
        operationId: 'removeAclUser',
        summary: 'Remove the user from every ACL of the customer, in one transaction',
        description: `At most BULK_ACTION_MAX ACLs (default 1000): a user in more is refused with 409 and nothing changes. Each ACL changed gets an acl.updated audit entry recording the user removed.`,
        params: UserParams,
        querystring: RemovalQuery,
        body: RemovalBody,
        response: { 200: resourceResponse(UserRemovalView), ...errorResponses },
      },
    },
    async (request) => ({
      message: MESSAGES.updated,
      data: removalJson(await removeUserFromAcls(aclRequest(request), request.query.customer, request.params.user_id, max, request.body.acl_ids)),
    }),
  );
};

export default aclUserRemovalRoutes;
