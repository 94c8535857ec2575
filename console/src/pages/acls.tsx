import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { ACL_SEARCH_FIELDS, aclLabel, matchCountText, noMatchText, queryFromSearch, searchFromQuery, searchParameters, searchProblem, type AclSearch, type AclSearchField } from '../acl-search.ts';
import { listAclSummaries } from '../api/client.ts';
import { AclUserRemovalPanel } from '../components/acl-user-removal.tsx';
import { PageHeader } from '../components/layout.tsx';
import { Pager } from '../components/pager.tsx';
import { RelativeTime } from '../components/relative-time.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { actingCustomer, TenantPicker } from '../components/tenant-picker.tsx';
import { useCursorPages } from '../components/use-cursor-pages.ts';
import { useResource } from '../components/use-resource.ts';
import { aclHref, href, okmHref } from '../paths.ts';
import { useSession } from '../session.ts';

const ACLS_PER_PAGE = 20;

/**
 * A customer's ACLs by name (those without one last, by id), a page at a time (Previous / Next through the summaries' cursors),
 * each by its name (its id when it has none) with its size, linked OKM and last change
 * (summaries: the lists stay on the server). The search (by name, user id or lock serial)
 * lives in the URL, so that a search can be bookmarked and Back undoes it.
 */
export function AclsPage() {
  const session = useSession()!;
  const location = useLocation();
  const { query } = location;
  const customer = actingCustomer(session, query);
  const customerInUrl = session.claims.customer === null ? customer : undefined;
  const search = searchFromQuery(query);
  const searchKey = queryFromSearch(customer, search);
  const canCreate = session.claims.isAdmin || session.claims.scopes.includes('acl:create');
  const [offboarding, setOffboarding] = useState(false);
  const pages = useCursorPages(searchKey);
  const acls = useResource(
    () => (customer === '' ? Promise.resolve(undefined) : listAclSummaries(customer, { limit: ACLS_PER_PAGE, cursor: pages.cursor }, { ...searchParameters(search), sort: 'name' })),
    [searchKey, pages.cursor],
  );
  const isOnlyPage = acls.data !== undefined && pages.before === 0 && acls.data.next_cursor === null;

  return (
    <section>
      <PageHeader title={customer === '' ? 'ACLs' : `ACLs of ${customer}`}>
        {customer !== '' && canCreate && (
          <a class="button primary" href={aclHref('new', session.claims.customer ? undefined : customer)}>
            New ACL
          </a>
        )}
        {customer !== '' && canCreate && (
          <button type="button" aria-expanded={offboarding} onClick={() => setOffboarding(!offboarding)}>
            {offboarding ? 'Close user removal' : 'Remove a user from every ACL'}
          </button>
        )}
      </PageHeader>
      <TenantPicker session={session} purpose="ACLs" />
      {customer !== '' && offboarding && <AclUserRemovalPanel key={customer} customer={customer} customerInUrl={customerInUrl} onDone={acls.reload} />}
      {customer !== '' && <AclSearchForm search={search} onSearch={(next) => location.route(href(`/acls${queryFromSearch(customerInUrl, next)}`))} />}
      {customer === '' ? (
        <Empty>Name a customer to see its access control lists.</Empty>
      ) : acls.error !== undefined ? (
        <ErrorState error={acls.error} retry={acls.reload} />
      ) : acls.data === undefined ? (
        <Loading what="Loading ACLs" />
      ) : acls.data.data.length === 0 ? (
        <>
          <Empty>{pages.before > 0 ? 'No more ACLs.' : search !== null ? noMatchText(customer, search) : `${customer} has no ACLs yet.`}</Empty>
          <Pager pages={pages} nextCursor={null} noun="ACLs" />
        </>
      ) : (
        <>
          {search !== null && isOnlyPage && (
            <p class="muted" role="status">
              {matchCountText(acls.data.data.length, true)}
            </p>
          )}
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
                      <a class={acl.name === undefined ? 'mono' : undefined} href={aclHref(acl.id, customerInUrl)}>
                        {aclLabel(acl)}
                      </a>
                      {acl.name !== undefined && <div class="muted small mono acl-list-id">{acl.id}</div>}
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

/** One box over the three things an ACL is found by; what the API would refuse is refused here, in plain words. */
function AclSearchForm({ search, onSearch }: { search: AclSearch | null; onSearch: (search: AclSearch | null) => void }) {
  const [field, setField] = useState<AclSearchField>(search?.field ?? 'name_contains');
  const [text, setText] = useState(search?.text ?? '');
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    setField(search?.field ?? 'name_contains');
    setText(search?.text ?? '');
  }, [search?.field, search?.text]);

  const submit = (event: Event) => {
    event.preventDefault();
    const wanted = { field, text: text.trim() };
    const refused = searchProblem(wanted);
    setProblem(refused);
    if (refused === null) onSearch(wanted);
  };
  return (
    <form class="filters acl-search" role="search" aria-label="Find ACLs" onSubmit={submit}>
      <div class="field">
        <label for="acl-search-field">Search by</label>
        <select id="acl-search-field" value={field} onChange={(event) => setField(event.currentTarget.value as AclSearchField)}>
          {ACL_SEARCH_FIELDS.map(({ key, label }) => (
            <option key={key} value={key}>
              {label}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="acl-search-text">Search for</label>
        <input
          id="acl-search-text"
          value={text}
          size={24}
          autocomplete="off"
          spellcheck={false}
          inputMode={field === 'user_id' ? 'numeric' : undefined}
          placeholder={field === 'user_id' ? 'e.g. 100014' : field === 'lock' ? 'e.g. DOOR-0001' : 'e.g. Store 412'}
          aria-invalid={problem !== null || undefined}
          aria-describedby={problem === null ? 'acl-search-hint' : 'acl-search-problem acl-search-hint'}
          onInput={(event) => setText(event.currentTarget.value)}
        />
        <p class="field-hint" id="acl-search-hint">
          {field === 'user_id' ? 'The exact user id.' : field === 'lock' ? 'The whole serial number, upper or lower case alike.' : 'Any part of the name, upper or lower case alike.'}
        </p>
      </div>
      <button type="submit">Search</button>
      <button
        type="button"
        onClick={() => {
          setText('');
          setProblem(null);
          onSearch(null);
        }}
      >
        Clear
      </button>
      {problem !== null && (
        <p class="field-error" id="acl-search-problem" role="alert">
          {problem}
        </p>
      )}
    </form>
  );
}
