/**
 * Every action the audit trail records (contract §18), with the entity it names and what its
 * entry holds. One list: the API's schema, the documentation (docs/audit-trail.md) and the test
 * that walks every write route are all read from it.
 */
export const AUDIT_ACTIONS = {
  'acl.created': { entity: 'acl', says: 'an ACL was created (or a POST overwrote one of its customer: acl.updated)' },
  'acl.updated': { entity: 'acl', says: 'an ACL was replaced, or a user removed from it with every ACL of its customer (offboarding): before and after hold what changed of its users, locks, name and OKM' },
  'acl.deleted': { entity: 'acl', says: 'an ACL was deleted: before holds what it granted' },
  'okm.configured': { entity: 'okm', says: "an OKM's configuration was set (PUT) or changed (PATCH, or a bulk action: one entry per OKM): the fields before and after" },
  'okm.deleted': { entity: 'okm', says: 'an OKM was deleted' },
  'okm.assigned': { entity: 'okm', says: 'an operator assigned an OKM to a customer' },
  'okm.claimed': { entity: 'okm', says: 'a customer claimed a new OKM' },
  'okm.accepted': { entity: 'okm', says: 'a pending OKM was accepted into the fleet' },
  'okm.message_queued': { entity: 'okm', says: 'a message was queued for an OKM' },
  'okm.device_token_issued': { entity: 'okm', says: "a new device token was issued for an OKM (the token itself is never recorded)" },
  'dlock.enrolled': { entity: 'dlock', says: 'a DLock was enrolled and its key certificate issued' },
  'dlock.deleted': { entity: 'dlock', says: 'a DLock and its key certificate were deleted' },
  'api_key.created': { entity: 'api_key', says: 'a DLock API key was created (its secret is never recorded)' },
  'api_key.revoked': { entity: 'api_key', says: 'a DLock API key was revoked' },
  'customer.created': { entity: 'customer', says: 'a customer was created' },
  'customer.updated': { entity: 'customer', says: "a customer's settings (time zone, firmware retry policy) changed" },
  'certificate.created': { entity: 'certificate', says: 'an intermediate certificate and its key were made (the private key is never recorded)' },
  'certificate.imported': { entity: 'certificate', says: 'an intermediate certificate was imported' },
  'certificate.root_imported': { entity: 'certificate', says: 'the root certificate was imported' },
  'firmware.added': { entity: 'firmware', says: 'a firmware release was added (uploaded or by URL)' },
  'firmware.deleted': { entity: 'firmware', says: 'a firmware release was deleted' },
  'firmware.latest_set': { entity: 'firmware', says: 'the fleet-wide latest release of a kind was set or cleared' },
  'rollout.created': { entity: 'rollout', says: 'a rollout was created' },
  'rollout.started': { entity: 'rollout', says: 'a rollout was started' },
  'rollout.paused': { entity: 'rollout', says: 'a rollout was paused, by an operator or by its failure thresholds (actor system)' },
  'rollout.resumed': { entity: 'rollout', says: 'a paused rollout was resumed' },
  'rollout.advanced': { entity: 'rollout', says: 'a rollout moved on to its next group, by an operator or by its schedule (actor system)' },
  'rollout.aborted': { entity: 'rollout', says: 'a rollout was aborted' },
  'rollout.approved': { entity: 'rollout', says: 'a rollout was approved' },
  'rollout.updated': { entity: 'rollout', says: "a ready or paused rollout's thresholds changed (success, error, update timeout, auto advance): the fields before and after" },
  'rollout.members_retried': { entity: 'rollout', says: "a rollout's failed OKMs were given another update timeout: how many, and their serial numbers (the first 100)" },
  'rollout.members_excluded': { entity: 'rollout', says: "a rollout's failed OKMs were taken out of it (no longer offered its version nor counted): how many, and their serial numbers (the first 100)" },
  'webhook_endpoint.created': { entity: 'webhook_endpoint', says: 'a fleet-event webhook endpoint was created (its secret is never recorded)' },
  'webhook_endpoint.updated': { entity: 'webhook_endpoint', says: 'a webhook endpoint was changed' },
  'webhook_endpoint.deleted': { entity: 'webhook_endpoint', says: 'a webhook endpoint was deleted' },
  'webhook_delivery.redelivered': { entity: 'webhook_endpoint', says: 'a finished delivery of a fleet event was queued again to its endpoint: after names the delivery and its redelivery' },
  'webhook_secret.rotated': { entity: 'webhook_secret', says: 'the signing secret of status webhooks was set or rotated (never recorded)' },
  'role_binding.created': { entity: 'role_binding', says: 'a role was bound to an IdP group or a person' },
  'role_binding.deleted': { entity: 'role_binding', says: 'a role binding was removed' },
  'session.started': { entity: 'session', says: 'a person signed in: a session began (its secret is never recorded)' },
  'session.ended': { entity: 'session', says: 'a person signed out' },
  'session.revoked': { entity: 'session', says: "an administrator ended a person's session" },
  'token.issued': { entity: 'token', says: 'an API token was issued (the token itself is never recorded)' },
  'token.revoked': { entity: 'token', says: 'an API token was revoked' },
  'master_key.rotated': { entity: 'master_key', says: 'the data keys were sealed under a new master key' },
  'master_key.retired': { entity: 'master_key', says: 'a master key was retired' },
  'signing_key.rotated': { entity: 'signing_key', says: 'the deployment signing key was rotated' },
  'signing_key.retired': { entity: 'signing_key', says: 'a signing key stopped verifying' },
} as const satisfies Record<string, { entity: string; says: string }>;

export type AuditAction = keyof typeof AUDIT_ACTIONS;
export type AuditEntityType = (typeof AUDIT_ACTIONS)[AuditAction]['entity'];

export const AUDIT_ACTION_NAMES = Object.keys(AUDIT_ACTIONS) as AuditAction[];
export const AUDIT_ENTITY_TYPES = [...new Set(Object.values(AUDIT_ACTIONS).map((action) => action.entity))] as AuditEntityType[];
