import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { repeatStep } from '../db/repeating-step.ts';
import { CHAIN_BATCH, chainPendingEntries } from '../audit/chainer.ts';
import { signDueCheckpoints, type CheckpointSigningKey } from '../audit/checkpoints.ts';
import { pruneAuditTrail } from '../audit/retention.ts';
import auditLogRoutes from './routes.ts';

/** How often each server process looks for checkpoints due and entries past their retention. */
const AUDIT_UPKEEP_INTERVAL_MS = 10_000;
/** How often each server process chains the entries committed meanwhile: an entry is in the chain (and the log) within this long. */
const CHAINING_INTERVAL_MS = 250;

export interface AuditPluginOptions {
  /** The deployment's active signing key, which signs the checkpoints. */
  signingKey: () => Promise<CheckpointSigningKey>;
}

/** The audit trail's routes, and its upkeep: chaining the entries committed, signed checkpoints, and retention when AUDIT_RETENTION_DAYS is set. */
async function auditPlugin(app: FastifyInstance, options: AuditPluginOptions): Promise<void> {
  await app.register(auditLogRoutes, { prefix: '/api/v1/audit-log' });
  // A full batch means more are waiting: the next batch at once. Otherwise the interval, so that
  // under a steady stream of changes each batch carries an interval's entries, and the chaining
  // transaction's own statements (the head row, the read, the move) are paid once for them all.
  repeatStep(app, 'audit chaining', CHAINING_INTERVAL_MS, async () => ((await chainPendingEntries(app.db, app.dialect.rowSet)) >= CHAIN_BATCH ? 0 : CHAINING_INTERVAL_MS));
  const retentionDays = app.settings.auditRetentionDays;
  repeatStep(app, 'audit trail upkeep', AUDIT_UPKEEP_INTERVAL_MS, async () => {
    const signed = await signDueCheckpoints(app.db, options.signingKey);
    const pruned = retentionDays === null ? 0 : await pruneAuditTrail(app.db, retentionDays);
    return signed > 0 || pruned > 0 ? 0 : AUDIT_UPKEEP_INTERVAL_MS;
  });
}

export default fp(auditPlugin, { name: 'keyfleet-audit' });
