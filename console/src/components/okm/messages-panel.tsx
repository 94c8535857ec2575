import { useState } from 'preact/hooks';
import { listOkmMessages, queueOkmMessage } from '../../api/client.ts';
import { Pager } from '../pager.tsx';
import { LocalTime, RelativeTime } from '../relative-time.tsx';
import { Badge } from '../state-badge.tsx';
import { ErrorState } from '../states.tsx';
import { ResourceView } from '../resource-view.tsx';
import { useCursorPages } from '../use-cursor-pages.ts';
import { useResource } from '../use-resource.ts';

const MESSAGES_PER_PAGE = 20;

/**
 * Buffered messages, oldest first as the OKM receives them (the waiting ones go out with its
 * next polls, one a poll); queue a delete-assets message. `version` changes make the page load
 * again at once (the page's Refresh); `onQueued` tells the page a message was queued.
 */
export function MessagesPanel({ serial, canWrite, refreshMs, version, onQueued }: { serial: string; canWrite: boolean; refreshMs: number; version: number; onQueued: () => void }) {
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const pages = useCursorPages(serial);
  const messages = useResource(() => listOkmMessages(serial, { limit: MESSAGES_PER_PAGE, cursor: pages.cursor }), [serial, pages.cursor, version], refreshMs);
  const queueDeleteAssets = async () => {
    if (!window.confirm(`Queue a delete-assets message for ${serial}? The OKM deletes its locks and users at its next poll.`)) return;
    setBusy(true);
    setError(undefined);
    try {
      await queueOkmMessage(serial, 'delete-assets');
      messages.reload();
      onQueued();
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
      <ResourceView resource={messages} isEmpty={(list) => list.data.length === 0 && pages.before === 0} empty="No message has been queued for this OKM.">
        {(list) => (
        <>
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
                {list.data.map((message) => (
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
          <Pager pages={pages} nextCursor={list.next_cursor} noun="messages" />
        </>
        )}
      </ResourceView>
    </div>
  );
}
