import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { changeSourceOf } from '../audit/trail.ts';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { methodNotAllowed } from '../http/errors.ts';
import { methodNotAllowedRoute } from '../http/openapi.ts';
import { cursorPageResponse, linkNextPage, NO_TOTAL } from '../http/cursor-paging.ts';
import { ErrorResponse, MESSAGES, pageResponse, paginated, resourceResponse } from '../http/schemas.ts';
import { aclJson, aclSummaryJson, type StoredAcl } from './model.ts';
import { createAcl, getAcl, getAclOkm, listCustomerAclSummaries, listCustomerAcls, removeAcl, replaceAcl, type AclRequest, type AclWrite } from './service.ts';
import { AclCustomerQuery, AclListQuery, AclOkmView, AclParams, AclSummaryListQuery, AclSummaryView, AclView, MAX_USER_DATA_BYTES, aclBody, type AclBody, type AclLimits } from './schemas.ts';

const errorResponses = { '4xx': ErrorResponse };

/** Room for the largest valid body the caps allow, written with a space after each comma. */
const bodyLimitFor = (limits: AclLimits) => 128 * 1024 + MAX_USER_DATA_BYTES + limits.maxLocks * 70 + limits.maxUsers * (400 + limits.maxLocks * 4);

/** Responses are written from the stored JSON texts, so user_data goes back exactly as it came. */
function sendJson(reply: FastifyReply, statusCode: number, json: string) {
  return reply.code(statusCode).type('application/json; charset=utf-8').send(json);
}

const resourceJson = (message: string, acl: StoredAcl) => `{"message":${JSON.stringify(message)},"data":${aclJson(acl)}}`;

function pageJson(query: AclListQuery, items: string[], total: number): string {
  const { message, pagination } = paginated(query, [], total);
  return `{"message":${JSON.stringify(message)},"pagination":${JSON.stringify(pagination)},"data":[${items.join(',')}]}`;
}

/** The request as the ACL service takes it: who asks, when, and the change's source for the audit trail. */
const aclRequest = (request: FastifyRequest): AclRequest => ({ db: request.server.db, principal: principalOf(request), now: Date.now(), source: changeSourceOf(request) });

const refusePatch = (allow: string) => async () => {
  throw methodNotAllowed('Cannot PATCH', allow);
};

/** The ACL resource (seed "ACL", SPEC §8), mounted at /api/v1/acls. */
const aclRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const limits: AclLimits = { maxUsers: app.settings.aclMaxUsers, maxLocks: app.settings.aclMaxLocks };
  const AclBody = aclBody(limits);
  const bodyLimit = bodyLimitFor(limits);
  const canRead = requireScopes('acl:read');
  const canCreate = requireScopes('acl:read', 'acl:create');
  const canDelete = requireScopes('acl:read', 'acl:delete');

  const aclWrite = (request: FastifyRequest, body: AclBody): AclWrite => ({ body, jsonText: request.jsonText ?? JSON.stringify(body) });

  app.post(
    '/',
    {
      onRequest: canCreate,
      bodyLimit,
      schema: { operationId: 'createAcl', summary: 'Create an ACL (or overwrite one of the same customer)', body: AclBody, response: { 201: resourceResponse(AclView), ...errorResponses } },
    },
    async (request, reply) => sendJson(reply, 201, resourceJson(MESSAGES.created, await createAcl(aclRequest(request), aclWrite(request, request.body)))),
  );

  app.get(
    '/',
    {
      onRequest: canRead,
      schema: { operationId: 'listAcls', summary: 'List a customer\'s ACLs', querystring: AclListQuery, response: { 200: pageResponse(AclView), ...errorResponses } },
    },
    async (request, reply) => {
      const { acls, total } = await listCustomerAcls(aclRequest(request), request.query);
      return sendJson(reply, 200, pageJson(request.query, acls.map(aclJson), total));
    },
  );

  app.get(
    '/:id',
    {
      onRequest: canRead,
      schema: { operationId: 'getAcl', summary: 'Get an ACL', params: AclParams, querystring: AclCustomerQuery, response: { 200: resourceResponse(AclView), ...errorResponses } },
    },
    async (request, reply) => {
      const acl = await getAcl(aclRequest(request), request.params.id.toLowerCase(), request.query.customer);
      return sendJson(reply, 200, resourceJson(MESSAGES.fetched, acl));
    },
  );

  app.get(
    '/:id/okm',
    {
      onRequest: canRead,
      schema: {
        operationId: 'getAclOkm',
        summary: 'The OKM an ACL is linked to (ACL responses never include okm_id)',
        params: AclParams,
        querystring: AclCustomerQuery,
        response: { 200: resourceResponse(AclOkmView), ...errorResponses },
      },
    },
    async (request) => {
      const id = request.params.id.toLowerCase();
      return { message: MESSAGES.fetched, data: { acl_id: id, okm_id: await getAclOkm(aclRequest(request), id, request.query.customer) } };
    },
  );

  app.put(
    '/:id',
    {
      onRequest: canCreate,
      bodyLimit,
      schema: {
        operationId: 'replaceAcl',
        summary: 'Replace an ACL',
        params: AclParams,
        querystring: AclCustomerQuery,
        body: AclBody,
        response: { 200: resourceResponse(AclView), ...errorResponses },
      },
    },
    async (request, reply) => {
      const acl = await replaceAcl(aclRequest(request), request.params.id.toLowerCase(), request.query.customer, aclWrite(request, request.body));
      return sendJson(reply, 200, resourceJson(MESSAGES.updated, acl));
    },
  );

  app.delete(
    '/:id',
    {
      onRequest: canDelete,
      schema: { operationId: 'deleteAcl', summary: 'Delete an ACL', params: AclParams, querystring: AclCustomerQuery, response: { 204: Type.Null(), ...errorResponses } },
    },
    async (request, reply) => {
      await removeAcl(aclRequest(request), request.params.id.toLowerCase(), request.query.customer);
      return reply.code(204).send(null);
    },
  );

  // The seed's PATCH is 405 whoever asks, before authentication.
  app.patch('/', methodNotAllowedRoute('GET, HEAD, POST'), refusePatch('GET, HEAD, POST'));
  app.patch('/:id', methodNotAllowedRoute('GET, HEAD, PUT, DELETE'), refusePatch('GET, HEAD, PUT, DELETE'));
};

export default aclRoutes;

/**
 * ACL summaries, mounted at /api/v1/acl-summaries: a customer's ACLs as GET /api/v1/acls pages
 * them, without their lists (which reach megabytes each): for a list of ACLs to choose from.
 */
export const aclSummaryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      onRequest: requireScopes('acl:read'),
      schema: {
        operationId: 'listAclSummaries',
        summary: 'List a customer\'s ACLs without their lists: user and lock counts, linked OKM, last change',
        querystring: AclSummaryListQuery,
        response: { 200: cursorPageResponse(AclSummaryView, `The customer's ACLs by id, as GET /api/v1/acls orders them. ${NO_TOTAL} GET /api/v1/acls has the seed's total_results.`), ...errorResponses },
      },
    },
    async (request, reply) => {
      const page = await listCustomerAclSummaries(aclRequest(request), request.query);
      linkNextPage(request, reply, page.nextCursor);
      const body = `{"message":${JSON.stringify(MESSAGES.fetched)},"data":[${page.items.map(aclSummaryJson).join(',')}],"next_cursor":${JSON.stringify(page.nextCursor)}}`;
      return sendJson(reply, 200, body);
    },
  );
};
