import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { deleteWebhookEndpoint, etagOf, getWebhookEndpoint, listWebhookEndpoints, sendWebhookTestEvent, type WebhookEndpoint } from '../api/client.ts';
import { PageHeader } from '../components/layout.tsx';
import { Pager } from '../components/pager.tsx';
import { LocalTime } from '../components/relative-time.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { actingCustomer, TenantPicker } from '../components/tenant-picker.tsx';
import { useCursorPages } from '../components/use-cursor-pages.ts';
import { useResource } from '../components/use-resource.ts';
import { WebhookDeleteDialog } from '../components/webhook-delete-dialog.tsx';
import { WebhookDeliveries } from '../components/webhook-deliveries.tsx';
import { WebhookEndpointForm } from '../components/webhook-endpoint-form.tsx';
import { href } from '../paths.ts';
import { useSession } from '../session.ts';

const ENDPOINTS_PER_PAGE = 20;

/** Fleet-event webhook endpoints: what each receives, a test event, and its recent deliveries. */
export function EventsPage() {
  const session = useSession()!;
  const { query } = useLocation();
  const customer = actingCustomer(session, query);
  const asOperator = session.claims.customer === null;
  const named = asOperator && customer !== '' ? customer : undefined;
  // ?endpoint=ID (the overview's link to a failing endpoint): that endpoint alone.
  const only = /^[1-9][0-9]{0,14}$/.test(query.endpoint ?? '') ? Number(query.endpoint) : undefined;
  const pages = useCursorPages(named ?? '');
  const endpoints = useResource(
    () =>
      only === undefined
        ? listWebhookEndpoints({ customer: named, limit: ENDPOINTS_PER_PAGE, cursor: pages.cursor })
        : getWebhookEndpoint(only, named).then((answer) => ({ ...answer, data: [answer.data], next_cursor: null })),
    [named, only, pages.cursor],
  );
  const [deleting, setDeleting] = useState<WebhookEndpoint | null>(null);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState<{ ok: boolean; text: string } | null>(null);
  /** Bumped per endpoint after a test event, so that its deliveries load again at once. */
  const [versions, setVersions] = useState<Record<number, number>>({});

  const failed = (failure: unknown) => setNotice({ ok: false, text: failure instanceof Error ? failure.message : String(failure) });
  const sendTest = async (endpoint: WebhookEndpoint) => {
    setNotice(null);
    try {
      const answer = await sendWebhookTestEvent(endpoint.id);
      setNotice({ ok: true, text: `Test event ${answer.data.event_id} queued for ${endpoint.url}; its delivery shows below.` });
      setVersions((previous) => ({ ...previous, [endpoint.id]: (previous[endpoint.id] ?? 0) + 1 }));
    } catch (failure) {
      failed(failure);
    }
  };
  const remove = async (endpoint: WebhookEndpoint) => {
    setBusy(true);
    try {
      // The delete is based on the endpoint as listed: read its version, and refuse if it no longer is what the list shows.
      const current = await getWebhookEndpoint(endpoint.id, named);
      if (current.data.url !== endpoint.url || current.data.event_types.join(' ') !== endpoint.event_types.join(' ')) {
        throw new Error(`Endpoint ${endpoint.id} was changed since this list was loaded (it now sends ${current.data.event_types.join(', ')} to ${current.data.url}); nothing was deleted: the list shows it as it now is, look at it again before you delete it.`);
      }
      await deleteWebhookEndpoint(endpoint.id, etagOf(current));
      setNotice({ ok: true, text: `Endpoint ${endpoint.url} deleted.` });
      setDeleting(null);
      endpoints.reload();
    } catch (failure) {
      setDeleting(null);
      failed(failure);
      // Changed or gone meanwhile (a 412 answers so too): the list shows it as it now is.
      endpoints.reload();
    } finally {
      setBusy(false);
    }
  };

  return (
    <section>
      <PageHeader title={named === undefined ? 'Events' : `Events of ${named}`} />
      <p class="muted">
        Fleet events (an OKM gone silent or back, a new device, a rollout that paused or finished…) are sent to these URLs as signed webhooks, with retries.
      </p>
      <TenantPicker session={session} purpose="endpoints" />
      {only !== undefined && (
        <p class="small">
          Endpoint {only} only. <a href={href(`/events${named === undefined ? '' : `?customer=${encodeURIComponent(named)}`}`)}>Every endpoint</a>
        </p>
      )}
      {notice !== null && (
        <p class={`notice ${notice.ok ? 'notice-ok' : 'notice-warning'}`} role={notice.ok ? 'status' : 'alert'}>
          {notice.text}
        </p>
      )}
      <div class="events-layout">
        <div>
          {endpoints.error !== undefined && endpoints.data === undefined ? (
            <ErrorState error={endpoints.error} retry={endpoints.reload} />
          ) : endpoints.data === undefined ? (
            <Loading what="Loading webhook endpoints" />
          ) : endpoints.data.data.length === 0 ? (
            <>
              <Empty>{pages.before > 0 ? 'No more endpoints.' : 'No webhook endpoint yet: fleet events go nowhere. Add one with the form.'}</Empty>
              <Pager pages={pages} nextCursor={null} noun="endpoints" />
            </>
          ) : (
            <>
              {endpoints.data.data.map((endpoint) => (
                <section class="card section endpoint" key={endpoint.id} aria-labelledby={`endpoint-${endpoint.id}`}>
                  <div class="endpoint-head">
                    <h2 id={`endpoint-${endpoint.id}`} class="mono break">
                      {endpoint.url}
                    </h2>
                    <div class="page-actions">
                      <button type="button" onClick={() => void sendTest(endpoint)} aria-label={`Send a test event to ${endpoint.url}`}>
                        Send test event
                      </button>
                      <button type="button" class="danger" onClick={() => setDeleting(endpoint)} aria-label={`Delete ${endpoint.url}…`}>
                        Delete…
                      </button>
                    </div>
                  </div>
                  <p class="small">
                    {endpoint.customer === null ? <strong>Deployment-wide</strong> : <>For {endpoint.customer}</>} · added <LocalTime value={endpoint.created_at} />
                  </p>
                  <p class="badges" aria-label="Event types">
                    {endpoint.event_types.map((type) => (
                      <code key={type} class="event-type">
                        {type}
                      </code>
                    ))}
                  </p>
                  <h3>Recent deliveries</h3>
                  <WebhookDeliveries endpointId={endpoint.id} url={endpoint.url} version={versions[endpoint.id] ?? 0} onNotice={setNotice} />
                </section>
              ))}
              <Pager pages={pages} nextCursor={endpoints.data.next_cursor} noun="endpoints" />
            </>
          )}
        </div>
        <WebhookEndpointForm
          customer={named}
          deploymentWide={asOperator && named === undefined}
          onCreated={(endpoint) => {
            setNotice({ ok: true, text: `Endpoint ${endpoint.url} added. Send it a test event to check that it answers.` });
            endpoints.reload();
          }}
        />
      </div>
      {deleting !== null && <WebhookDeleteDialog url={deleting.url} deleting={busy} onConfirm={() => void remove(deleting)} onCancel={() => setDeleting(null)} />}
    </section>
  );
}
