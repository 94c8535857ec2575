import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { changeSourceOf } from '../audit/trail.ts';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { ErrorResponse, MESSAGES, resourceResponse } from '../http/schemas.ts';
import { CustomerQuery } from '../http/request-schemas.ts';
import { DeliveryParams, EndpointDeliveryDetail, FailingEndpoint } from './delivery-schemas.ts';
import { deliveryDetail, failingEndpointRecords, redeliver } from './delivery-service.ts';
import { EndpointDeliveryRecord } from './endpoints-schemas.ts';
import type { EndpointRequest } from './endpoints-service.ts';
import { FAILING_ENDPOINTS_LIMIT } from './fleet-deliveries-repository.ts';

const errorResponses = { '4xx': ErrorResponse };

function requestOf(app: Parameters<FastifyPluginAsyncTypebox>[0], request: FastifyRequest, customerName: string | undefined): EndpointRequest {
  return { db: app.db, settings: app.settings, principal: principalOf(request), customerName, now: Date.now(), source: changeSourceOf(request) };
}

/** One delivery of a webhook endpoint: its body, and redelivery; mounted at /api/v1/webhook-endpoints beside the endpoint routes. */
export const webhookDeliveryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const canWrite = requireScopes('okm:write');

  app.get(
    '/:id/deliveries/:delivery_id',
    {
      onRequest: canWrite,
      schema: {
        operationId: 'getWebhookEndpointDelivery',
        summary: 'One delivery of a webhook endpoint, with the body it sends (secrets redacted)',
        params: DeliveryParams,
        querystring: CustomerQuery,
        response: { 200: resourceResponse(EndpointDeliveryDetail), ...errorResponses },
      },
    },
    async (request) => ({
      message: MESSAGES.fetched,
      data: await deliveryDetail(requestOf(app, request, request.query.customer), Number(request.params.id), Number(request.params.delivery_id)),
    }),
  );

  app.post(
    '/:id/deliveries/:delivery_id/redeliver',
    {
      onRequest: canWrite,
      schema: {
        operationId: 'redeliverWebhookEndpointDelivery',
        summary: 'Queue a finished delivery again: a new delivery of the same event (same event id) to the endpoint\'s URL',
        description: 'The original delivery stays in the log as it ended. 409 while a delivery of the same event to this endpoint is still pending.',
        params: DeliveryParams,
        querystring: CustomerQuery,
        response: { 202: resourceResponse(EndpointDeliveryRecord), ...errorResponses },
      },
    },
    async (request, reply) => {
      const queued = await redeliver(requestOf(app, request, request.query.customer), Number(request.params.id), Number(request.params.delivery_id));
      return reply.code(202).send({ message: 'Redelivery queued', data: queued });
    },
  );
};

/** GET /api/v1/fleet/failing-endpoints, mounted at /api/v1/fleet: what the console's overview lists beside the failing status subscribers. */
export const failingEndpointsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/failing-endpoints',
    {
      onRequest: requireScopes('okm:write'),
      schema: {
        operationId: 'listFailingWebhookEndpoints',
        summary: `Webhook endpoints whose newest attempted delivery did not get through, most recent first (at most ${FAILING_ENDPOINTS_LIMIT})`,
        querystring: CustomerQuery,
        response: { 200: resourceResponse(Type.Array(FailingEndpoint)), ...errorResponses },
      },
    },
    async (request) => ({ message: MESSAGES.fetched, data: await failingEndpointRecords(requestOf(app, request, request.query.customer)) }),
  );
};
