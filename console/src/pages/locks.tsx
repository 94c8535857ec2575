import { useLocation } from 'preact-iso';
import { listLocks } from '../api/client.ts';
import { PageHeader } from '../components/layout.tsx';
import { Pager } from '../components/pager.tsx';
import { LocalTime, RelativeTime } from '../components/relative-time.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { actingCustomer, TenantPicker } from '../components/tenant-picker.tsx';
import { useCursorPages } from '../components/use-cursor-pages.ts';
import { useResource } from '../components/use-resource.ts';
import { mayReadAudit } from '../audit-entry.ts';
import { lockHref } from '../paths.ts';
import { useSession } from '../session.ts';

const LOCKS_PER_PAGE = 50;

/** A customer's enrolled DLocks (every customer's for an operator who names none): no key material, ever. */
export function LocksPage() {
  const session = useSession()!;
  const { query } = useLocation();
  const customer = actingCustomer(session, query);
  const showCustomer = session.claims.isAdmin && customer === '';
  // A lock's page is read from the audit trail: without it there is nothing more to show there.
  const historyShown = mayReadAudit(session.claims);
  const pages = useCursorPages(customer);
  const locks = useResource(
    () => listLocks({ customer: session.claims.customer === null && customer !== '' ? customer : undefined, limit: LOCKS_PER_PAGE, cursor: pages.cursor }),
    [customer, pages.cursor],
  );

  return (
    <section>
      <PageHeader title={customer === '' ? 'Locks' : `Locks of ${customer}`} />
      <p class="muted">
        DLocks enrolled through the DLock API, with the intermediate certificate that signed each key certificate. Keys are never shown here.
      </p>
      <TenantPicker session={session} purpose="locks" />
      {locks.error !== undefined ? (
        <ErrorState error={locks.error} retry={locks.reload} />
      ) : locks.data === undefined ? (
        <Loading what="Loading locks" />
      ) : locks.data.data.length === 0 ? (
        <>
          <Empty>{pages.before > 0 ? 'No more locks.' : 'No DLock is enrolled yet.'}</Empty>
          <Pager pages={pages} nextCursor={null} noun="locks" />
        </>
      ) : (
        <>
          <div class="table-wrap">
            <table class="locks-table">
              <caption class="visually-hidden">Enrolled DLocks</caption>
              <thead>
                <tr>
                  <th scope="col">Serial number</th>
                  <th scope="col">Lock type</th>
                  <th scope="col">Certificate</th>
                  {showCustomer && <th scope="col">Customer</th>}
                  <th scope="col">Enrolled</th>
                  <th scope="col" class="hide-narrow">Enrolled at</th>
                </tr>
              </thead>
              <tbody>
                {locks.data.data.map((lock) => (
                  <tr key={lock.serial_no}>
                    <th scope="row" class="mono">
                      {historyShown ? <a href={lockHref(lock.serial_no)}>{lock.serial_no}</a> : lock.serial_no}
                    </th>
                    <td>{lock.type}</td>
                    <td class="mono">{lock.certificate}</td>
                    {showCustomer && <td>{lock.customer}</td>}
                    <td>
                      <RelativeTime value={lock.enrolled_at} />
                    </td>
                    <td class="hide-narrow">
                      <LocalTime value={lock.enrolled_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager pages={pages} nextCursor={locks.data.next_cursor} noun="locks" />
        </>
      )}
    </section>
  );
}
