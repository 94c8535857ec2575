import type { AuditAction } from '../audit/actions.ts';
import { recordChange, type Change, type ChangeSource } from '../audit/trail.ts';
import { actingCustomer, type Principal } from '../auth/guard.ts';
import { cursorPageRequest, mapCursorPage, type CursorPage } from '../db/cursor-pages.ts';
import type { Db } from '../db/database.ts';
import { findRelease } from '../firmware/repository.ts';
import { compareFirmwareVersions, parseFirmwareVersion, type FirmwareKind } from '../firmware/version.ts';
import { badRequest, conflict, notFound } from '../http/errors.ts';
import { formatDuration, parseDuration } from '../shared/duration.ts';
import { retryPolicyFromWire, retryPolicyToWire, type RetryPolicyWire } from '../shared/retry-policy.ts';
import type { EmitFleetEvent, RolloutEventType } from './events.ts';
import { ifMatchHolds, PreconditionFailedError, strongEtag, type IfMatch } from '../http/preconditions.ts';
import {
  assignGroups,
  emptyStateCounts,
  firstPollDue,
  formatClockTime,
  groupStarts,
  groupState,
  memberTotal,
  parseClockTime,
  MEMBER_STATES,
  type RolloutState,
  type StateCounts,
} from './model.ts';
import {
  candidateOkms,
  findRollout,
  groupStateCounts,
  insertMembers,
  insertRollout,
  listRolloutOkms,
  lockRollout,
  listRollouts,
  ROLLOUT_OKM_PAGES,
  ROLLOUT_PAGES,
  assignGroup,
  excludeMembers,
  failedMembers,
  retryMembers,
  updateRolloutIf,
  OFFER_CHUNK,
  withdrawOffers,
  type RolloutRow,
} from './repository.ts';
import type { CreateRolloutBody, FailedMembersBody, RolloutListQuery, RolloutOkmListQuery, RolloutOkmView, RolloutView, UpdateRolloutBody } from './schemas.ts';
import { changedMembers } from '../audit/changed-members.ts';

export const DEFAULT_SUCCESS_THRESHOLD = 95;
export const DEFAULT_ERROR_THRESHOLD = 5;
export const DEFAULT_UPDATE_TIMEOUT = '1h';

export interface RolloutRequest {
  db: Db;
  principal: Principal;
  /** The `customer` the request names (query or body), if any. */
  customerName?: string;
  now: number;
  emit: EmitFleetEvent;
  /** Who changes, for the audit trail; absent: the principal's actor, through no request (the command line). */
  source?: ChangeSource;
  /** An operator action's If-Match, checked under the rollout's row lock in the action's transaction; undefined: unconditional. */
  ifMatch?: IfMatch;
  /** FLEET_POLLING_INTERVAL, seconds, for when a silent OKM has missed a poll; absent: the setting's default. */
  fleetPollingInterval?: number;
}

/** FLEET_POLLING_INTERVAL's default (src/config/settings.ts), for a request that does not give the setting. */
const DEFAULT_FLEET_POLLING_INTERVAL = 150;
const fleetIntervalOf = (request: RolloutRequest) => request.fleetPollingInterval ?? DEFAULT_FLEET_POLLING_INTERVAL;

const sourceOf = (request: RolloutRequest): ChangeSource => request.source ?? { actor: request.principal.actor, requestId: null, ip: null, userAgent: null };

/**
 * A step of a rollout as its audit entry holds it: the state, and what else the step moved
 * (the current group as the API numbers it, null before the first; the reason it gives; who
 * approved). Only what the step's compare-and-set guarantees is recorded as `before`.
 */
interface RolloutStep {
  state: RolloutState;
  current_group?: number | null;
  state_reason?: string;
  approved_by?: string | null;
}

const rolloutStepChange = (action: AuditAction, row: Pick<RolloutRow, 'id' | 'customer_name'>, before: RolloutStep, after: RolloutStep): Change => ({
  action,
  customer: row.customer_name,
  entity: { type: 'rollout', id: String(row.id) },
  before,
  after,
});

/** A new rollout as its audit entry holds it: its settings and group sizes, not its members (a rollout can reach 100 000 OKMs). */
const rolloutCreatedChange = (view: RolloutView): Change => ({
  action: 'rollout.created',
  customer: view.customer,
  entity: { type: 'rollout', id: String(view.id) },
  after: {
    state: view.state,
    kind: view.kind,
    version: view.version,
    filter:
      view.filter === null
        ? null
        : {
            ...(view.filter.firmware_version === undefined ? {} : { firmware_version: view.filter.firmware_version }),
            ...(view.filter.serial_numbers === undefined ? {} : { serial_number_count: view.filter.serial_numbers.length }),
          },
    groups: view.groups.map(({ percent, okms }) => ({ percent, okms })),
    members: memberTotal(view.totals),
    success_threshold: view.success_threshold,
    error_threshold: view.error_threshold,
    update_timeout: view.update_timeout,
    auto_advance: view.auto_advance,
    start_at: view.start_at,
    maintenance_window: view.maintenance_window,
    approval_required: view.approval_required,
    retry_policy: view.retry_policy,
  },
});

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const rolloutStateOf = (row: RolloutRow) => ({ state: row.state as RolloutState, current_group: row.current_group });

function toView(row: RolloutRow, groups: Map<number, StateCounts>, fleetPollingInterval: number): RolloutView {
  const percents = JSON.parse(row.group_percents) as number[];
  const totals = emptyStateCounts();
  const starts = row.current_group < 0 ? [] : groupStarts(row);
  const groupViews = percents.map((percent, index) => {
    const counts = { ...emptyStateCounts(), ...groups.get(index) };
    for (const state of MEMBER_STATES) totals[state] += counts[state];
    const startedAt = starts[index];
    return {
      percent,
      okms: memberTotal(counts),
      state: groupState(rolloutStateOf(row), index),
      counts,
      started_at: startedAt === undefined ? null : iso(startedAt),
      first_polls_by: startedAt === undefined ? null : iso(firstPollDue(startedAt, null, fleetPollingInterval)),
    };
  });
  return {
    id: row.id,
    customer: row.customer_name,
    kind: row.kind as FirmwareKind,
    version: row.version,
    filter: row.filter === null ? null : (JSON.parse(row.filter) as RolloutView['filter']),
    state: row.state as RolloutState,
    state_reason: row.state_reason,
    current_group: row.current_group < 0 ? null : row.current_group,
    groups: groupViews,
    totals,
    success_threshold: row.success_threshold,
    error_threshold: row.error_threshold,
    update_timeout: formatDuration(row.update_timeout_ms),
    auto_advance: row.auto_advance === 1,
    start_at: iso(row.start_at),
    maintenance_window:
      row.window_from === null || row.window_to === null
        ? null
        : { from: formatClockTime(row.window_from), to: formatClockTime(row.window_to), time_zone: row.time_zone ?? (row.customer_id === null ? 'each OKM’s customer’s' : 'UTC') },
    approval_required: row.approval_required === 1,
    retry_policy: row.retry_policy === null ? null : retryPolicyToWire(retryPolicyFromWire(JSON.parse(row.retry_policy) as RetryPolicyWire)),
    approved_by: row.approved_by,
    approved_at: iso(row.approved_at),
    created_by: row.created_by,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    resumed_at: iso(row.resumed_at === null ? null : Number(row.resumed_at)),
  };
}

async function viewOf(db: Db, row: RolloutRow, fleetPollingInterval: number): Promise<RolloutView> {
  const view = toView(row, await groupStateCounts(db, row.id, groupStarts(row)), fleetPollingInterval);
  viewEtags.set(view, rolloutEtag(row));
  return view;
}

/**
 * The rollout's strong ETag: a digest of its row, which every change of it writes (an
 * operator's action, the sweep's start, advance or pause, a member retried), updated_at
 * included; its members' progress is not part of it (docs/adr/0100).
 */
export const rolloutEtag = (row: RolloutRow) => strongEtag(JSON.stringify(row));

const viewEtags = new WeakMap<RolloutView, string>();
/** The ETag of the version of the rollout a view shows, for views read with their row (undefined for list items). */
export const etagOfView = (view: RolloutView): string | undefined => viewEtags.get(view);

/**
 * Evaluates the request's If-Match against the rollout as `tx` reads it, its row lock taken
 * first, so that no other change comes between the check and the action; the 412 holds the
 * rollout as it is.
 */
async function checkRolloutVersion(request: RolloutRequest, tx: Db, id: number): Promise<void> {
  if (request.ifMatch === undefined) return;
  await lockRollout(tx, id);
  const row = await visibleRollout(request, tx, id);
  const etag = rolloutEtag(row);
  if (!ifMatchHolds(request.ifMatch, etag)) throw new PreconditionFailedError({ etag, json: JSON.stringify(await viewOf(tx, row, fleetIntervalOf(request))) });
}

/** The rollout, if the request may see it: another customer's is not found, as if it did not exist. */
async function visibleRollout(request: RolloutRequest, db: Db, id: number): Promise<RolloutRow> {
  const customer = await actingCustomer(db, request.principal, request.customerName);
  const row = await findRollout(db, id);
  if (!row || (customer !== null && row.customer_id !== customer.id)) throw notFound(`rollout ${id} not found`);
  return row;
}

/** The groups' cumulative percents, each above the one before, or a 400 naming the group. */
export function checkGroups(groups: CreateRolloutBody['groups']): number[] {
  const percents = groups.map((group) => group.percent);
  percents.forEach((percent, index) => {
    if (index > 0 && percent <= percents[index - 1]!) {
      throw badRequest(`groups[${index}].percent: must be greater than the previous group's (${percents[index - 1]}): percents are cumulative`);
    }
  });
  return percents;
}

/**
 * The OKMs a rollout of `body` would choose now (matching, below the version, no pin of the
 * kind, in no other unfinished rollout) and how many match but already run the version or a
 * newer one, which need nothing and are counted in no group.
 */
export async function rolloutCandidates(db: Db, customerId: number | null, body: CreateRolloutBody): Promise<{ needing: Awaited<ReturnType<typeof candidateOkms>>; upToDate: number }> {
  const target = parseFirmwareVersion(body.version)!;
  const candidates = await candidateOkms(db, {
    customerId,
    kind: body.kind,
    firmwareVersion: body.filter?.firmware_version,
    serialNumbers: body.filter?.serial_numbers,
  });
  const needing = candidates.filter((okm) => {
    const reported = parseFirmwareVersion(okm.reported_version ?? undefined);
    return !reported || compareFirmwareVersions(reported, target) < 0;
  });
  return { needing, upToDate: candidates.length - needing.length };
}

/** Creates a rollout in state ready, its members chosen and stored now. */
export async function createRollout(request: RolloutRequest, body: CreateRolloutBody): Promise<RolloutView> {
  const percents = checkGroups(body.groups);
  const updateTimeoutMs = parseDuration(body.update_timeout ?? DEFAULT_UPDATE_TIMEOUT)!;
  if (updateTimeoutMs < 1000) throw badRequest('update_timeout: must be at least 1s');
  const startAt = body.start_at === undefined ? null : Date.parse(body.start_at);
  const window = body.maintenance_window && { from: parseClockTime(body.maintenance_window.from)!, to: parseClockTime(body.maintenance_window.to)! };
  const customer = await actingCustomer(request.db, request.principal, body.customer);
  const release = await findRelease(request.db, body.kind, body.version);
  if (!release) throw badRequest(`version: no ${body.kind} release ${body.version} in the firmware catalog`);

  return request.db.transaction().execute(async (tx) => {
    const { needing } = await rolloutCandidates(tx, customer?.id ?? null, body);
    if (needing.length === 0) {
      throw conflict(
        `the rollout would reach no OKM: none ${customer ? `of ${customer.name} ` : ''}matches that is below ${body.version}, has no ${body.kind} pin of its own and is in no other unfinished rollout`,
      );
    }
    const id = await insertRollout(tx, {
      customer_id: customer?.id ?? null,
      kind: body.kind,
      version: body.version,
      filter: body.filter === undefined ? null : JSON.stringify(body.filter),
      group_percents: JSON.stringify(percents),
      success_threshold: body.success_threshold ?? DEFAULT_SUCCESS_THRESHOLD,
      error_threshold: body.error_threshold ?? DEFAULT_ERROR_THRESHOLD,
      update_timeout_ms: updateTimeoutMs,
      auto_advance: body.auto_advance === false ? 0 : 1,
      state: 'ready',
      state_reason: null,
      current_group: -1,
      start_at: startAt,
      window_from: window?.from ?? null,
      window_to: window?.to ?? null,
      approval_required: body.approval_required ? 1 : 0,
      // Stored complete: the rollout shows the policy its offers follow, whatever the built-in default becomes.
      retry_policy: body.retry_policy === undefined ? null : JSON.stringify(retryPolicyToWire(retryPolicyFromWire(body.retry_policy))),
      approved_by: null,
      approved_at: null,
      created_by: request.principal.subject,
      created_at: request.now,
      updated_at: request.now,
      started_at: null,
      finished_at: null,
    });
    await insertMembers(
      tx,
      id,
      assignGroups(
        needing.map((okm) => okm.serial_number),
        percents,
      ),
    );
    const view = await viewOf(tx, (await findRollout(tx, id))!, fleetIntervalOf(request));
    await recordChange(tx, sourceOf(request), rolloutCreatedChange(view), request.now);
    return view;
  });
}

/** One page of the rollouts the request may see, newest first, with their per-group counts. */
export async function listRolloutViews(request: RolloutRequest, query: RolloutListQuery): Promise<CursorPage<RolloutView>> {
  const page = cursorPageRequest(ROLLOUT_PAGES, query);
  const customer = await actingCustomer(request.db, request.principal, query.customer);
  const rows = await listRollouts(request.db, { customerId: customer === null ? undefined : customer.id, state: query.state }, page);
  // Each rollout's silent OKMs are judged against its own groups' start times: a count each.
  const counts = new Map(await Promise.all(rows.items.map(async (row) => [row.id, await groupStateCounts(request.db, row.id, groupStarts(row))] as const)));
  return mapCursorPage(rows, (row) => toView(row, counts.get(row.id)!, fleetIntervalOf(request)));
}

/** One page of a rollout's OKMs (of one state, one group), by serial number, with each one's state and offer time. */
export async function listRolloutOkmViews(request: RolloutRequest, id: number, query: RolloutOkmListQuery): Promise<CursorPage<RolloutOkmView>> {
  const page = cursorPageRequest(ROLLOUT_OKM_PAGES, query);
  const row = await visibleRollout(request, request.db, id);
  const groups = (JSON.parse(row.group_percents) as number[]).length;
  if (query.group !== undefined && query.group >= groups) throw badRequest(`group: rollout ${id} has ${groups} group${groups === 1 ? '' : 's'}, numbered from 0`);
  const okms = await listRolloutOkms(
    request.db,
    { id: row.id, kind: row.kind as FirmwareKind, groupStartedAt: groupStarts(row) },
    { ...(query.state === undefined ? {} : { state: query.state }), ...(query.group === undefined ? {} : { group: query.group }) },
    page,
  );
  const starts = row.current_group < 0 ? [] : groupStarts(row);
  return mapCursorPage(okms, (okm) => ({
    serial_number: okm.serial_number,
    group: okm.group_index,
    state: okm.state,
    offered_at: okm.offered_at === null ? null : iso(Number(okm.offered_at)),
    last_sync_time: okm.last_sync_time === null ? null : iso(Number(okm.last_sync_time)),
    reported_version: okm.reported_version,
    blocked_by: okm.state === 'blocked' ? okm.stuck_resolver : null,
    first_poll_due_at: starts[okm.group_index] === undefined ? null : iso(firstPollDue(starts[okm.group_index]!, okm.polling_interval === null ? null : Number(okm.polling_interval), fleetIntervalOf(request))),
  }));
}

export async function getRolloutView(request: RolloutRequest, id: number): Promise<RolloutView> {
  return viewOf(request.db, await visibleRollout(request, request.db, id), fleetIntervalOf(request));
}

const eventData = (row: RolloutRow, extra: Record<string, unknown> = {}) => ({
  rollout_id: row.id,
  customer: row.customer_name,
  kind: row.kind,
  version: row.version,
  ...extra,
});

async function emit(emitter: EmitFleetEvent, db: Db, type: RolloutEventType, row: RolloutRow, extra?: Record<string, unknown>): Promise<void> {
  await emitter(db, { type, customerId: row.customer_id, data: eventData(row, extra) });
}

/**
 * After a start or advance that lost its compare-and-set: if the rollout was aborted meanwhile,
 * the rows this call named it on (after the abort cleared them) are cleared again.
 */
async function clearIfAborted(db: Db, rolloutId: number): Promise<void> {
  if ((await findRollout(db, rolloutId))?.state === 'aborted') await withdrawOffers(db, rolloutId);
}

/**
 * Runs the start or advance transaction that follows a group's assignment; when it fails, the
 * group's rows named the rollout for nothing, and are cleared again (best effort: the poll
 * offers nothing for a group the rollout has not reached, so a row left over costs a read).
 */
async function afterAssigning<T>(db: Db, rolloutId: number, group: number, transaction: () => Promise<T>): Promise<T> {
  try {
    return await transaction();
  } catch (error) {
    await withdrawOffers(db, rolloutId, OFFER_CHUNK, group).catch(() => {});
    throw error;
  }
}

/**
 * Starts a ready rollout: its first group is offered the version from the next poll on. The
 * group's rows name the rollout first, in chunks (offered nothing until the start commits),
 * then the start and its events commit in one transaction. False when another process
 * started it first (or it was aborted meanwhile). `db` must not be a transaction.
 */
export async function startReadyRollout(db: Db, row: RolloutRow, now: number, emitter: EmitFleetEvent, reason: string, source: ChangeSource, check?: (tx: Db) => Promise<void>): Promise<boolean> {
  await assignGroup(db, row.id, 0);
  const started = await afterAssigning(db, row.id, 0, () => db.transaction().execute(async (tx) => {
    await check?.(tx);
    const started = { state: 'running', state_reason: reason, current_group: 0, started_at: now, group_started_at: JSON.stringify([now]), updated_at: now };
    if (!(await updateRolloutIf(tx, row.id, { states: ['ready'] }, started))) return false;
    await emit(emitter, tx, 'rollout.started', row, { reason });
    await emit(emitter, tx, 'rollout.group_started', row, { group: 0 });
    await recordChange(tx, source, rolloutStepChange('rollout.started', row, { state: 'ready', current_group: null }, { state: 'running', current_group: 0, state_reason: reason }), now);
    return true;
  }));
  if (!started) await clearIfAborted(db, row.id);
  return started;
}

/**
 * Moves a running rollout past group `from`: the next group is offered the version, or, after
 * the last group, the rollout has finished. Applies only if it is still at `from`, so that
 * of two sweepers (or a sweeper and an operator) only one advances it. As for a start, the
 * next group's rows name the rollout in chunks before the advance commits. `db` must not be a
 * transaction.
 */
export async function advanceRolloutFrom(
  db: Db,
  row: RolloutRow,
  from: number,
  now: number,
  emitter: EmitFleetEvent,
  reason: string,
  source: ChangeSource,
  check?: (tx: Db) => Promise<void>,
): Promise<boolean> {
  const groups = (JSON.parse(row.group_percents) as number[]).length;
  if (from + 1 >= groups) {
    return db.transaction().execute(async (tx) => {
      await check?.(tx);
      const finished = await updateRolloutIf(tx, row.id, { states: ['running'], currentGroup: from }, { state: 'finished', state_reason: reason, finished_at: now, updated_at: now });
      if (!finished) return false;
      await emit(emitter, tx, 'rollout.finished', row, { reason });
      // Past the last group is finished: still an advance, the one that ends the rollout.
      await recordChange(tx, source, rolloutStepChange('rollout.advanced', row, { state: 'running' }, { state: 'finished', state_reason: reason }), now);
      return true;
    });
  }
  await assignGroup(db, row.id, from + 1);
  const advanced = await afterAssigning(db, row.id, from + 1, () => db.transaction().execute(async (tx) => {
    await check?.(tx);
    // The compare-and-set on the group makes the row's start times those this advance extends.
    const groupStartedAt = JSON.stringify([...groupStarts({ ...row, current_group: from }), now]);
    if (!(await updateRolloutIf(tx, row.id, { states: ['running'], currentGroup: from }, { current_group: from + 1, group_started_at: groupStartedAt, updated_at: now }))) return false;
    await emit(emitter, tx, 'rollout.group_started', row, { group: from + 1, reason });
    await recordChange(tx, source, rolloutStepChange('rollout.advanced', row, { state: 'running', current_group: from }, { state: 'running', current_group: from + 1 }), now);
    return true;
  }));
  if (!advanced) await clearIfAborted(db, row.id);
  return advanced;
}

/**
 * Pauses a running rollout, in the caller's transaction; returns the change for the caller to
 * record as its transaction's last statements, undefined when it was not running (any more).
 */
export async function pauseRunningRollout(db: Db, row: RolloutRow, now: number, emitter: EmitFleetEvent, reason: string, extra?: Record<string, unknown>): Promise<Change | undefined> {
  if (!(await updateRolloutIf(db, row.id, { states: ['running'] }, { state: 'paused', state_reason: reason, updated_at: now }))) return undefined;
  await emit(emitter, db, 'rollout.paused', row, { reason, ...extra });
  return rolloutStepChange('rollout.paused', row, { state: 'running' }, { state: 'paused', state_reason: reason });
}

const cannot = (row: RolloutRow, action: string) => conflict(`rollout ${row.id} is ${row.state}: it cannot be ${action}`);

/**
 * Runs an operator's action on the rollout in one transaction, the rollout's row locked first so
 * that the action starts from the rollout as it is, and returns the rollout as it then is. The
 * action returns its change (undefined: it changed nothing), recorded after the rollout is
 * read back, so that the chain's head is held only for the entry.
 */
async function act(request: RolloutRequest, id: number, action: (tx: Db, row: RolloutRow) => Promise<Change | undefined>): Promise<RolloutView> {
  return request.db.transaction().execute(async (tx) => {
    await lockRollout(tx, id);
    const row = await visibleRollout(request, tx, id);
    await checkRolloutVersion(request, tx, id);
    const change = await action(tx, row);
    const view = await viewOf(tx, (await findRollout(tx, id))!, fleetIntervalOf(request));
    if (change) await recordChange(tx, sourceOf(request), change, request.now);
    return view;
  });
}

export async function startRollout(request: RolloutRequest, id: number): Promise<RolloutView> {
  const row = await visibleRollout(request, request.db, id);
  if (row.state !== 'ready') throw cannot(row, 'started');
  if (row.approval_required === 1 && row.approved_at === null) throw conflict(`rollout ${row.id} needs the approval of another operator before it starts`);
  const checked = (tx: Db) => checkRolloutVersion(request, tx, id);
  if (!(await startReadyRollout(request.db, row, request.now, request.emit, 'operator', sourceOf(request), checked))) throw cannot((await findRollout(request.db, id))!, 'started');
  return viewOf(request.db, (await findRollout(request.db, id))!, fleetIntervalOf(request));
}

/** Pausing a paused rollout changes nothing. */
export function pauseRollout(request: RolloutRequest, id: number): Promise<RolloutView> {
  return act(request, id, async (tx, row) => {
    if (row.state === 'paused') return undefined;
    const paused = row.state === 'running' ? await pauseRunningRollout(tx, row, request.now, request.emit, 'operator') : undefined;
    if (!paused) throw cannot(row, 'paused');
    return paused;
  });
}

export function resumeRollout(request: RolloutRequest, id: number): Promise<RolloutView> {
  return act(request, id, async (tx, row) => {
    // resumed_at: the failures the operator resumed over do not pause it again (sweep.ts judges only later ones).
    if (!(await updateRolloutIf(tx, row.id, { states: ['paused'] }, { state: 'running', state_reason: 'resumed', resumed_at: request.now, updated_at: request.now }))) throw cannot(row, 'resumed');
    return rolloutStepChange('rollout.resumed', row, { state: 'paused' }, { state: 'running', state_reason: 'resumed' });
  });
}

/** Starts the next group now, whatever the thresholds say (after the last group: finished). */
export async function advanceRollout(request: RolloutRequest, id: number): Promise<RolloutView> {
  const row = await visibleRollout(request, request.db, id);
  const checked = (tx: Db) => checkRolloutVersion(request, tx, id);
  if (row.state !== 'running' || !(await advanceRolloutFrom(request.db, row, row.current_group, request.now, request.emit, 'operator', sourceOf(request), checked))) {
    throw cannot((await findRollout(request.db, id))!, 'advanced');
  }
  return viewOf(request.db, (await findRollout(request.db, id))!, fleetIntervalOf(request));
}

/**
 * The emergency stop: no OKM that has not updated is offered the version from its next poll
 * on. The abort commits first (from then on the poll offers nothing for it), then its OKMs'
 * rows are cleared in chunks. Aborting an aborted rollout changes nothing but clears again,
 * which finishes a clearing that stopped half-way.
 */
export async function abortRollout(request: RolloutRequest, id: number): Promise<RolloutView> {
  await act(request, id, async (tx, row) => {
    if (row.state === 'aborted') return undefined;
    const aborted = await updateRolloutIf(tx, row.id, { states: ['ready', 'running', 'paused'] }, { state: 'aborted', state_reason: 'operator', finished_at: request.now, updated_at: request.now });
    if (!aborted) throw cannot(row, 'aborted');
    await emit(request.emit, tx, 'rollout.aborted', row, { reason: 'operator' });
    return rolloutStepChange('rollout.aborted', row, { state: row.state as RolloutState }, { state: 'aborted', state_reason: 'operator' });
  });
  await withdrawOffers(request.db, id);
  return viewOf(request.db, (await findRollout(request.db, id))!, fleetIntervalOf(request));
}

/**
 * Four eyes: an operator other than the creator (token subject) approves a rollout that
 * requires it. The approval is a compare-and-set on the approval columns: of two operators
 * approving at once, one is recorded and the other is told who approved (409); the same
 * operator approving again (or twice at once) is answered with the approval as it stands.
 */
export function approveRollout(request: RolloutRequest, id: number): Promise<RolloutView> {
  return act(request, id, async (tx, row) => {
    if (row.approval_required !== 1) throw conflict(`rollout ${row.id} does not require approval`);
    const approver = request.principal.subject;
    if (approver === '' || approver === row.created_by) throw conflict(`rollout ${row.id} was created by ${row.created_by}: another operator (token subject) must approve it`);
    const approvedBefore = (current: RolloutRow) => {
      if (current.approved_by === approver) return undefined;
      throw conflict(`rollout ${current.id} was already approved by ${current.approved_by}`);
    };
    if (row.approved_at !== null) return approvedBefore(row);
    if (row.state !== 'ready') throw cannot(row, 'approved');
    if (await updateRolloutIf(tx, row.id, { states: ['ready'], unapproved: true }, { approved_by: approver, approved_at: request.now, updated_at: request.now })) {
      return rolloutStepChange('rollout.approved', row, { state: 'ready', approved_by: null }, { state: 'ready', approved_by: approver });
    }
    // Another approval committed first: this statement sees it (PostgreSQL reads committed rows per statement).
    const current = (await findRollout(tx, row.id))!;
    if (current.approved_at === null) throw cannot(current, 'approved');
    return approvedBefore(current);
  });
}

/** The thresholds of a rollout, as PATCH takes them and its audit entry holds them. */
const thresholdsOf = (row: RolloutRow) => ({
  success_threshold: row.success_threshold,
  error_threshold: row.error_threshold,
  update_timeout: formatDuration(row.update_timeout_ms),
  auto_advance: row.auto_advance === 1,
});

/**
 * Changes the thresholds of a ready or paused rollout (a running one is judged by them on every
 * sweep: pause it first, so that what the operator sets is what the next sweep after Resume
 * judges). What the body leaves out stays; setting what is already set changes nothing and
 * records nothing.
 */
export function updateRollout(request: RolloutRequest, id: number, body: UpdateRolloutBody): Promise<RolloutView> {
  const updateTimeoutMs = body.update_timeout === undefined ? undefined : parseDuration(body.update_timeout)!;
  if (updateTimeoutMs !== undefined && updateTimeoutMs < 1000) throw badRequest('update_timeout: must be at least 1s');
  return act(request, id, async (tx, row) => {
    if (row.state !== 'ready' && row.state !== 'paused') {
      throw conflict(`rollout ${row.id} is ${row.state}: its thresholds change only while it is ready or paused${row.state === 'running' ? ' (pause it first)' : ''}`);
    }
    const values = {
      ...(body.success_threshold === undefined ? {} : { success_threshold: body.success_threshold }),
      ...(body.error_threshold === undefined ? {} : { error_threshold: body.error_threshold }),
      ...(updateTimeoutMs === undefined ? {} : { update_timeout_ms: updateTimeoutMs }),
      ...(body.auto_advance === undefined ? {} : { auto_advance: body.auto_advance ? 1 : 0 }),
    };
    const changed = changedMembers(thresholdsOf(row), thresholdsOf({ ...row, ...values }));
    if (Object.keys(changed.after).length === 0) return undefined;
    if (!(await updateRolloutIf(tx, row.id, { states: ['ready', 'paused'] }, { ...values, updated_at: request.now }))) throw cannot(row, 'changed');
    return { action: 'rollout.updated', customer: row.customer_name, entity: { type: 'rollout', id: String(row.id) }, ...changed };
  });
}

/** Serial numbers an audit entry names at most; the count says how many there were. */
const AUDITED_SERIALS = 100;

/**
 * The failed members a retry or an exclusion acts on (all of them, or those named, each of
 * which must be one), in a rollout still offering its version (running or paused).
 */
async function failedToActOn(tx: Db, row: RolloutRow, body: FailedMembersBody, action: string): Promise<string[]> {
  if (row.state !== 'running' && row.state !== 'paused') throw cannot(row, action);
  const failed = await failedMembers(tx, row.id, body.serial_numbers);
  if (body.serial_numbers !== undefined && failed.length < body.serial_numbers.length) {
    const found = new Set(failed);
    const missing = body.serial_numbers.filter((serial) => !found.has(serial));
    throw conflict(`not failed OKMs of rollout ${row.id}: ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ` and ${missing.length - 10} more` : ''}`);
  }
  return failed;
}

const membersChange = (action: 'rollout.members_retried' | 'rollout.members_excluded', row: RolloutRow, serials: readonly string[]): Change => ({
  action,
  customer: row.customer_name,
  entity: { type: 'rollout', id: String(row.id) },
  after: { okms: serials.length, serial_numbers: serials.slice(0, AUDITED_SERIALS) },
});

/**
 * Gives failed members of a running or paused rollout another update_timeout: they are
 * scheduled again and offered the version on their next poll (repository.retryMembers). No
 * failed member: nothing changes, nothing is recorded.
 */
export function retryFailedMembers(request: RolloutRequest, id: number, body: FailedMembersBody): Promise<RolloutView> {
  return act(request, id, async (tx, row) => {
    const serials = await failedToActOn(tx, row, body, 'retried');
    if (serials.length === 0) return undefined;
    await retryMembers(tx, row.id, serials, request.now);
    await tx.updateTable('rollouts').set({ updated_at: request.now }).where('id', '=', row.id).execute();
    return membersChange('rollout.members_retried', row, serials);
  });
}

/**
 * Takes failed members out of a running or paused rollout: not offered its version any more,
 * not counted in their group (repository.excludeMembers); they may join a later rollout.
 */
export function excludeFailedMembers(request: RolloutRequest, id: number, body: FailedMembersBody): Promise<RolloutView> {
  return act(request, id, async (tx, row) => {
    const serials = await failedToActOn(tx, row, body, 'changed');
    if (serials.length === 0) return undefined;
    await excludeMembers(tx, row.id, serials);
    await tx.updateTable('rollouts').set({ updated_at: request.now }).where('id', '=', row.id).execute();
    return membersChange('rollout.members_excluded', row, serials);
  });
}
