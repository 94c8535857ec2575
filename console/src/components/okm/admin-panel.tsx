import { useState } from 'preact/hooks';
import { assignOkmCustomer, etagOf, issueDeviceToken, VersionConflict, type OkmRecord } from '../../api/client.ts';
import { FieldError, invalidProps } from '../field-error.tsx';
import { LocalTime } from '../relative-time.tsx';
import { ErrorState } from '../states.tsx';
import { CustomerInput } from '../customer-input.tsx';

/** Operators only: a new device token (shown once), and the customer the OKM belongs to. */
export function AdminPanel({ okm, onChanged }: { okm: OkmRecord; onChanged: () => void }) {
  const [customer, setCustomer] = useState(okm.customer ?? '');
  const [assignError, setAssignError] = useState<unknown>(undefined);
  const [tokenError, setTokenError] = useState<unknown>(undefined);
  const [token, setToken] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const assign = async (event: Event) => {
    event.preventDefault();
    const target = customer.trim() === '' ? null : customer.trim();
    if (!window.confirm(target === null ? `Take ${okm.serial_number} away from ${okm.customer}? It will belong to no customer.` : `Move ${okm.serial_number} to ${target}?`)) return;
    setBusy(true);
    setAssignError(undefined);
    try {
      // Based on the OKM as shown (If-Match): a move resets its configuration, which must not be one nobody here has seen.
      await assignOkmCustomer(okm.serial_number, target, etagOf(okm));
      onChanged();
    } catch (failure) {
      if (failure instanceof VersionConflict) {
        setAssignError(new Error('Not moved: someone else changed this OKM since the page showed it. The page now shows it as it is: check it, then move it again.'));
        onChanged();
        return;
      }
      setAssignError(failure);
    } finally {
      setBusy(false);
    }
  };
  const issue = async () => {
    if (okm.device_token_issued_at !== null && !window.confirm(`Issue a new device token for ${okm.serial_number}? The current one stops working at once.`)) return;
    setBusy(true);
    setTokenError(undefined);
    try {
      setToken((await issueDeviceToken(okm.serial_number)).data.token);
      onChanged();
    } catch (failure) {
      setTokenError(failure);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="card section">
      <h2>Operator</h2>
      <form class="inline-form wrap" onSubmit={assign}>
        <label for="assign-customer">Customer</label>
        <CustomerInput id="assign-customer" value={customer} placeholder="none" onValue={setCustomer} {...invalidProps(assignError, 'customer')} />
        <button type="submit" disabled={busy || customer.trim() === (okm.customer ?? '')}>
          {okm.customer === null ? 'Assign' : 'Move'}
        </button>
      </form>
      <FieldError error={assignError} control="customer" />
      {assignError !== undefined && !invalidProps(assignError, 'customer')['aria-invalid'] && <ErrorState error={assignError} />}
      <div class="inline-form wrap spaced">
        <span>
          Device token:{' '}
          {okm.device_token_issued_at === null ? <span class="muted">none issued</span> : <>issued <LocalTime value={okm.device_token_issued_at} /></>}
        </span>
        <button type="button" onClick={issue} disabled={busy}>
          Issue a device token
        </button>
      </div>
      {tokenError !== undefined && <ErrorState error={tokenError} />}
      {token !== null && (
        <div class="notice notice-ok" role="status">
          <label for="device-token">New device token (shown once: give it to the device now)</label>
          <input id="device-token" class="mono wide-input" readOnly value={token} onFocus={(event) => event.currentTarget.select()} />
        </div>
      )}
    </div>
  );
}
