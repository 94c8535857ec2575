import type { Db } from '../db/database.ts';
import { emitFleetEvent } from '../webhooks/fleet-events.ts';

export type RolloutEventType = 'rollout.started' | 'rollout.group_started' | 'rollout.paused' | 'rollout.finished' | 'rollout.aborted';

export interface RolloutEvent {
  type: RolloutEventType;
  /** The rollout's customer; null for a deployment-wide rollout. */
  customerId: number | null;
  data: Record<string, unknown>;
}

/**
 * Queues a fleet event (contract §14). Called inside the transaction that changes the
 * rollout, with that transaction, so that the event commits with the change or not at all.
 */
export type EmitFleetEvent = (db: Db, event: RolloutEvent) => Promise<void>;

/** Where rollout events go, for the server and the CLI alike: the customer's and deployment-wide webhook endpoints. */
export const rolloutEventSink: EmitFleetEvent = async (db, event) => {
  await emitFleetEvent(db, event);
};
