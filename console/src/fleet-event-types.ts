import type { FleetEventType } from './api/client.ts';

/** Every fleet event type an endpoint may ask for, with what it means (docs/fleet-events.md). */
export const FLEET_EVENT_TYPE_TEXT: Record<FleetEventType, string> = {
  'okm.enrolled': 'a new OKM polled for the first time',
  'okm.overdue': 'an OKM stopped polling (3 × its interval)',
  'okm.back_online': 'an overdue OKM polled again',
  'okm.stuck': 'an OKM keeps being sent a correction it does not take',
  'okm.unstuck': 'a stuck OKM took its correction, or it changed',
  'okm.pending': 'an unknown serial is waiting to be accepted (deployment-wide endpoints only)',
  'rollout.started': 'a firmware rollout started',
  'rollout.group_started': 'a rollout started its next group',
  'rollout.paused': 'a rollout paused (by an operator or by itself)',
  'rollout.finished': 'a rollout finished',
  'rollout.aborted': 'a rollout was aborted',
  'subscriber.failing': 'a status-event subscriber URL used every retry',
  'audit.entry': 'a change was recorded in the audit trail, the entry as History shows it (needs audit:read)',
};

export const FLEET_EVENT_TYPES = Object.keys(FLEET_EVENT_TYPE_TEXT) as FleetEventType[];

/** Only deployment-wide endpoints (an operator naming no customer) may receive these. */
export const DEPLOYMENT_ONLY_EVENT_TYPES: ReadonlySet<FleetEventType> = new Set(['okm.pending']);

/** Only those who may read the audit trail (audit:read or admin) may receive these. */
export const AUDIT_READ_EVENT_TYPES: ReadonlySet<FleetEventType> = new Set(['audit.entry']);
