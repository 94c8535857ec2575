import { randomUUID } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { FleetSummarySnapshotTable } from '../db/schema.ts';
import { emitFleetEvents } from '../webhooks/fleet-events.ts';
import { MISSED_INTERVALS_UNTIL_OVERDUE, stateFactsOf } from '../okm/fleet-states.ts';
import { effectivePollingInterval } from '../okm/model.ts';

/**
 * The fleet pass: what is derived from the whole fleet is computed here, off the poll's path.
 * It walks every OKM in serial number order, a bounded step (one short transaction) at a time,
 * and on the way
 *
 * - marks the OKMs that have not polled for MISSED_INTERVALS_UNTIL_OVERDUE effective polling
 *   intervals as overdue (okms.overdue_at) and emits okm.overdue for each, once: the next poll
 *   clears the mark and emits okm.back_online (src/device/poll-repository.ts);
 * - counts the OKMs by customer, state (stuck too: the poll writes that) and reported firmware versions, and when the walk is
 *   complete replaces the fleet summary's snapshot with those counts in one transaction.
 *
 * A poll writes none of this. So overdue marks and the summary are as fresh as the last pass:
 * at most one pause plus one pass behind (docs/okm-admin-api.md). One process at a time runs
 * it, whatever the number of processes on one database: the one that holds the pass's lease
 * (a row of background_passes, taken when it lapses, renewed at every step).
 */
export const FLEET_PASS = 'fleet';

/** OKMs one step reads; a step at 1 M OKMs holds SQLite's writer for a few milliseconds. */
export const FLEET_PASS_STEP = 2_000;

/** How long a lease lasts without a renewal: a process that stalls or dies longer than this loses the pass to another. */
export const FLEET_PASS_LEASE_MS = 60_000;

/** A group of OKMs alike, as the fleet summary counts them: a row of fleet_summary_snapshot. */
export type SnapshotGroup = { [Column in keyof FleetSummarySnapshotTable]: Selectable<FleetSummarySnapshotTable>[Column] };

interface PassedOkm {
  serial_number: string;
  customer_id: number | null;
  last_correction: string | null;
  firmware_version: string | null;
  batch_key_firmware_version: string | null;
  wireless_key_firmware_version: string | null;
  polling_interval: number | null;
  overdue_at: number | null;
  stuck_resolver: string | null;
  last_sync_time: number | null;
  last_ip: string | null;
}

/** The counts of a walk so far, by group. */
export class FleetCounts {
  readonly #groups = new Map<string, SnapshotGroup>();

  add(okm: Omit<SnapshotGroup, 'okms' | 'never_polled' | 'overdue' | 'stuck'> & { stuck_resolver: string | null }, overdueAt: number | null): void {
    const facts = stateFactsOf({ ...okm, overdue_at: overdueAt });
    const group = {
      customer_id: okm.customer_id === null ? null : Number(okm.customer_id),
      last_correction: facts.lastCorrection,
      firmware_version: okm.firmware_version,
      batch_key_firmware_version: okm.batch_key_firmware_version,
      wireless_key_firmware_version: okm.wireless_key_firmware_version,
      never_polled: facts.neverPolled ? 1 : 0,
      overdue: facts.overdue ? 1 : 0,
      stuck: facts.stuck ? 1 : 0,
    };
    const key = JSON.stringify(Object.values(group));
    const counted = this.#groups.get(key);
    if (counted) counted.okms += 1;
    else this.#groups.set(key, { ...group, okms: 1 });
  }

  groups(): SnapshotGroup[] {
    return [...this.#groups.values()];
  }
}

/** Takes or renews the pass's lease for `holder`; false while another process holds it. */
export async function takeLease(db: Db, holder: string, now: number, name = FLEET_PASS): Promise<boolean> {
  await db.insertInto('background_passes').values({ name, holder: null, lease_expires_at: 0, completed_at: null }).onConflict((oc) => oc.column('name').doNothing()).execute();
  const taken = await db
    .updateTable('background_passes')
    .set({ holder, lease_expires_at: now + FLEET_PASS_LEASE_MS })
    .where('name', '=', name)
    .where((eb) => eb.or([eb('holder', '=', holder), eb('lease_expires_at', '<', now), eb('holder', 'is', null)]))
    .executeTakeFirst();
  return Number(taken.numUpdatedRows) > 0;
}

/** Gives the lease up, so that another process need not wait for it to lapse. */
export async function releaseLease(db: Db, holder: string, name = FLEET_PASS): Promise<void> {
  await db.updateTable('background_passes').set({ holder: null, lease_expires_at: 0 }).where('name', '=', name).where('holder', '=', holder).execute();
}

export interface FleetPassSettings {
  fleetPollingInterval: number;
}

/**
 * One step of the walk: the next FLEET_PASS_STEP OKMs after `after` (their last poll with
 * them), marked overdue where due and counted into `counts`. Returns the last serial number
 * read, or undefined at the end of the fleet.
 */
export async function fleetPassStep(db: Db, settings: FleetPassSettings, after: string | undefined, counts: FleetCounts, now: number): Promise<string | undefined> {
  return db.transaction().execute(async (tx) => {
    let query = tx
      .selectFrom('okms')
      .leftJoin('okm_polls', 'okm_polls.serial_number', 'okms.serial_number')
      .select([
        'okms.serial_number',
        'okms.customer_id',
        'okms.last_correction',
        'okms.firmware_version',
        'okms.batch_key_firmware_version',
        'okms.wireless_key_firmware_version',
        'okms.polling_interval',
        'okms.overdue_at',
        'okms.stuck_resolver',
        'okm_polls.last_sync_time',
        'okm_polls.last_ip',
      ])
      .orderBy('okms.serial_number')
      .limit(FLEET_PASS_STEP);
    if (after !== undefined) query = query.where('okms.serial_number', '>', after);
    const okms: PassedOkm[] = await query.execute();
    if (okms.length === 0) return undefined;

    const dueOf = (okm: PassedOkm) => Number(okm.last_sync_time) + MISSED_INTERVALS_UNTIL_OVERDUE * 1000 * effectivePollingInterval(okm.polling_interval, settings.fleetPollingInterval);
    const silent = okms.filter((okm) => okm.overdue_at === null && okm.last_sync_time !== null && dueOf(okm) < now);
    const marked = new Set(await markOverdue(tx, silent, settings, now));
    const events = silent
      .filter((okm) => marked.has(okm.serial_number))
      .map((okm) => ({
        type: 'okm.overdue' as const,
        customerId: okm.customer_id,
        data: {
          serial_number: okm.serial_number,
          last_sync_time: new Date(Number(okm.last_sync_time)).toISOString(),
          overdue_since: new Date(dueOf(okm)).toISOString(),
          last_ip: okm.last_ip,
        },
      }));
    await emitFleetEvents(tx, events, now);
    for (const okm of okms) counts.add(okm, marked.has(okm.serial_number) ? now : okm.overdue_at);
    return okms.at(-1)!.serial_number;
  });
}

/**
 * Marks the silent OKMs overdue, checking again in the same statement that each has still
 * not polled since (a poll committed after the step's read ends the silence first). Returns
 * the serial numbers marked.
 */
async function markOverdue(db: Db, silent: readonly PassedOkm[], settings: FleetPassSettings, now: number): Promise<string[]> {
  if (silent.length === 0) return [];
  const interval = sql<number>`coalesce(okms.polling_interval, ${settings.fleetPollingInterval})`;
  // effectivePollingInterval, in SQL.
  const clamped = sql<number>`case when ${interval} < 5 then 5 when ${interval} > 3600 then 3600 else ${interval} end`;
  const rows = await db
    .updateTable('okms')
    .set({ overdue_at: now })
    .where(
      'okms.serial_number',
      'in',
      silent.map((okm) => okm.serial_number),
    )
    .where('okms.overdue_at', 'is', null)
    .where((eb) =>
      eb(
        eb
          .selectFrom('okm_polls')
          .select(sql<number>`okm_polls.last_sync_time + ${MISSED_INTERVALS_UNTIL_OVERDUE * 1000} * ${clamped}`.as('due'))
          .whereRef('okm_polls.serial_number', '=', 'okms.serial_number'),
        '<',
        now,
      ),
    )
    .returning('okms.serial_number')
    .execute();
  return rows.map((row) => row.serial_number);
}

/** Replaces the fleet summary's snapshot with the counts of a complete walk, and records the pass as completed. */
export async function completeFleetPass(db: Db, counts: FleetCounts, now: number): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('fleet_summary_snapshot').execute();
    const groups = counts.groups();
    for (let start = 0; start < groups.length; start += 500) await tx.insertInto('fleet_summary_snapshot').values(groups.slice(start, start + 500)).execute();
    await tx.updateTable('background_passes').set({ completed_at: now }).where('name', '=', FLEET_PASS).execute();
  });
}

export interface FleetPassRunner {
  /**
   * Runs one whole pass now if this process holds (or can take) the lease: every step, then
   * the snapshot. Returns false when another process holds the lease, or when the runner was
   * stopped meanwhile (between two steps). `pauseMs` between steps leaves the database to the polls.
   */
  runPass(options?: { pauseMs?: number; now?: () => number }): Promise<boolean>;
  /** Ends a pass in progress after its current step (the server is closing); later passes do not start. */
  stop(): void;
  readonly holder: string;
}

export function createFleetPass(db: Db, settings: FleetPassSettings): FleetPassRunner {
  const holder = randomUUID();
  let stopped = false;
  return {
    holder,
    stop() {
      stopped = true;
    },
    async runPass({ pauseMs = 0, now = Date.now } = {}) {
      const counts = new FleetCounts();
      let after: string | undefined;
      do {
        if (stopped || !(await takeLease(db, holder, now()))) return false;
        after = await fleetPassStep(db, settings, after, counts, now());
        if (after !== undefined && pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      } while (after !== undefined);
      if (stopped || !(await takeLease(db, holder, now()))) return false;
      await completeFleetPass(db, counts, now());
      return true;
    },
  };
}
