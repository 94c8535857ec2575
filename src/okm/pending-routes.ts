import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { changeSourceOf } from '../audit/trail.ts';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { cursorPageQueryProperties, cursorPageResponse, sendCursorPage } from '../http/cursor-paging.ts';
import { ErrorResponse, MESSAGES, resourceResponse } from '../http/schemas.ts';
import { WRITES_JSON_TEXTS } from '../http/json-texts.ts';
import { getOkmRecord } from './admin-service.ts';
import { acceptPendingOkmRecorded, pendingOkmRecords } from './pending-service.ts';
import { SerialParams } from '../http/request-schemas.ts';
import { AcceptBody, OkmRecord, PendingOkmRecord } from './schemas.ts';

const errorResponses = { '4xx': ErrorResponse };
const PendingListQuery = Type.Object(cursorPageQueryProperties, { additionalProperties: false });

/**
 * OKMs waiting for an operator (OKM_AUTO_ENROL=false), mounted at /api/v1/pending-okms: an
 * operator's call, so every route needs the admin scope. Not under /api/v1/okms, where
 * `/pending` would hide the OKM whose serial number is "pending".
 */
const pendingOkmRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const canAdminister = requireScopes('admin');

  app.get(
    '/',
    {
      onRequest: canAdminister,
      schema: {
        operationId: 'listPendingOkms',
        summary: 'List OKMs waiting for an operator (auto-enrol off)',
        querystring: PendingListQuery,
        response: { 200: cursorPageResponse(PendingOkmRecord, 'The OKMs waiting, by serial number. No total here; the fleet summary (GET /api/v1/fleet/summary, admin) has `pending`.'), ...errorResponses },
      },
    },
    async (request, reply) => sendCursorPage(request, reply, MESSAGES.fetched, await pendingOkmRecords(app.db, request.query)),
  );

  app.post(
    '/:serial/accept',
    {
      ...WRITES_JSON_TEXTS,
      onRequest: canAdminister,
      // No body at all is an accept without a customer, as `keyfleet okm accept SERIAL` is.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: { operationId: 'acceptPendingOkm', summary: 'Accept a pending OKM, optionally for a customer', params: SerialParams, body: AcceptBody, response: { 201: resourceResponse(OkmRecord), ...errorResponses } },
    },
    async (request, reply) => {
      const now = Date.now();
      const { serialNumber } = await acceptPendingOkmRecorded(app.db, changeSourceOf(request), request.params.serial, request.body.customer, now);
      const okmRequest = { db: app.db, settings: app.settings, principal: principalOf(request), customerName: undefined, now };
      return reply.code(201).send({ message: MESSAGES.created, data: await getOkmRecord(okmRequest, serialNumber) });
    },
  );
};

export default pendingOkmRoutes;
