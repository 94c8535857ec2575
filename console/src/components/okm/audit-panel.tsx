import { useState } from 'preact/hooks';
import { fetchOkmAuditCsv, listOkmAudit, type OkmAuditFilters } from '../../api/client.ts';
import { CsvDownload, csvFileName } from '../csv-download.tsx';
import { Pager } from '../pager.tsx';
import { LocalTime } from '../relative-time.tsx';
import { ResourceView } from '../resource-view.tsx';
import { useCursorPages } from '../use-cursor-pages.ts';
import { useResource } from '../use-resource.ts';

const RECORDS_PER_PAGE = 10;
const DAY_MS = 86_400_000;

/** A yyyy-mm-dd of a date field as the start of that day in the browser's time zone, as an ISO time; undefined when empty. */
const startOfDay = (day: string, plusDays = 0): string | undefined => {
  if (day === '') return undefined;
  const [year, month, date] = day.split('-').map(Number);
  return new Date(new Date(year!, month! - 1, date!).getTime() + plusDays * DAY_MS).toISOString();
};

/**
 * The audit records the device posted, newest first, as the API pages them, received within the
 * days chosen (the browser's days: from the start of "From" to the end of "To"), and the same
 * selection as a CSV file.
 */
export function AuditPanel({ serial }: { serial: string }) {
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const filters: OkmAuditFilters = {
    order: 'newest_first',
    ...(startOfDay(from) === undefined ? {} : { since: startOfDay(from) }),
    ...(startOfDay(to, 1) === undefined ? {} : { until: startOfDay(to, 1) }),
  };
  const selection = `${serial} ${from} ${to}`;
  const pages = useCursorPages(selection);
  const audit = useResource(() => listOkmAudit(serial, { limit: RECORDS_PER_PAGE, cursor: pages.cursor }, filters), [selection, pages.cursor]);
  const windowed = from !== '' || to !== '';
  return (
    <div class="card section">
      <h2>Audit records</h2>
      <p class="muted small">Newest first.</p>
      <form class="filters" aria-label="Audit records received" onSubmit={(event) => event.preventDefault()}>
        <div class="field">
          <label for="audit-from">Received from</label>
          <input id="audit-from" type="date" value={from} max={to || undefined} onChange={(event) => setFrom(event.currentTarget.value)} />
        </div>
        <div class="field">
          <label for="audit-to">to</label>
          <input id="audit-to" type="date" value={to} min={from || undefined} onChange={(event) => setTo(event.currentTarget.value)} />
        </div>
        {windowed && (
          <button
            type="button"
            onClick={() => {
              setFrom('');
              setTo('');
            }}
          >
            Any time
          </button>
        )}
        <CsvDownload label="Download CSV" testId="audit-csv" fileName={csvFileName(`${serial}-audit`)} fetchFile={() => fetchOkmAuditCsv(serial, filters)} />
      </form>
      <ResourceView
        resource={audit}
        isEmpty={(page) => page.data.length === 0 && pages.before === 0}
        empty={windowed ? 'No audit record was received on those days.' : 'The device has posted no audit records.'}
      >
        {(page) => (
          <>
            <div class="table-wrap">
              <table data-testid="audit">
                <thead>
                  <tr>
                    <th scope="col">Received</th>
                    <th scope="col">Record</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.map((record) => (
                    <tr key={record.id}>
                      <td class="nowrap">
                        <LocalTime value={record.received_at} />
                      </td>
                      <td>
                        <pre class="json">{JSON.stringify(record.record)}</pre>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager pages={pages} nextCursor={page.next_cursor} noun="audit records" />
          </>
        )}
      </ResourceView>
    </div>
  );
}
