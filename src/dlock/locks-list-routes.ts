import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { actingCustomer, principalOf, requireScopes } from '../auth/guard.ts';
import { cursorPageRequest, mapCursorPage } from '../db/cursor-pages.ts';
import { CUSTOMER_NAME_PATTERN } from '../shared/identifiers.ts';
import { cursorPageQueryProperties, cursorPageResponse, NO_TOTAL, sendCursorPage } from '../http/cursor-paging.ts';
import { ErrorResponse, IsoTime, MESSAGES } from '../http/schemas.ts';
import { listLocks, LOCK_PAGES } from './locks-list.ts';

const LockListQuery = Type.Object(
  {
    customer: Type.Optional(Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'whose DLocks to list; an admin token without it lists every customer\'s' })),
    ...cursorPageQueryProperties,
  },
  { additionalProperties: false },
);

const LockView = Type.Object({
  serial_no: Type.String(),
  type: Type.String({ description: 'the lock type it was enrolled with' }),
  certificate: Type.String({ description: 'name of the intermediate certificate that signed its key certificate' }),
  customer: Type.String(),
  enrolled_at: IsoTime,
});

/** GET /api/v1/locks (contract §12): a customer's enrolled DLocks for people (JWT), without any key material. */
const locksListRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      onRequest: requireScopes('lock:read'),
      schema: {
        operationId: 'listLocks',
        summary: "List a customer's enrolled DLocks (no key material)",
        querystring: LockListQuery,
        response: { 200: cursorPageResponse(LockView, `The DLocks, by serial number. ${NO_TOTAL}`), '4xx': ErrorResponse },
      },
    },
    async (request, reply) => {
      const page = cursorPageRequest(LOCK_PAGES, request.query);
      const acting = await actingCustomer(app.db, principalOf(request), request.query.customer);
      const locks = await listLocks(app.db, acting?.id, page);
      const views = mapCursorPage(locks, (lock) => ({
        serial_no: lock.serialNo,
        type: lock.lockType,
        certificate: lock.certificateName,
        customer: lock.customerName,
        enrolled_at: new Date(lock.enrolledAt).toISOString(),
      }));
      return sendCursorPage(request, reply, MESSAGES.fetched, views);
    },
  );
};

export default locksListRoutes;
