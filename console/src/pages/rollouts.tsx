import { useLocation } from 'preact-iso';
import { listRollouts } from '../api/client.ts';
import { FIRMWARE_KIND_LABELS } from '../components/firmware-kind-field.tsx';
import { PageHeader } from '../components/layout.tsx';
import { Pager } from '../components/pager.tsx';
import { RelativeTime } from '../components/relative-time.tsx';
import { RolloutProgressBar } from '../components/rollout-progress-bar.tsx';
import { RolloutStateBadge } from '../components/rollout-state-badge.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { actingCustomer, TenantPicker } from '../components/tenant-picker.tsx';
import { useCursorPages } from '../components/use-cursor-pages.ts';
import { useResource } from '../components/use-resource.ts';
import { href } from '../paths.ts';
import { rolloutHref } from '../rollout-paths.ts';
import { memberCount } from '../rollout-progress.ts';
import { useSession } from '../session.ts';

/** The rollout pages ask again this often, as the overview does. */
export const ROLLOUT_REFRESH_MS = 10_000;
const ROLLOUTS_PER_PAGE = 30;

/** Firmware rollouts, newest first, with their state and how far each group has come. */
export function RolloutsPage() {
  const session = useSession()!;
  const { query } = useLocation();
  const customer = actingCustomer(session, query);
  const asOperator = session.claims.customer === null;
  const pages = useCursorPages(customer);
  const rollouts = useResource(
    () => listRollouts({ customer: asOperator && customer !== '' ? customer : undefined, limit: ROLLOUTS_PER_PAGE, cursor: pages.cursor }),
    [customer, pages.cursor],
    ROLLOUT_REFRESH_MS,
  );

  return (
    <section>
      <PageHeader title="Rollouts">
        <a class="button primary" href={href('/rollouts/new')}>
          New rollout
        </a>
      </PageHeader>
      <p class="muted">A new firmware release reaches the fleet in groups: a few OKMs first, the rest once enough of them have updated.</p>
      <TenantPicker session={session} purpose="rollouts" />
      {rollouts.error !== undefined && rollouts.data === undefined ? (
        <ErrorState error={rollouts.error} retry={rollouts.reload} />
      ) : rollouts.data === undefined ? (
        <Loading what="Loading rollouts" />
      ) : rollouts.data.data.length === 0 ? (
        <>
          <Empty>{pages.before > 0 ? 'No more rollouts.' : 'No rollout yet. A new rollout offers a release to a few OKMs first.'}</Empty>
          <Pager pages={pages} nextCursor={null} noun="rollouts" />
        </>
      ) : (
        <>
          <div class="table-wrap">
            <table data-testid="rollout-list">
              <caption class="visually-hidden">Rollouts</caption>
              <thead>
                <tr>
                  <th scope="col">Rollout</th>
                  <th scope="col">Firmware</th>
                  {asOperator && <th scope="col">Customer</th>}
                  <th scope="col">State</th>
                  <th scope="col">Groups</th>
                  <th scope="col" class="hide-narrow">Updated</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {rollouts.data.data.map((rollout) => (
                  <tr key={rollout.id}>
                    <th scope="row">
                      <a href={rolloutHref(rollout.id)}>#{rollout.id}</a>
                    </th>
                    <td>
                      {FIRMWARE_KIND_LABELS[rollout.kind]} <strong>{rollout.version}</strong>
                    </td>
                    {asOperator && <td>{rollout.customer ?? <span class="muted">every customer</span>}</td>}
                    <td>
                      <RolloutStateBadge state={rollout.state} reason={rollout.state_reason} />
                    </td>
                    <td>
                      <div class="group-bars">
                        {rollout.groups.map((group, index) => (
                          <div class="group-bar" key={index}>
                            <span class="small muted" aria-hidden="true">
                              {group.percent} %
                            </span>
                            <RolloutProgressBar compact label={`Rollout ${rollout.id}, group ${index + 1} (${group.percent} %)`} counts={group.counts} />
                          </div>
                        ))}
                      </div>
                    </td>
                    <td class="num hide-narrow">
                      {rollout.totals.updated.toLocaleString()} / {memberCount(rollout.totals).toLocaleString()}
                    </td>
                    <td>
                      <RelativeTime value={rollout.created_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <Pager pages={pages} nextCursor={rollouts.data.next_cursor} noun="rollouts" />
        </>
      )}
    </section>
  );
}
