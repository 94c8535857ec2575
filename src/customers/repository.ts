import type { Db } from '../db/database.ts';
import { badRequest, conflict } from '../http/errors.ts';

export interface Customer {
  id: number;
  name: string;
}

export const CUSTOMER_NAME_PATTERN = '^[A-Za-z0-9._-]{1,64}$';
const CUSTOMER_NAME = new RegExp(CUSTOMER_NAME_PATTERN);

export function isValidCustomerName(name: string): boolean {
  return CUSTOMER_NAME.test(name);
}

/** Creates a customer; a malformed name is a 400, a name already taken a 409. */
export async function createCustomer(db: Db, name: string): Promise<Customer> {
  if (!isValidCustomerName(name)) {
    throw badRequest(`name: expected 1-64 characters of A-Z a-z 0-9 . _ -, got "${name}"`);
  }
  const created = await db
    .insertInto('customers')
    .values({ name, created_at: Date.now() })
    .onConflict((oc) => oc.column('name').doNothing())
    .returning(['id', 'name'])
    .executeTakeFirst();
  if (!created) throw conflict(`customer ${name} already exists`);
  return created;
}

export async function findCustomerByName(db: Db, name: string): Promise<Customer | undefined> {
  return db.selectFrom('customers').select(['id', 'name']).where('name', '=', name).executeTakeFirst();
}

export async function findCustomerById(db: Db, id: number): Promise<Customer | undefined> {
  return db.selectFrom('customers').select(['id', 'name']).where('id', '=', id).executeTakeFirst();
}
