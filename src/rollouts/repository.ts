import { sql, type Insertable, type RawBuilder, type Selectable, type SqlBool, type Updateable } from 'kysely';
import { cursorList, type CursorPage, type CursorPageRequest } from '../db/cursor-pages.ts';
import { afterKey } from '../db/cursor.ts';
import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import type { RolloutMembersTable, RolloutsTable } from '../db/schema.ts';
import type { FirmwareKind } from '../firmware/version.ts';
import { emptyCounts, emptyStateCounts, groupStarts, MEMBER_STATUSES, type GroupCounts, type MemberState, type MemberStatus, type RolloutState, type StateCounts } from './model.ts';

export type RolloutRow = Selectable<RolloutsTable> & { customer_name: string | null; time_zone: string | null };

/** Rollouts an OKM can be in at once: only one of these reaches it (okms.rollout_id). */
export const UNFINISHED_STATES: readonly RolloutState[] = ['ready', 'running', 'paused'];

/** The column an OKM's own pin of the kind is in, and the one its last reported version is in. */
export const KIND_COLUMNS = {
  kas: { pin: 'kas_firmware', reported: 'firmware_version' },
  batch_key: { pin: 'batch_key_firmware', reported: 'batch_key_firmware_version' },
  wireless_key: { pin: 'wireless_key_firmware', reported: 'wireless_key_firmware_version' },
} as const satisfies Record<FirmwareKind, { pin: string; reported: string }>;

const MEMBER_INSERT_CHUNK = 500;

export async function insertRollout(db: Db, values: Insertable<RolloutsTable>): Promise<number> {
  const { id } = await db.insertInto('rollouts').values(values).returning('id').executeTakeFirstOrThrow();
  return Number(id);
}

export async function insertMembers(db: Db, rolloutId: number, members: readonly { serialNumber: string; group: number }[]): Promise<void> {
  for (let start = 0; start < members.length; start += MEMBER_INSERT_CHUNK) {
    const rows: Insertable<RolloutMembersTable>[] = members.slice(start, start + MEMBER_INSERT_CHUNK).map(({ serialNumber, group }) => ({
      rollout_id: rolloutId,
      serial_number: serialNumber,
      group_index: group,
      status: 'scheduled',
    }));
    await db.insertInto('rollout_members').values(rows).execute();
  }
}

export interface CandidateQuery {
  /** null: every customer's OKMs. */
  customerId: number | null;
  kind: FirmwareKind;
  firmwareVersion?: string;
  serialNumbers?: readonly string[];
}

/**
 * OKMs a new rollout may reach: held by the customer (any customer for a deployment-wide
 * one), without their own pin of the kind (the pin wins, so they would never update), in no
 * other unfinished rollout, and matching the filter; with the version of the kind each
 * last reported.
 */
export async function candidateOkms(db: Db, query: CandidateQuery): Promise<{ serial_number: string; reported_version: string | null }[]> {
  const columns = KIND_COLUMNS[query.kind];
  let select = db
    .selectFrom('okms')
    .select(['okms.serial_number', `okms.${columns.reported} as reported_version`])
    .where(`okms.${columns.pin}`, 'is', null)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('rollout_members')
            .innerJoin('rollouts', 'rollouts.id', 'rollout_members.rollout_id')
            .select('rollout_members.rollout_id')
            .whereRef('rollout_members.serial_number', '=', 'okms.serial_number')
            .where('rollouts.state', 'in', UNFINISHED_STATES),
        ),
      ),
    );
  select = query.customerId === null ? select.where('okms.customer_id', 'is not', null) : select.where('okms.customer_id', '=', query.customerId);
  if (query.firmwareVersion !== undefined) select = select.where(`okms.${columns.reported}`, '=', query.firmwareVersion);
  if (query.serialNumbers !== undefined) select = select.where('okms.serial_number', 'in', query.serialNumbers);
  return select.execute();
}

const rolloutWithCustomer = (db: Db) =>
  db
    .selectFrom('rollouts')
    .leftJoin('customers', 'customers.id', 'rollouts.customer_id')
    .selectAll('rollouts')
    .select(['customers.name as customer_name', 'customers.time_zone']);

/**
 * Holds the rollout's row lock until the transaction ends (a write that changes nothing), so
 * that what the transaction reads of it next is what its change starts from; false: no such
 * rollout.
 */
export async function lockRollout(db: Db, id: number): Promise<boolean> {
  const row = await db
    .updateTable('rollouts')
    .set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('id', '=', id)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function findRollout(db: Db, id: number): Promise<RolloutRow | undefined> {
  return rolloutWithCustomer(db).where('rollouts.id', '=', id).executeTakeFirst();
}

export interface RolloutListFilter {
  /** undefined: every rollout (admin); null: the deployment-wide ones; else one customer's. */
  customerId?: number | null;
  state?: RolloutState;
}

/** Rollouts page by id, newest first. */
export const ROLLOUT_PAGES = cursorList<[id: number]>('rollouts', ['integer']);

/**
 * One page of the rollouts, newest first, before the cursor's id: a range of
 * rollouts_customer_idx (customer_id, id) for one customer's (or the deployment-wide ones),
 * of the primary key for every rollout, walked backwards from the cursor. A state filter is a
 * test of each rollout on the way: a customer has few rollouts.
 */
export async function listRollouts(db: Db, filter: RolloutListFilter, page: CursorPageRequest<[number]>): Promise<CursorPage<RolloutRow>> {
  let rows = rolloutWithCustomer(db).orderBy('rollouts.id', 'desc').limit(page.limit + 1);
  if (filter.customerId !== undefined) rows = filter.customerId === null ? rows.where('rollouts.customer_id', 'is', null) : rows.where('rollouts.customer_id', '=', filter.customerId);
  if (filter.state !== undefined) rows = rows.where('rollouts.state', '=', filter.state);
  if (page.after !== undefined) rows = rows.where(afterKey(['rollouts.id'], page.after, 'desc'));
  return ROLLOUT_PAGES.page(await rows.execute(), page.limit, (row) => [row.id]);
}

/** Per-group member counts of each rollout: rollout id → group index → counts. */
export async function groupCounts(db: Db, rolloutIds: readonly number[]): Promise<Map<number, Map<number, GroupCounts>>> {
  const result = new Map<number, Map<number, GroupCounts>>();
  if (rolloutIds.length === 0) return result;
  const rows = await db
    .selectFrom('rollout_members')
    .select(['rollout_id', 'group_index', 'status', (eb) => eb.fn.countAll<number | string>().as('okms')])
    .where('rollout_id', 'in', rolloutIds)
    .groupBy(['rollout_id', 'group_index', 'status'])
    .execute();
  for (const row of rows) {
    const groups = result.get(row.rollout_id) ?? new Map<number, GroupCounts>();
    result.set(row.rollout_id, groups);
    const counts = groups.get(row.group_index) ?? emptyCounts();
    groups.set(row.group_index, counts);
    counts[row.status as MemberStatus] = Number(row.okms);
  }
  return result;
}

/**
 * Whether the member's OKM has polled at or after `since` (okm_polls.last_sync_time, which every
 * poll writes; -1 when it never polled): one probe of okm_polls' key.
 */
const polledSince = (members: string, since: unknown) =>
  sql<SqlBool>`coalesce((select okm_polls.last_sync_time from okm_polls where okm_polls.serial_number = ${sql.ref(`${members}.serial_number`)}), -1) >= ${since}`;

/**
 * Whether the member's OKM is stuck on a resolver (okms.stuck_resolver, written by the poll that
 * finds it so, contract §15): one probe of okms' key.
 */
const okmStuck = (members: string) =>
  sql<SqlBool>`(select okms.stuck_resolver from okms where okms.serial_number = ${sql.ref(`${members}.serial_number`)}) is not null`;

/**
 * A member's state (model.MEMBER_STATES) as SQL over its rollout_members row (`members`, the
 * table or its alias), given when each started group of its rollout started: its status, except
 * for a member still scheduled in a started group, which is `silent` when its OKM has no poll
 * since that group started and `blocked` when it has but is stuck (a resolver before the
 * rollout's answers its polls, so the offer is never sent). Only those members cost a probe of
 * okm_polls and of okms, each by its key: the probes are scalar subqueries, not EXISTS, which
 * PostgreSQL may turn into a hash of a whole table (every OKM's poll, every stuck OKM) when it
 * expects many members to probe. The start times are the rollout's own numbers, written as
 * literals: the expression is the same text wherever it is used, as a GROUP BY needs.
 */
export function memberState(groupStartedAt: readonly number[], members = 'rollout_members'): RawBuilder<MemberState> {
  const status = sql.ref(`${members}.status`);
  const groupIndex = sql.ref(`${members}.group_index`);
  if (groupStartedAt.length === 0) return sql<MemberState>`${status}`;
  const startOfGroup = sql`case ${groupIndex} ${sql.join(
    groupStartedAt.map((startedAt, group) => sql`when ${sql.lit(group)} then ${sql.lit(Math.trunc(startedAt))}`),
    sql` `,
  )} end`;
  return sql<MemberState>`case when ${status} = 'scheduled' and ${groupIndex} < ${sql.lit(groupStartedAt.length)} then (
    case when not ${polledSince(members, startOfGroup)} then 'silent' when ${okmStuck(members)} then 'blocked' else 'scheduled' end
  ) else ${status} end`;
}

/** Per-group counts of the rollout's members by state (silent and blocked apart), for its view: group index → counts. */
export async function groupStateCounts(db: Db, rolloutId: number, groupStartedAt: readonly number[]): Promise<Map<number, StateCounts>> {
  const state = memberState(groupStartedAt);
  const rows = await db
    .selectFrom('rollout_members')
    .select(['group_index', state.as('state'), (eb) => eb.fn.countAll<number | string>().as('okms')])
    .where('rollout_id', '=', rolloutId)
    .groupBy(['group_index', state])
    .execute();
  const groups = new Map<number, StateCounts>();
  for (const row of rows) {
    const counts = groups.get(row.group_index) ?? emptyStateCounts();
    groups.set(row.group_index, counts);
    counts[row.state] = Number(row.okms);
  }
  return groups;
}

/** A rollout's OKMs page by serial number. */
export const ROLLOUT_OKM_PAGES = cursorList<[serialNumber: string]>('rollout-okms', ['string']);

export interface RolloutOkmFilter {
  state?: MemberState;
  group?: number;
}

export interface RolloutOkmRow {
  serial_number: string;
  group_index: number;
  state: MemberState;
  offered_at: number | string | null;
  last_sync_time: number | string | null;
  reported_version: string | null;
  /** The resolver (reply key) the OKM is stuck on; null: not stuck. */
  stuck_resolver: string | null;
  /** Its own polling interval, seconds; null: the fleet's. */
  polling_interval: number | null;
}

/**
 * One page of a rollout's OKMs, by serial number after the cursor's, with each one's state,
 * offer time, last poll, the version of the rollout's kind it last reported and the resolver it
 * is stuck on. With a state, the page is a range of rollout_members_state_idx (rollout_id,
 * status, serial_number, group_index) entered at the cursor (scheduled, silent and blocked
 * share the stored status `scheduled`, told apart on the way); without one, of the primary key.
 */
export async function listRolloutOkms(
  db: Db,
  rollout: { id: number; kind: FirmwareKind; groupStartedAt: readonly number[] },
  filter: RolloutOkmFilter,
  page: CursorPageRequest<[string]>,
): Promise<CursorPage<RolloutOkmRow>> {
  const state = memberState(rollout.groupStartedAt);
  let rows = db
    .selectFrom('rollout_members')
    .innerJoin('okms', 'okms.serial_number', 'rollout_members.serial_number')
    .leftJoin('okm_polls', 'okm_polls.serial_number', 'rollout_members.serial_number')
    .select([
      'rollout_members.serial_number',
      'rollout_members.group_index',
      state.as('state'),
      'rollout_members.offered_at',
      'okm_polls.last_sync_time',
      `okms.${KIND_COLUMNS[rollout.kind].reported} as reported_version`,
      'okms.stuck_resolver',
      'okms.polling_interval',
    ])
    .where('rollout_members.rollout_id', '=', rollout.id)
    .orderBy('rollout_members.serial_number')
    .limit(page.limit + 1);
  if (filter.state !== undefined) {
    const stored = (MEMBER_STATUSES as readonly string[]).includes(filter.state) && filter.state !== 'scheduled' ? filter.state : 'scheduled';
    rows = rows.where('rollout_members.status', '=', stored);
    if (stored === 'scheduled') rows = rows.where(state, '=', filter.state);
  }
  if (filter.group !== undefined) rows = rows.where('rollout_members.group_index', '=', filter.group);
  if (page.after !== undefined) rows = rows.where(afterKey(['rollout_members.serial_number'], page.after));
  return ROLLOUT_OKM_PAGES.page(await rows.execute(), page.limit, (row) => [row.serial_number]);
}

export interface RolloutGuard {
  states: readonly RolloutState[];
  /** The change applies only if the rollout is still at this group (no double advance). */
  currentGroup?: number;
  /** The change applies only if nobody has approved the rollout yet (no second approval overwrites the first). */
  unapproved?: true;
}

/**
 * Changes a rollout only if it is still in one of the guard's states (and at its group): a
 * compare-and-set, so that of two processes deciding the same step only one takes it.
 * True when this call changed it.
 */
export async function updateRolloutIf(db: Db, id: number, guard: RolloutGuard, values: Updateable<RolloutsTable>): Promise<boolean> {
  let update = db.updateTable('rollouts').set(values).where('id', '=', id).where('state', 'in', guard.states);
  if (guard.currentGroup !== undefined) update = update.where('current_group', '=', guard.currentGroup);
  if (guard.unapproved) update = update.where('approved_at', 'is', null);
  const result = await update.executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * OKM rows one transaction names a rollout on, or clears, at most: a group of 900 000 is
 * written in short transactions rather than one long one holding 900 000 row locks, which a
 * batch of polls locking some of the same rows could deadlock with.
 */
export const OFFER_CHUNK = 5_000;

/** The next `chunk` members of the rollout after `after` in serial order (of one group, optionally, and not yet updated). */
async function memberChunk(db: Db, rolloutId: number, after: string, chunk: number, group?: number): Promise<string[]> {
  let query = db.selectFrom('rollout_members').select('serial_number').where('rollout_id', '=', rolloutId).where('serial_number', '>', after);
  if (group !== undefined) query = query.where('group_index', '=', group).where('status', '!=', 'updated');
  const rows = await query.orderBy('serial_number').limit(chunk).execute();
  return rows.map((row) => row.serial_number);
}

/**
 * Names the rollout on the rows of the group's members not yet updated, `chunk` OKMs per
 * statement (each its own transaction) in serial order. Done before the group starts: the
 * poll offers the version only once the rollout's current group has reached the OKM's (see
 * findRolloutOffer), so an OKM named early is offered nothing sooner, and a start that stopped
 * half-way is simply done again. Rows that already name the rollout are not written again.
 */
export async function assignGroup(db: Db, rolloutId: number, group: number, chunk = OFFER_CHUNK): Promise<void> {
  for (let serials = await memberChunk(db, rolloutId, '', chunk, group); serials.length > 0; serials = await memberChunk(db, rolloutId, serials.at(-1)!, chunk, group)) {
    await db
      .updateTable('okms')
      .set({ rollout_id: rolloutId })
      .where('serial_number', 'in', serials)
      .where((eb) => eb.or([eb('rollout_id', 'is', null), eb('rollout_id', '!=', rolloutId)]))
      .execute();
    if (serials.length < chunk) return;
  }
}

/**
 * No OKM is offered the rollout from its next poll on: clears it from its members' rows,
 * `chunk` per statement in serial order. Called after the rollout's abort has committed (the
 * poll offers nothing for an aborted rollout, so the rows still naming it cost a read, not an
 * offer); running it again finishes one that stopped half-way. With `group`, only that group's
 * members not yet updated: those a start or advance that failed had named.
 */
export async function withdrawOffers(db: Db, rolloutId: number, chunk = OFFER_CHUNK, group?: number): Promise<void> {
  for (let serials = await memberChunk(db, rolloutId, '', chunk, group); serials.length > 0; serials = await memberChunk(db, rolloutId, serials.at(-1)!, chunk, group)) {
    await db.updateTable('okms').set({ rollout_id: null }).where('serial_number', 'in', serials).where('rollout_id', '=', rolloutId).execute();
    if (serials.length < chunk) return;
  }
}

/** Rollouts with work for the sweep: running and paused ones (offers time out while paused too), finished ones with members not settled yet, and ready ones whose start time has come (approved, where that is required). */
export async function rolloutsToSweep(db: Db, now: number, limit: number): Promise<RolloutRow[]> {
  return rolloutWithCustomer(db)
    .where((eb) =>
      eb.or([
        eb('rollouts.state', 'in', ['running', 'paused']),
        // A finished rollout still offers its version: members it has not settled yet fail as in a running one.
        eb.and([
          eb('rollouts.state', '=', 'finished'),
          eb.exists(
            eb
              .selectFrom('rollout_members')
              .select(sql.lit(1).as('unsettled'))
              .whereRef('rollout_members.rollout_id', '=', 'rollouts.id')
              .where('rollout_members.status', 'in', ['scheduled', 'offered']),
          ),
        ]),
        eb.and([
          eb('rollouts.state', '=', 'ready'),
          eb('rollouts.start_at', '<=', now),
          eb.or([eb('rollouts.approval_required', '=', 0), eb('rollouts.approved_at', 'is not', null)]),
        ]),
      ]),
    )
    .orderBy('rollouts.updated_at')
    .limit(limit)
    .execute();
}

/** How this database lets several sweepers mark members failed at once. */
export type MemberClaiming = Pick<DialectStrategy, 'skipRowsClaimedByOthers'>;

/**
 * Marks as failed, at most `limit`, the members of `status` that `expired` (over the alias `m`)
 * picks. The status is checked again by the UPDATE itself, so two sweepers never count one OKM
 * twice; the members are picked first because an UPDATE takes no LIMIT. The pick passes over
 * members another sweeper is marking at that moment (they are its to count): two sweepers whose
 * picks overlap would otherwise lock the common rows in whatever order each plan visits them,
 * and PostgreSQL broke such a pair off as a deadlock. The pick is a materialised WITH, run once:
 * as a subquery of IN, PostgreSQL may run it again for each member it updates, and a locking
 * pick run again passes over the members this statement has just marked and picks more, past
 * the limit.
 */
async function failMembers(
  db: Db,
  dialect: MemberClaiming,
  rolloutId: number,
  status: 'scheduled' | 'offered',
  expired: RawBuilder<SqlBool>,
  now: number,
  limit: number,
): Promise<number> {
  if (limit <= 0) return 0;
  const result = await db
    .with(
      (cte) => cte('expired_members').materialized(),
      (qb) =>
        dialect.skipRowsClaimedByOthers(
          qb.selectFrom('rollout_members as m').select('m.serial_number').where('m.rollout_id', '=', rolloutId).where('m.status', '=', status).where(expired).limit(limit),
        ),
    )
    .updateTable('rollout_members')
    .set({ status: 'failed', status_changed_at: now })
    .where('rollout_id', '=', rolloutId)
    .where('status', '=', status)
    .where('serial_number', 'in', (eb) => eb.selectFrom('expired_members').select('expired_members.serial_number'))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/**
 * Marks as failed, at most `limit` in all, the members that had update_timeout to update and
 * did not, so that every rollout reaches a final state, by its error threshold or by finishing
 * (contract §13): offers older than the timeout whose OKM has polled since the timeout ran
 * out (still polling, not updating), and members still scheduled in a group that started at
 * least update_timeout ago that are silent (no poll since it started) or blocked (stuck, see
 * memberState). Offers do not depend on a member's status, so a failed member that polls again
 * (or stops being stuck) is offered the version like the rest of its group, and counts as
 * updated once it reports it.
 * A retried member (retryMembers) is judged from its retry, not its group's start.
 */
export async function failExpiredMembers(
  db: Db,
  dialect: MemberClaiming,
  rollout: Pick<RolloutRow, 'id' | 'update_timeout_ms' | 'group_started_at' | 'current_group' | 'started_at'>,
  now: number,
  limit: number,
): Promise<number> {
  const timeout = rollout.update_timeout_ms;
  let failed = await failMembers(db, dialect, rollout.id, 'offered', sql<SqlBool>`m.offered_at <= ${now - timeout} and ${polledSince('m', sql`m.offered_at + ${timeout}`)}`, now, limit);
  for (const [group, startedAt] of groupStarts(rollout).entries()) {
    if (startedAt + timeout > now) continue;
    // A retried member (its status changed after the group started) has its own timeout, from its retry.
    const silentOrBlocked = sql<SqlBool>`m.group_index = ${group} and coalesce(m.status_changed_at, 0) <= ${now - timeout} and (not ${polledSince('m', startedAt)} or ${okmStuck('m')})`;
    failed += await failMembers(db, dialect, rollout.id, 'scheduled', silentOrBlocked, now, limit - failed);
  }
  return failed;
}

/**
 * The rollout's failed members a retry or an exclusion acts on: those named (at most
 * MAX_FILTER_SERIALS, schemas.ts), or every failed member. Serial numbers, in order.
 */
export async function failedMembers(db: Db, rolloutId: number, serialNumbers?: readonly string[]): Promise<string[]> {
  let query = db.selectFrom('rollout_members').select('serial_number').where('rollout_id', '=', rolloutId).where('status', '=', 'failed');
  if (serialNumbers !== undefined) query = query.where('serial_number', 'in', serialNumbers);
  return (await query.orderBy('serial_number').execute()).map((row) => row.serial_number);
}

/** Statements of at most this many serial numbers each, so that no statement exceeds a driver's parameter limit. */
const MEMBER_STATEMENT_CHUNK = 1_000;

async function inChunks(serials: readonly string[], write: (chunk: string[]) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < serials.length; start += MEMBER_STATEMENT_CHUNK) await write(serials.slice(start, start + MEMBER_STATEMENT_CHUNK));
}

/**
 * Gives failed members another update_timeout: scheduled again, not offered, their status
 * changed now (failExpiredMembers counts a silent or blocked member's timeout from then). Their
 * OKM rows still name the rollout (a failure does not clear them), so the poll offers the
 * version again and marks them offered.
 */
export async function retryMembers(db: Db, rolloutId: number, serials: readonly string[], now: number): Promise<void> {
  await inChunks(serials, (chunk) =>
    db
      .updateTable('rollout_members')
      .set({ status: 'scheduled', offered_at: null, status_changed_at: now })
      .where('rollout_id', '=', rolloutId)
      .where('status', '=', 'failed')
      .where('serial_number', 'in', chunk)
      .execute(),
  );
}

/**
 * Takes failed members out of the rollout: their membership is deleted (no longer counted in
 * their group) and their OKM rows stop naming the rollout (no longer offered its version: the
 * fleet latest again, or a later rollout's).
 */
export async function excludeMembers(db: Db, rolloutId: number, serials: readonly string[]): Promise<void> {
  await inChunks(serials, async (chunk) => {
    await db.deleteFrom('rollout_members').where('rollout_id', '=', rolloutId).where('status', '=', 'failed').where('serial_number', 'in', chunk).execute();
    await db.updateTable('okms').set({ rollout_id: null }).where('serial_number', 'in', chunk).where('rollout_id', '=', rolloutId).execute();
  });
}

/** Per group, the members that failed after `since` (epoch ms): group index → count. */
export async function failuresSince(db: Db, rolloutId: number, since: number): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('rollout_members')
    .select(['group_index', (eb) => eb.fn.countAll<number | string>().as('okms')])
    .where('rollout_id', '=', rolloutId)
    .where('status', '=', 'failed')
    .where('status_changed_at', '>', since)
    .groupBy('group_index')
    .execute();
  return new Map(rows.map((row) => [row.group_index, Number(row.okms)]));
}
