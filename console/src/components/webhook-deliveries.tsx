import { getWebhookDeliveries } from '../api/client.ts';
import { Pager } from './pager.tsx';
import { RelativeTime } from './relative-time.tsx';
import { ResourceView } from './resource-view.tsx';
import { useCursorPages } from './use-cursor-pages.ts';
import { useResource } from './use-resource.ts';

/** The deliveries list asks again this often, so that a test event's outcome shows by itself. */
export const DELIVERIES_REFRESH_MS = 5_000;

const OUTCOMES = {
  pending: { label: 'Retrying', tone: 'drifting' },
  delivered: { label: 'Delivered', tone: 'in-step' },
  failed: { label: 'Failed', tone: 'overdue' },
  gone: { label: 'Gone (410)', tone: 'never-polled' },
} as const;

const DELIVERIES_PER_PAGE = 10;

/**
 * An endpoint's deliveries, newest first, a page at a time. `version` changes (a test event
 * sent) make it load again at once, from its first page, where the new delivery is.
 */
export function WebhookDeliveries({ endpointId, url, version }: { endpointId: number; url: string; version: number }) {
  const pages = useCursorPages(`${endpointId}/${version}`);
  const deliveries = useResource(() => getWebhookDeliveries(endpointId, { limit: DELIVERIES_PER_PAGE, cursor: pages.cursor }), [endpointId, version, pages.cursor], DELIVERIES_REFRESH_MS);
  return (
    <ResourceView resource={deliveries} isEmpty={(answer) => answer.data.length === 0 && pages.before === 0} empty="No delivery yet. Send a test event to try the endpoint.">
      {(answer) => (
        <>
        <div class="table-wrap">
          <table class="deliveries">
            <caption class="visually-hidden">Deliveries to {url}</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Outcome</th>
                <th scope="col" class="num">Attempts</th>
                <th scope="col" class="num">Status</th>
                <th scope="col">Last attempt</th>
                <th scope="col" class="hide-narrow">Event id</th>
              </tr>
            </thead>
            <tbody>
              {answer.data.map((delivery) => (
                <tr key={delivery.event_id}>
                  <td class="mono">{delivery.event_type}</td>
                  <td>
                    <span class={`badge badge-${OUTCOMES[delivery.state].tone}`} title={delivery.last_error ?? undefined}>
                      {OUTCOMES[delivery.state].label}
                    </span>
                    {delivery.state === 'pending' && delivery.next_attempt_at !== null && (
                      <span class="small muted">
                        {' '}
                        next <RelativeTime value={delivery.next_attempt_at} />
                      </span>
                    )}
                    {delivery.last_error !== null && delivery.state !== 'delivered' && <div class="small muted">{delivery.last_error}</div>}
                  </td>
                  <td class="num">{delivery.attempts}</td>
                  <td class="num">{delivery.last_status_code ?? '—'}</td>
                  <td>
                    <RelativeTime value={delivery.last_attempt_at} never="not yet" />
                  </td>
                  <td class="mono small hide-narrow" title={delivery.event_id}>
                    {delivery.event_id.slice(0, 14)}…
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <Pager pages={pages} nextCursor={answer.next_cursor} noun={`deliveries to ${url}`} />
        </>
      )}
    </ResourceView>
  );
}
