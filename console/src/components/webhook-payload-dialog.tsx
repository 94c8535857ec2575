import { useEffect, useRef } from 'preact/hooks';
import { getWebhookDelivery, type WebhookDelivery } from '../api/client.ts';
import { ResourceView } from './resource-view.tsx';
import { useResource } from './use-resource.ts';

/**
 * The body one delivery sends, as the server shows it (members named like secrets read
 * "[redacted]"), in a modal <dialog>: Escape or Close leaves it. A failed or gone delivery
 * can be sent again from here.
 */
export function WebhookPayloadDialog({
  endpointId,
  delivery,
  onRedeliver,
  onClose,
}: {
  endpointId: number;
  delivery: WebhookDelivery;
  onRedeliver?: () => void;
  onClose: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  const detail = useResource(() => getWebhookDelivery(endpointId, delivery.id), [endpointId, delivery.id]);
  return (
    <dialog ref={dialog} class="acl-dialog payload-dialog" aria-labelledby="payload-title" onCancel={onClose}>
      <h2 id="payload-title">
        {delivery.event_type} <span class="muted small mono">{delivery.event_id}</span>
      </h2>
      <p class="small muted">The body every attempt of this delivery sends. Secrets (PIN hashes, signing secrets, tokens) read [redacted].</p>
      <ResourceView resource={detail} isEmpty={() => false} empty="">
        {(answer) => (
          <pre class="json payload" data-testid="delivery-payload">
            {JSON.stringify(answer.data.payload, null, 2)}
          </pre>
        )}
      </ResourceView>
      <div class="page-actions">
        {onRedeliver !== undefined && (
          <button type="button" onClick={onRedeliver}>
            Redeliver
          </button>
        )}
        <button type="button" onClick={onClose} autofocus>
          Close
        </button>
      </div>
    </dialog>
  );
}
