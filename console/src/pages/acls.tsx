import { useLocation } from 'preact-iso';
import { listAclSummaries } from '../api/client.ts';
import { PageHeader } from '../components/layout.tsx';
import { Pager } from '../components/pager.tsx';
import { RelativeTime } from '../components/relative-time.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { actingCustomer, TenantPicker } from '../components/tenant-picker.tsx';
import { useResource } from '../components/use-resource.ts';
import { aclHref, okmHref } from '../paths.ts';
import { useSession } from '../session.ts';

const ACLS_PER_PAGE = 20;

/** A customer's ACLs, a page at a time, each with its size, linked OKM and last change (summaries: the lists stay on the server). */
export function AclsPage() {
  const session = useSession()!;
  const { query, path, route } = useLocation();
  const customer = actingCustomer(session, query);
  const page = Math.max(1, Number(query.page) || 1);
  const canCreate = session.claims.isAdmin || session.claims.scopes.includes('acl:create');
  const acls = useResource(
    () => (customer === '' ? Promise.resolve(undefined) : listAclSummaries(customer, { page, results_per_page: ACLS_PER_PAGE })),
    [customer, page],
  );
  const toPage = (next: number) => route(`${path}?${new URLSearchParams({ ...(session.claims.customer ? {} : { customer }), page: String(next) })}`);

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
        <Empty>{page > 1 ? 'No ACLs on this page.' : `${customer} has no ACLs yet.`}</Empty>
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
          <Pager pagination={acls.data.pagination} noun="ACLs" onPage={toPage} />
        </>
      )}
    </section>
  );
}
