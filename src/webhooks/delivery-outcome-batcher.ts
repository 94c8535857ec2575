import type { Db } from '../db/database.ts';
import type { DialectStrategy } from '../db/dialects/strategy.ts';
import type { ClaimedDelivery } from './claimed-delivery.ts';
import { recordFleetAttempts, type ClaimedFleetDelivery } from './fleet-deliveries-repository.ts';
import { recordAttempts, type AttemptRecord } from './queue-repository.ts';

/**
 * Outcomes are written once this many have gathered, or this long after the first: a write
 * costs about as much for one row as for dozens (a transaction, a commit), and on SQLite the
 * writes block the event loop, so without a wait each batch held only the few attempts that
 * finished in one turn of it (9 rows on average at 20 000 events). A sent row no longer needs
 * its host while it waits, so the wait holds up no delivery.
 */
const OUTCOME_BATCH = 128;
const OUTCOME_WAIT_MS = 10;

export interface DeliveryOutcomeBatcherOptions {
  db: Db;
  dialect: DialectStrategy;
  /** True while the dispatcher stops: a batch is then written without waiting for more. */
  stopping: () => boolean;
  /**
   * True once a stopping dispatcher has found the database unavailable: a batch is then not
   * tried, since each try could cost a connection timeout and the batches wait for each other.
   */
  databaseGone: () => boolean;
  /**
   * A batch could not be written, or was not tried (error undefined, see databaseGone): its
   * claims lapse and its rows are attempted again (at least once, never lost).
   */
  onWriteFailure: (error: unknown, count: number) => void;
}

export interface DeliveryOutcomeBatcher {
  /** Adds an attempt's outcome; resolves once it is written, with the others of its batch (or the write failed). */
  record(record: AttemptRecord<ClaimedDelivery>): Promise<void>;
}

/**
 * Writes the outcomes of the attempts of status and fleet events alike in batches (see
 * OUTCOME_BATCH), one batch at a time: the status events' rows in one transaction, the fleet
 * events' in another.
 */
export function createDeliveryOutcomeBatcher({ db, dialect, stopping, databaseGone, onWriteFailure }: DeliveryOutcomeBatcherOptions): DeliveryOutcomeBatcher {
  let gathered: AttemptRecord<ClaimedDelivery>[] = [];
  /** The last batch write begun; the next waits for it. */
  let writing: Promise<void> = Promise.resolve();
  /** Ends the wait of the next batch (see OUTCOME_WAIT_MS). */
  let writeNow: (() => void) | undefined;

  /** Writes the outcomes gathered since the last write, in one batch. */
  async function writeBatch(): Promise<void> {
    if (gathered.length < OUTCOME_BATCH && !stopping()) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, OUTCOME_WAIT_MS);
        writeNow = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      writeNow = undefined;
    }
    const batch = gathered;
    gathered = [];
    if (databaseGone()) {
      onWriteFailure(undefined, batch.length);
      return;
    }
    try {
      await recordAttempts(db, dialect, batch.filter((record): record is AttemptRecord => record.event.kind === 'status'));
      await recordFleetAttempts(db, dialect, batch.filter((record): record is AttemptRecord<ClaimedFleetDelivery> => record.event.kind === 'fleet'));
    } catch (error) {
      onWriteFailure(error, batch.length);
    }
  }

  return {
    async record(record) {
      gathered.push(record);
      // The first of a batch queues its write; the write then takes all gathered by the time it runs.
      if (gathered.length === 1) writing = writing.then(writeBatch);
      else if (gathered.length >= OUTCOME_BATCH) writeNow?.();
      await writing;
    },
  };
}
