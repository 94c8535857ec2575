import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { actingCustomer, principalOf, requireScopes } from '../auth/guard.ts';
import { FleetQuery } from '../http/request-schemas.ts';
import { ErrorResponse, IsoTime, MESSAGES, Nullable, resourceResponse } from '../http/schemas.ts';
import { FAILING_SUBSCRIBERS_LIMIT, failingSubscribers } from './subscriber-health.ts';

const FailingSubscriber = Type.Object({
  url: Type.String({ description: 'the subscriber URL (subscribe_urls.status of the OKMs)' }),
  okms: Type.Integer({ description: 'OKMs whose last delivery to it failed for good or is being retried' }),
  failed: Type.Integer({ description: 'of those, OKMs whose attempts ran out (state failed); the rest are retrying' }),
  last_attempt_at: Nullable(IsoTime),
  last_status_code: Nullable(Type.Integer({ description: 'null: no HTTP answer (timeout, refused, blocked address)' })),
  last_error: Nullable(Type.String()),
});

/** GET /api/v1/fleet/failing-subscribers, mounted at /api/v1/fleet: what the console's overview lists. */
const failingSubscribersRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/failing-subscribers',
    {
      onRequest: requireScopes('okm:read'),
      schema: {
        operationId: 'listFailingSubscribers',
        summary: `Status-event subscriber URLs whose deliveries are failing, most OKMs first (at most ${FAILING_SUBSCRIBERS_LIMIT})`,
        querystring: FleetQuery,
        response: { 200: resourceResponse(Type.Array(FailingSubscriber)), '4xx': ErrorResponse },
      },
    },
    async (request) => {
      const acting = await actingCustomer(app.db, principalOf(request), request.query.customer);
      const subscribers = await failingSubscribers(app.db, acting?.id);
      return {
        message: MESSAGES.fetched,
        data: subscribers.map((subscriber) => ({
          url: subscriber.url,
          okms: subscriber.okms,
          failed: subscriber.failed,
          last_attempt_at: subscriber.lastAttemptAt === null ? null : new Date(subscriber.lastAttemptAt).toISOString(),
          last_status_code: subscriber.lastStatusCode,
          last_error: subscriber.lastError,
        })),
      };
    },
  );
};

export default failingSubscribersRoutes;
