import { useState } from 'preact/hooks';
import { getWebhookDeliveries, redeliverWebhookDelivery, type WebhookDelivery } from '../api/client.ts';
import { okmHref } from '../paths.ts';
import { Pager } from './pager.tsx';
import { RelativeTime } from './relative-time.tsx';
import { ResourceView } from './resource-view.tsx';
import { useCursorPages } from './use-cursor-pages.ts';
import { useResource } from './use-resource.ts';
import { WebhookPayloadDialog } from './webhook-payload-dialog.tsx';

/** The deliveries list asks again this often, so that a test event's outcome shows by itself. */
export const DELIVERIES_REFRESH_MS = 5_000;

const OUTCOMES = {
  pending: { label: 'Retrying', tone: 'drifting' },
  delivered: { label: 'Delivered', tone: 'in-step' },
  failed: { label: 'Failed', tone: 'overdue' },
  gone: { label: 'Gone (410)', tone: 'never-polled' },
} as const;

const DELIVERIES_PER_PAGE = 10;

/** Deliveries that ended without getting through: what "Redeliver" is offered on. */
const redeliverable = (delivery: WebhookDelivery) => delivery.state === 'failed' || delivery.state === 'gone';

export interface DeliveryNotice {
  ok: boolean;
  text: string;
}

/**
 * An endpoint's deliveries, newest first, a page at a time, each with the OKM its event names,
 * its payload on "View" and, when it failed or is gone, "Redeliver" (a new delivery of the
 * same event, shown at the top once queued). `version` changes (a test event sent) make it
 * load again at once, from its first page, where the new delivery is.
 */
export function WebhookDeliveries({ endpointId, url, version, onNotice }: { endpointId: number; url: string; version: number; onNotice?: (notice: DeliveryNotice) => void }) {
  const [redelivered, setRedelivered] = useState(0);
  const pages = useCursorPages(`${endpointId}/${version}/${redelivered}`);
  const deliveries = useResource(() => getWebhookDeliveries(endpointId, { limit: DELIVERIES_PER_PAGE, cursor: pages.cursor }), [endpointId, version, redelivered, pages.cursor], DELIVERIES_REFRESH_MS);
  const [viewing, setViewing] = useState<WebhookDelivery | null>(null);
  const [busy, setBusy] = useState<number | null>(null);
  const redeliver = async (delivery: WebhookDelivery) => {
    setBusy(delivery.id);
    try {
      const answer = await redeliverWebhookDelivery(endpointId, delivery.id);
      onNotice?.({ ok: true, text: `${delivery.event_type} ${delivery.event_id} queued again for ${url} (delivery ${answer.data.id}); the receiver gets the same event id.` });
      setViewing(null);
      setRedelivered((count) => count + 1);
    } catch (failure) {
      onNotice?.({ ok: false, text: failure instanceof Error ? failure.message : String(failure) });
    } finally {
      setBusy(null);
    }
  };
  return (
    <>

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
                <th scope="col" class="actions">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {answer.data.map((delivery) => (
                <tr key={delivery.id}>
                  <td>
                    <span class="mono">{delivery.event_type}</span>
                    {delivery.serial_number !== null && (
                      <div class="small">
                        <a href={okmHref(delivery.serial_number)} class="mono" data-testid="delivery-okm">
                          {delivery.serial_number}
                        </a>
                      </div>
                    )}
                  </td>
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
                  <td class="actions">
                    <button type="button" class="small-button" onClick={() => setViewing(delivery)} title={delivery.event_id} aria-label={`View the payload of ${delivery.event_type} delivery ${delivery.id}`}>
                      View
                    </button>
                    {redeliverable(delivery) && (
                      <button
                        type="button"
                        class="small-button"
                        disabled={busy === delivery.id}
                        onClick={() => void redeliver(delivery)}
                        aria-label={`Redeliver ${delivery.event_type} delivery ${delivery.id}`}
                      >
                        {busy === delivery.id ? 'Queueing…' : 'Redeliver'}
                      </button>
                    )}
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
    {viewing !== null && (
      <WebhookPayloadDialog
        endpointId={endpointId}
        delivery={viewing}
        onRedeliver={redeliverable(viewing) ? () => void redeliver(viewing) : undefined}
        onClose={() => setViewing(null)}
      />
    )}
    </>
  );
}
