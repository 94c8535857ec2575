import { useEffect, useState } from 'preact/hooks';
import { getFleetSummary, listFailingEndpoints, listFailingSubscribers, type FailingEndpoint, type FleetSummary } from '../api/client.ts';
import { BarChart } from '../components/bar-chart.tsx';
import { PageHeader } from '../components/layout.tsx';
import { RelativeTime } from '../components/relative-time.tsx';
import { ResourceView } from '../components/resource-view.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { useResource } from '../components/use-resource.ts';
import { href } from '../paths.ts';
import { useSession } from '../session.ts';
import { CustomerInput } from '../components/customer-input.tsx';

/** How often the overview asks again (contract §12: refreshes by itself, every ~10 s). */
export const OVERVIEW_REFRESH_MS = 10_000;

const FIRMWARE_KINDS = [
  { kind: 'kas', label: 'KAS', color: '#1f5fbf' },
  { kind: 'batch_key', label: 'Batch key', color: '#2f8a6b' },
  { kind: 'wireless_key', label: 'Wireless key', color: '#8a5cc2' },
] as const;

/** Versions beyond this many are summed into one "other" bar. */
const MOST_VERSIONS = 8;

function versionBars(counts: FleetSummary['firmware']['kas']) {
  const bars = counts.slice(0, MOST_VERSIONS).map((count) => ({ label: count.version, value: count.okms }));
  const rest = counts.slice(MOST_VERSIONS).reduce((sum, count) => sum + count.okms, 0);
  return rest > 0 ? [...bars, { label: `${counts.length - MOST_VERSIONS} other`, value: rest }] : bars;
}

function Corrections({ corrections, okmsLink }: { corrections: FleetSummary['corrections']; okmsLink: (query: string) => string }) {
  const rows = Object.entries(corrections).sort(([, a], [, b]) => b - a);
  if (rows.length === 0) return <Empty>No OKM's last poll was answered with a correction.</Empty>;
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">Resolver (reply key)</th>
            <th scope="col" class="num">OKMs</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([resolver, okms]) => (
            <tr key={resolver}>
              <td class="mono">
                <a href={okmsLink(`?last_correction=${encodeURIComponent(resolver)}`)}>{resolver}</a>
              </td>
              <td class="num">
                <a href={okmsLink(`?last_correction=${encodeURIComponent(resolver)}`)} data-testid={`corrections-${resolver}`}>
                  {okms.toLocaleString()}
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Stat({ label, value, tone, link }: { label: string; value: number; tone: string; link?: string }) {
  const body = (
    <>
      <span class="value" data-testid={`count-${tone}`}>
        {value.toLocaleString()}
      </span>
      <span class="label">{label}</span>
    </>
  );
  return link ? (
    <a class={`stat ${tone}`} href={link}>
      {body}
    </a>
  ) : (
    <div class={`stat ${tone}`}>{body}</div>
  );
}

/** Webhook endpoints whose newest attempted delivery did not get through, each linked to its endpoint on the Events page. */
function FailingEndpoints({ scope, operator }: { scope: string | undefined; operator: boolean }) {
  const failing = useResource(() => listFailingEndpoints(scope), [scope], OVERVIEW_REFRESH_MS);
  const endpointLink = (endpoint: FailingEndpoint) =>
    href(`/events?endpoint=${endpoint.id}${operator && endpoint.customer !== null ? `&customer=${encodeURIComponent(endpoint.customer)}` : ''}`);
  return (
    <div class="card section" data-testid="failing-endpoints">
      <h2>Failing webhook endpoints</h2>
      <ResourceView resource={failing} isEmpty={(list) => list.data.length === 0} empty="Every webhook endpoint accepted its latest delivery.">
        {(list) => (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">Endpoint</th>
                  <th scope="col">Last error</th>
                </tr>
              </thead>
              <tbody>
                {list.data.map((endpoint) => (
                  <tr key={endpoint.id}>
                    <td class="mono url">
                      <a href={endpointLink(endpoint)} data-testid="failing-endpoint-link">
                        {endpoint.url}
                      </a>
                      <div class="small muted">
                        {endpoint.customer ?? 'deployment-wide'} · {endpoint.event_type}
                      </div>
                    </td>
                    <td>
                      {endpoint.last_error}
                      <div class="small muted">
                        {endpoint.state === 'pending' ? `retrying, ${endpoint.attempts} attempts so far` : endpoint.state === 'gone' ? 'stopped (410)' : `gave up after ${endpoint.attempts} attempts`},{' '}
                        <RelativeTime value={endpoint.last_attempt_at} />
                      </div>
                    </td>
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

export function OverviewPage() {
  const session = useSession();
  const isAdmin = session?.claims.isAdmin ?? false;
  // The endpoints are read with okm:write, as on the Events page; a fleet-wide role that is not
  // an admin must name a customer there, which the overview does not.
  const seesEndpoints = isAdmin || (session !== null && session !== undefined && session.claims.customer !== null && session.claims.scopes.includes('okm:write'));
  const [customer, setCustomer] = useState('');
  const [customerInput, setCustomerInput] = useState('');
  const scope = isAdmin && customer !== '' ? customer : undefined;
  const summary = useResource(() => getFleetSummary(scope), [scope], OVERVIEW_REFRESH_MS);
  const failing = useResource(() => listFailingSubscribers(scope), [scope], OVERVIEW_REFRESH_MS);
  const [updatedAt, setUpdatedAt] = useState<string | null>(null);
  useEffect(() => {
    if (summary.data) setUpdatedAt(new Date().toISOString());
  }, [summary.data]);
  const data = summary.data?.data;
  const okmsLink = (query: string) => href(`/okms${query}${scope ? `${query ? '&' : '?'}customer=${encodeURIComponent(scope)}` : ''}`);

  return (
    <section>
      <PageHeader title="Overview">
        {isAdmin && (
          <form
            class="inline-form"
            onSubmit={(event) => {
              event.preventDefault();
              setCustomer(customerInput.trim());
            }}
          >
            <label for="overview-customer">Customer</label>
            <CustomerInput id="overview-customer" placeholder="all customers" value={customerInput} onValue={setCustomerInput} />
            <button type="submit">Show</button>
          </form>
        )}
        <span class="muted small" aria-live="polite">
          {summary.loading ? 'Refreshing…' : updatedAt === null ? '' : <>Updated <RelativeTime value={updatedAt} /></>}
        </span>
      </PageHeader>

      {summary.error !== undefined && <ErrorState error={summary.error} retry={summary.reload} />}
      {data === undefined && summary.error === undefined && <Loading what="Loading the fleet" />}
      {data !== undefined && (
        <>
          <div class="stats" data-testid="fleet-counts">
            <Stat label="OKMs" value={data.okms.total} tone="total" link={okmsLink('')} />
            <Stat label="In step" value={data.okms.in_step} tone="in-step" link={okmsLink('?state=in_step')} />
            <Stat label="Drifting" value={data.okms.drifting} tone="drifting" link={okmsLink('?state=drifting')} />
            <Stat label="Overdue" value={data.okms.overdue} tone="overdue" link={okmsLink('?overdue=true')} />
            <Stat label="Never polled" value={data.okms.never_polled} tone="never-polled" link={okmsLink('?state=never_polled')} />
            <Stat label="Stuck" value={data.okms.stuck} tone="stuck" link={okmsLink('?state=stuck')} />
            {data.pending !== undefined && <Stat label="Pending acceptance" value={data.pending} tone="pending" link={href('/pending-okms')} />}
          </div>

          <h2 class="section-title">Firmware versions reported</h2>
          <div class="cards three">
            {FIRMWARE_KINDS.map(({ kind, label, color }) => {
              const counts = data.firmware[kind];
              const bars = versionBars(counts);
              return (
                <div class="card" key={kind}>
                  <h3>{label}</h3>
                  {bars.length === 0 ? (
                    <Empty>No OKM has reported a {label} version yet.</Empty>
                  ) : (
                    <BarChart bars={bars} color={color} unit="OKMs" description={`${label} firmware: ${bars.map((bar) => `${bar.label} on ${bar.value} OKMs`).join(', ')}`} />
                  )}
                </div>
              );
            })}
          </div>
          <div class="cards wide-right">
            <div class="card">
              <h2>Corrections sent on the last poll, by resolver</h2>
              <Corrections corrections={data.corrections} okmsLink={okmsLink} />
            </div>
            <div class="card">
              <h2>Failing status-event subscribers</h2>
              <ResourceView resource={failing} isEmpty={(list) => list.data.length === 0} empty="Every subscriber URL is receiving its status events.">
                {(list) => (
                <div class="table-wrap">
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">URL</th>
                        <th scope="col" class="num">OKMs</th>
                        <th scope="col">Last error</th>
                        <th scope="col">Last attempt</th>
                      </tr>
                    </thead>
                    <tbody>
                      {list.data.map((subscriber) => (
                        <tr key={subscriber.url}>
                          <td class="mono url">
                            <a href={okmsLink(`?subscriber_url=${encodeURIComponent(subscriber.url)}`)}>{subscriber.url}</a>
                          </td>
                          <td class="num" title={`${subscriber.failed} gave up, ${subscriber.okms - subscriber.failed} retrying`}>
                            <a href={okmsLink(`?subscriber_url=${encodeURIComponent(subscriber.url)}`)} data-testid="failing-subscriber-okms">
                              {subscriber.okms.toLocaleString()}
                            </a>
                          </td>
                          <td>{subscriber.last_error ?? '—'}</td>
                          <td>
                            <RelativeTime value={subscriber.last_attempt_at} />
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
                )}
              </ResourceView>
            </div>
          </div>
        </>
      )}
      {/* Outside the summary's block: asked with the summary, not a round trip after it has loaded. */}
      {seesEndpoints && <FailingEndpoints scope={scope} operator={session?.claims.customer === null} />}
    </section>
  );
}
