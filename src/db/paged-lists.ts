import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { BucketedList } from './page-buckets.ts';
import { fleetStateCondition } from '../okm/fleet-states.ts';

/**
 * The long lists whose pages are found through page_buckets, and the scopes each is counted
 * in (SQL over a row; the scope values below are what pages name; a row whose scope is NULL is
 * in none of them). Migrations create their triggers from these (0014 the first four, 0018 the
 * audit records' and every list's anew, 0021 the firmware versions', 0022 the states'); a change
 * here needs a migration of its own.
 */
export const ALL_SCOPE = 'all';
export const UNASSIGNED_SCOPE = 'u';
export const customerScope = (customerId: number) => `c${customerId}`;

const customerScopeOf = (row: string) => `'c' || ${row}.customer_id`;

/** The rows of a scope above, for every list: all of them, those of no customer, or one customer's (on its customer_id index). */
function scopeCondition(scope: string): RawBuilder<SqlBool> {
  if (scope === ALL_SCOPE) return sql<SqlBool>`1 = 1`;
  if (scope === UNASSIGNED_SCOPE) return sql<SqlBool>`customer_id is null`;
  return sql<SqlBool>`customer_id = ${Number(scope.slice(1))}`;
}

export const OKM_LIST: BucketedList = {
  name: 'okms',
  table: 'okms',
  keyColumn: 'serial_number',
  keyType: 'text',
  scopes: (row) => [`'${ALL_SCOPE}'`, `coalesce(${customerScopeOf(row)}, '${UNASSIGNED_SCOPE}')`],
  scopeColumns: ['customer_id'],
  scopeCondition,
};

/**
 * Lists of one value of an OKM (a firmware version, a state) count each OKM in two scopes:
 * `<prefix>:<value>` (the fleet's) and `<prefix><customer id>:<value>` or `<prefix>u:<value>`
 * (its customer's, or those of none); none where the value (SQL over the row) is NULL.
 */
const fleetAndOwnerScopes = (prefix: string, row: string, value: string) => [
  `'${prefix}:' || ${value}`,
  `coalesce('${prefix}' || ${row}.customer_id, '${prefix}${UNASSIGNED_SCOPE}') || ':' || ${value}`,
];

/** The fleetAndOwnerScopes scope of a value: of every OKM (customerId undefined), of one customer's, or of those of none (null). */
const fleetOrOwnerScope = (prefix: string, value: string, customerId: number | null | undefined) =>
  `${prefix}${customerId === undefined ? '' : customerId === null ? UNASSIGNED_SCOPE : customerId}:${value}`;

/** The rows of a fleetAndOwnerScopes scope, given the rows of its value. */
function fleetOrOwnerCondition(prefix: string, scope: string, ofValue: (value: string) => RawBuilder<SqlBool>): RawBuilder<SqlBool> {
  const separator = scope.indexOf(':');
  const [owner, value] = [scope.slice(prefix.length, separator), scope.slice(separator + 1)];
  if (owner === '') return ofValue(value);
  if (owner === UNASSIGNED_SCOPE) return sql<SqlBool>`customer_id is null and ${ofValue(value)}`;
  return sql<SqlBool>`customer_id = ${Number(owner)} and ${ofValue(value)}`;
}

/**
 * The OKMs that last reported one KAS firmware version (`firmware_version`), the whole fleet's,
 * one customer's, or those of no customer: scopes `f:<version>`, `f<customer id>:<version>` and
 * `fu:<version>`. An OKM that never reported one is in none. A poll writes firmware_version only
 * when the reported version changes (recordReportedVersions), so its triggers do not run on a
 * settled fleet's polls.
 */
export const OKM_FIRMWARE_LIST: BucketedList = {
  name: 'okm_firmware',
  table: 'okms',
  keyColumn: 'serial_number',
  keyType: 'text',
  scopes: (row) => fleetAndOwnerScopes('f', row, `${row}.firmware_version`),
  scopeColumns: ['customer_id', 'firmware_version'],
  scopeCondition: (scope) => fleetOrOwnerCondition('f', scope, (version) => sql<SqlBool>`firmware_version = ${version}`),
};

/** The OKM_FIRMWARE_LIST scope of a version: of every OKM (customerId undefined), of one customer's, or of those of none (null). */
export const firmwareScope = (version: string, customerId: number | null | undefined) => fleetOrOwnerScope('f', version, customerId);

/** The states a page of OKM_STATE_LIST holds: those that follow from columns alone (overdue depends on the time). */
export const BUCKETED_STATES = ['in_step', 'drifting', 'never_polled'] as const;
export type BucketedState = (typeof BUCKETED_STATES)[number];

/**
 * An OKM's states as fleetStateCondition has them, in SQL over a row, each NULL where it does
 * not hold: its verdict (drifting, else in step once it has polled), and never polled, which an
 * OKM answered with a correction can be too. The triggers use these, the bucket cuts and the
 * pages fleetStateCondition: a change to either needs the other, and a migration that
 * re-creates the triggers and recounts the list.
 */
const verdictOf = (row: string) => `(case when ${row}.last_correction is not null then 'drifting' when ${row}.last_sync_time is not null then 'in_step' end)`;
const neverPolledOf = (row: string) => `(case when ${row}.last_sync_time is null then 'never_polled' end)`;

/**
 * The OKMs in step, drifting or never polled (fleet-states.ts), the whole fleet's, one
 * customer's, or those of no customer: scopes `s:<state>`, `s<customer id>:<state>` and
 * `su:<state>`. Every poll sets last_sync_time, so the move trigger's condition is tested on
 * every poll, but it compares the scopes, not the columns: it fires only when a poll's verdict
 * changes (last_correction, written only then) or on an OKM's first poll.
 */
export const OKM_STATE_LIST: BucketedList = {
  name: 'okm_state',
  table: 'okms',
  keyColumn: 'serial_number',
  keyType: 'text',
  scopes: (row) => [verdictOf(row), neverPolledOf(row)].flatMap((state) => fleetAndOwnerScopes('s', row, state)),
  scopeColumns: ['customer_id', 'last_correction', 'last_sync_time'],
  scopeCondition: (scope) => fleetOrOwnerCondition('s', scope, (state) => fleetStateCondition(state as BucketedState, { now: 0 })),
};

/** The OKM_STATE_LIST scope of a state: of every OKM (customerId undefined), of one customer's, or of those of none (null). */
export const stateScope = (state: BucketedState, customerId: number | null | undefined) => fleetOrOwnerScope('s', state, customerId);

export const DLOCK_LIST: BucketedList = {
  name: 'dlocks',
  table: 'dlocks',
  keyColumn: 'serial_no',
  keyType: 'text',
  scopes: (row) => [`'${ALL_SCOPE}'`, customerScopeOf(row)],
  scopeColumns: ['customer_id'],
  scopeCondition,
};

export const ACL_LIST: BucketedList = {
  name: 'acls',
  table: 'acls',
  keyColumn: 'id',
  keyType: 'text',
  scopes: (row) => [customerScopeOf(row)],
  scopeColumns: ['customer_id'],
  scopeCondition,
};

export const PENDING_OKM_LIST: BucketedList = {
  name: 'pending_okms',
  table: 'pending_okms',
  keyColumn: 'serial_number',
  keyType: 'text',
  scopes: () => [`'${ALL_SCOPE}'`],
  scopeColumns: [],
  scopeCondition,
};

/** One scope per OKM, its serial number; the records in the order they arrived. */
export const AUDIT_RECORD_LIST: BucketedList = {
  name: 'okm_audit_records',
  table: 'okm_audit_records',
  keyColumn: 'id',
  keyType: 'integer',
  scopes: (row) => [`${row}.okm_serial`],
  scopeColumns: [],
  scopeCondition: (serialNumber) => sql<SqlBool>`okm_serial = ${serialNumber}`,
};

export const PAGED_LISTS = [OKM_LIST, OKM_FIRMWARE_LIST, OKM_STATE_LIST, DLOCK_LIST, ACL_LIST, PENDING_OKM_LIST, AUDIT_RECORD_LIST];
