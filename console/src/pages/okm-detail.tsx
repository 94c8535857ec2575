import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { getOkm, getOkmDrift, listOkmMessages } from '../api/client.ts';
import { PageHeader } from '../components/layout.tsx';
import { AdminPanel } from '../components/okm/admin-panel.tsx';
import { AuditPanel } from '../components/okm/audit-panel.tsx';
import { ConfigurationForm } from '../components/okm/configuration-form.tsx';
import { DeliveriesPanel } from '../components/okm/deliveries-panel.tsx';
import { DriftTable } from '../components/okm/drift-table.tsx';
import { EntityHistory } from '../components/entity-history.tsx';
import { MessagesPanel } from '../components/okm/messages-panel.tsx';
import { LocalTime, RelativeTime } from '../components/relative-time.tsx';
import { OkmStateBadge } from '../components/state-badge.tsx';
import { stuckReason } from '../format.ts';
import { correctionWords, nextOfferWords, nextPollWords, offerSourceWords, retryPolicyWords, shortTime } from '../correction-words.ts';
import { ErrorState, Loading } from '../components/states.tsx';
import { useResource } from '../components/use-resource.ts';
import { href } from '../paths.ts';
import { useSession } from '../session.ts';

/** The record, its drift and its messages are asked again this often, so that a device's poll shows. */
const DETAIL_REFRESH_MS = 10_000;
const WAITING_COUNTED = 500;

export function OkmDetailPage() {
  const serial = useRoute().params.serial ?? '';
  const claims = useSession()?.claims;
  const canWrite = (claims?.isAdmin || claims?.scopes.includes('okm:write')) ?? false;
  const okm = useResource(() => getOkm(serial), [serial], DETAIL_REFRESH_MS);
  const drift = useResource(() => getOkmDrift(serial), [serial], DETAIL_REFRESH_MS);
  // The messages waiting, for the drift table's count: one page of the largest size holds any real backlog.
  const waiting = useResource(() => listOkmMessages(serial, { pending: true, limit: WAITING_COUNTED }), [serial], DETAIL_REFRESH_MS);
  const [version, setVersion] = useState(0);
  const refresh = () => {
    okm.reload();
    drift.reload();
    waiting.reload();
    setVersion((previous) => previous + 1);
  };

  const record = okm.data?.data;
  const report = drift.data?.data;
  const pendingMessages = waiting.data?.data.length ?? 0;
  // The badge and the drift card read one answer, the drift report's, so that they cannot disagree.
  const expectedNext = report === undefined ? undefined : (report.resolvers.find((resolver) => resolver.verdict === 'next')?.name ?? null);
  const badgeOkm =
    record && (report === undefined ? record : { state: report.state, summary_state: report.summary_state, last_correction: report.last_correction, overdue: record.overdue, stuck: record.stuck });
  const nextResolver = report?.resolvers.find((resolver) => resolver.verdict === 'next') ?? null;
  // A stuck firmware offer: what stands behind it and when the retry policy offers it again.
  const stuckOffer = record?.stuck ? report?.firmware.find((offer) => offer.resolver === record.stuck?.resolver) : undefined;
  return (
    <section>
      <p class="breadcrumb">
        <a href={href('/okms')}>OKMs</a> /
      </p>
      <PageHeader
        title={
          <>
            <span class="mono">{serial}</span> {badgeOkm && <OkmStateBadge okm={badgeOkm} next={expectedNext} />}
          </>
        }
      >
        <button type="button" onClick={refresh} disabled={okm.loading || drift.loading}>
          Refresh
        </button>
      </PageHeader>
      {okm.error !== undefined && <ErrorState error={okm.error} retry={okm.reload} />}
      {record === undefined && okm.error === undefined && <Loading what="Loading the OKM" />}
      {record !== undefined && (
        <>
          {record.stuck && (
            <p class="notice notice-stuck" data-testid="stuck-reason">
              <strong>Stuck:</strong> {stuckReason(record.stuck, Date.now())}.
              {stuckOffer && (
                <>
                  {' '}
                  Offered {offerSourceWords(stuckOffer)}
                  {stuckOffer.hold && <>: {nextOfferWords(stuckOffer.hold, shortTime)}</>}; {retryPolicyWords(stuckOffer.retry_policy)}.
                </>
              )}
            </p>
          )}
          <dl class="kv card section facts">
            <dt>Customer</dt>
            <dd>{record.customer ?? <span class="muted">none</span>}</dd>
            <dt>Last seen</dt>
            <dd>
              <RelativeTime value={record.last_sync_time} never="never" />
              {record.last_ip !== null && <span class="muted"> from {record.last_ip}</span>}
            </dd>
            <dt>Firmware</dt>
            <dd class="mono">
              KAS {record.reported?.kasFirmware ?? record.firmware_version ?? '—'} · batch key {record.reported?.batchKeyFirmware ?? '—'} · wireless key {record.reported?.wirelessKeyFirmware ?? '—'}
            </dd>
            <dt>Polling</dt>
            <dd>every {record.effective_polling_interval} s{record.overdue && <strong class="bad"> · overdue</strong>}</dd>
            <dt>Linked ACL</dt>
            <dd>{record.acl_id ?? <span class="muted">none</span>}</dd>
            <dt>Created</dt>
            <dd>
              <LocalTime value={record.created_at} />
            </dd>
          </dl>

          <div class="split">
            <div class="card section">
              <div class="card-header">
                <h2>Configured and reported</h2>
              </div>
              {report && (
                <div class="drift-summary">
                  <p data-testid="drift-last">
                    {report.last_poll_at === null ? (
                      'Never polled: nothing sent yet'
                    ) : (
                      <>
                        Sent on the last poll: {report.last_correction === null ? 'nothing' : <code>{report.last_correction}</code>}
                      </>
                    )}
                  </p>
                  <p data-testid="drift-verdict">
                    Next poll:{' '}
                    {nextResolver ? (
                      <>
                        <code>{nextResolver.name}</code>: {correctionWords(nextResolver.name, nextResolver.correction)}
                      </>
                    ) : (
                      nextPollWords(null, record.stuck?.resolver ?? null, report.firmware, shortTime)
                    )}
                  </p>
                </div>
              )}
              {drift.error !== undefined ? (
                <ErrorState error={drift.error} retry={drift.reload} />
              ) : drift.data === undefined ? (
                <Loading />
              ) : (
                <DriftTable okm={record} drift={drift.data.data} pendingMessages={pendingMessages} />
              )}
            </div>
            <div class="card section">
              <h2>Configuration</h2>
              {canWrite ? (
                <ConfigurationForm okm={record} onSaved={refresh} />
              ) : (
                <p class="muted" data-testid="no-okm-write">You may not change OKMs: that needs the okm:write scope (a role such as device-operator).</p>
              )}
            </div>
          </div>

          {claims?.isAdmin && <AdminPanel okm={record} onChanged={refresh} />}
          <MessagesPanel serial={serial} canWrite={canWrite} refreshMs={DETAIL_REFRESH_MS} version={version} onQueued={() => { waiting.reload(); drift.reload(); }} />
          <DeliveriesPanel serial={serial} />
          <AuditPanel serial={serial} />
          <EntityHistory type="okm" id={serial} version={version} />
        </>
      )}
    </section>
  );
}
