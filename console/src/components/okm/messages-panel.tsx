import { useState } from 'preact/hooks';
import { queueOkmMessage } from '../../api/client.ts';
import type { Resource } from '../use-resource.ts';
import type { listOkmMessages } from '../../api/client.ts';
import { LocalTime, RelativeTime } from '../relative-time.tsx';
import { Badge } from '../state-badge.tsx';
import { ErrorState } from '../states.tsx';
import { ResourceView } from '../resource-view.tsx';

type Messages = Awaited<ReturnType<typeof listOkmMessages>>;

/** Buffered messages: waiting ones first go out with the next poll; queue a delete-assets message. */
export function MessagesPanel({ serial, messages, canWrite }: { serial: string; messages: Resource<Messages>; canWrite: boolean }) {
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const queueDeleteAssets = async () => {
    if (!window.confirm(`Queue a delete-assets message for ${serial}? The OKM deletes its locks and users at its next poll.`)) return;
    setBusy(true);
    setError(undefined);
    try {
      await queueOkmMessage(serial, 'delete-assets');
      messages.reload();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="card section">
      <div class="card-header">
        <h2>Buffered messages</h2>
        {canWrite && (
          <button type="button" onClick={queueDeleteAssets} disabled={busy}>
            Queue delete-assets
          </button>
        )}
      </div>
      {error !== undefined && <ErrorState error={error} />}
      <ResourceView resource={messages} isEmpty={(list) => list.data.length === 0} empty="No message has been queued for this OKM.">
        {(list) => (
        <div class="table-wrap">
          <table data-testid="messages">
            <thead>
              <tr>
                <th scope="col">Type</th>
                <th scope="col">Queued</th>
                <th scope="col">Delivered</th>
              </tr>
            </thead>
            <tbody>
              {[...list.data].reverse().map((message) => (
                <tr key={message.id}>
                  <td class="mono">{message.type}</td>
                  <td>
                    <LocalTime value={message.created_at} />
                  </td>
                  <td>{message.delivered_at === null ? <Badge kind="never_polled" label="Waiting for the next poll" /> : <RelativeTime value={message.delivered_at} />}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        )}
      </ResourceView>
    </div>
  );
}
