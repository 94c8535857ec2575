import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { changeSourceOf } from '../audit/trail.ts';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { cursorPageResponse, NO_TOTAL, sendCursorPage } from '../http/cursor-paging.ts';
import { ErrorResponse, MESSAGES, resourceResponse } from '../http/schemas.ts';
import { IfMatchHeaders, parseIfMatch, preconditionFailedResponse } from '../http/preconditions.ts';
import { CustomerQuery, PageQuery } from '../http/request-schemas.ts';
import { EndpointBody, EndpointDeliveryRecord, EndpointListQuery, EndpointParams, EndpointPatchBody, TestEventRecord, WebhookEndpointRecord } from './endpoints-schemas.ts';
import { createEndpoint, deliveryRecords, endpointEtag, endpointRecords, getEndpoint, patchEndpoint, removeEndpoint, sendTestEvent, toEndpointRecord, type EndpointRequest } from './endpoints-service.ts';

const errorResponses = { '4xx': ErrorResponse };
/** The answers of a write that honours If-Match: a 412 holds the endpoint as it now is. */
const conditionalErrorResponses = { 412: preconditionFailedResponse(WebhookEndpointRecord), ...errorResponses };

/** The record with its ETag (RFC 9110 §8.8.3), the version a later If-Match names. */
function withEtag(reply: FastifyReply, record: WebhookEndpointRecord): WebhookEndpointRecord {
  reply.header('etag', endpointEtag(record));
  return record;
}

/** Fleet-event webhook endpoints (contract §14), mounted at /api/v1/webhook-endpoints. */
const webhookEndpointRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const canWrite = requireScopes('okm:write');
  const endpointRequest = (request: FastifyRequest, customerName: string | undefined): EndpointRequest => ({
    db: app.db,
    settings: app.settings,
    principal: principalOf(request),
    customerName,
    now: Date.now(),
    source: changeSourceOf(request),
  });
  /** As endpointRequest, for a write: with its If-Match (RFC 9110). */
  const conditionalRequest = (request: FastifyRequest, customerName: string | undefined): EndpointRequest => {
    const ifMatch = parseIfMatch(request.headers['if-match']);
    return { ...endpointRequest(request, customerName), ...(ifMatch === undefined ? {} : { ifMatch }) };
  };

  app.post(
    '/',
    {
      onRequest: canWrite,
      config: { openapi: { etag: true } },
      schema: {
        operationId: 'createWebhookEndpoint',
        summary: 'Subscribe a URL to fleet events (deployment-wide: an admin token naming no customer)',
        querystring: CustomerQuery,
        body: EndpointBody,
        response: { 201: resourceResponse(WebhookEndpointRecord), ...errorResponses },
      },
    },
    async (request, reply) => {
      const endpoint = await createEndpoint(endpointRequest(request, request.query.customer), request.body);
      return reply.code(201).send({ message: MESSAGES.created, data: withEtag(reply, endpoint) });
    },
  );

  app.get(
    '/',
    {
      onRequest: canWrite,
      schema: {
        operationId: 'listWebhookEndpoints',
        summary: 'The webhook endpoints of the customer (an admin: every one, unless it names a customer)',
        querystring: EndpointListQuery,
        response: {
          200: cursorPageResponse(WebhookEndpointRecord, 'The endpoints, oldest first. No total: a customer has at most 20 (every customer\'s, for an admin naming none, can be many more).'),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => sendCursorPage(request, reply, MESSAGES.fetched, await endpointRecords(endpointRequest(request, request.query.customer), request.query)),
  );

  app.get(
    '/:id',
    {
      onRequest: canWrite,
      config: { openapi: { etag: true } },
      schema: {
        operationId: 'getWebhookEndpoint',
        summary: 'A webhook endpoint',
        params: EndpointParams,
        querystring: CustomerQuery,
        response: { 200: resourceResponse(WebhookEndpointRecord), ...errorResponses },
      },
    },
    async (request, reply) => ({
      message: MESSAGES.fetched,
      data: withEtag(reply, toEndpointRecord(await getEndpoint(endpointRequest(request, request.query.customer), Number(request.params.id)))),
    }),
  );

  app.patch(
    '/:id',
    {
      onRequest: canWrite,
      schema: {
        operationId: 'updateWebhookEndpoint',
        summary: 'Change a webhook endpoint\'s url or event types (JSON merge patch); its pending deliveries follow the new url',
        params: EndpointParams,
        querystring: CustomerQuery,
        headers: IfMatchHeaders,
        body: EndpointPatchBody,
        response: { 200: resourceResponse(WebhookEndpointRecord), ...conditionalErrorResponses },
      },
    },
    async (request, reply) => ({
      message: MESSAGES.updated,
      data: withEtag(reply, await patchEndpoint(conditionalRequest(request, request.query.customer), Number(request.params.id), request.body)),
    }),
  );

  app.delete(
    '/:id',
    {
      onRequest: canWrite,
      schema: {
        operationId: 'deleteWebhookEndpoint',
        summary: 'Delete a webhook endpoint and its deliveries',
        params: EndpointParams,
        querystring: CustomerQuery,
        headers: IfMatchHeaders,
        response: { 204: Type.Null(), ...conditionalErrorResponses },
      },
    },
    async (request, reply) => {
      await removeEndpoint(conditionalRequest(request, request.query.customer), Number(request.params.id));
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/:id/test',
    {
      onRequest: canWrite,
      schema: {
        operationId: 'sendWebhookEndpointTestEvent',
        summary: 'Queue a signed webhook.test event to this endpoint (see its deliveries)',
        params: EndpointParams,
        querystring: CustomerQuery,
        response: { 202: resourceResponse(TestEventRecord), ...errorResponses },
      },
    },
    async (request, reply) => {
      const eventId = await sendTestEvent(endpointRequest(request, request.query.customer), Number(request.params.id));
      return reply.code(202).send({ message: 'Test event queued', data: { event_id: eventId } });
    },
  );

  app.get(
    '/:id/deliveries',
    {
      onRequest: canWrite,
      schema: {
        operationId: 'getWebhookEndpointDeliveries',
        summary: 'The delivery log of a webhook endpoint, newest first',
        description: 'Finished deliveries are kept WEBHOOK_LOG_RETENTION_DAYS days (7 by default).',
        params: EndpointParams,
        querystring: PageQuery,
        response: { 200: cursorPageResponse(EndpointDeliveryRecord, `The endpoint's deliveries, newest first. ${NO_TOTAL}`), ...errorResponses },
      },
    },
    async (request, reply) => sendCursorPage(request, reply, MESSAGES.fetched, await deliveryRecords(endpointRequest(request, request.query.customer), Number(request.params.id), request.query)),
  );
};

export default webhookEndpointRoutes;
