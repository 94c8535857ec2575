import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Settings } from '../config/settings.ts';
import type { Db } from '../db/database.ts';
import { Type } from 'typebox';
import { changeSourceOf } from '../audit/trail.ts';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { badRequest } from '../http/errors.ts';
import { cursorPageResponse, NO_TOTAL, sendCursorPage } from '../http/cursor-paging.ts';
import { CustomerQuery, SerialParams } from '../http/request-schemas.ts';
import { ErrorResponse, MESSAGES, resourceResponse } from '../http/schemas.ts';
import { IfMatchHeaders, parseIfMatch, preconditionFailedResponse } from '../http/preconditions.ts';
import { WRITES_JSON_TEXTS } from '../http/json-texts.ts';
import { memberSource } from '../shared/raw-json.ts';
import {
  assignOkm,
  auditRecords,
  getOkmRecord,
  listOkmRecords,
  messageHistory,
  okmEtag,
  patchOkm,
  postMessage,
  removeOkm,
  replaceOkm,
  type OkmChangeRequest,
  type OkmRequest,
} from './admin-service.ts';
import { claimOkm } from './claim-service.ts';
import { issueDeviceTokenRecorded, toDeviceTokenRecord } from './device-tokens.ts';
import {
  AuditRecordListQuery,
  AuditRecordView,
  ClaimBody,
  CustomerAssignmentBody,
  DeviceTokenRecord,
  MessageBody,
  MessageListQuery,
  MessageRecord,
  OkmPatchBody,
  OkmRecord,
  OkmSettingsBody,
  okmListQuery,
  READ_ONLY_OKM_FIELDS,
} from './schemas.ts';

/**
 * What the OKM list shows of the poll's corrections, which the device protocol defines
 * (src/device/): the names a last_correction filter may give, and what each OKM's next poll is
 * expected to send. src/app.ts passes them in, so that okm/, which the device protocol builds
 * on, does not import it back.
 */
export interface PollCorrections {
  /** The resolvers' reply keys, in the poll's order. */
  names: readonly string[];
  /** The reply key of the correction each OKM's next poll is expected to send; null: none. */
  expectedNext(db: Db, settings: Settings, serialNumbers: readonly string[], now: number): Promise<Map<string, string | null>>;
}

export interface OkmAdminRoutesOptions {
  corrections: PollCorrections;
}

const errorResponses = { '4xx': ErrorResponse };
/** The answers of a write that honours If-Match: a 412 holds the OKM as it now is. */
const conditionalErrorResponses = { 412: preconditionFailedResponse(OkmRecord), ...errorResponses };

/** The record with its ETag (RFC 9110 §8.8.3): the version of its configuration that a later If-Match names. */
function withEtag<T extends OkmRecord>(reply: FastifyReply, record: T): T {
  reply.header('etag', okmEtag(record));
  return record;
}

/** A message body's payload as the JSON text it was sent in (contract §16: stored and shown as sent); null when it has none. */
function payloadAsSent(jsonText: string | undefined, payload: unknown): string {
  if (payload === undefined) return 'null';
  return (jsonText === undefined ? undefined : memberSource(jsonText, 'payload')) ?? JSON.stringify(payload);
}

/** A body naming a record field that only the device or keyfleet sets is refused, not ignored. */
async function rejectReadOnlyFields(request: FastifyRequest): Promise<void> {
  const body = request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const field = READ_ONLY_OKM_FIELDS.find((name) => Object.hasOwn(body, name));
  if (field !== undefined) throw badRequest(`${field}: read-only field`);
}

/** The OKM admin API, mounted at /api/v1/okms. */
const okmAdminRoutes: FastifyPluginAsyncTypebox<OkmAdminRoutesOptions> = async (app, { corrections }) => {
  const canRead = requireScopes('okm:read');
  const canWrite = requireScopes('okm:read', 'okm:write');
  const canAdminister = requireScopes('admin');

  const okmRequest = (request: FastifyRequest, customerName?: string): OkmRequest => ({
    db: app.db,
    settings: app.settings,
    principal: principalOf(request),
    customerName,
    now: Date.now(),
  });
  /** As okmRequest, for a change: with who makes it, for the audit trail. */
  const okmChangeRequest = (request: FastifyRequest, customerName?: string): OkmChangeRequest => ({ ...okmRequest(request, customerName), source: changeSourceOf(request) });
  /** As okmChangeRequest, for a write of the configuration: with its If-Match (RFC 9110). */
  const conditionalChangeRequest = (request: FastifyRequest, customerName?: string): OkmChangeRequest => {
    const ifMatch = parseIfMatch(request.headers['if-match']);
    return { ...okmChangeRequest(request, customerName), ...(ifMatch === undefined ? {} : { ifMatch }) };
  };

  app.get(
    '/',
    {
      ...WRITES_JSON_TEXTS,
      onRequest: canRead,
      schema: {
        operationId: 'listOkms',
        summary: 'List OKMs',
        description: 'By serial number, a page at a time: pass each page\'s next_cursor as ?cursor= for the next. The filters combine.',
        querystring: okmListQuery(corrections.names),
        response: { 200: cursorPageResponse(OkmRecord, `The OKMs that match, by serial number. ${NO_TOTAL} The fleet summary (GET /api/v1/fleet/summary) counts the OKMs of each state.`), ...errorResponses },
      },
    },
    async (request, reply) => {
      const okms = await listOkmRecords(okmRequest(request, request.query.customer), request.query);
      if (request.query.next_correction) {
        const next = await corrections.expectedNext(app.db, app.settings, okms.items.map((okm) => okm.serial_number), Date.now());
        okms.items = okms.items.map((okm) => ({ ...okm, next_correction: next.get(okm.serial_number) ?? null }));
      }
      return sendCursorPage(request, reply, MESSAGES.fetched, okms);
    },
  );

  app.get(
    '/:serial',
    {
      ...WRITES_JSON_TEXTS,
      onRequest: canRead,
      config: { openapi: { etag: true } },
      schema: { operationId: 'getOkm', summary: 'Get an OKM', params: SerialParams, querystring: CustomerQuery, response: { 200: resourceResponse(OkmRecord), ...errorResponses } },
    },
    async (request, reply) => ({
      message: MESSAGES.fetched,
      data: withEtag(reply, await getOkmRecord(okmRequest(request, request.query.customer), request.params.serial)),
    }),
  );

  app.put(
    '/:serial',
    {
      ...WRITES_JSON_TEXTS,
      onRequest: canWrite,
      preValidation: rejectReadOnlyFields,
      schema: {
        operationId: 'putOkm',
        summary: 'Create or replace an OKM\'s settings',
        params: SerialParams,
        querystring: CustomerQuery,
        headers: IfMatchHeaders,
        body: OkmSettingsBody,
        response: { 200: resourceResponse(OkmRecord), 201: resourceResponse(OkmRecord), ...conditionalErrorResponses },
      },
    },
    async (request, reply) => {
      const { record, created } = await replaceOkm(conditionalChangeRequest(request, request.query.customer), request.params.serial, request.body, request.jsonText);
      return reply.code(created ? 201 : 200).send({ message: created ? MESSAGES.created : MESSAGES.updated, data: withEtag(reply, record) });
    },
  );

  app.patch(
    '/:serial',
    {
      ...WRITES_JSON_TEXTS,
      onRequest: canWrite,
      preValidation: rejectReadOnlyFields,
      schema: {
        operationId: 'updateOkm',
        summary: 'Update an OKM\'s settings (JSON merge patch)',
        params: SerialParams,
        querystring: CustomerQuery,
        headers: IfMatchHeaders,
        body: OkmPatchBody,
        response: { 200: resourceResponse(OkmRecord), ...conditionalErrorResponses },
      },
    },
    async (request, reply) => ({
      message: MESSAGES.updated,
      data: withEtag(reply, await patchOkm(conditionalChangeRequest(request, request.query.customer), request.params.serial, request.body, request.jsonText)),
    }),
  );

  app.delete(
    '/:serial',
    {
      onRequest: canWrite,
      schema: {
        operationId: 'deleteOkm',
        summary: 'Delete an OKM',
        params: SerialParams,
        querystring: CustomerQuery,
        headers: IfMatchHeaders,
        response: { 204: Type.Null(), ...conditionalErrorResponses },
      },
    },
    async (request, reply) => {
      await removeOkm(conditionalChangeRequest(request, request.query.customer), request.params.serial);
      return reply.code(204).send(null);
    },
  );

  app.put(
    '/:serial/customer',
    {
      ...WRITES_JSON_TEXTS,
      onRequest: canAdminister,
      schema: {
        operationId: 'assignOkmCustomer',
        summary: 'Assign an OKM to a customer (operators)',
        params: SerialParams,
        headers: IfMatchHeaders,
        body: CustomerAssignmentBody,
        response: { 200: resourceResponse(OkmRecord), ...conditionalErrorResponses },
      },
    },
    async (request, reply) => ({
      message: MESSAGES.updated,
      data: withEtag(reply, await assignOkm(conditionalChangeRequest(request), request.params.serial, request.body.customer)),
    }),
  );

  app.post(
    '/:serial/claim',
    {
      ...WRITES_JSON_TEXTS,
      onRequest: canWrite,
      schema: {
        operationId: 'claimOkm',
        summary: 'Claim an OKM with its installer code',
        description: 'Takes an OKM that no customer holds, by the installer code its device last reported.',
        params: SerialParams,
        querystring: CustomerQuery,
        body: ClaimBody,
        response: { 200: resourceResponse(OkmRecord), ...errorResponses },
      },
    },
    async (request) => ({
      message: MESSAGES.updated,
      data: await claimOkm(okmChangeRequest(request, request.query.customer), request.params.serial, request.body.install_code),
    }),
  );

  app.post(
    '/:serial/messages',
    {
      ...WRITES_JSON_TEXTS,
      onRequest: canWrite,
      schema: {
        operationId: 'queueOkmMessage',
        summary: 'Queue a buffered message for an OKM',
        params: SerialParams,
        querystring: CustomerQuery,
        body: MessageBody,
        response: { 201: resourceResponse(MessageRecord), ...errorResponses },
      },
    },
    async (request, reply) => {
      const message = await postMessage(okmChangeRequest(request, request.query.customer), request.params.serial, request.body.type, payloadAsSent(request.jsonText, request.body.payload));
      return reply.code(201).send({ message: MESSAGES.created, data: message });
    },
  );

  app.get(
    '/:serial/messages',
    {
      ...WRITES_JSON_TEXTS,
      onRequest: canRead,
      schema: {
        operationId: 'listOkmMessages',
        summary: 'List an OKM\'s messages',
        params: SerialParams,
        querystring: MessageListQuery,
        response: { 200: cursorPageResponse(MessageRecord, `The OKM's buffered messages, pending and delivered (or those \`pending\` picks), oldest first: the order its polls receive them in. ${NO_TOTAL}`), ...errorResponses },
      },
    },
    async (request, reply) => sendCursorPage(request, reply, MESSAGES.fetched, await messageHistory(okmRequest(request, request.query.customer), request.params.serial, request.query)),
  );

  app.post(
    '/:serial/device-token',
    {
      onRequest: canAdminister,
      schema: { operationId: 'issueDeviceToken', summary: 'Issue a new device token for an OKM', params: SerialParams, response: { 201: resourceResponse(DeviceTokenRecord), ...errorResponses } },
    },
    async (request, reply) => {
      const issued = await issueDeviceTokenRecorded(app.db, changeSourceOf(request), request.params.serial, Date.now());
      return reply.code(201).send({ message: MESSAGES.created, data: toDeviceTokenRecord(issued) });
    },
  );

  app.get(
    '/:serial/audit',
    {
      ...WRITES_JSON_TEXTS,
      onRequest: canRead,
      schema: {
        operationId: 'listOkmAuditRecords',
        summary: 'List an OKM\'s audit records',
        params: SerialParams,
        querystring: AuditRecordListQuery,
        response: {
          200: cursorPageResponse(AuditRecordView, `The audit records the OKM posted, in the order they arrived (order=newest_first: the last first), received in the since/until window if given. ${NO_TOTAL}`),
          ...errorResponses,
        },
      },
    },
    async (request, reply) => sendCursorPage(request, reply, MESSAGES.fetched, await auditRecords(okmRequest(request, request.query.customer), request.params.serial, request.query)),
  );
};

export default okmAdminRoutes;
