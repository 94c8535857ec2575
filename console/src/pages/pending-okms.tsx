import { useState } from 'preact/hooks';
import { acceptPendingOkm, ApiError, listPendingOkms, type PendingOkm } from '../api/client.ts';
import { errorFor } from '../components/field-error.tsx';
import { PageHeader } from '../components/layout.tsx';
import { Pager } from '../components/pager.tsx';
import { RelativeTime } from '../components/relative-time.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { useCursorPages } from '../components/use-cursor-pages.ts';
import { useResource } from '../components/use-resource.ts';
import { okmHref } from '../paths.ts';
import { CustomerInput } from '../components/customer-input.tsx';

const PENDING_PER_PAGE = 30;
const REFRESH_MS = 10_000;

/** Operator: OKMs that have called in but are not enrolled (OKM_AUTO_ENROL=false), to accept for a customer. */
export function PendingOkmsPage() {
  const pages = useCursorPages('pending');
  const pending = useResource(() => listPendingOkms({ limit: PENDING_PER_PAGE, cursor: pages.cursor }), [pages.cursor], REFRESH_MS);
  const [accepted, setAccepted] = useState<{ serial: string; customer: string | null } | null>(null);

  return (
    <section>
      <PageHeader title="Pending OKMs" />
      <p class="muted">
        OKMs that called in while automatic enrolment is off. Accept one for the customer whose site it is in; it then polls for its configuration like any
        other. Until then it gets no configuration. The list refreshes itself.
      </p>
      {accepted !== null && (
        <p class="notice notice-ok" role="status">
          OKM <a href={okmHref(accepted.serial)}>{accepted.serial}</a> accepted{accepted.customer === null ? ' (no customer yet)' : ` for ${accepted.customer}`}.
        </p>
      )}
      {pending.error !== undefined && pending.data === undefined ? (
        <ErrorState error={pending.error} retry={pending.reload} />
      ) : pending.data === undefined ? (
        <Loading what="Loading pending OKMs" />
      ) : pending.data.data.length === 0 ? (
        <>
          <Empty>{pages.before > 0 ? 'No more pending OKMs.' : 'No OKM is waiting to be accepted.'}</Empty>
          <Pager pages={pages} nextCursor={null} noun="pending OKMs" />
        </>
      ) : (
        <>
          <div class="table-wrap">
            <table class="pending-table">
              <caption class="visually-hidden">OKMs waiting to be accepted</caption>
              <thead>
                <tr>
                  <th scope="col">Serial number</th>
                  <th scope="col">First seen</th>
                  <th scope="col">Last seen</th>
                  <th scope="col" class="hide-narrow">Last IP</th>
                  <th scope="col">Firmware</th>
                  <th scope="col" class="num hide-narrow">Calls</th>
                  <th scope="col">Accept</th>
                </tr>
              </thead>
              <tbody>
                {pending.data.data.map((okm) => (
                  <PendingRow
                    key={okm.serial_number}
                    okm={okm}
                    onAccepted={(customer) => {
                      setAccepted({ serial: okm.serial_number, customer });
                      pending.reload();
                    }}
                  />
                ))}
              </tbody>
            </table>
          </div>
          <Pager pages={pages} nextCursor={pending.data.next_cursor} noun="pending OKMs" />
        </>
      )}
    </section>
  );
}

function PendingRow({ okm, onAccepted }: { okm: PendingOkm; onAccepted: (customer: string | null) => void }) {
  const [customer, setCustomer] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const inputId = `pending-customer-${okm.serial_number}`;
  const messageId = `pending-error-${okm.serial_number}`;
  const message = error === undefined ? undefined : (errorFor(error, 'customer') ?? (error instanceof ApiError ? error.message : String(error)));

  const accept = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const name = customer.trim() === '' ? undefined : customer.trim();
    try {
      await acceptPendingOkm(okm.serial_number, name);
      onAccepted(name ?? null);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };

  return (
    <tr>
      <th scope="row" class="mono">
        {okm.serial_number}
      </th>
      <td>
        <RelativeTime value={okm.first_seen_at} />
      </td>
      <td>
        <RelativeTime value={okm.last_seen_at} />
      </td>
      <td class="mono hide-narrow">{okm.last_ip}</td>
      <td>{okm.firmware_version ?? <span class="muted">—</span>}</td>
      <td class="num hide-narrow">{okm.calls.toLocaleString()}</td>
      <td>
        <form class="pending-accept" onSubmit={accept}>
          <label for={inputId} class="visually-hidden">
            Customer for {okm.serial_number}
          </label>
          <CustomerInput
            id={inputId}
            value={customer}
            placeholder="customer"
            aria-invalid={message !== undefined || undefined}
            aria-describedby={message !== undefined ? messageId : undefined}
            onValue={setCustomer}
          />
          <button type="submit" class="primary" disabled={busy} aria-label={`Accept ${okm.serial_number}`}>
            {busy ? 'Accepting…' : 'Accept'}
          </button>
          {message !== undefined && (
            <p class="field-error" id={messageId} role="alert">
              {message}
            </p>
          )}
        </form>
      </td>
    </tr>
  );
}
