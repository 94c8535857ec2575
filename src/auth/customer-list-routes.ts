import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { CUSTOMER_PAGES, listCustomers } from '../customers/repository.ts';
import { cursorPageRequest, mapCursorPage } from '../db/cursor-pages.ts';
import { principalOf, requireScopes } from './guard.ts';
import { cursorPageQueryProperties, cursorPageResponse, NO_TOTAL, sendCursorPage } from '../http/cursor-paging.ts';
import { ErrorResponse, MESSAGES } from '../http/schemas.ts';

const CustomerListQuery = Type.Object(
  {
    name_contains: Type.Optional(
      Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', description: 'only the customers whose name contains this text, whatever its case' }),
    ),
    ...cursorPageQueryProperties,
  },
  { additionalProperties: false },
);

const CustomerView = Type.Object({ name: Type.String({ description: 'the name every other call names the customer by' }) });

/**
 * GET /api/v1/customers: the customers a principal may name, for pickers. Tenancy (contract
 * §3.1 and §17.2): a customer's principal lists its own customer only, whatever it asks; an
 * operator or a fleet-wide role lists every customer. Any valid credential may ask: the names
 * it gets are the ones it may already name in every other call. It lives with the guard, which
 * decides who acts for which customer (customers/ is below auth/, which reads it).
 */
const customerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/',
    {
      onRequest: requireScopes(),
      schema: {
        operationId: 'listCustomers',
        summary: 'List the customers the caller may act for, by name (a customer token: its own)',
        querystring: CustomerListQuery,
        response: { 200: cursorPageResponse(CustomerView, `The customers by name. ${NO_TOTAL}`), '4xx': ErrorResponse },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      // As actingCustomer decides it: `admin` acts for any customer.
      const own = principal.isAdmin ? null : principal.customer;
      const page = await listCustomers(
        app.db,
        { ...(own === null ? {} : { id: own.id }), ...(request.query.name_contains === undefined ? {} : { nameContains: request.query.name_contains }) },
        cursorPageRequest(CUSTOMER_PAGES, request.query),
      );
      return sendCursorPage(request, reply, MESSAGES.fetched, mapCursorPage(page, (customer) => ({ name: customer.name })));
    },
  );
};

export default customerRoutes;
