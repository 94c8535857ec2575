import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { actingCustomer, principalOf, requireScopes } from '../auth/guard.ts';
import { CUSTOMER_NAME_PATTERN } from '../customers/repository.ts';
import { ErrorResponse, IsoTime, pageOf, pageResponse, paginated, paginationQueryProperties, perPageOf } from '../http/schemas.ts';
import { listLocks } from './locks-list.ts';

const LockListQuery = Type.Object(
  {
    customer: Type.Optional(Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'whose DLocks to list; an admin token without it lists every customer\'s' })),
    ...paginationQueryProperties,
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

/** GET /api/v1/locks (SPEC section 12): a customer's enrolled DLocks for people (JWT), without any key material. */
const locksListRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      onRequest: requireScopes('lock:read'),
      schema: {
        operationId: 'listLocks',
        summary: "List a customer's enrolled DLocks (no key material)",
        querystring: LockListQuery,
        response: { 200: pageResponse(LockView), '4xx': ErrorResponse },
      },
    },
    async (request) => {
      const acting = await actingCustomer(app.db, principalOf(request), request.query.customer);
      const { locks, total } = await listLocks(app.db, acting?.id, pageOf(request.query), perPageOf(request.query));
      const items = locks.map((lock) => ({
        serial_no: lock.serialNo,
        type: lock.lockType,
        certificate: lock.certificateName,
        customer: lock.customerName,
        enrolled_at: new Date(lock.enrolledAt).toISOString(),
      }));
      return paginated(request.query, items, total);
    },
  );
};

export default locksListRoutes;
