import { useLocation } from 'preact-iso';
import { listAclSummaries } from '../api/client.ts';
import { PageHeader } from '../components/layout.tsx';
import { Pager } from '../components/pager.tsx';
import { RelativeTime } from '../components/relative-time.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { actingCustomer, TenantPicker } from '../components/tenant-picker.tsx';
import { useCursorPages } from '../components/use-cursor-pages.ts';
import { useResource } from '../components/use-resource.ts';
import { aclHref, okmHref } from '../paths.ts';
import { useSession } from '../session.ts';

const ACLS_PER_PAGE = 20;

/**
 * A customer's ACLs by id, a page at a time (Previous / Next through the summaries' cursors),
 * each with its size, linked OKM and last change (summaries: the lists stay on the server).
 */
export function AclsPage() {
  const session = useSession()!;
  const { query } = useLocation();
  const customer = actingCustomer(session, query);
  const canCreate = session.claims.isAdmin || session.claims.scopes.includes('acl:create');
  const pages = useCursorPages(customer);
  const acls = useResource(
    () => (customer === '' ? Promise.resolve(undefined) : listAclSummaries(customer, { limit: ACLS_PER_PAGE, cursor: pages.cursor })),
    [customer, pages.cursor],
  );

  return (
    <section>
      <PageHeader title={customer === '' ? 'ACLs' : `ACLs of ${customer}`}>
        {customer !== '' && canCreate && (
          <a class="button primary" href={aclHref('new', session.claims.customer ? undefined : customer)}>
            New ACL
          </a>
        )}
      </PageHeader>
      <TenantPicker session={session} purpose="ACLs" />
      {customer === '' ? (
        <Empty>Name a customer to see its access control lists.</Empty>
      ) : acls.error !== undefined ? (
        <ErrorState error={acls.error} retry={acls.reload} />
      ) : acls.data === undefined ? (
        <Loading what="Loading ACLs" />
      ) : acls.data.data.length === 0 ? (
        <>
          <Empty>{pages.before > 0 ? 'No more ACLs.' : `${customer} has no ACLs yet.`}</Empty>
          <Pager pages={pages} nextCursor={null} noun="ACLs" />
        </>
      ) : (
        <>
          <div class="table-wrap">
            <table class="acl-list">
              <caption class="visually-hidden">ACLs of {customer}</caption>
              <thead>
                <tr>
                  <th scope="col">ACL</th>
                  <th scope="col" class="num">Users</th>
                  <th scope="col" class="num">Locks</th>
                  <th scope="col">Linked OKM</th>
                  <th scope="col">Changed</th>
                  <th scope="col" class="hide-narrow">User data</th>
                </tr>
              </thead>
              <tbody>
                {acls.data.data.map((acl) => (
                  <tr key={acl.id}>
                    <td>
                      <a class="mono" href={aclHref(acl.id, session.claims.customer ? undefined : customer)}>
                        {acl.id}
                      </a>
                    </td>
                    <td class="num">{acl.user_count.toLocaleString()}</td>
                    <td class="num">{acl.lock_count.toLocaleString()}</td>
                    <td>{acl.okm_id === null ? <span class="muted">none</span> : <a class="mono" href={okmHref(acl.okm_id)}>{acl.okm_id}</a>}</td>
                    <td>
                      <RelativeTime value={acl.updated_at} />
                    </td>
                    <td class="hide-narrow acl-user-data-cell">{acl.user_data === undefined ? <span class="muted">—</span> : <code>{JSON.stringify(acl.user_data)}</code>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager pages={pages} nextCursor={acls.data.next_cursor} noun="ACLs" />
        </>
      )}
    </section>
  );
}
