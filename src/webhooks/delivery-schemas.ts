import { Type, type Static } from 'typebox';
import { IsoTime, Nullable } from '../http/schemas.ts';
import { EndpointDeliveryRecord } from './endpoints-schemas.ts';

export const DeliveryParams = Type.Object(
  {
    id: Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: 'endpoint id' }),
    delivery_id: Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: 'delivery id (the `id` of a delivery-log entry)' }),
  },
  { additionalProperties: false },
);

export const EndpointDeliveryDetail = Type.Object({
  ...EndpointDeliveryRecord.properties,
  payload: Type.Unknown({
    description: 'the body every attempt of this delivery sends ({"id", "type", "timestamp", "data"}), members named like secrets (pin_hash, secret, token, …) reading "[redacted]"',
  }),
});
export type EndpointDeliveryDetail = Static<typeof EndpointDeliveryDetail>;

export const FailingEndpoint = Type.Object({
  id: Type.Integer({ description: 'the webhook endpoint' }),
  url: Type.String(),
  customer: Nullable(Type.String({ description: 'null: deployment-wide' })),
  event_type: Type.String({ description: 'of its newest attempted delivery' }),
  state: Type.Enum(['pending', 'failed', 'gone'], { description: 'of that delivery: pending is being retried, failed used every retry, gone was answered 410' }),
  attempts: Type.Integer(),
  last_attempt_at: IsoTime,
  last_status_code: Nullable(Type.Integer({ description: 'null: no HTTP answer (timeout, refused, blocked address)' })),
  last_error: Type.String(),
});
export type FailingEndpoint = Static<typeof FailingEndpoint>;
