import type { Db } from '../db/database.ts';
import { open, seal } from '../secrets/sealed-box.ts';
import { generateWebhookSecret } from './signing.ts';
import { sealedColumn } from '../secrets/sealed-columns.ts';
import type { KeyRing } from '../secrets/key-ring.ts';

/** The signing secret of OKMs that belong to no customer. */
export const DEPLOYMENT_OWNER = 'deployment';
export const customerOwner = (customerId: number) => `customer:${customerId}`;
export const ownerOf = (customerId: number | null) => (customerId === null ? DEPLOYMENT_OWNER : customerOwner(customerId));

export interface WebhookSecrets {
  current: string;
  /** The secret before the last rotation, while it still signs. */
  previous: { secret: string; validUntil: number } | null;
}

const associatedData = (owner: string) => `webhook-secret:${owner}`;

const webhookSecretColumn = (column: 'secret_sealed' | 'previous_secret_sealed') =>
  sealedColumn({ table: 'webhook_secrets', column, key: 'owner', reads: ['owner'], associatedData: (row) => associatedData(row.owner as string) });
export const WEBHOOK_SECRETS = webhookSecretColumn('secret_sealed');
export const PREVIOUS_WEBHOOK_SECRETS = webhookSecretColumn('previous_secret_sealed');

/** The owner's secrets, making the current one on first use (concurrent first uses agree on one). */
export async function webhookSecrets(db: Db, keyRing: KeyRing, owner: string, now: number): Promise<WebhookSecrets> {
  let row = await db.selectFrom('webhook_secrets').selectAll().where('owner', '=', owner).executeTakeFirst();
  if (!row) {
    await db
      .insertInto('webhook_secrets')
      .values({ owner, secret_sealed: await seal(keyRing, generateWebhookSecret(), associatedData(owner)), created_at: now })
      .onConflict((oc) => oc.column('owner').doNothing())
      .execute();
    row = await db.selectFrom('webhook_secrets').selectAll().where('owner', '=', owner).executeTakeFirstOrThrow();
  }
  const unseal = async (sealed: string) => (await open(keyRing, sealed, associatedData(owner))).toString();
  const previousValid = row.previous_secret_sealed !== null && row.previous_valid_until !== null && row.previous_valid_until > now;
  return {
    current: await unseal(row.secret_sealed),
    previous: previousValid ? { secret: await unseal(row.previous_secret_sealed!), validUntil: row.previous_valid_until! } : null,
  };
}

/**
 * Replaces the owner's secret with a new one. The replaced secret keeps signing (a second
 * signature in the same header) for overlapMs, so that subscribers can switch without
 * rejecting events; a secret from an earlier rotation stops at once.
 */
export async function rotateWebhookSecret(db: Db, keyRing: KeyRing, owner: string, now: number, overlapMs: number): Promise<WebhookSecrets> {
  const { current } = await webhookSecrets(db, keyRing, owner, now);
  const next = generateWebhookSecret();
  const validUntil = now + overlapMs;
  await db
    .updateTable('webhook_secrets')
    .set({
      secret_sealed: await seal(keyRing, next, associatedData(owner)),
      previous_secret_sealed: overlapMs > 0 ? await seal(keyRing, current, associatedData(owner)) : null,
      previous_valid_until: overlapMs > 0 ? validUntil : null,
      rotated_at: now,
    })
    .where('owner', '=', owner)
    .execute();
  return { current: next, previous: overlapMs > 0 ? { secret: current, validUntil } : null };
}
