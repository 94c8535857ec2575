import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { webhookSecrets } from '../../src/webhooks/secrets.ts';
import type { TestApp } from '../helpers/app.ts';
import { call } from '../okm/admin-helpers.ts';
import type { Receiver } from './helpers.ts';

export const ENDPOINTS = '/api/v1/webhook-endpoints';

/** A fleet event's body (contract §14) as a subscriber receives it. */
export interface FleetEventBody {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** One row of an endpoint's delivery log (`GET …/{id}/deliveries`). */
export interface DeliveryLogEntry {
  event_id: string;
  event_type: string;
  state: 'pending' | 'delivered' | 'failed' | 'gone';
  attempts: number;
  next_attempt_at: string | null;
  last_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
}

/** Creates a webhook endpoint through the API at `path` of the receiver; returns its id and path. */
export async function createFleetEndpoint(
  t: TestApp,
  receiver: Receiver,
  token: string,
  path: string,
  eventTypes: string[],
  query = '',
): Promise<{ id: number; path: string }> {
  const response = await call(t, 'POST', `${ENDPOINTS}${query}`, { token, payload: { url: receiver.url(path), event_types: eventTypes } });
  assert.equal(response.statusCode, 201, response.body);
  return { id: response.json().data.id, path };
}

/** The events that reached a path, each verified with the owner's whsec_ secret as a subscriber does (standardwebhooks throws otherwise). */
export async function verifiedFleetEvents(t: TestApp, receiver: Receiver, path: string, owner: string): Promise<FleetEventBody[]> {
  const { current } = await webhookSecrets(t.db, t.app.keyRing, owner, Date.now());
  const verifier = new Webhook(current);
  return receiver.received
    .filter((entry) => entry.path === path)
    .map((entry) => verifier.verify(entry.body, entry.headers as Record<string, string>) as FleetEventBody);
}
