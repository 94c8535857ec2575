import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { ensureRootCa } from './root-ca.ts';

/** Makes sure the deployment root CA exists before the server takes requests. */
async function pkiPlugin(app: FastifyInstance): Promise<void> {
  const root = await ensureRootCa(app.db, app.keyRing, app.settings.pkiRootValidityDays);
  app.log.debug({ serial: root.serial, imported: root.imported }, 'deployment root CA ready');
}

export default fp(pkiPlugin, { name: 'keyfleet-pki' });
