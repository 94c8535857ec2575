import { sql, type RawBuilder, type SqlBool } from 'kysely';
import type { BucketedList } from './page-buckets.ts';

/**
 * FROZEN. The lists whose page buckets migrations 0014 to 0022 count and create triggers for,
 * copied from src/db/paged-lists.ts (and the state conditions of src/okm/fleet-states.ts) for use
 * by those migrations only. Never edit it: the triggers of the databases those migrations built
 * hold these scopes as SQL, and a database migrated later must get the same. A list that
 * changes is a new migration with a list of its own.
 */
const ALL_SCOPE = 'all';
const UNASSIGNED_SCOPE = 'u';

const customerScopeOf = (row: string) => `'c' || ${row}.customer_id`;

/** The rows of a scope above, for every list: all of them, those of no customer, or one customer's. */
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

/** The rows of a fleetAndOwnerScopes scope, given the rows of its value. */
function fleetOrOwnerCondition(prefix: string, scope: string, ofValue: (value: string) => RawBuilder<SqlBool>): RawBuilder<SqlBool> {
  const separator = scope.indexOf(':');
  const [owner, value] = [scope.slice(prefix.length, separator), scope.slice(separator + 1)];
  if (owner === '') return ofValue(value);
  if (owner === UNASSIGNED_SCOPE) return sql<SqlBool>`customer_id is null and ${ofValue(value)}`;
  return sql<SqlBool>`customer_id = ${Number(owner)} and ${ofValue(value)}`;
}

export const OKM_FIRMWARE_LIST: BucketedList = {
  name: 'okm_firmware',
  table: 'okms',
  keyColumn: 'serial_number',
  keyType: 'text',
  scopes: (row) => fleetAndOwnerScopes('f', row, `${row}.firmware_version`),
  scopeColumns: ['customer_id', 'firmware_version'],
  scopeCondition: (scope) => fleetOrOwnerCondition('f', scope, (version) => sql<SqlBool>`firmware_version = ${version}`),
};

/** An OKM's states in SQL over a row, each NULL where it does not hold: its verdict (drifting, else in step once it has polled), and never polled. */
const verdictOf = (row: string) => `(case when ${row}.last_correction is not null then 'drifting' when ${row}.last_sync_time is not null then 'in_step' end)`;
const neverPolledOf = (row: string) => `(case when ${row}.last_sync_time is null then 'never_polled' end)`;

/** The OKMs of a state that verdictOf or neverPolledOf names, as a condition on the okms table. */
function stateCondition(state: string): RawBuilder<SqlBool> {
  switch (state) {
    case 'never_polled':
      return sql<SqlBool>`okms.last_sync_time is null`;
    case 'in_step':
      return sql<SqlBool>`(okms.last_correction is null and okms.last_sync_time is not null)`;
    case 'drifting':
      return sql<SqlBool>`okms.last_correction is not null`;
  }
  throw new Error(`no OKM state ${state} is counted in page buckets`);
}

export const OKM_STATE_LIST: BucketedList = {
  name: 'okm_state',
  table: 'okms',
  keyColumn: 'serial_number',
  keyType: 'text',
  scopes: (row) => [verdictOf(row), neverPolledOf(row)].flatMap((state) => fleetAndOwnerScopes('s', row, state)),
  scopeColumns: ['customer_id', 'last_correction', 'last_sync_time'],
  scopeCondition: (scope) => fleetOrOwnerCondition('s', scope, stateCondition),
};

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

/** Every list, in the order migrations 0018 to 0022 create their triggers. */
export const PAGED_LISTS = [OKM_LIST, OKM_FIRMWARE_LIST, OKM_STATE_LIST, DLOCK_LIST, ACL_LIST, PENDING_OKM_LIST, AUDIT_RECORD_LIST];
