import fp from 'fastify-plugin';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { createOutageLog } from '../db/connection-errors.ts';
import { HttpError } from '../http/errors.ts';

const READINESS_TIMEOUT_MS = 2_000;

const Status = Type.Object({ status: Type.Literal('ok') });

/** Rejects after `ms`, so that a database that hangs makes the probe fail rather than hang with it. */
const timeout = (ms: number) =>
  new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref());

/**
 * Probes for orchestrators and load balancers: /healthz answers while the process runs;
 * /readyz only while the database answers, the key ring loads with this master key, and the
 * server is not shutting down. Pooled connections the database drops are logged here (once
 * per interval), not fatal.
 */
async function healthPlugin(app: FastifyInstance): Promise<void> {
  const outageLog = createOutageLog(app.log);
  app.dialect.onConnectionLost?.((error) => outageLog('pooled connection lost', error));

  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });

  app.get('/healthz', { logLevel: 'warn', schema: { operationId: 'getHealth', summary: 'Liveness: 200 while the process runs', response: { 200: Status } } }, async () => ({ status: 'ok' as const }));

  app.get('/readyz', { logLevel: 'warn', schema: { operationId: 'getReadiness', summary: 'Readiness: 200 while the database answers and the key ring loads; 503 otherwise', response: { 200: Status } } }, async () => {
    if (closing) throw new HttpError(503, 'NOT_READY', 'shutting down');
    try {
      await Promise.race([sql`select 1`.execute(app.db), timeout(READINESS_TIMEOUT_MS)]);
    } catch (error) {
      throw new HttpError(503, 'NOT_READY', `database unreachable: ${(error as Error).message}`);
    }
    const keyRingProblem = await app.keyRing.problem();
    if (keyRingProblem) throw new HttpError(503, 'NOT_READY', keyRingProblem);
    return { status: 'ok' as const };
  });
}

export default fp(healthPlugin, { name: 'keyfleet-health' });
