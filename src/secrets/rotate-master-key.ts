import { recordChange, type ChangeSource } from '../audit/trail.ts';
import type { Db } from '../db/database.ts';
import { KeyRing, RING_MAX_AGE_MS } from './key-ring.ts';
import { masterKeyFingerprint, type MasterKey } from './master-key.ts';
import { countSealedNotUnder, resealValues } from './reseal.ts';

/**
 * A previous data key may be retired this long after it stopped being current: every process
 * re-reads the ring within RING_MAX_AGE_MS or stops sealing, and the rest covers requests in
 * flight and clocks that differ between hosts.
 */
export const RETIRE_AFTER_MS = RING_MAX_AGE_MS + 90_000;

export interface Rotation {
  kid: string;
  previous: string;
  masterKeyFingerprint: string;
  resealed: Record<string, number>;
}

/**
 * Makes a new data key current (the current one becomes previous and still opens), then
 * reseals every value under it. With `newMasterKey`, every data key is also rewrapped under
 * it, in the same transaction. Works while servers run: they pick up the new key within
 * RING_REFRESH_MS; what they seal meanwhile under the previous key stays readable and is
 * resealed by retirePreviousKey. Refused while a previous key is kept. The audit entry
 * (master_key.rotated, the entity named by the new data key's kid) commits with the change of
 * keys; the resealing after it changes no value, only what it is sealed under.
 */
export async function rotateKeys(db: Db, ring: KeyRing, source: ChangeSource, options: { newMasterKey?: MasterKey; now?: number } = {}): Promise<Rotation> {
  const now = options.now ?? Date.now();
  const newMasterKey = options.newMasterKey?.key;
  if (newMasterKey && masterKeyFingerprint(newMasterKey) === ring.fingerprint) throw new Error('the new master key is the current one');
  await ring.refresh();
  // Values from before key ids are sealed directly under the master key: move them while it opens them.
  if (newMasterKey) await resealValues(db, ring);

  const { kid, previous } = await db.transaction().execute(async (tx) => {
    // Write first: a SQLite transaction that reads, then writes after another process wrote,
    // fails at once with "database is locked"; on PostgreSQL this orders concurrent rotations.
    await tx.updateTable('data_keys').set((eb) => ({ state: eb.ref('state') })).where('state', '=', 'current').execute();
    const live = await tx.selectFrom('data_keys').selectAll().where('state', 'in', ['current', 'previous']).execute();
    const kept = live.find((row) => row.state === 'previous');
    if (kept) {
      throw new Error(`data key ${kept.kid} is still kept as the previous key: retire it first (keyfleet master-key retire --yes)`);
    }
    const current = live.find((row) => row.state === 'current');
    if (!current || current.master_key_check !== ring.fingerprint) throw new Error('the data keys changed meanwhile (another rotation?): try again');
    const next = ring.newDataKeyRow(now, newMasterKey);
    const demoted = await tx
      .updateTable('data_keys')
      .set({
        state: 'previous',
        previous_since: now,
        ...(newMasterKey ? { wrapped_key: ring.rewrap({ kid: current.kid, wrapped_key: current.wrapped_key! }, newMasterKey), master_key_check: masterKeyFingerprint(newMasterKey) } : {}),
      })
      .where('kid', '=', current.kid)
      .where('state', '=', 'current')
      .executeTakeFirst();
    if (Number(demoted.numUpdatedRows) !== 1) throw new Error('the data keys changed meanwhile (another rotation?): try again');
    await tx.insertInto('data_keys').values(next).execute();
    await recordChange(
      tx,
      source,
      {
        action: 'master_key.rotated',
        customer: null,
        entity: { type: 'master_key', id: next.kid },
        before: { data_key: current.kid, master_key: ring.fingerprint },
        after: { data_key: next.kid, previous_data_key: current.kid, master_key: newMasterKey ? masterKeyFingerprint(newMasterKey) : ring.fingerprint },
      },
      now,
    );
    return { kid: next.kid, previous: current.kid };
  });

  const sealingRing = options.newMasterKey ? new KeyRing(db, options.newMasterKey, ring.sealedColumns) : ring;
  await sealingRing.refresh();
  const resealed = await resealValues(db, sealingRing);
  return { kid, previous, masterKeyFingerprint: sealingRing.fingerprint, resealed };
}

export interface Retirement {
  kid: string;
  resealed: Record<string, number>;
}

/**
 * Retires the previous data key: reseals what is still under it (a server that had not
 * re-read the ring may have sealed under it after the rotation), checks that nothing remains,
 * and deletes its material, with its audit entry (master_key.retired, the entity named by its
 * kid). Refused until RETIRE_AFTER_MS after it stopped being current.
 */
export async function retirePreviousKey(db: Db, ring: KeyRing, source: ChangeSource, now = Date.now()): Promise<Retirement> {
  await ring.refresh();
  const previous = await db.selectFrom('data_keys').select(['kid', 'previous_since']).where('state', '=', 'previous').executeTakeFirst();
  if (!previous) throw new Error('there is no previous data key to retire');
  const retireFrom = Number(previous.previous_since) + RETIRE_AFTER_MS;
  if (now < retireFrom) {
    throw new Error(
      `data key ${previous.kid} stopped being current at ${new Date(Number(previous.previous_since)).toISOString()}; servers that have not re-read the key ring may still seal under it: retire it from ${new Date(retireFrom).toISOString()}`,
    );
  }
  const resealed = await resealValues(db, ring);
  const remaining = await countSealedNotUnder(db, ring.sealedColumns, await ring.currentKid());
  if (remaining > 0) throw new Error(`${remaining} values are still not under the current data key; nothing retired (try again)`);
  await db.transaction().execute(async (tx) => {
    const retired = await tx
      .updateTable('data_keys')
      .set({ state: 'retired', wrapped_key: null, retired_at: now })
      .where('kid', '=', previous.kid)
      .where('state', '=', 'previous')
      .executeTakeFirst();
    // Zero rows: another retirement of the same key committed first, and recorded it.
    if (Number(retired.numUpdatedRows) === 0) return;
    await recordChange(
      tx,
      source,
      {
        action: 'master_key.retired',
        customer: null,
        entity: { type: 'master_key', id: previous.kid },
        before: { state: 'previous', previous_since: new Date(Number(previous.previous_since)).toISOString() },
        after: { state: 'retired' },
      },
      now,
    );
  });
  return { kid: previous.kid, resealed };
}
