import { getOkmDeliveries, listOkmDeliveryFailures } from '../../api/client.ts';
import { Pager } from '../pager.tsx';
import { LocalTime, RelativeTime } from '../relative-time.tsx';
import { Badge } from '../state-badge.tsx';
import { ResourceView } from '../resource-view.tsx';
import { useCursorPages } from '../use-cursor-pages.ts';
import { useResource } from '../use-resource.ts';

const STATE_BADGES = { delivered: 'in_step', pending: 'never_polled', failed: 'overdue', gone: 'drifting' } as const;

const FAILURES_PER_PAGE = 20;

/** Where each subscriber URL stands, and the failed attempts with their outcome, newest first, a page at a time. */
export function DeliveriesPanel({ serial }: { serial: string }) {
  const deliveries = useResource(() => getOkmDeliveries(serial), [serial]);
  const pages = useCursorPages(serial);
  const failures = useResource(() => listOkmDeliveryFailures(serial, { limit: FAILURES_PER_PAGE, cursor: pages.cursor }), [serial, pages.cursor]);
  return (
    <div class="card section">
      <h2>Status-event deliveries</h2>
      <ResourceView resource={deliveries} isEmpty={({ data }) => data.subscriptions.length === 0} empty="No subscriber URL has received a status event of this OKM.">
        {({ data: log }) => (
        <>
          {log.queued_at !== null && (
            <p class="muted small">
              A status queued <RelativeTime value={log.queued_at} /> is being passed on.
            </p>
          )}
          <div class="table-wrap">
            <table data-testid="subscriptions">
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">State</th>
                  <th scope="col" class="num">Attempts</th>
                  <th scope="col">Last attempt</th>
                  <th scope="col">Next attempt</th>
                </tr>
              </thead>
              <tbody>
                {log.subscriptions.map((subscription) => (
                  <tr key={subscription.url}>
                    <td class="mono break">{subscription.url}</td>
                    <td>
                      <Badge kind={STATE_BADGES[subscription.state]} label={subscription.state} />
                    </td>
                    <td class="num">{subscription.attempts}</td>
                    <td>
                      <RelativeTime value={subscription.last_attempt_at} />
                      {subscription.last_status_code !== null && <span class="muted small"> · HTTP {subscription.last_status_code}</span>}
                      {subscription.last_error !== null && <div class="small bad">{subscription.last_error}</div>}
                    </td>
                    <td>
                      <RelativeTime value={subscription.next_attempt_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {failures.data !== undefined && (failures.data.data.length > 0 || pages.before > 0) && (
            <>
              <h3 class="spaced">Failed attempts</h3>
              <div class="table-wrap">
                <table data-testid="failures">
                  <thead>
                    <tr>
                      <th scope="col">When</th>
                      <th scope="col">URL</th>
                      <th scope="col" class="num">Attempt</th>
                      <th scope="col">Error</th>
                      <th scope="col">Outcome</th>
                    </tr>
                  </thead>
                  <tbody>
                    {failures.data.data.map((failure) => (
                      <tr key={`${failure.event_id}-${failure.attempt}-${failure.url}`}>
                        <td class="nowrap">
                          <LocalTime value={failure.attempted_at} />
                        </td>
                        <td class="mono break">{failure.url}</td>
                        <td class="num">{failure.attempt}</td>
                        <td>{failure.error}</td>
                        <td>{failure.outcome}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <Pager pages={pages} nextCursor={failures.data.next_cursor} noun="failed attempts" />
            </>
          )}
        </>
        )}
      </ResourceView>
    </div>
  );
}
