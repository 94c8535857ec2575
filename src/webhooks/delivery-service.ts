import { recordChange } from '../audit/trail.ts';
import { conflict, notFound } from '../http/errors.ts';
import { redactedPayload, toDeliveryRecord } from './delivery-records.ts';
import type { EndpointDeliveryDetail, FailingEndpoint } from './delivery-schemas.ts';
import type { EndpointDeliveryRecord } from './endpoints-schemas.ts';
import { lockEndpoint } from './endpoints-repository.ts';
import { getEndpoint, scopeOf, type EndpointRequest } from './endpoints-service.ts';
import { failingEndpoints, findEndpointDelivery, pendingDeliveryOfEvent } from './fleet-deliveries-repository.ts';
import { queueDeliveries, type WebhookEvent } from './fleet-events.ts';

const deliveryNotFound = (endpointId: number, deliveryId: number) => notFound(`No delivery ${deliveryId} of webhook endpoint ${endpointId}`);

/** One delivery of an endpoint the request may see, with the body it sends, secrets redacted. */
export async function deliveryDetail(request: EndpointRequest, endpointId: number, deliveryId: number): Promise<EndpointDeliveryDetail> {
  const endpoint = await getEndpoint(request, endpointId);
  const row = await findEndpointDelivery(request.db, endpoint.id, deliveryId);
  if (!row) throw deliveryNotFound(endpointId, deliveryId);
  return { ...toDeliveryRecord(row), payload: redactedPayload(row) };
}

/**
 * Queues a finished delivery (failed, gone or delivered) again: a NEW delivery of the same
 * event to the endpoint's current URL, its body byte for byte the original's (the same `id`,
 * so that a receiver that had it drops it; `webhook-timestamp` and the signature are those of
 * each attempt), due at once and retried by the usual schedule. The original stays in the log
 * as it ended. Refused (409) while a delivery of that event to this endpoint is still pending
 * (the original being retried, or a redelivery not finished): one in flight at a time.
 * Recorded by the audit trail in the same transaction.
 */
export async function redeliver(request: EndpointRequest, endpointId: number, deliveryId: number): Promise<EndpointDeliveryRecord> {
  const endpoint = await getEndpoint(request, endpointId);
  return request.db.transaction().execute(async (tx) => {
    // Two redeliveries of one event at once: the second waits here and then finds the first pending.
    if (!(await lockEndpoint(tx, endpoint.id))) throw notFound(`No webhook endpoint ${endpointId}`);
    const original = await findEndpointDelivery(tx, endpoint.id, deliveryId);
    if (!original) throw deliveryNotFound(endpointId, deliveryId);
    const waiting = await pendingDeliveryOfEvent(tx, endpoint.id, original.event_id);
    if (waiting) {
      throw conflict(
        waiting.id === original.id
          ? `Delivery ${deliveryId} is still pending: it is retried by itself (next attempt ${new Date(Number(waiting.next_attempt_at)).toISOString()})`
          : `Event ${original.event_id} is already queued again for this endpoint (delivery ${waiting.id})`,
      );
    }
    await queueDeliveries(tx, [{ endpointId: endpoint.id, body: JSON.parse(original.payload) as WebhookEvent }], request.now);
    const queued = await pendingDeliveryOfEvent(tx, endpoint.id, original.event_id);
    if (!queued) throw notFound(`No webhook endpoint ${endpointId}`);
    await recordChange(
      tx,
      request.source,
      {
        action: 'webhook_delivery.redelivered',
        customer: endpoint.customerName,
        entity: { type: 'webhook_endpoint', id: String(endpoint.id) },
        after: { delivery_id: original.id, redelivery_id: queued.id, event_id: original.event_id, event_type: original.event_type },
      },
      request.now,
    );
    return toDeliveryRecord(queued);
  });
}

/** The endpoints in the request's scope whose newest attempted delivery did not get through. */
export async function failingEndpointRecords(request: EndpointRequest): Promise<FailingEndpoint[]> {
  const scope = await scopeOf(request);
  const rows = await failingEndpoints(request.db, scope.customerId);
  return rows.map((row) => ({
    id: row.id,
    url: row.url,
    customer: row.customer_name,
    event_type: row.event_type,
    state: row.state as FailingEndpoint['state'],
    attempts: row.attempts,
    last_attempt_at: new Date(row.last_attempt_at).toISOString(),
    last_status_code: row.last_status_code,
    last_error: row.last_error,
  }));
}
