import { sql, type Selectable } from 'kysely';
import type { Db } from '../db/database.ts';
import type { DialectStrategy, RowSet, RowSetColumn } from '../db/dialects/strategy.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import type { FirmwareReleasesTable } from '../db/schema.ts';
import { findRelease, toRelease, type FirmwareRelease } from '../firmware/repository.ts';
import type { FirmwareKind } from '../firmware/version.ts';
import { findMessage, markMessageDelivered } from '../okm/messages-repository.ts';
import { countAnotherCall, emitPending, recordPendingCall } from '../okm/pending-repository.ts';
import {
  emitEndOfSilence,
  emitEnrolled,
  enrolledOkmRow,
  enrolledPollRow,
  enrolOkm,
  NO_STATUS_URLS,
  okmPollUpsert,
  polledColumns,
  POLLED_COLUMNS,
  recordCorrection,
  recordEndOfSilence,
  recordPoll,
  recordReportedVersions,
  type CountedPollRow,
  type EndOfSilence,
  type PollObservation,
  type SilencedOkm,
} from './poll-repository.ts';
import type { PendingMessage } from './resolvers/types.ts';
import { correctionColumns, type CorrectionRecord } from '../okm/correction-record.ts';

/** One poll of a batch; no two polls given to one call have the same serial number. */
export interface ObservedPoll {
  serialNumber: string;
  observation: PollObservation;
}

export interface PinnedRelease {
  kind: FirmwareKind;
  version: string;
}

export interface RecordedCorrections {
  serialNumber: string;
  record: CorrectionRecord;
}

/** A pending message to claim for the poll that sends it, delivered at the poll's time. */
export interface MessageClaim {
  id: number;
  now: number;
}

/**
 * The statements of a batch of polls, each called once for the whole batch: where the
 * dialect has row sets (PostgreSQL), each is one statement whatever the number of polls, so
 * a batch costs a constant number of round trips; elsewhere (SQLite), the per-row statement
 * runs for each poll. Answers are in the order of the input.
 */
export interface PollStatements {
  /** Records each poll on its OKM and returns the OKM's PolledOkmRow; undefined for an unknown serial number. */
  recordPolls(db: Db, polls: readonly ObservedPoll[]): Promise<(CountedPollRow | undefined)[]>;
  /** Writes the reported firmware versions of polls whose versions differ from the stored ones (see recordReportedVersions). */
  recordReportedVersions(db: Db, polls: readonly ObservedPoll[]): Promise<void>;
  /** Inserts each unknown OKM with its poll recorded; false where it exists already (a concurrent first poll). */
  enrolOkms(db: Db, polls: readonly ObservedPoll[]): Promise<boolean[]>;
  /** Records each call of an unknown serial number as pending (auto-enrol off). */
  recordPendingCalls(db: Db, polls: readonly ObservedPoll[]): Promise<void>;
  findReleases(db: Db, pins: readonly PinnedRelease[]): Promise<(FirmwareRelease | undefined)[]>;
  findMessages(db: Db, ids: readonly number[]): Promise<(PendingMessage | undefined)[]>;
  /** Marks each message delivered; false where it was already (a concurrent poll claimed it). */
  claimMessages(db: Db, claims: readonly MessageClaim[]): Promise<boolean[]>;
  /** Clears the overdue mark of each OKM whose poll ended a silence, emitting its event (see recordEndOfSilence). */
  recordEndsOfSilence(db: Db, ends: readonly EndOfSilence[]): Promise<void>;
  /** Records what each poll decided about its OKM's corrections, where it changed (see recordCorrection). */
  recordCorrections(db: Db, corrections: readonly RecordedCorrections[]): Promise<void>;
}

const inSequence = async <In, Out>(items: readonly In[], statement: (item: In) => Promise<Out>): Promise<Out[]> => {
  const results: Out[] = [];
  for (const item of items) results.push(await statement(item));
  return results;
};

const toPendingMessage = (message: { id: number; type: string; payload: unknown } | undefined): PendingMessage | undefined =>
  message && { id: message.id, type: message.type, payload: message.payload };

export const PER_ROW_POLL_STATEMENTS: PollStatements = {
  recordPolls: (db, polls) => inSequence(polls, ({ serialNumber, observation }) => recordPoll(db, serialNumber, observation)),
  recordReportedVersions: async (db, polls) =>
    void (await inSequence(polls, ({ serialNumber, observation }) => recordReportedVersions(db, serialNumber, observation))),
  enrolOkms: (db, polls) => inSequence(polls, ({ serialNumber, observation }) => enrolOkm(db, serialNumber, observation)),
  recordPendingCalls: async (db, polls) => void (await inSequence(polls, ({ serialNumber, observation }) => recordPendingCall(db, serialNumber, observation))),
  findReleases: (db, pins) => inSequence(pins, ({ kind, version }) => findRelease(db, kind, version)),
  findMessages: (db, ids) => inSequence(ids, async (id) => toPendingMessage(await findMessage(db, id))),
  claimMessages: (db, claims) => inSequence(claims, ({ id, now }) => markMessageDelivered(db, id, now)),
  recordEndsOfSilence: async (db, ends) => void (await inSequence(ends, (end) => recordEndOfSilence(db, end))),
  recordCorrections: async (db, corrections) =>
    void (await inSequence(corrections, ({ serialNumber, record }) => recordCorrection(db, serialNumber, record))),
};

/** The row set of a batch of polls: the observation's columns under names no okms column has, so the poll's SET reads unambiguously. */
interface PollRowSet {
  serial: string;
  now: number;
  ip: string;
  kas_reported: string | null;
  batch_key_reported: string | null;
  wireless_key_reported: string | null;
  reported_values: string;
  new_install_code: string | null;
}

/** Each column of a batch's row set: its SQL type, and its value from a poll. */
const POLL_ROW_SET_COLUMNS: { [Column in keyof PollRowSet]: { type: RowSetColumn['type']; of: (poll: ObservedPoll) => PollRowSet[Column] } } = {
  serial: { type: 'text', of: (poll) => poll.serialNumber },
  now: { type: 'bigint', of: (poll) => poll.observation.now },
  ip: { type: 'text', of: (poll) => poll.observation.ip },
  kas_reported: { type: 'text', of: (poll) => poll.observation.firmwareVersion },
  batch_key_reported: { type: 'text', of: (poll) => poll.observation.batchKeyFirmwareVersion },
  wireless_key_reported: { type: 'text', of: (poll) => poll.observation.wirelessKeyFirmwareVersion },
  reported_values: { type: 'text', of: (poll) => poll.observation.reported },
  new_install_code: { type: 'text', of: (poll) => poll.observation.installCode },
};

type PollRowSetColumn = keyof PollRowSet;

// Each statement takes the row set's columns it reads, no more: every column is an array that
// the driver serializes and PostgreSQL parses, for every poll of every batch.
/** An enrolment writes all of them. */
const ENROLLED_COLUMNS = Object.keys(POLL_ROW_SET_COLUMNS) as readonly PollRowSetColumn[];
/** The poll's row: the versions reported are written apart, only where they differ (recordReportedVersions). */
const RECORDED_COLUMNS = ['serial', 'now', 'ip', 'reported_values', 'new_install_code'] as const satisfies readonly PollRowSetColumn[];
const VERSION_COLUMNS = ['serial', 'kas_reported', 'batch_key_reported', 'wireless_key_reported'] as const satisfies readonly PollRowSetColumn[];
const PENDING_COLUMNS = ['serial', 'now', 'ip', 'kas_reported'] as const satisfies readonly PollRowSetColumn[];

/** The arrays of `columns` for a batch of polls, in that order: a precompiled statement's arguments. */
const pollColumns = (polls: readonly ObservedPoll[], columns: readonly PollRowSetColumn[]): unknown[][] =>
  columns.map((column) => {
    const valueOf: (poll: ObservedPoll) => unknown = POLL_ROW_SET_COLUMNS[column].of;
    return polls.map(valueOf);
  });

/** The row set `poll` of `columns`, each from the placeholder at its position. */
function pollRowSet(rowSet: RowSet, columns: readonly PollRowSetColumn[], placeholders: readonly unknown[]) {
  return rowSet<PollRowSet, 'poll'>(
    'poll',
    columns.map((name, index) => ({ name, type: POLL_ROW_SET_COLUMNS[name].type, values: placeholders[index] })),
  );
}

function setBased(rowSet: RowSet): PollStatements {
  // One statement for the batch: read each known OKM's desired state, and write its poll on
  // its okm_polls row (the wide okms row is only read). The upsert takes its row locks in
  // serial number order, so two batches over the same OKMs wait for each other rather than
  // deadlock; an OKM's concurrent polls are serialized there.
  const recordPollsQuery = precompiledQuery<CountedPollRow & { serial_number: string }, unknown[][]>(RECORDED_COLUMNS.length, (db, placeholders) =>
    db
      .with(
        (cte) => cte('known').materialized(),
        (db) =>
          db
            .selectFrom('okms')
            .innerJoin(pollRowSet(rowSet, RECORDED_COLUMNS, placeholders), 'poll.serial', 'okms.serial_number')
            .select((eb) => [...polledColumns(eb), 'okms.serial_number', 'poll.now', 'poll.ip', 'poll.reported_values', 'poll.new_install_code']),
      )
      .with('written', (db) =>
        db
          .insertInto('okm_polls')
          .columns(['serial_number', 'last_sync_time', 'last_ip', 'reported', 'install_code', 'status_queued_at', 'polls'])
          .expression((eb) =>
            eb
              .selectFrom('known')
              .select((eb) => [
                'known.serial_number',
                'known.now',
                'known.ip',
                'known.reported_values',
                'known.new_install_code',
                eb.case().when('known.status_urls', '=', NO_STATUS_URLS).then(sql<number | null>`null`).else(eb.ref('known.now')).end().as('status_queued_at'),
                sql<number>`1`.as('polls'),
              ])
              .orderBy('known.serial_number'),
          )
          .onConflict(okmPollUpsert)
          .returning(['okm_polls.serial_number', 'okm_polls.polls']),
      )
      .selectFrom('known')
      .innerJoin('written', 'written.serial_number', 'known.serial_number')
      // The OKM's row, not the poll's own values back.
      .select([...POLLED_COLUMNS.map((column) => `known.${column}` as const), 'known.pending_message_id', 'known.serial_number', 'written.polls']),
  );

  // One statement enrols the batch's unknown OKMs (enrolledOkmRow, enrolledPollRow): their okms
  // rows (unique-index entries taken in serial order, so two batches enrolling the same OKMs wait
  // rather than deadlock), their poll rows, and their serial numbers taken off the pending list.
  // It returns those inserted. The rows' columns that do not come from the poll are the
  // definitions' own values.
  const enrolOkmsQuery = precompiledQuery<{ serial_number: string }, unknown[][]>(ENROLLED_COLUMNS.length, (db, placeholders) => {
    const observation: PollObservation = { now: 0, ip: '', firmwareVersion: null, batchKeyFirmwareVersion: null, wirelessKeyFirmwareVersion: null, reported: '', installCode: null };
    const fromPoll = ['serial_number', 'created_at', 'updated_at', 'firmware_version', 'batch_key_firmware_version', 'wireless_key_firmware_version'];
    const fixed = Object.entries(enrolledOkmRow('', observation)).filter(([column]) => !fromPoll.includes(column));
    const pollRowFromPoll = ['serial_number', 'last_sync_time', 'last_ip', 'reported', 'install_code'];
    const pollRowFixed = Object.entries(enrolledPollRow('', observation)).filter(([column]) => !pollRowFromPoll.includes(column));
    return db
      .with('poll', (db) => db.selectFrom(pollRowSet(rowSet, ENROLLED_COLUMNS, placeholders)).selectAll())
      .with('inserted', (db) =>
        db
          .insertInto('okms')
          .columns([...(fixed.map(([column]) => column) as 'customer_id'[]), ...(fromPoll as 'serial_number'[])])
          .expression((eb) =>
            eb
              .selectFrom('poll')
              .select([
                ...fixed.map(([column, value]) => eb.val(value).as(column)),
                'poll.serial',
                'poll.now as created_at',
                'poll.now as updated_at',
                'poll.kas_reported',
                'poll.batch_key_reported',
                'poll.wireless_key_reported',
              ])
              .orderBy('poll.serial'),
          )
          .onConflict((oc) => oc.column('serial_number').doNothing())
          .returning('serial_number'),
      )
      .with('polled', (db) =>
        db
          .insertInto('okm_polls')
          .columns([...(pollRowFromPoll as 'serial_number'[]), ...(pollRowFixed.map(([column]) => column) as 'polls'[])])
          .expression((eb) =>
            eb
              .selectFrom('poll')
              .innerJoin('inserted', 'inserted.serial_number', 'poll.serial')
              .select([
                'poll.serial',
                'poll.now',
                'poll.ip',
                'poll.reported_values',
                'poll.new_install_code',
                ...pollRowFixed.map(([column, value]) => sql.lit(value as number | null).as(column)),
              ]),
          ),
      )
      .with('unpended', (db) => db.deleteFrom('pending_okms').where('serial_number', 'in', (eb) => eb.selectFrom('inserted').select('inserted.serial_number')))
      .selectFrom('inserted')
      .select('inserted.serial_number');
  });

  const recordPendingCallsQuery = precompiledQuery<{ serial_number: string; call_count: number }, unknown[][]>(PENDING_COLUMNS.length, (db, placeholders) =>
    db
      .insertInto('pending_okms')
      .columns(['serial_number', 'first_seen_at', 'last_seen_at', 'last_ip', 'firmware_version', 'call_count'])
      .expression((eb) =>
        eb
          .selectFrom(pollRowSet(rowSet, PENDING_COLUMNS, placeholders))
          .select(['poll.serial', 'poll.now as first_seen_at', 'poll.now as last_seen_at', 'poll.ip', 'poll.kas_reported', eb.val(1).as('call_count')])
          .orderBy('poll.serial'),
      )
      .onConflict(countAnotherCall)
      .returning(['serial_number', 'call_count']),
  );

  const findReleasesQuery = precompiledQuery<Selectable<FirmwareReleasesTable>, [string[], string[]]>(2, (db, [kinds, versions]) =>
    db
      .selectFrom(
        rowSet<{ kind: string; version: string }, 'pin'>('pin', [
          { name: 'kind', type: 'text', values: kinds },
          { name: 'version', type: 'text', values: versions },
        ]),
      )
      .innerJoin('firmware_releases', (join) => join.onRef('firmware_releases.kind', '=', 'pin.kind').onRef('firmware_releases.version', '=', 'pin.version'))
      .selectAll('firmware_releases'),
  );

  const findMessagesQuery = precompiledQuery<{ id: number; type: string; payload: string }, [number[]]>(1, (db, [ids]) =>
    db
      .selectFrom(rowSet<{ id: number }, 'wanted'>('wanted', [{ name: 'id', type: 'bigint', values: ids }]))
      .innerJoin('okm_messages', 'okm_messages.id', 'wanted.id')
      .select(['okm_messages.id', 'okm_messages.type', 'okm_messages.payload']),
  );

  const claimMessagesQuery = precompiledQuery<{ id: number }, [number[], number[]]>(2, (db, [ids, nows]) =>
    db
      .updateTable('okm_messages')
      .from(
        rowSet<{ id: number; now: number }, 'claim'>('claim', [
          { name: 'id', type: 'bigint', values: ids },
          { name: 'now', type: 'bigint', values: nows },
        ]),
      )
      .set((eb) => ({ delivered_at: eb.ref('claim.now') }))
      .whereRef('okm_messages.id', '=', 'claim.id')
      .where('okm_messages.delivered_at', 'is', null)
      .returning('okm_messages.id'),
  );

  // The OKMs' rows are locked already, by the batch's recordPolls.
  const endSilencesQuery = precompiledQuery<SilencedOkm & { serial_number: string }, [string[]]>(1, (db, [serials]) =>
    db
      .updateTable('okms')
      .from(rowSet<{ serial: string }, 'ended'>('ended', [{ name: 'serial', type: 'text', values: serials }]))
      .set({ overdue_at: null })
      .whereRef('okms.serial_number', '=', 'ended.serial')
      .where('okms.overdue_at', 'is not', null)
      .returning(['okms.serial_number', 'okms.customer_id', 'okms.firmware_version']),
  );

  // The OKMs' rows are locked already, by the batch's recordPolls.
  const recordReportedVersionsQuery = precompiledQuery<never, unknown[][]>(VERSION_COLUMNS.length, (db, placeholders) =>
    db
      .updateTable('okms')
      .from(pollRowSet(rowSet, VERSION_COLUMNS, placeholders))
      .set((eb) => ({
        firmware_version: eb.ref('poll.kas_reported'),
        batch_key_firmware_version: eb.ref('poll.batch_key_reported'),
        wireless_key_firmware_version: eb.ref('poll.wireless_key_reported'),
      }))
      .whereRef('okms.serial_number', '=', 'poll.serial'),
  );

  type CorrectionColumns = [string[], (string | null)[], (string | null)[], (number | null)[], (string | null)[], (string | null)[], (number | null)[]];
  const recordCorrectionsQuery = precompiledQuery<never, CorrectionColumns>(7, (db, [serials, corrections, digests, sincePolls, holds, stuckResolvers, stuckSinces]) =>
    db
      .updateTable('okms')
      .from(
        rowSet<
          { serial: string; correction: string | null; digest: string | null; since_poll: number | null; holds: string | null; stuck_resolver: string | null; stuck_since: number | null },
          'answered'
        >('answered', [
          { name: 'serial', type: 'text', values: serials },
          { name: 'correction', type: 'text', values: corrections },
          { name: 'digest', type: 'text', values: digests },
          { name: 'since_poll', type: 'bigint', values: sincePolls },
          { name: 'holds', type: 'text', values: holds },
          { name: 'stuck_resolver', type: 'text', values: stuckResolvers },
          { name: 'stuck_since', type: 'bigint', values: stuckSinces },
        ]),
      )
      .set((eb) => ({
        last_correction: eb.ref('answered.correction'),
        correction_digest: eb.ref('answered.digest'),
        correction_since_poll: eb.ref('answered.since_poll'),
        offer_hold: eb.ref('answered.holds'),
        stuck_resolver: eb.ref('answered.stuck_resolver'),
        stuck_since: eb.ref('answered.stuck_since'),
      }))
      .whereRef('okms.serial_number', '=', 'answered.serial'),
  );

  const keyed = <Row, Key>(rows: readonly Row[], key: (row: Row) => Key) => new Map(rows.map((row) => [key(row), row]));

  return {
    async recordPolls(db, polls) {
      if (polls.length === 0) return [];
      const { rows } = await recordPollsQuery(db, ...pollColumns(polls, RECORDED_COLUMNS));
      const bySerial = keyed(rows, (row) => row.serial_number);
      return polls.map(({ serialNumber }) => {
        const row = bySerial.get(serialNumber);
        if (!row) return undefined;
        // The driver's row is this poll's alone: completed in place, not copied, since a copy
        // of its 26 columns cost more than the rest of the poll's own row handling.
        row.polls = Number(row.polls);
        return row;
      });
    },
    async recordReportedVersions(db, polls) {
      if (polls.length === 0) return;
      await recordReportedVersionsQuery(db, ...pollColumns(polls, VERSION_COLUMNS));
    },
    async enrolOkms(db, polls) {
      if (polls.length === 0) return [];
      const { rows } = await enrolOkmsQuery(db, ...pollColumns(polls, ENROLLED_COLUMNS));
      const inserted = new Set(rows.map((row) => row.serial_number));
      for (const { serialNumber, observation } of polls) if (inserted.has(serialNumber)) await emitEnrolled(db, serialNumber, observation);
      return polls.map(({ serialNumber }) => inserted.has(serialNumber));
    },
    async recordPendingCalls(db, polls) {
      if (polls.length === 0) return;
      const { rows } = await recordPendingCallsQuery(db, ...pollColumns(polls, PENDING_COLUMNS));
      const firstCalls = new Set(rows.filter((row) => Number(row.call_count) === 1).map((row) => row.serial_number));
      for (const { serialNumber, observation } of polls) if (firstCalls.has(serialNumber)) await emitPending(db, serialNumber, observation);
    },
    async findReleases(db, pins) {
      if (pins.length === 0) return [];
      const { rows } = await findReleasesQuery(
        db,
        pins.map((pin) => pin.kind),
        pins.map((pin) => pin.version),
      );
      const found = keyed(rows.map(toRelease), (release) => `${release.kind}\n${release.version}`);
      return pins.map(({ kind, version }) => found.get(`${kind}\n${version}`));
    },
    async findMessages(db, ids) {
      if (ids.length === 0) return [];
      const { rows } = await findMessagesQuery(db, [...ids]);
      const found = keyed(rows, (row) => Number(row.id));
      return ids.map((id) => {
        const row = found.get(id);
        return row && { id: Number(row.id), type: row.type, payload: JSON.parse(row.payload) as unknown };
      });
    },
    async claimMessages(db, claims) {
      if (claims.length === 0) return [];
      const { rows } = await claimMessagesQuery(
        db,
        claims.map((claim) => claim.id),
        claims.map((claim) => claim.now),
      );
      const claimed = new Set(rows.map((row) => Number(row.id)));
      return claims.map(({ id }) => claimed.has(id));
    },
    async recordEndsOfSilence(db, ends) {
      if (ends.length === 0) return;
      const { rows } = await endSilencesQuery(
        db,
        ends.map((end) => end.serialNumber),
      );
      const cleared = keyed(rows, (row) => row.serial_number);
      for (const end of ends) {
        const okm = cleared.get(end.serialNumber);
        if (okm) await emitEndOfSilence(db, end, okm);
      }
    },
    async recordCorrections(db, corrections) {
      if (corrections.length === 0) return;
      const columns = corrections.map(({ record }) => correctionColumns(record));
      await recordCorrectionsQuery(
        db,
        corrections.map((answer) => answer.serialNumber),
        columns.map((column) => column.last_correction),
        columns.map((column) => column.correction_digest),
        columns.map((column) => column.correction_since_poll),
        columns.map((column) => column.offer_hold),
        columns.map((column) => column.stuck_resolver),
        columns.map((column) => column.stuck_since),
      );
    },
  };
}

/** The dialect's poll statements: set-based where it has row sets, else per row. */
export function pollStatementsFor(dialect: Pick<DialectStrategy, 'rowSet'>): PollStatements {
  return dialect.rowSet ? setBased(dialect.rowSet) : PER_ROW_POLL_STATEMENTS;
}
