import { useState } from 'preact/hooks';
import { listOkmAudit } from '../../api/client.ts';
import { Pager } from '../pager.tsx';
import { LocalTime } from '../relative-time.tsx';
import { ResourceView } from '../resource-view.tsx';
import { useResource } from '../use-resource.ts';

/** The audit records the device posted, newest first as the API pages them. */
export function AuditPanel({ serial }: { serial: string }) {
  const [page, setPage] = useState(1);
  const audit = useResource(() => listOkmAudit(serial, { page, results_per_page: 10 }), [serial, page]);
  return (
    <div class="card section">
      <h2>Audit records</h2>
      <ResourceView resource={audit} isEmpty={(page) => page.data.length === 0} empty="The device has posted no audit records.">
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
          <Pager pagination={page.pagination} noun="records" onPage={setPage} />
        </>
        )}
      </ResourceView>
    </div>
  );
}
