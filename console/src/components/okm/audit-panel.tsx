import { listOkmAudit } from '../../api/client.ts';
import { Pager } from '../pager.tsx';
import { LocalTime } from '../relative-time.tsx';
import { ResourceView } from '../resource-view.tsx';
import { useCursorPages } from '../use-cursor-pages.ts';
import { useResource } from '../use-resource.ts';

const RECORDS_PER_PAGE = 10;

/** The audit records the device posted, in the order they arrived, as the API pages them. */
export function AuditPanel({ serial }: { serial: string }) {
  const pages = useCursorPages(serial);
  const audit = useResource(() => listOkmAudit(serial, { limit: RECORDS_PER_PAGE, cursor: pages.cursor }), [serial, pages.cursor]);
  return (
    <div class="card section">
      <h2>Audit records</h2>
      <ResourceView resource={audit} isEmpty={(page) => page.data.length === 0 && pages.before === 0} empty="The device has posted no audit records.">
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
