import { sql, type SelectQueryBuilder } from 'kysely';
import type { Db } from '../db/database.ts';
import type { DialectStrategy, RowSet } from '../db/dialects/strategy.ts';
import { precompiledQuery } from '../db/precompiled-query.ts';
import type { Database, FirmwareReleasesTable } from '../db/schema.ts';
import { findRelease, toRelease, type FirmwareRelease } from '../firmware/repository.ts';
import { FIRMWARE_KINDS, type FirmwareKind } from '../firmware/version.ts';
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
  PIN_COLUMNS,
  polledColumns,
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

/** An OKM's effective release of each kind that has one (see effectiveReleases). */
export type EffectiveReleases = Partial<Record<FirmwareKind, FirmwareRelease>>;

/** A recorded poll's PolledOkmRow, with its OKM's effective releases where the statement read them with the poll. */
export interface RecordedPollRow extends CountedPollRow {
  releases?: EffectiveReleases;
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
  /**
   * Records each poll on its OKM and returns the OKM's PolledOkmRow; undefined for an unknown
   * serial number. Set-based, the row carries the OKM's effective releases, read in the same
   * statement: a batch then needs no read of the fleet's latest releases of its own.
   */
  recordPolls(db: Db, polls: readonly ObservedPoll[]): Promise<(RecordedPollRow | undefined)[]>;
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

type PollColumns = [string[], number[], string[], (string | null)[], (string | null)[], (string | null)[], string[], (string | null)[]];

function pollColumns(polls: readonly ObservedPoll[]): PollColumns {
  const column = <T>(value: (poll: ObservedPoll) => T) => polls.map(value);
  return [
    column((poll) => poll.serialNumber),
    column((poll) => poll.observation.now),
    column((poll) => poll.observation.ip),
    column((poll) => poll.observation.firmwareVersion),
    column((poll) => poll.observation.batchKeyFirmwareVersion),
    column((poll) => poll.observation.wirelessKeyFirmwareVersion),
    column((poll) => poll.observation.reported),
    column((poll) => poll.observation.installCode),
  ];
}

function pollRowSet(rowSet: RowSet, placeholders: readonly unknown[]) {
  const [serial, now, ip, kas, batchKey, wirelessKey, reported, installCode] = placeholders;
  return rowSet<PollRowSet, 'poll'>('poll', [
    { name: 'serial', type: 'text', values: serial },
    { name: 'now', type: 'bigint', values: now },
    { name: 'ip', type: 'text', values: ip },
    { name: 'kas_reported', type: 'text', values: kas },
    { name: 'batch_key_reported', type: 'text', values: batchKey },
    { name: 'wireless_key_reported', type: 'text', values: wirelessKey },
    { name: 'reported_values', type: 'text', values: reported },
    { name: 'new_install_code', type: 'text', values: installCode },
  ]);
}

/** The columns of an OKM's effective release of one kind, each kind's under its own prefix (`kas_release_version`, ...). */
type EffectiveReleaseColumns = {
  [Column in Exclude<keyof FirmwareReleasesTable, 'kind'> as `${FirmwareKind}_release_${Column}`]: FirmwareReleasesTable[Column] | null;
};

const releaseAlias = (kind: FirmwareKind) => `${kind}_release` as const;
const RELEASE_COLUMNS = ['version', 'url', 'sha256', 'size', 'created_at'] as const satisfies readonly (keyof FirmwareReleasesTable)[];
type ReleaseColumn = (typeof RELEASE_COLUMNS)[number];
/** For each kind, the name of each of its release's columns in the statement's rows. */
const RELEASE_COLUMN_NAMES = FIRMWARE_KINDS.map((kind) => ({
  kind,
  // Typed as kas's: each kind's columns have the same types.
  names: Object.fromEntries(RELEASE_COLUMNS.map((column) => [column, `${releaseAlias(kind)}_${column}`])) as { [Column in ReleaseColumn]: `kas_release_${Column}` },
}));
const EFFECTIVE_RELEASE_COLUMNS = RELEASE_COLUMN_NAMES.flatMap(({ kind, names }) => RELEASE_COLUMNS.map((column) => sql.ref(`${releaseAlias(kind)}.${column}`).as(names[column])));

/**
 * Joins each OKM's effective release of each kind (effectiveReleases' rule): the release of its
 * pin, else of the fleet's latest of that kind; none where that version is not in the catalog.
 */
function joinEffectiveReleases<Query extends SelectQueryBuilder<Database, 'okms', object>>(query: Query): Query {
  return FIRMWARE_KINDS.reduce(
    (joined, kind) =>
      joined.leftJoin(`firmware_releases as ${releaseAlias(kind)}`, (join) =>
        join
          .on(`${releaseAlias(kind)}.kind`, '=', kind)
          .on((eb) =>
            eb(
              `${releaseAlias(kind)}.version`,
              '=',
              eb.fn.coalesce(`okms.${PIN_COLUMNS[kind]}`, eb.selectFrom('fleet_firmware').select('fleet_firmware.version').where('fleet_firmware.kind', '=', kind)),
            ),
          ),
      ) as unknown as Query,
    query,
  );
}

/** The effective releases a row of the batch statement carries; `seen` shares one release object among a batch's rows (most carry the same). */
function effectiveReleasesIn(row: EffectiveReleaseColumns, seen: Map<string, FirmwareRelease>): EffectiveReleases {
  const releases: EffectiveReleases = {};
  for (const { kind, names } of RELEASE_COLUMN_NAMES) {
    const version = row[names.version];
    if (version === null) continue;
    const key = `${kind}\n${version}`;
    let release = seen.get(key);
    if (!release) {
      const size = row[names.size];
      release = toRelease({ kind, version, url: row[names.url], sha256: row[names.sha256]!, size: size === null ? null : Number(size), created_at: Number(row[names.created_at]) });
      seen.set(key, release);
    }
    releases[kind] = release;
  }
  return releases;
}

function setBased(rowSet: RowSet): PollStatements {
  // One statement for the batch: read each known OKM's desired state and its effective
  // releases, and write its poll on its okm_polls row (the wide okms row is only read). The
  // upsert takes its row locks in serial number order, so two batches over the same OKMs wait
  // for each other rather than deadlock; an OKM's concurrent polls are serialized there.
  const recordPollsQuery = precompiledQuery<CountedPollRow & EffectiveReleaseColumns & { serial_number: string }, PollColumns>(8, (db, placeholders) =>
    db
      .with(
        (cte) => cte('known').materialized(),
        (db) =>
          db
            .selectFrom('okms')
            .innerJoin(pollRowSet(rowSet, placeholders), 'poll.serial', 'okms.serial_number')
            .$call(joinEffectiveReleases)
            .select((eb) => [...polledColumns(eb), 'okms.serial_number', 'poll.now', 'poll.ip', 'poll.reported_values', 'poll.new_install_code'])
            .select(EFFECTIVE_RELEASE_COLUMNS),
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
      .selectAll('known')
      .select('written.polls'),
  );

  // One statement enrols the batch's unknown OKMs (enrolledOkmRow, enrolledPollRow): their okms
  // rows (unique-index entries taken in serial order, so two batches enrolling the same OKMs wait
  // rather than deadlock), their poll rows, and their serial numbers taken off the pending list.
  // It returns those inserted. The rows' columns that do not come from the poll are the
  // definitions' own values.
  const enrolOkmsQuery = precompiledQuery<{ serial_number: string }, PollColumns>(8, (db, placeholders) => {
    const observation: PollObservation = { now: 0, ip: '', firmwareVersion: null, batchKeyFirmwareVersion: null, wirelessKeyFirmwareVersion: null, reported: '', installCode: null };
    const fromPoll = ['serial_number', 'created_at', 'updated_at', 'firmware_version', 'batch_key_firmware_version', 'wireless_key_firmware_version'];
    const fixed = Object.entries(enrolledOkmRow('', observation)).filter(([column]) => !fromPoll.includes(column));
    const pollRowFromPoll = ['serial_number', 'last_sync_time', 'last_ip', 'reported', 'install_code'];
    const pollRowFixed = Object.entries(enrolledPollRow('', observation)).filter(([column]) => !pollRowFromPoll.includes(column));
    return db
      .with('poll', (db) => db.selectFrom(pollRowSet(rowSet, placeholders)).selectAll())
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

  const recordPendingCallsQuery = precompiledQuery<{ serial_number: string; call_count: number }, PollColumns>(8, (db, placeholders) =>
    db
      .insertInto('pending_okms')
      .columns(['serial_number', 'first_seen_at', 'last_seen_at', 'last_ip', 'firmware_version', 'call_count'])
      .expression((eb) =>
        eb
          .selectFrom(pollRowSet(rowSet, placeholders))
          .select(['poll.serial', 'poll.now as first_seen_at', 'poll.now as last_seen_at', 'poll.ip', 'poll.kas_reported', eb.val(1).as('call_count')])
          .orderBy('poll.serial'),
      )
      .onConflict(countAnotherCall)
      .returning(['serial_number', 'call_count']),
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
  const recordReportedVersionsQuery = precompiledQuery<never, PollColumns>(8, (db, placeholders) =>
    db
      .updateTable('okms')
      .from(pollRowSet(rowSet, placeholders))
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
      const { rows } = await recordPollsQuery(db, ...pollColumns(polls));
      const bySerial = keyed(rows, (row) => row.serial_number);
      const releases = new Map<string, FirmwareRelease>();
      return polls.map(({ serialNumber }) => {
        const row = bySerial.get(serialNumber);
        if (!row) return undefined;
        return { ...row, polls: Number(row.polls), releases: effectiveReleasesIn(row, releases) };
      });
    },
    async recordReportedVersions(db, polls) {
      if (polls.length === 0) return;
      await recordReportedVersionsQuery(db, ...pollColumns(polls));
    },
    async enrolOkms(db, polls) {
      if (polls.length === 0) return [];
      const { rows } = await enrolOkmsQuery(db, ...pollColumns(polls));
      const inserted = new Set(rows.map((row) => row.serial_number));
      for (const { serialNumber, observation } of polls) if (inserted.has(serialNumber)) await emitEnrolled(db, serialNumber, observation);
      return polls.map(({ serialNumber }) => inserted.has(serialNumber));
    },
    async recordPendingCalls(db, polls) {
      if (polls.length === 0) return;
      const { rows } = await recordPendingCallsQuery(db, ...pollColumns(polls));
      const firstCalls = new Set(rows.filter((row) => Number(row.call_count) === 1).map((row) => row.serial_number));
      for (const { serialNumber, observation } of polls) if (firstCalls.has(serialNumber)) await emitPending(db, serialNumber, observation);
    },
    // Not called for polls that recordPolls recorded: their rows carry their releases.
    findReleases: PER_ROW_POLL_STATEMENTS.findReleases,
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
