import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { FleetQuery } from '../http/request-schemas.ts';
import { ErrorResponse, MESSAGES, resourceResponse } from '../http/schemas.ts';
import { fleetSummary } from './fleet-summary-service.ts';
import { FleetSummary } from './schemas.ts';

/** GET /api/v1/fleet/summary (contract §11), mounted at /api/v1/fleet. */
const fleetSummaryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/summary',
    {
      onRequest: requireScopes('okm:read'),
      schema: {
        operationId: 'getFleetSummary',
        summary: 'Fleet counts: in step, drifting, overdue, never polled, stuck; corrections waiting by resolver; firmware versions',
        querystring: FleetQuery,
        response: { 200: resourceResponse(FleetSummary), '4xx': ErrorResponse },
      },
    },
    async (request) => ({
      message: MESSAGES.fetched,
      data: await fleetSummary({
        db: app.db,
        principal: principalOf(request),
        customerName: request.query.customer,
        now: Date.now(),
      }),
    }),
  );
};

export default fleetSummaryRoutes;
