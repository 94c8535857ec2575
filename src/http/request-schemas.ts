import { Type, type Static } from 'typebox';
import { CUSTOMER_NAME_PATTERN, SERIAL_NUMBER_PATTERN } from '../shared/identifiers.ts';
import { cursorPageQueryProperties } from './cursor-paging.ts';

/** The path and query parts that routes of several capabilities share, so that each states them once. */

export const SerialParams = Type.Object({ serial: Type.String({ pattern: SERIAL_NUMBER_PATTERN }) }, { additionalProperties: false });
export type SerialParams = Static<typeof SerialParams>;

export const CustomerQuery = Type.Object(
  { customer: Type.Optional(Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'customer to act for' })) },
  { additionalProperties: false },
);
export type CustomerQuery = Static<typeof CustomerQuery>;

/** `customer` and the cursor-paging properties: the query of a list read for a customer. */
export const customerPageQueryProperties = { customer: CustomerQuery.properties.customer, ...cursorPageQueryProperties };

/** The query of a cursor-paged list of one OKM's (audit records, messages, failed deliveries). */
export const PageQuery = Type.Object(customerPageQueryProperties, { additionalProperties: false });
export type PageQuery = Static<typeof PageQuery>;

/** The query of a fleet-wide view (/api/v1/fleet/…): an admin may narrow it to one customer's OKMs. */
export const FleetQuery = Type.Object(
  { customer: Type.Optional(Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'admin: only this customer\'s OKMs' })) },
  { additionalProperties: false },
);
export type FleetQuery = Static<typeof FleetQuery>;
