import type { AttemptResult, StatusEvent } from './delivery.ts';
import type { ClaimedFleetDelivery } from './fleet-deliveries-repository.ts';
import type { WebhookEvent } from './fleet-events.ts';
import type { AttemptOutcome, ClaimedEvent } from './queue-repository.ts';
import { nextAttemptAt } from './retry-schedule.ts';

/** A claimed row of either queue: a status event or a fleet-event delivery. */
export type ClaimedDelivery = ClaimedEvent | ClaimedFleetDelivery;

/** The body a claimed row sends: a status event made from the OKM's status as claimed, or a fleet event as queued. */
export function eventBodyOf(row: ClaimedDelivery): StatusEvent | WebhookEvent {
  if (row.kind === 'fleet') return row.event;
  return {
    id: row.eventId,
    type: 'okm.status',
    timestamp: new Date(row.lastSyncTime).toISOString(),
    data: {
      serial_number: row.okmSerial,
      last_sync_time: new Date(row.lastSyncTime).toISOString(),
      last_ip: row.lastIp,
      firmware_version: row.firmwareVersion,
    },
  };
}

/** What an attempt's result makes of its row: delivered, stopped by a 410, retried on the schedule, or failed for good. */
export function outcomeOf(row: ClaimedDelivery, result: AttemptResult, now: number, retrySchedule: readonly number[], random: () => number): AttemptOutcome {
  if (result.kind !== 'failed') return result.kind === 'gone' ? { kind: 'gone', statusCode: 410, error: 'HTTP 410: deliveries to this URL stopped' } : result;
  const next = nextAttemptAt(retrySchedule, row.attempts + 1, now, result.retryAfterMs, random);
  return next === undefined
    ? { kind: 'failed', statusCode: result.statusCode, error: result.error }
    : { kind: 'retrying', statusCode: result.statusCode, error: result.error, nextAttemptAt: next };
}
