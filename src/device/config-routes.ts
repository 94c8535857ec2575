import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Counter } from 'prom-client';
import { Type } from 'typebox';
import { badRequest, notFound, unauthorized } from '../http/errors.ts';
import { documentSecurity } from '../http/openapi.ts';
import { elementSources, JsonText, valueSource } from '../shared/raw-json.ts';
import { appendAuditRecords } from '../okm/audit-repository.ts';
import { INVALID_DEVICE_TOKEN, authenticateDevice, type DeviceAuthentication } from '../okm/device-tokens.ts';
import { recordPendingCall } from '../okm/pending-repository.ts';
import { createPollHandler } from './poll-service.ts';
import { AuditReceipt, AuditRecords, BootstrapResponse, PollQuery, PollReply } from './device-schemas.ts';
import { SERIAL_NUMBER_PATTERN, isSerialNumber } from '../shared/identifiers.ts';
import { reportedQueryOf } from '../shared/reported-values.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on the device routes when device tokens are required. */
    deviceAuthentication: DeviceAuthentication | undefined;
  }
}

/** The first URL every OKM has built in; it only tells the device where the config route is. */
const BOOTSTRAP_PATH = '/embeddedv1/kas/config';

const SerialNumberParams = Type.Object({
  serialNumber: Type.String({ pattern: SERIAL_NUMBER_PATTERN, description: 'OKM serial number: 1–64 of A–Z a–z 0–9 . _ -' }),
});

// Devices and operators read this message, so it names the rule rather than the regular expression.
const serialNumberError = () => badRequest('serialNumber: expected 1–64 characters of A–Z, a–z, 0–9, ".", "_" or "-"');

const AUDIT_BODY_LIMIT = 1024 * 1024;

/** Rate-limited per serial number and per IP (src/http/rate-limits.ts). */
const DEVICE = { rateLimitGroup: 'device' } as const;

const PENDING_OKM = 'OKM pending: an operator has to accept it';

/**
 * The audit records of an intake body (an object: one record; an array: one per element), each
 * as the JSON text the OKM sent (contract §16: stored and shown as sent); as values when the text
 * is not known.
 */
function recordsAsSent(jsonText: string | undefined, body: object): unknown[] {
  if (jsonText === undefined) return Array.isArray(body) ? body : [body];
  return (Array.isArray(body) ? elementSources(jsonText) : [valueSource(jsonText)]).map((text) => new JsonText(text));
}

/** The device-facing OKM routes: bootstrap, config poll and audit intake. */
export default async function okmConfigRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { configPath, auditUrl, okmAutoEnrol, okmDeviceTokens } = app.settings;

  const handlePoll = createPollHandler(app.db, app.settings, app.dialect, app.statusEvents.queued);
  // Counted as plain numbers, and handed to prom-client when /metrics is read: its inc() checks
  // the label names and joins the values into a key on every call, and every poll counts.
  const pollsByOutcome = { enrolled: 0, in_step: 0, corrected: 0 };
  const correctionsByResolver = new Map<string, number>();
  new Counter({
    name: 'keyfleet_okm_polls_total',
    help: 'Config polls answered, by outcome: enrolled (unknown OKM inserted, 204), in_step ({}), corrected',
    labelNames: ['outcome'] as const,
    registers: [app.metrics],
    collect() {
      this.reset();
      for (const [outcome, count] of Object.entries(pollsByOutcome)) if (count > 0) this.inc({ outcome }, count);
    },
  });
  new Counter({
    name: 'keyfleet_okm_corrections_total',
    help: 'Corrections sent to OKMs, by the resolver that fired (named by the reply key it sets)',
    labelNames: ['resolver'] as const,
    registers: [app.metrics],
    collect() {
      this.reset();
      for (const [resolver, count] of correctionsByResolver) this.inc({ resolver }, count);
    },
  });

  app.decorateRequest('deviceAuthentication', undefined);
  // onRequest, so that no body is read from a caller without the token. A serial number that
  // is not valid is left to the route's validation (400).
  const requireDeviceToken =
    okmDeviceTokens === 'required'
      ? documentSecurity(
          async (request: FastifyRequest<{ Params: { serialNumber: string } }>) => {
            const { serialNumber } = request.params;
            if (isSerialNumber(serialNumber)) {
              request.deviceAuthentication = await authenticateDevice(app.db, serialNumber, request.headers.authorization);
            }
          },
          { deviceToken: [] },
        )
      : undefined;

  /** The answer to a call from a serial number that is not an OKM; with auto-enrol off it is recorded as pending. */
  async function notAnOkm(request: FastifyRequest<{ Params: { serialNumber: string } }>) {
    if (okmAutoEnrol) return notFound('OKM not found');
    await recordPendingCall(app.db, request.params.serialNumber, { now: Date.now(), ip: request.ip, firmwareVersion: null });
    return notFound(PENDING_OKM);
  }

  const bootstrap = async () => ({ configUrl: configPath });
  const bootstrapSchema = {
    summary: 'Where the config route is (the first URL an OKM calls)',
    response: { 200: { ...BootstrapResponse, description: 'The path of the config route' } },
  };
  app.get(BOOTSTRAP_PATH, { config: DEVICE, schema: { ...bootstrapSchema, operationId: 'getBootstrap' } }, bootstrap);
  // A CONFIG_PATH equal to the bootstrap path leaves /{serialNumber} to the config route.
  if (configPath !== BOOTSTRAP_PATH) {
    app.get(
      `${BOOTSTRAP_PATH}/:serialNumber`,
      { config: DEVICE, schema: { ...bootstrapSchema, operationId: 'getBootstrapForSerialNumber', params: SerialNumberParams }, schemaErrorFormatter: serialNumberError },
      bootstrap,
    );
  }

  app.get(
    `${configPath}/:serialNumber`,
    {
      config: {
        ...DEVICE,
        openapi: {
          querystring: PollQuery,
          responses: {
            200: { description: 'The one correction of this poll, or `{}` when the OKM is in step', content: { 'application/json': PollReply } },
            204: { description: 'Unknown serial number: the OKM was enrolled (auto-enrol on); no body' },
          },
        },
      },
      schema: {
        operationId: 'pollConfig',
        summary: 'Config poll: report the device state, get at most one correction',
        description:
          'The device reports its state in the query; the first resolver (contract §4) that finds a difference answers. The query parameters are never a reason for a 4xx. 404 is an OKM pending acceptance (auto-enrol off).',
        params: SerialNumberParams,
      },
      schemaErrorFormatter: serialNumberError,
      onRequest: requireDeviceToken,
    },
    async (request, reply) => {
      const result = await handlePoll({
        serialNumber: request.params.serialNumber,
        ip: request.ip,
        query: request.query as Record<string, unknown>,
        reportedQuery: reportedQueryOf(request.url),
        now: Date.now(),
      });
      if (result.kind === 'enrolled') {
        pollsByOutcome.enrolled += 1;
        return reply.code(204).send();
      }
      if (result.kind === 'pending') throw notFound(PENDING_OKM);
      // The OKM was created after the token check found none: its configuration goes only to its token.
      if (request.deviceAuthentication === 'unknown serial') throw unauthorized(INVALID_DEVICE_TOKEN);
      const resolver = Object.keys(result.body)[0];
      if (resolver === undefined) pollsByOutcome.in_step += 1;
      else {
        pollsByOutcome.corrected += 1;
        correctionsByResolver.set(resolver, (correctionsByResolver.get(resolver) ?? 0) + 1);
      }
      return result.body;
    },
  );

  app.post(
    `${auditUrl}/:serialNumber`,
    {
      config: {
        ...DEVICE,
        openapi: {
          body: { description: 'Audit records of the OKM', content: { 'application/json': AuditRecords } },
          responses: { 201: { description: 'Records stored, append-only', content: { 'application/json': AuditReceipt } } },
        },
      },
      schema: { operationId: 'sendAuditRecords', summary: 'Audit intake: store the OKM\'s audit records', params: SerialNumberParams },
      schemaErrorFormatter: serialNumberError,
      bodyLimit: AUDIT_BODY_LIMIT,
      onRequest: requireDeviceToken,
    },
    async (request, reply) => {
      const body: unknown = request.body;
      if (body === null || typeof body !== 'object') {
        throw badRequest('body: expected a JSON object (one audit record) or an array of records');
      }
      const records = recordsAsSent(request.jsonText, body);
      // A serial number without an OKM at the token check stores nothing, even if one appeared since.
      const stored =
        request.deviceAuthentication !== 'unknown serial' &&
        (await appendAuditRecords(app.db, request.params.serialNumber, records, Date.now()));
      if (!stored) throw await notAnOkm(request);
      return reply.code(201).send({ count: records.length });
    },
  );
}
