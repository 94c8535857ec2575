import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { changeSourceOf } from '../audit/trail.ts';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { methodNotAllowed } from '../http/errors.ts';
import { methodNotAllowedRoute } from '../http/openapi.ts';
import { cursorPageResponse, linkNextPage, NO_TOTAL } from '../http/cursor-paging.ts';
import { ErrorResponse, MESSAGES, pageResponse, paginated, resourceResponse } from '../http/schemas.ts';
import { IfMatchHeaders, parseIfMatch, preconditionFailedResponse } from '../http/preconditions.ts';
import { aclEtag, aclJson, aclSummaryJson, type StoredAcl } from './model.ts';
import { createAcl, getAcl, getAclOkm, listCustomerAclSummaries, listCustomerAcls, removeAcl, replaceAcl, type AclRequest, type AclWrite } from './service.ts';
import { AclCustomerQuery, AclListQuery, AclOkmView, AclParams, AclSummaryListQuery, AclSummaryView, AclView, MAX_USER_DATA_BYTES, aclBody, type AclBody, type AclLimits } from './schemas.ts';

const errorResponses = { '4xx': ErrorResponse };
/** The answers of a write that honours If-Match: a 412 holds the ACL as it now is. */
const conditionalErrorResponses = { 412: preconditionFailedResponse(AclView), ...errorResponses };

/** Room for the largest valid body the caps allow, written with a space after each comma. */
const bodyLimitFor = (limits: AclLimits) => 128 * 1024 + MAX_USER_DATA_BYTES + limits.maxLocks * 70 + limits.maxUsers * (400 + limits.maxLocks * 4);

/** Responses are written from the stored JSON texts, so user_data goes back exactly as it came. */
function sendJson(reply: FastifyReply, statusCode: number, json: string) {
  return reply.code(statusCode).type('application/json; charset=utf-8').send(json);
}

/** An answer that holds one ACL, with its ETag (RFC 9110 §8.8.3), the version a later If-Match names. */
function sendAcl(reply: FastifyReply, statusCode: number, message: string, acl: StoredAcl) {
  const json = aclJson(acl);
  return sendJson(reply.header('etag', aclEtag(acl, acl.okmSerial ?? null, json)), statusCode, `{"message":${JSON.stringify(message)},"data":${json}}`);
}

function pageJson(query: AclListQuery, items: string[], total: number): string {
  const { message, pagination } = paginated(query, [], total);
  return `{"message":${JSON.stringify(message)},"pagination":${JSON.stringify(pagination)},"data":[${items.join(',')}]}`;
}

/** The request as the ACL service takes it: who asks, when, and the change's source for the audit trail. */
const aclRequest = (request: FastifyRequest): AclRequest => ({ db: request.server.db, principal: principalOf(request), now: Date.now(), source: changeSourceOf(request), locking: request.server.dialect });

/** A write's request: also its If-Match (RFC 9110), checked under the ACL's row lock. */
const aclWriteRequest = (request: FastifyRequest): AclRequest => {
  const ifMatch = parseIfMatch(request.headers['if-match']);
  return { ...aclRequest(request), ...(ifMatch === undefined ? {} : { ifMatch }) };
};

const refusePatch = (allow: string) => async () => {
  throw methodNotAllowed('Cannot PATCH', allow);
};

/** The ACL resource (contract §0.6, §8), mounted at /api/v1/acls. */
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
      schema: {
        operationId: 'createAcl',
        summary: 'Create an ACL (or overwrite one of the same customer)',
        description: 'With If-Match, only an existing ACL of that version is overwritten (412 otherwise).',
        headers: IfMatchHeaders,
        body: AclBody,
        response: { 201: resourceResponse(AclView), ...conditionalErrorResponses },
      },
    },
    async (request, reply) => sendAcl(reply, 201, MESSAGES.created, await createAcl(aclWriteRequest(request), aclWrite(request, request.body))),
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
      config: { openapi: { etag: true } },
      schema: { operationId: 'getAcl', summary: 'Get an ACL', params: AclParams, querystring: AclCustomerQuery, response: { 200: resourceResponse(AclView), ...errorResponses } },
    },
    async (request, reply) => {
      const acl = await getAcl(aclRequest(request), request.params.id.toLowerCase(), request.query.customer);
      return sendAcl(reply, 200, MESSAGES.fetched, acl);
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
        headers: IfMatchHeaders,
        body: AclBody,
        response: { 200: resourceResponse(AclView), ...conditionalErrorResponses },
      },
    },
    async (request, reply) => {
      const acl = await replaceAcl(aclWriteRequest(request), request.params.id.toLowerCase(), request.query.customer, aclWrite(request, request.body));
      return sendAcl(reply, 200, MESSAGES.updated, acl);
    },
  );

  app.delete(
    '/:id',
    {
      onRequest: canDelete,
      schema: {
        operationId: 'deleteAcl',
        summary: 'Delete an ACL',
        params: AclParams,
        querystring: AclCustomerQuery,
        headers: IfMatchHeaders,
        response: { 204: Type.Null(), ...conditionalErrorResponses },
      },
    },
    async (request, reply) => {
      await removeAcl(aclWriteRequest(request), request.params.id.toLowerCase(), request.query.customer);
      return reply.code(204).send(null);
    },
  );

  // PATCH is 405 whoever asks (contract §0.6), before authentication.
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
        response: { 200: cursorPageResponse(AclSummaryView, `The customer's ACLs by id, as GET /api/v1/acls orders them. ${NO_TOTAL} GET /api/v1/acls has total_results (contract §8.3).`), ...errorResponses },
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
