import { useMemo } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { permissionCounts } from '../acl-matrix.ts';
import { listAcls } from '../api/client.ts';
import { PageHeader } from '../components/layout.tsx';
import { Pager } from '../components/pager.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { actingCustomer, TenantPicker } from '../components/tenant-picker.tsx';
import { useResource } from '../components/use-resource.ts';
import { aclHref } from '../paths.ts';
import { useSession } from '../session.ts';

const ACLS_PER_PAGE = 20;

/** A customer's ACLs, a page at a time, each with its size and how much access it grants. */
export function AclsPage() {
  const session = useSession()!;
  const { query, path, route } = useLocation();
  const customer = actingCustomer(session, query);
  const page = Math.max(1, Number(query.page) || 1);
  const canCreate = session.claims.isAdmin || session.claims.scopes.includes('acl:create');
  const acls = useResource(
    () => (customer === '' ? Promise.resolve(undefined) : listAcls(customer, { page, results_per_page: ACLS_PER_PAGE })),
    [customer, page],
  );
  const counts = useMemo(() => new Map(acls.data?.data.map((acl) => [acl.id, permissionCounts(acl)])), [acls.data]);
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
                  <th scope="col" class="num">Users with access</th>
                  <th scope="col" class="num hide-narrow" title="cells of value 17">Dual authentication</th>
                  <th scope="col" class="hide-narrow">User data</th>
                </tr>
              </thead>
              <tbody>
                {acls.data.data.map((acl) => {
                  const { usersWithAccess, dual } = counts.get(acl.id)!;
                  return (
                    <tr key={acl.id}>
                      <td>
                        <a class="mono" href={aclHref(acl.id, session.claims.customer ? undefined : customer)}>
                          {acl.id}
                        </a>
                      </td>
                      <td class="num">{acl.users.length.toLocaleString()}</td>
                      <td class="num">{acl.locks.length.toLocaleString()}</td>
                      <td class="num">{usersWithAccess.toLocaleString()}</td>
                      <td class="num hide-narrow">{dual.toLocaleString()}</td>
                      <td class="hide-narrow acl-user-data-cell">{acl.user_data === undefined ? <span class="muted">—</span> : <code>{JSON.stringify(acl.user_data)}</code>}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          <Pager pagination={acls.data.pagination} noun="ACLs" onPage={toPage} />
        </>
      )}
    </section>
  );
}
