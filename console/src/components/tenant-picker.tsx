import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import type { Session } from '../session.ts';
import { CustomerInput } from './customer-input.tsx';

/**
 * The customer a page acts for: a customer token's own, or for an operator (admin) the
 * `?customer=` of the address; '' when an operator has not named one yet.
 */
export function actingCustomer(session: Session, query: Record<string, string>): string {
  return session.claims.customer ?? query.customer?.trim() ?? '';
}

/** For an operator: a form naming the customer whose records the page shows (kept in `?customer=`). */
export function TenantPicker({ session, purpose }: { session: Session; purpose: string }) {
  const { path, query, route } = useLocation();
  const [name, setName] = useState(query.customer ?? '');
  if (session.claims.customer !== null) return null;
  const submit = (event: Event) => {
    event.preventDefault();
    const customer = name.trim();
    route(customer === '' ? path : `${path}?customer=${encodeURIComponent(customer)}`);
  };
  return (
    <form class="filters" onSubmit={submit} aria-label={`Customer whose ${purpose} to show`}>
      <div class="field">
        <label for="tenant-customer">Customer</label>
        <CustomerInput id="tenant-customer" name="customer" value={name} placeholder="e.g. acme" onValue={setName} />
      </div>
      <button type="submit">Show {purpose}</button>
    </form>
  );
}
