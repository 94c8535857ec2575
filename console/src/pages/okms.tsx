import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { fetchOkmListCsv, listOkms, type OkmListFilters } from '../api/client.ts';
import { CsvDownload, csvFileName } from '../components/csv-download.tsx';
import { CustomerInput } from '../components/customer-input.tsx';
import { PageHeader } from '../components/layout.tsx';
import { OkmBulkActionPanel } from '../components/okm-bulk-action.tsx';
import { Pager } from '../components/pager.tsx';
import { RelativeTime } from '../components/relative-time.tsx';
import { OkmStateBadge } from '../components/state-badge.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { useCursorPages } from '../components/use-cursor-pages.ts';
import { useResource } from '../components/use-resource.ts';
import { filtersFromQuery, queryFromFilters, REPLY_KEYS, type ListFilters } from '../okm-filters.ts';
import { href, okmHref } from '../paths.ts';
import { useSession } from '../session.ts';

const OKMS_PER_PAGE = 50;

/** A resolver's reply key, free to wrap between its words (pollingInterval → polling|Interval) in a narrow table. */
function ReplyKey({ name }: { name: string }) {
  const words = name.split(/(?=[A-Z])/);
  return <>{words.map((word, index) => (index === 0 ? word : <><wbr />{word}</>))}</>;
}

/**
 * The OKM list, by serial number, paged by the server's cursors (Previous / Next; no total:
 * the overview counts the fleet). The filters live in the URL's query string, so that a
 * filtered list can be bookmarked, shared and reloaded, and Back undoes a filter; a new
 * filter starts again at the first page.
 */
export function OkmsPage() {
  const location = useLocation();
  const claims = useSession()?.claims;
  const isAdmin = claims?.isAdmin ?? false;
  const canWrite = isAdmin || (claims?.scopes.includes('okm:write') ?? false);
  const [acting, setActing] = useState(false);
  const filters = filtersFromQuery(location.query);
  const queryString = queryFromFilters(filters);
  // A draft belongs to the query it was begun on: each new query (a link, Back, Clear filters, an
  // earlier query again) starts the form from its own filters in the same render, not one effect
  // later, so that a field changed in between is not merged with the filters just left. (State
  // adjusted while rendering: Preact renders the component again before it commits.)
  const [form, setForm] = useState<{ queryString: string; draft: ListFilters }>({ queryString, draft: filters });
  let draft = form.draft;
  if (form.queryString !== queryString) {
    draft = filters;
    setForm({ queryString, draft });
  }

  const pages = useCursorPages(queryString);
  // next_correction: what each OKM's next poll is expected to send, beside what its last poll sent.
  const okms = useResource(() => listOkms({ ...(filters as OkmListFilters), limit: OKMS_PER_PAGE, cursor: pages.cursor, next_correction: true }), [queryString, pages.cursor]);

  const apply = (next: ListFilters) => location.route(href(`/okms${queryFromFilters(next)}`));
  const setField = <K extends keyof ListFilters>(key: K, value: ListFilters[K], applyNow = false) => {
    const next = { ...draft, [key]: value };
    setForm({ queryString, draft: next });
    if (applyNow) apply(next);
  };

  return (
    <section>
      <PageHeader title="OKMs">
        <CsvDownload label="Download CSV" testId="okms-csv" fileName={csvFileName('okms')} fetchFile={() => fetchOkmListCsv(filters as OkmListFilters)} />
        {canWrite && (
          <button type="button" aria-expanded={acting} onClick={() => setActing(!acting)}>
            {acting ? 'Close bulk actions' : 'Act on these OKMs'}
          </button>
        )}
      </PageHeader>
      <form
        class="filters"
        aria-label="Filter OKMs"
        onSubmit={(event) => {
          event.preventDefault();
          apply(draft);
        }}
      >
        <div class="field">
          <label for="filter-serial">Serial begins with</label>
          <input id="filter-serial" value={draft.serial_prefix ?? ''} size={14} onInput={(event) => setField('serial_prefix', event.currentTarget.value || undefined)} />
        </div>
        <div class="field">
          <label for="filter-state">State</label>
          <select id="filter-state" value={draft.state ?? ''} onChange={(event) => setField('state', (event.currentTarget.value || undefined) as ListFilters['state'], true)}>
            <option value="">Any</option>
            <option value="in_step">In step</option>
            <option value="drifting">Drifting</option>
            <option value="overdue">Overdue</option>
            <option value="never_polled">Never polled</option>
            <option value="stuck">Stuck</option>
          </select>
        </div>
        <div class="field">
          <label for="filter-correction">Sent on the last poll</label>
          <select
            id="filter-correction"
            value={draft.last_correction ?? ''}
            onChange={(event) => setField('last_correction', (event.currentTarget.value || undefined) as ListFilters['last_correction'], true)}
          >
            <option value="">Any</option>
            {REPLY_KEYS.map((key) => (
              <option key={key} value={key}>
                {key}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="filter-overdue">Polling</label>
          <select id="filter-overdue" value={draft.overdue === undefined ? '' : String(draft.overdue)} onChange={(event) => setField('overdue', event.currentTarget.value === '' ? undefined : event.currentTarget.value === 'true', true)}>
            <option value="">Any</option>
            <option value="true">Overdue</option>
            <option value="false">Not overdue</option>
          </select>
        </div>
        <div class="field">
          <label for="filter-firmware">KAS firmware</label>
          <input id="filter-firmware" value={draft.firmware_version ?? ''} size={9} placeholder="e.g. 2.4.1" onInput={(event) => setField('firmware_version', event.currentTarget.value || undefined)} />
        </div>
        <div class="field">
          <label for="filter-subscriber">Status subscriber URL</label>
          <input
            id="filter-subscriber"
            type="url"
            value={draft.subscriber_url ?? ''}
            size={24}
            placeholder="https://…"
            onInput={(event) => setField('subscriber_url', event.currentTarget.value || undefined)}
          />
        </div>
        {isAdmin && (
          <>
            <div class="field">
              <label for="filter-customer">Customer</label>
              <CustomerInput id="filter-customer" value={draft.customer ?? ''} size={12} onValue={(value) => setField('customer', value || undefined)} />
            </div>
            <div class="field">
              <label class="checkbox" for="filter-unassigned">
                <input id="filter-unassigned" type="checkbox" checked={draft.unassigned === true} onChange={(event) => setField('unassigned', event.currentTarget.checked || undefined, true)} />
                No customer
              </label>
            </div>
          </>
        )}
        <button type="submit" class="primary">
          Apply
        </button>
        {queryString !== '' && (
          <a href={href('/okms')} class="small">
            Clear filters
          </a>
        )}
      </form>

      {acting && <OkmBulkActionPanel key={queryString} filter={filters} isAdmin={isAdmin} onDone={okms.reload} />}
      {okms.error !== undefined && <ErrorState error={okms.error} retry={okms.reload} />}
      {okms.data === undefined && okms.error === undefined && <Loading what="Loading OKMs" />}
      {okms.data !== undefined && okms.error === undefined && (
        okms.data.data.length === 0 ? (
          <>
            <Empty>{pages.before > 0 ? 'No more OKMs match these filters.' : 'No OKM matches these filters.'}</Empty>
            <Pager pages={pages} nextCursor={null} noun="OKMs" />
          </>
        ) : (
          <>
            <div class="table-wrap" aria-busy={okms.loading}>
              <table data-testid="okm-list">
                <thead>
                  <tr>
                    <th scope="col">Serial number</th>
                    <th scope="col">Customer</th>
                    <th scope="col">Last seen</th>
                    <th scope="col">KAS firmware</th>
                    <th scope="col">State</th>
                    <th scope="col">Sent on the last poll</th>
                    <th scope="col">Next poll</th>
                  </tr>
                </thead>
                <tbody>
                  {okms.data.data.map((okm) => (
                    <tr key={okm.serial_number}>
                      <td>
                        <a class="mono" href={okmHref(okm.serial_number)}>
                          {okm.serial_number}
                        </a>
                      </td>
                      <td>{okm.customer ?? <span class="muted">none</span>}</td>
                      <td>
                        <RelativeTime value={okm.last_sync_time} never="never" />
                      </td>
                      <td class="mono">{okm.firmware_version ?? <span class="muted">—</span>}</td>
                      <td>
                        <OkmStateBadge okm={okm} next={okm.next_correction} />
                      </td>
                      <td class="mono">{okm.last_correction ? <ReplyKey name={okm.last_correction} /> : <span class="muted">—</span>}</td>
                      <td class="mono">{okm.next_correction ? <ReplyKey name={okm.next_correction} /> : <span class="muted">—</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pages={pages} nextCursor={okms.data.next_cursor} noun="OKMs" />
          </>
        )
      )}
    </section>
  );
}
