import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { cursorPageRequest, mapCursorPage } from '../db/cursor-pages.ts';
import { cursorPageResponse, NO_TOTAL, sendCursorPage } from '../http/cursor-paging.ts';
import { ErrorResponse, IsoTime, MESSAGES, Nullable, resourceResponse } from '../http/schemas.ts';
import { CustomerQuery, PageQuery, SerialParams } from '../http/request-schemas.ts';
import { DELIVERY_FAILURE_PAGES, deliveryLog, listDeliveryFailures } from '../webhooks/delivery-log-repository.ts';
import { checkOkmVisible } from './admin-service.ts';

const NullableTime = Nullable(IsoTime);

const Subscription = Type.Object({
  url: Type.String(),
  state: Type.Enum(['pending', 'delivered', 'failed', 'gone']),
  last_event_id: Nullable(Type.String({ description: 'webhook-id of the last attempt' })),
  attempts: Type.Integer({ description: 'attempts since the last delivery (0 once delivered)' }),
  next_attempt_at: NullableTime,
  last_attempt_at: NullableTime,
  last_status_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  delivered_at: NullableTime,
});

const Failure = Type.Object({
  url: Type.String(),
  event_id: Type.String(),
  attempt: Type.Integer(),
  attempted_at: IsoTime,
  status_code: Nullable(Type.Integer()),
  error: Type.String(),
  outcome: Type.Enum(['retrying', 'failed', 'gone']),
  next_attempt_at: NullableTime,
});

const DeliveryLogView = Type.Object({
  queued_at: Nullable({
    ...IsoTime,
    description: 'when a poll queued the newest status that the dispatcher has not yet passed on to the subscriptions (they then become pending); null: none waiting',
  }),
  subscriptions: Type.Array(Subscription, { description: 'one per subscriber URL (at most 10); the failed attempts are listed at …/deliveries/failures' }),
});
type DeliveryLogView = Static<typeof DeliveryLogView>;

const iso = (epochMs: number | null) => (epochMs === null ? null : new Date(epochMs).toISOString());

/**
 * An OKM's view of the status-event delivery log kept by src/webhooks/:
 * GET /api/v1/okms/{serial}/deliveries: where each subscriber URL stands; and
 * GET …/deliveries/failures: the failed attempts, newest first, a page at a time.
 */
const deliveriesRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const checkVisible = (request: FastifyRequest, serial: string, customerName: string | undefined) =>
    checkOkmVisible({ db: app.db, settings: app.settings, principal: principalOf(request), customerName, now: Date.now() }, serial);

  app.get(
    '/:serial/deliveries',
    {
      onRequest: requireScopes('okm:read'),
      schema: { operationId: 'getOkmDeliveries', summary: 'The status-event delivery log of an OKM', params: SerialParams, querystring: CustomerQuery, response: { 200: resourceResponse(DeliveryLogView), '4xx': ErrorResponse } },
    },
    async (request) => {
      const serial = request.params.serial;
      await checkVisible(request, serial, request.query.customer);
      const log = await deliveryLog(app.db, serial);
      const data: DeliveryLogView = {
        queued_at: iso(log.queuedAt),
        subscriptions: log.subscriptions.map((row) => ({
          url: row.url,
          state: row.state,
          last_event_id: row.last_event_id,
          attempts: row.attempts,
          next_attempt_at: row.state === 'pending' ? iso(row.next_attempt_at) : null,
          last_attempt_at: iso(row.last_attempt_at),
          last_status_code: row.last_status_code,
          last_error: row.last_error,
          delivered_at: iso(row.delivered_at),
        })),
      };
      return { message: MESSAGES.fetched, data };
    },
  );

  app.get(
    '/:serial/deliveries/failures',
    {
      onRequest: requireScopes('okm:read'),
      schema: {
        operationId: 'listOkmDeliveryFailures',
        summary: 'The failed status-event delivery attempts of an OKM, newest first',
        description: 'Kept WEBHOOK_LOG_RETENTION_DAYS days (7 by default).',
        params: SerialParams,
        querystring: PageQuery,
        response: { 200: cursorPageResponse(Failure, `The OKM's failed delivery attempts, newest first. ${NO_TOTAL}`), '4xx': ErrorResponse },
      },
    },
    async (request, reply) => {
      const serial = request.params.serial;
      const page = cursorPageRequest(DELIVERY_FAILURE_PAGES, request.query);
      await checkVisible(request, serial, request.query.customer);
      const failures = mapCursorPage(await listDeliveryFailures(app.db, serial, page), (row) => ({
        url: row.url,
        event_id: row.event_id,
        attempt: row.attempt,
        attempted_at: iso(row.attempted_at)!,
        status_code: row.status_code,
        error: row.error,
        outcome: row.outcome as 'retrying' | 'failed' | 'gone',
        next_attempt_at: iso(row.next_attempt_at),
      }));
      return sendCursorPage(request, reply, MESSAGES.fetched, failures);
    },
  );
};

export default deliveriesRoutes;
