import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { ErrorResponse, MESSAGES, resourceResponse } from '../http/schemas.ts';
import { driftReport } from './drift-service.ts';
import { CustomerQuery, SerialParams } from '../http/request-schemas.ts';
import { DriftReport } from './drift-schemas.ts';

/** GET /api/v1/okms/{serial}/drift (contract §11), mounted under /api/v1/okms. */
const okmDriftRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/:serial/drift',
    {
      onRequest: requireScopes('okm:read'),
      schema: {
        operationId: 'getOkmDrift',
        summary: "Every resolver's verdict for an OKM: what its next poll would correct",
        params: SerialParams,
        querystring: CustomerQuery,
        response: { 200: resourceResponse(DriftReport), '4xx': ErrorResponse },
      },
    },
    async (request) => ({
      message: MESSAGES.fetched,
      data: await driftReport(
        { db: app.db, settings: app.settings, principal: principalOf(request), customerName: request.query.customer, now: Date.now() },
        request.params.serial,
      ),
    }),
  );
};

export default okmDriftRoutes;
