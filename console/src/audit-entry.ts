/**
 * The audit trail (contract §18) for people: who (an actor's name and kind), what (the
 * action, in words), on what (the entity, and the console page it has), and the change itself
 * as lines ("user 1234: lock L7 no access → access", "polling_interval: 150 → 300"). Also the
 * History page's filters as its address keeps them. Pure: unit-tested under Node.
 */
import { PERMISSION_TEXT, type Permission } from './acl-matrix.ts';
import type { AuditAction, AuditEntityType, AuditEntry, AuditExportFormat, AuditFilters } from './api/client.ts';
import { aclHref, href, lockHref, okmHref } from './paths.ts';
import { rolloutHref } from './rollout-paths.ts';

/** Every action the API records (src/audit/actions.ts), as a short phrase. */
export const ACTION_LABELS: Record<AuditAction, string> = {
  'acl.created': 'ACL created',
  'acl.updated': 'ACL changed',
  'acl.deleted': 'ACL deleted',
  'okm.configured': 'OKM configured',
  'okm.deleted': 'OKM deleted',
  'okm.assigned': 'OKM assigned to a customer',
  'okm.claimed': 'OKM claimed by a customer',
  'okm.accepted': 'Pending OKM accepted',
  'okm.message_queued': 'Message queued for an OKM',
  'okm.device_token_issued': 'Device token issued',
  'dlock.enrolled': 'Lock enrolled',
  'dlock.deleted': 'Lock deleted',
  'api_key.created': 'DLock API key created',
  'api_key.revoked': 'DLock API key revoked',
  'customer.created': 'Customer created',
  'customer.updated': 'Customer changed',
  'certificate.created': 'Intermediate certificate made',
  'certificate.imported': 'Intermediate certificate imported',
  'certificate.root_imported': 'Root certificate imported',
  'firmware.added': 'Firmware release added',
  'firmware.deleted': 'Firmware release deleted',
  'firmware.latest_set': 'Latest firmware set',
  'rollout.created': 'Rollout created',
  'rollout.started': 'Rollout started',
  'rollout.paused': 'Rollout paused',
  'rollout.resumed': 'Rollout resumed',
  'rollout.advanced': 'Rollout moved on',
  'rollout.aborted': 'Rollout aborted',
  'rollout.approved': 'Rollout approved',
  'rollout.updated': 'Rollout thresholds changed',
  'rollout.members_retried': 'Failed OKMs retried',
  'rollout.members_excluded': 'Failed OKMs excluded',
  'webhook_endpoint.created': 'Webhook endpoint created',
  'webhook_endpoint.updated': 'Webhook endpoint changed',
  'webhook_endpoint.deleted': 'Webhook endpoint deleted',
  'webhook_delivery.redelivered': 'Webhook delivery sent again',
  'webhook_secret.rotated': 'Webhook secret set or rotated',
  'role_binding.created': 'Role binding added',
  'role_binding.deleted': 'Role binding removed',
  'session.started': 'Signed in',
  'session.ended': 'Signed out',
  'session.revoked': 'Session ended by an admin',
  'token.issued': 'API token issued',
  'token.revoked': 'API token revoked',
  'master_key.rotated': 'Master key rotated',
  'master_key.retired': 'Master key retired',
  'signing_key.rotated': 'Signing key rotated',
  'signing_key.retired': 'Signing key retired',
};

export const AUDIT_ACTIONS = Object.keys(ACTION_LABELS) as AuditAction[];

/** Every kind of entity an entry names, in words. */
export const ENTITY_LABELS: Record<AuditEntityType, string> = {
  acl: 'ACL',
  okm: 'OKM',
  dlock: 'lock',
  rollout: 'rollout',
  api_key: 'DLock API key',
  customer: 'customer',
  certificate: 'certificate',
  firmware: 'firmware',
  webhook_endpoint: 'webhook endpoint',
  webhook_secret: 'webhook secret',
  role_binding: 'role binding',
  session: 'session',
  token: 'API token',
  master_key: 'master key',
  signing_key: 'signing key',
};

export const AUDIT_ENTITY_TYPES = Object.keys(ENTITY_LABELS) as AuditEntityType[];

/** Whether the signed-in token or person may read the audit trail: `audit:read` (an auditor), or `admin`, which implies it. */
export const mayReadAudit = (claims: { isAdmin: boolean; scopes: readonly string[] }): boolean => claims.isAdmin || claims.scopes.includes('audit:read');

/** The entity type an action is about: the part of its name before the dot. */
export const entityTypeOf = (action: string): string => action.slice(0, action.indexOf('.'));

/** An action in words; one the console does not know yet as the API names it. */
export const actionLabel = (action: string): string => (ACTION_LABELS as Record<string, string>)[action] ?? action;

export const entityLabel = (type: string): string => (ENTITY_LABELS as Record<string, string>)[type] ?? type.replace(/_/g, ' ');

type ActorKind = AuditEntry['actor']['kind'];

/** How each kind of actor reads after its name. */
export const ACTOR_KIND_LABELS: Record<ActorKind, string> = {
  person: 'person',
  token: 'API token',
  api_key: 'DLock API key',
  cli: 'command line',
  system: 'keyfleet itself',
};

/** "Alice Admin (person)", "root (command line)". */
export const actorText = (actor: AuditEntry['actor']): string => `${actor.name} (${ACTOR_KIND_LABELS[actor.kind] ?? actor.kind})`;

/** The actor as the `actor` filter names it. */
export const actorFilter = (actor: AuditEntry['actor']): string => `${actor.kind}:${actor.id}`;

/**
 * The console page of an entity, where it has one; null for the others. A deleted entity has
 * no page any more. An operator's ACL link names the ACL's customer, as the ACL list's do.
 */
export function entityPath(entry: Pick<AuditEntry, 'action' | 'customer' | 'entity'>, asOperator: boolean): string | null {
  if (entry.action.endsWith('.deleted')) return null;
  const { type, id } = entry.entity;
  const customerQuery = asOperator && entry.customer !== null ? `?customer=${encodeURIComponent(entry.customer)}` : '';
  switch (type) {
    case 'okm':
      return okmHref(id);
    case 'acl':
      return aclHref(id, asOperator && entry.customer !== null ? entry.customer : undefined);
    case 'rollout':
      return /^\d+$/.test(id) ? rolloutHref(Number(id)) : null;
    case 'dlock':
      return lockHref(id);
    case 'firmware':
      return href('/firmware');
    case 'webhook_endpoint':
      return href(`/events${customerQuery}`);
    default:
      return null;
  }
}

// ---- The change, in lines ------------------------------------------------------------------------

/** What src/audit/redaction.ts writes in place of a secret, and after a change of it. */
export const REDACTED = '[redacted]';
export const REDACTED_CHANGED = '[redacted: changed]';

/** A value's text is cut here: an entry's line should stay a line. */
const VALUE_MAX = 160;
/** A list of locks names this many, then counts the rest. */
const LOCKS_NAMED = 10;

type Json = null | boolean | number | string | Json[] | { [member: string]: Json };
type JsonObject = { [member: string]: Json };

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

const cut = (text: string) => (text.length > VALUE_MAX ? `${text.slice(0, VALUE_MAX - 1)}…` : text);

/** A secret reads "secret" wherever it is, also inside a value shown as JSON. */
function withoutMarkers(value: Json): Json {
  if (value === REDACTED) return 'secret';
  if (value === REDACTED_CHANGED) return 'secret (changed)';
  if (Array.isArray(value)) return value.map(withoutMarkers);
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([member, item]) => [member, withoutMarkers(item)]));
  return value;
}

/** A recorded value for people: none for null, a list as its items, an object as compact JSON; secrets as "secret". */
export function valueText(value: unknown): string {
  if (value === null || value === undefined) return 'none';
  if (value === REDACTED) return 'secret';
  if (value === REDACTED_CHANGED) return 'secret (changed)';
  if (typeof value === 'string') return value === '' ? '(empty)' : cut(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) {
    if (value.length === 0) return 'none';
    if (value.every((item) => item === null || typeof item !== 'object')) return cut(value.map(valueText).join(', '));
  }
  return cut(JSON.stringify(withoutMarkers(value as Json)));
}

/** The members of an object, and of the objects in it, as dotted paths with their values: what a creation or a deletion held. */
function stateLines(state: JsonObject, path = ''): string[] {
  return Object.entries(state).flatMap(([member, value]) => {
    const name = path === '' ? member : `${path}.${member}`;
    if (isObject(value) && Object.keys(value).length > 0) return stateLines(value, name);
    return [`${name}: ${valueText(value)}`];
  });
}

/** The members that differ, field by field ("polling_interval: 150 → 300"); objects member by member, a changed secret as "… changed". */
function differenceLines(before: JsonObject, after: JsonObject, path = ''): string[] {
  const members = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  return members.flatMap((member) => {
    const name = path === '' ? member : `${path}.${member}`;
    const from = before[member];
    const to = after[member];
    if (isObject(from) && isObject(to)) return differenceLines(from, to, name);
    if (to === REDACTED_CHANGED) return [`${name} changed`];
    return [`${name}: ${valueText(from)} → ${valueText(to)}`];
  });
}

/** The lines of any entity's change: an update field by field, a creation or a deletion as the fields it held. */
function fieldLines(before: unknown, after: unknown): string[] {
  if (isObject(before) && isObject(after)) return differenceLines(before, after);
  if (isObject(after) && (before === null || before === undefined)) return stateLines(after);
  if (isObject(before) && (after === null || after === undefined)) return stateLines(before);
  if ((before === null || before === undefined) && (after === null || after === undefined)) return [];
  return [`${valueText(before)} → ${valueText(after)}`];
}

// ---- ACLs ----------------------------------------------------------------------------------------

/** A permission in words: 0 no access, 1 access, 17 dual authentication (any other as its number). */
export const permissionText = (permission: unknown): string =>
  permission === null || permission === undefined ? PERMISSION_TEXT[0].label : (PERMISSION_TEXT[permission as Permission]?.label ?? `permission ${String(permission)}`);

/** "L1, L2, L3", or the first few and how many more. */
function lockList(locks: readonly string[]): string {
  if (locks.length <= LOCKS_NAMED) return locks.join(', ');
  return `${locks.slice(0, LOCKS_NAMED).join(', ')} and ${(locks.length - LOCKS_NAMED).toLocaleString('en')} more`;
}

/** What a user may open, from the audit trail's `access` (lock → permission, where it is not 0): "access to L1, L7; dual authentication at L9". */
export function accessSummary(access: unknown): string {
  if (!isObject(access)) return 'no access';
  const byPermission = new Map<string, string[]>();
  for (const [lock, permission] of Object.entries(access)) {
    if (permission === 0) continue;
    const key = String(permission);
    byPermission.set(key, [...(byPermission.get(key) ?? []), lock]);
  }
  if (byPermission.size === 0) return 'no access';
  return [...byPermission.entries()]
    .map(([permission, locks]) =>
      permission === '1' ? `access to ${lockList(locks)}` : permission === '17' ? `dual authentication at ${lockList(locks)}` : `${permissionText(Number(permission))} at ${lockList(locks)}`,
    )
    .join('; ');
}

/** User ids in numeric order, as the matrix lists them. */
const userIds = (...users: unknown[]) =>
  [...new Set(users.flatMap((group) => (isObject(group) ? Object.keys(group) : [])))].sort((a, b) => Number(a) - Number(b) || a.localeCompare(b));

const stringList = (value: unknown): string[] => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []);

/** What a kept user's entry changed: their settings (a PIN as "PIN changed") and each lock whose permission moved. */
function userChangeLines(userId: string, before: JsonObject, after: JsonObject): string[] {
  const lines: string[] = [];
  for (const member of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (member === 'access') continue;
    if (member === 'pin_hash') lines.push(`user ${userId}: PIN changed`);
    else if (after[member] === REDACTED_CHANGED) lines.push(`user ${userId}: ${member} changed`);
    else lines.push(`user ${userId}: ${member}: ${valueText(before[member])} → ${valueText(after[member])}`);
  }
  const was = isObject(before.access) ? before.access : {};
  const is = isObject(after.access) ? after.access : {};
  for (const lock of new Set([...Object.keys(was), ...Object.keys(is)])) {
    lines.push(`user ${userId}: lock ${lock} ${permissionText(was[lock])} → ${permissionText(is[lock])}`);
  }
  return lines;
}

/** A whole ACL, as a creation records after and a deletion before: its name, OKM, locks and what each user may open. */
function wholeAclLines(acl: JsonObject): string[] {
  const lines: string[] = [];
  if (acl.name !== null && acl.name !== undefined) lines.push(`name: ${valueText(acl.name)}`);
  if (acl.okm_id !== null && acl.okm_id !== undefined) lines.push(`linked OKM: ${valueText(acl.okm_id)}`);
  const locks = stringList(acl.locks);
  lines.push(locks.length === 0 ? 'no locks' : `${locks.length.toLocaleString('en')} lock${locks.length === 1 ? '' : 's'}: ${lockList(locks)}`);
  const users = isObject(acl.users) ? acl.users : {};
  const ids = userIds(users);
  if (ids.length === 0) lines.push('no users');
  for (const userId of ids) lines.push(`user ${userId}: ${accessSummary(isObject(users[userId]) ? users[userId].access : undefined)}`);
  if (acl.user_data !== undefined) lines.push(`user_data: ${valueText(acl.user_data)}`);
  return lines;
}

/**
 * An ACL update as the cells and settings it changed (src/acl/audit-view.ts records only
 * those): the name and linked OKM, each lock added or removed, each user added (with what they
 * may open), removed or changed, and the user data.
 */
function aclUpdateLines(before: JsonObject, after: JsonObject): string[] {
  const lines: string[] = [];
  if ('name' in before || 'name' in after) lines.push(`name: ${valueText(before.name)} → ${valueText(after.name)}`);
  if ('okm_id' in before || 'okm_id' in after) lines.push(`linked OKM: ${valueText(before.okm_id)} → ${valueText(after.okm_id)}`);
  for (const lock of stringList(before.locks)) lines.push(`lock ${lock} removed`);
  for (const lock of stringList(after.locks)) lines.push(`lock ${lock} added`);
  const usersBefore = isObject(before.users) ? before.users : {};
  const usersAfter = isObject(after.users) ? after.users : {};
  for (const userId of userIds(usersBefore, usersAfter)) {
    const was = usersBefore[userId];
    const is = usersAfter[userId];
    if (!isObject(was) && isObject(is)) lines.push(`user ${userId} added (${accessSummary(is.access)})`);
    else if (isObject(was) && !isObject(is)) lines.push(`user ${userId} removed`);
    else if (isObject(was) && isObject(is)) lines.push(...userChangeLines(userId, was, is));
  }
  if ('user_data' in before || 'user_data' in after) lines.push(`user_data: ${valueText(before.user_data)} → ${valueText(after.user_data)}`);
  const known = new Set(['name', 'okm_id', 'locks', 'users', 'user_data']);
  const rest = (state: JsonObject) => Object.fromEntries(Object.entries(state).filter(([member]) => !known.has(member)));
  return [...lines, ...differenceLines(rest(before), rest(after))];
}

/**
 * The change an entry records, as lines people read: an ACL per user and lock ("user 1234:
 * lock L7 no access → access", "user 55 added (access to L1, L7)", "user 9 removed", "lock L9
 * added", "user 1234: PIN changed"), any other entity field by field ("polling_interval: 150 →
 * 300"). A creation or a deletion lists what the entity held. Secrets read "secret".
 */
export function changeLines(entry: Pick<AuditEntry, 'entity' | 'before' | 'after'>): string[] {
  const { before, after } = entry;
  if (entry.entity.type === 'acl') {
    if (isObject(before) && isObject(after)) return aclUpdateLines(before, after);
    if (isObject(after) && (before === null || before === undefined)) return wholeAclLines(after);
    if (isObject(before) && (after === null || after === undefined)) return wholeAclLines(before);
  }
  return fieldLines(before, after);
}

// ---- The History page's address ------------------------------------------------------------------

/** The filters, in the order of the form and of the address. */
export const FILTER_NAMES = ['actor', 'customer', 'entity_type', 'entity_id', 'action', 'since', 'until'] as const;
export type FilterName = (typeof FILTER_NAMES)[number];

/** The filters an address names (`?entity_type=acl&entity_id=…`); empty ones are left out. The API checks their values. */
export function filtersOf(query: Record<string, string | undefined>): AuditFilters {
  const filters: Record<string, string> = {};
  for (const name of FILTER_NAMES) {
    const value = query[name]?.trim();
    if (value !== undefined && value !== '') filters[name] = value;
  }
  return filters as AuditFilters;
}

const queryString = (filters: AuditFilters, extra: Record<string, string> = {}) => {
  const params = new URLSearchParams();
  for (const name of FILTER_NAMES) {
    const value = filters[name];
    if (value !== undefined && value !== '') params.set(name, value);
  }
  for (const [name, value] of Object.entries(extra)) params.set(name, value);
  return params.toString();
};

/** The History page of a selection ("/console/history?entity_type=okm&entity_id=OKM-1"). */
export function historyHref(filters: AuditFilters = {}): string {
  const query = queryString(filters);
  return href(`/history${query === '' ? '' : `?${query}`}`);
}

/** The export of the same selection, as a file (GET /api/v1/audit-log/export). */
export const exportHref = (filters: AuditFilters, format: AuditExportFormat): string => `/api/v1/audit-log/export?${queryString(filters, { format })}`;

/** The file name the server gives an export of `format` made on the day of `now`. */
export const exportFileName = (format: AuditExportFormat, now: number): string => `keyfleet-audit-${new Date(now).toISOString().slice(0, 10)}.${format}`;

const ACTOR_PATTERN = /^(person|token|api_key|cli|system):[A-Za-z0-9._:@+-]{1,200}$/;

/** Why an actor filter cannot be sent, in words; null when it can (empty: no filter). */
export function actorProblem(value: string): string | null {
  const actor = value.trim();
  if (actor === '' || ACTOR_PATTERN.test(actor)) return null;
  return 'Write the kind and the id, e.g. person:12, token:<id>, cli:root or system:keyfleet (kinds: person, token, api_key, cli, system).';
}

/** Why the time range cannot be sent; null when it can. */
export function rangeProblem(since: string | undefined, until: string | undefined): string | null {
  if (since === undefined || until === undefined) return null;
  return Date.parse(until) < Date.parse(since) ? '“Until” must not be before “since”.' : null;
}

const pad = (value: number) => String(value).padStart(2, '0');

/** An instant as a datetime-local control shows it, in the browser's zone ("2026-05-01T10:30"); '' for none or a value that is not a time. */
export function localInputValue(iso: string | undefined): string {
  if (iso === undefined) return '';
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) return '';
  return `${time.getFullYear()}-${pad(time.getMonth() + 1)}-${pad(time.getDate())}T${pad(time.getHours())}:${pad(time.getMinutes())}`;
}

/** What a datetime-local control holds (the browser's zone) as the ISO time the API takes; undefined when empty or not a time. */
export function isoFromLocalInput(value: string): string | undefined {
  if (value.trim() === '') return undefined;
  const time = new Date(value);
  return Number.isNaN(time.getTime()) ? undefined : time.toISOString();
}
