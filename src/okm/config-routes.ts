import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { badRequest, notFound } from '../http/errors.ts';
import { appendAuditRecords } from './audit-repository.ts';
import { createPollHandler } from './poll-service.ts';

/** The first URL every OKM has built in; it only tells the device where the config route is. */
const BOOTSTRAP_PATH = '/embeddedv1/kas/config';

const SerialNumberParams = Type.Object({
  serialNumber: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', description: 'OKM serial number: 1–64 of A–Z a–z 0–9 . _ -' }),
});

// Devices and operators read this message, so it names the rule rather than the regular expression.
const serialNumberError = () => badRequest('serialNumber: expected 1–64 characters of A–Z, a–z, 0–9, ".", "_" or "-"');

const AUDIT_BODY_LIMIT = 1024 * 1024;

/** The device-facing OKM routes: bootstrap, config poll and audit intake. */
export default async function okmConfigRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { configPath, auditUrl } = app.settings;

  const handlePoll = createPollHandler(app.db, app.settings, app.dialect.writeGrouping, app.statusEvents.queued);

  const bootstrap = async () => ({ configUrl: configPath });
  app.get(BOOTSTRAP_PATH, bootstrap);
  // A CONFIG_PATH equal to the bootstrap path leaves /{serialNumber} to the config route.
  if (configPath !== BOOTSTRAP_PATH) app.get(`${BOOTSTRAP_PATH}/:serialNumber`, bootstrap);

  app.get(`${configPath}/:serialNumber`, { schema: { params: SerialNumberParams }, schemaErrorFormatter: serialNumberError }, async (request, reply) => {
    const result = await handlePoll({
      serialNumber: request.params.serialNumber,
      ip: request.ip,
      query: request.query as Record<string, unknown>,
      now: Date.now(),
    });
    if (result.kind === 'enrolled') return reply.code(204).send();
    return result.body;
  });

  app.post(
    `${auditUrl}/:serialNumber`,
    { schema: { params: SerialNumberParams }, schemaErrorFormatter: serialNumberError, bodyLimit: AUDIT_BODY_LIMIT },
    async (request, reply) => {
      const body: unknown = request.body;
      if (body === null || typeof body !== 'object') {
        throw badRequest('body: expected a JSON object (one audit record) or an array of records');
      }
      const records = Array.isArray(body) ? body : [body];
      if (!(await appendAuditRecords(app.db, request.params.serialNumber, records, Date.now()))) {
        throw notFound('OKM not found');
      }
      return reply.code(201).send({ count: records.length });
    },
  );
}
