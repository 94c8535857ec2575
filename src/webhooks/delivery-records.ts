import type { Selectable } from 'kysely';
import { redactChange } from '../audit/redaction.ts';
import type { FleetEventDeliveriesTable } from '../db/schema.ts';
import type { EndpointDeliveryRecord } from './endpoints-schemas.ts';
import type { WebhookEvent } from './fleet-events.ts';

const iso = (epochMs: number | null) => (epochMs === null ? null : new Date(Number(epochMs)).toISOString());

/** The OKM an event names: `data.serial_number` of the okm.* and subscriber.failing events; null for the others. */
export function serialNumberOf(event: WebhookEvent): string | null {
  const data = event.data;
  if (typeof data !== 'object' || data === null) return null;
  const serial = (data as Record<string, unknown>).serial_number;
  return typeof serial === 'string' ? serial : null;
}

/** The event types whose data names an OKM; the others' bodies (an audit entry's can be large) are not parsed for the log. */
const namesAnOkm = (eventType: string) => eventType.startsWith('okm.') || eventType === 'subscriber.failing';

/** A delivery as the delivery log shows it; the OKM read from its stored body. */
export function toDeliveryRecord(row: Selectable<FleetEventDeliveriesTable>): EndpointDeliveryRecord {
  return {
    id: row.id,
    event_id: row.event_id,
    event_type: row.event_type,
    serial_number: namesAnOkm(row.event_type) ? serialNumberOf(JSON.parse(row.payload) as WebhookEvent) : null,
    state: row.state,
    attempts: row.attempts,
    created_at: iso(row.created_at)!,
    next_attempt_at: row.state === 'pending' ? iso(row.next_attempt_at) : null,
    last_attempt_at: iso(row.last_attempt_at),
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    delivered_at: iso(row.delivered_at),
  };
}

/**
 * The body a delivery sends, as an operator may read it: members named like secrets (the audit
 * trail's list, src/audit/redaction.ts: PIN hashes, signing secrets, tokens, keys) read
 * "[redacted]" at any depth. Events are built without them; this holds if one ever carries one.
 */
export function redactedPayload(row: Pick<Selectable<FleetEventDeliveriesTable>, 'payload'>): unknown {
  return redactChange(JSON.parse(row.payload), undefined).before;
}
