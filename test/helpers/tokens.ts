import { issueToken } from '../../src/auth/tokens.ts';
import { createApiKey } from '../../src/dlock/api-keys.ts';
import { findCustomerByName, type Customer } from '../../src/customers/repository.ts';
import { createCustomer } from '../../src/customers/service.ts';
import type { TestApp } from './app.ts';

export async function createTestCustomer(t: TestApp, name: string): Promise<Customer> {
  return createCustomer(t.db, name);
}

/** A token signed by the app's own key, as `keyfleet token issue` makes; creates the customer if missing. */
export async function issueTestToken(
  t: TestApp,
  options: { customer?: string; scopes: string[]; ttlSeconds?: number; subject?: string },
): Promise<string> {
  if (options.customer !== undefined && !(await findCustomerByName(t.db, options.customer))) {
    await createTestCustomer(t, options.customer);
  }
  const { token } = await issueToken(t.db, t.app.keyRing, t.settings, {
    customer: options.customer,
    scopes: options.scopes,
    ttlSeconds: options.ttlSeconds ?? 3600,
    subject: options.subject,
  });
  return token;
}

/** A DLock API key (the key itself) of the customer, which is created if missing. */
export async function issueTestApiKey(t: TestApp, customer: string): Promise<string> {
  if (!(await findCustomerByName(t.db, customer))) await createTestCustomer(t, customer);
  return (await createApiKey(t.db, { customer })).key;
}
