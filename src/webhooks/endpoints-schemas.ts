import { Type, type Static } from 'typebox';
import { cursorPageQueryProperties } from '../http/cursor-paging.ts';
import { IsoTime, Nullable } from '../http/schemas.ts';
import { CustomerQuery } from '../http/request-schemas.ts';
import { FLEET_EVENT_TYPES } from './fleet-events.ts';

/** The longest subscriber URL kept: an OKM's status URLs and a fleet-event endpoint's alike. */
export const MAX_STATUS_URL_LENGTH = 2048;

export const FleetEventTypeSchema = Type.Enum([...FLEET_EVENT_TYPES]);

export const EndpointBody = Type.Object(
  {
    url: Type.String({ format: 'uri', maxLength: MAX_STATUS_URL_LENGTH, description: 'http or https URL' }),
    event_types: Type.Array(FleetEventTypeSchema, { minItems: 1, maxItems: FLEET_EVENT_TYPES.length, uniqueItems: true }),
  },
  { additionalProperties: false },
);
export type EndpointBody = Static<typeof EndpointBody>;

/** A JSON merge patch of an endpoint: the fields given replace its own (neither may be removed). */
export const EndpointPatchBody = Type.Partial(EndpointBody, { additionalProperties: false });
export type EndpointPatchBody = Static<typeof EndpointPatchBody>;

export const EndpointParams = Type.Object({ id: Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: 'endpoint id' }) }, { additionalProperties: false });

export const EndpointListQuery = Type.Object({ customer: CustomerQuery.properties.customer, ...cursorPageQueryProperties }, { additionalProperties: false });
export type EndpointListQuery = Static<typeof EndpointListQuery>;

export const WebhookEndpointRecord = Type.Object({
  id: Type.Integer(),
  url: Type.String(),
  event_types: Type.Array(Type.String()),
  customer: Nullable(Type.String({ description: 'null: deployment-wide (receives every customer’s events of its types)' })),
  created_at: IsoTime,
});
export type WebhookEndpointRecord = Static<typeof WebhookEndpointRecord>;

const NullableTime = Nullable(IsoTime);

export const EndpointDeliveryRecord = Type.Object({
  id: Type.Integer({ description: 'the delivery (one event to this endpoint); a redelivery is a new delivery of the same event_id' }),
  event_id: Type.String({ description: 'webhook-id' }),
  event_type: Type.String(),
  serial_number: Nullable(Type.String({ description: 'the OKM the event names (data.serial_number of okm.* and subscriber.failing events); null for the others' })),
  state: Type.Enum(['pending', 'delivered', 'failed', 'gone']),
  attempts: Type.Integer(),
  created_at: IsoTime,
  next_attempt_at: NullableTime,
  last_attempt_at: NullableTime,
  last_status_code: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  delivered_at: NullableTime,
});
export type EndpointDeliveryRecord = Static<typeof EndpointDeliveryRecord>;

export const TestEventRecord = Type.Object({ event_id: Type.String({ description: 'webhook-id of the queued test event' }) });
