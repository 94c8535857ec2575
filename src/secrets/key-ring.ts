import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Db } from '../db/database.ts';
import type { DataKeysTable } from '../db/schema.ts';
import { UnavailableError } from '../http/errors.ts';
import { masterKeyFingerprint, type MasterKey } from './master-key.ts';
import { legacyValuesOpen } from './reseal.ts';
import { decrypt, encrypt } from './sealed-box.ts';
import type { SealedColumn } from './sealed-columns.ts';

/** A process re-reads the ring this often (in the background, on the next seal after it is due). */
export const RING_REFRESH_MS = 5_000;
/**
 * A process never seals with a ring older than this: past it, a seal waits for the re-read and
 * fails if the re-read fails. Retiring a key waits longer than this (RETIRE_AFTER_MS).
 */
export const RING_MAX_AGE_MS = 30_000;
/**
 * After the ring failed to load with this master key (the database names another), reads of
 * the ring within this long fail with that answer at once: a process still on the old key
 * reads the database, and its key file, at most once per interval, however many requests it gets.
 */
export const MISMATCH_RECHECK_MS = 1_000;

/**
 * The master key given is not the one that wraps the database's data keys. For a request, a
 * 503: another process changed the master key and this one has not been restarted with the
 * new one (MASTER_KEY) or could not read it from its key file. Other servers, or this one once
 * restarted, answer; /readyz is 503 meanwhile, so that a load balancer stops sending here.
 */
export class MasterKeyMismatchError extends UnavailableError {
  readonly errorCode = 'KEY_RING_UNAVAILABLE';
  readonly clientMessage = 'The master key has changed and this server does not hold the new one yet, try again later';
  readonly warning = 'requests failed: this server does not hold the master key the database names; restart it with the new MASTER_KEY';
  logFields() {
    return { keyRing: this.message };
  }
}

interface LoadedRing {
  current: string;
  keys: Map<string, Buffer>;
  loadedAt: number;
}

const wrapAssociatedData = (kid: string) => `keyfleet data key ${kid}`;

function wrapDataKey(masterKey: Buffer, kid: string, dataKey: Buffer): string {
  return encrypt(masterKey, dataKey, wrapAssociatedData(kid));
}

/** A new data key row (kid and wrapped key) under the given master key. */
function newDataKey(masterKey: Buffer, now: number): Pick<DataKeysTable, 'kid' | 'state' | 'wrapped_key' | 'master_key_check' | 'created_at'> {
  const kid = randomBytes(6).toString('hex');
  return { kid, state: 'current', wrapped_key: wrapDataKey(masterKey, kid, randomBytes(32)), master_key_check: masterKeyFingerprint(masterKey), created_at: now };
}

/**
 * The data keys of the database (the current one, which seals, and the previous one, which
 * still opens until it is retired), unwrapped with the master key and held in memory.
 * Created unloaded: refresh() loads it and verifies the master key; seal re-reads it when due,
 * open at once when a value names a key it does not hold. A loaded ring whose database names
 * another master key takes that key from its key file if the file holds it now (a master key
 * change by the CLI); with MASTER_KEY it cannot, and every use that needs a re-read fails with
 * MasterKeyMismatchError (a 503 for requests) until the process restarts with the new key.
 */
export class KeyRing {
  readonly #db: Db;
  #masterKey: MasterKey;
  #fingerprint: string;
  readonly #refreshMs: number;
  readonly #maxAgeMs: number;
  /** Every column sealed under the ring's data keys: what resealing reaches, and what must open before the first data key is made. */
  readonly sealedColumns: readonly SealedColumn[];
  #loaded: LoadedRing | undefined;
  #refreshing: Promise<void> | undefined;
  /** The last load's refusal of this master key, and when (performance.now()); see MISMATCH_RECHECK_MS. */
  #mismatch: { error: MasterKeyMismatchError; at: number } | undefined;

  constructor(
    db: Db,
    masterKey: MasterKey,
    sealedColumns: readonly SealedColumn[],
    options: { refreshMs?: number; maxAgeMs?: number } = {},
  ) {
    this.#db = db;
    this.#masterKey = masterKey;
    this.#fingerprint = masterKeyFingerprint(masterKey.key);
    this.sealedColumns = sealedColumns;
    this.#refreshMs = options.refreshMs ?? RING_REFRESH_MS;
    this.#maxAgeMs = options.maxAgeMs ?? RING_MAX_AGE_MS;
  }

  /** The fingerprint of the master key the ring holds (it changes when the ring takes a new key from its key file). */
  get fingerprint(): string {
    return this.#fingerprint;
  }

  /** A new current data key row, wrapped under this ring's master key or the one given. */
  newDataKeyRow(now: number, masterKey = this.#masterKey.key) {
    return newDataKey(masterKey, now);
  }

  /** A data key of the database, unwrapped with this ring's master key and wrapped again under `newMasterKey`. */
  rewrap(row: { kid: string; wrapped_key: string }, newMasterKey: Buffer): string {
    return wrapDataKey(newMasterKey, row.kid, decrypt(this.#masterKey.key, row.wrapped_key, wrapAssociatedData(row.kid)));
  }

  /**
   * Re-reads the ring now (concurrent callers share one read); rejects on a wrong master key,
   * at once and without a read within MISMATCH_RECHECK_MS of the last such refusal.
   */
  refresh(): Promise<void> {
    if (this.#mismatch && performance.now() - this.#mismatch.at < MISMATCH_RECHECK_MS) return Promise.reject(this.#mismatch.error);
    this.#refreshing ??= this.#load().then(
      () => {
        this.#refreshing = undefined;
        this.#mismatch = undefined;
      },
      (error: unknown) => {
        this.#refreshing = undefined;
        if (error instanceof MasterKeyMismatchError) this.#mismatch = { error, at: performance.now() };
        throw error;
      },
    );
    return this.#refreshing;
  }

  /** Why the ring cannot be used right now (re-read for the answer), or undefined when it can. */
  async problem(): Promise<string | undefined> {
    try {
      await this.refresh();
      return undefined;
    } catch (error) {
      return `key ring: ${(error as Error).message}`;
    }
  }

  /** The data key that seals now. */
  async currentKid(): Promise<string> {
    return (await this.#fresh()).current;
  }

  async seal(plaintext: Buffer | string, associatedData: string): Promise<string> {
    const { current, keys } = await this.#fresh();
    return `v2.${current}.${encrypt(keys.get(current)!, plaintext, associatedData)}`;
  }

  async open(sealed: string, associatedData: string): Promise<Buffer> {
    const firstDot = sealed.indexOf('.');
    const version = sealed.slice(0, firstDot);
    if (version === 'v1') return decrypt(this.#masterKey.key, sealed.slice(firstDot + 1), associatedData);
    const secondDot = sealed.indexOf('.', firstDot + 1);
    if (version !== 'v2' || secondDot === -1) throw new Error('sealed value has an unknown format');
    const kid = sealed.slice(firstDot + 1, secondDot);
    if (!this.#loaded?.keys.has(kid)) await this.refresh();
    const key = this.#loaded!.keys.get(kid);
    if (!key) throw new Error(`sealed under data key ${kid}, which the database no longer holds`);
    return decrypt(key, sealed.slice(secondDot + 1), associatedData);
  }

  /** The ring to seal with: re-read in the background once due, and waited for once too old to trust. */
  async #fresh(): Promise<LoadedRing> {
    const age = this.#loaded ? performance.now() - this.#loaded.loadedAt : Infinity;
    if (age >= this.#maxAgeMs) await this.refresh();
    // The next seal waits if this background re-read fails for too long; nothing to report here.
    else if (age >= this.#refreshMs) this.refresh().catch(() => {});
    return this.#loaded!;
  }

  async #load(): Promise<void> {
    // The ring is as old as the moment its read began: a rotation may commit while it runs.
    const readAt = performance.now();
    let rows = await this.#liveRows();
    if (!rows.some((row) => row.state === 'current')) {
      await this.#createFirstDataKey();
      rows = await this.#liveRows();
    }
    const current = rows.find((row) => row.state === 'current');
    if (!current) throw new Error('the database holds no current data key');
    let masterKey = this.#masterKey;
    const expected = rows.find((row) => row.master_key_check !== this.#fingerprint)?.master_key_check;
    if (expected !== undefined) {
      // A master key change (keyfleet master-key rotate --new-key-file) replaced the key file
      // of this running process: the key the database names is taken from there, and only that
      // one. Not at start, where a key change that stopped half-way is refused with a hint
      // (load-key-ring.ts) so that the operator completes it.
      if (this.#loaded) masterKey = this.#masterKey.reread?.().find((candidate) => masterKeyFingerprint(candidate.key) === expected) ?? masterKey;
      if (masterKey === this.#masterKey) {
        throw new MasterKeyMismatchError(`database expects master key ${expected}, ${this.#masterKey.source} is ${this.#fingerprint}`);
      }
    }
    const fingerprint = masterKeyFingerprint(masterKey.key);
    const keys = new Map(
      rows.map((row) => {
        try {
          return [row.kid, decrypt(masterKey.key, row.wrapped_key!, wrapAssociatedData(row.kid))] as const;
        } catch {
          throw new MasterKeyMismatchError(`data key ${row.kid} does not open with master key ${fingerprint} although the database names it`);
        }
      }),
    );
    this.#masterKey = masterKey;
    this.#fingerprint = fingerprint;
    this.#loaded = { current: current.kid, keys, loadedAt: readAt };
  }

  #liveRows() {
    return this.#db.selectFrom('data_keys').select(['kid', 'state', 'wrapped_key', 'master_key_check']).where('state', 'in', ['current', 'previous']).execute();
  }

  async #createFirstDataKey(): Promise<void> {
    if (!(await legacyValuesOpen(this.#db, this.sealedColumns, this.#masterKey.key))) {
      throw new MasterKeyMismatchError(
        `the values already in the database do not open with master key ${this.fingerprint} (${this.#masterKey.source}): give the master key they were sealed under`,
      );
    }
    // Two processes starting on an empty table: the unique index on the state lets one insert win.
    await this.#db
      .insertInto('data_keys')
      .values(newDataKey(this.#masterKey.key, Date.now()))
      .onConflict((conflict) => conflict.doNothing())
      .execute();
  }
}
