import { useLocation } from 'preact-iso';
import { listFirmware } from '../api/client.ts';
import { PageHeader } from '../components/layout.tsx';
import { RolloutCreateForm } from '../components/rollout-create-form.tsx';
import { ErrorState, Loading } from '../components/states.tsx';
import { useResource } from '../components/use-resource.ts';
import { href } from '../paths.ts';
import { rolloutHref } from '../rollout-paths.ts';
import { useSession } from '../session.ts';

/** The create form of a rollout, its releases from the firmware catalog. */
export function RolloutNewPage() {
  const session = useSession()!;
  const { route } = useLocation();
  const catalog = useResource(() => listFirmware(), []);
  return (
    <section>
      <PageHeader title="New rollout">
        <a href={href('/rollouts')}>All rollouts</a>
      </PageHeader>
      {catalog.error !== undefined ? (
        <ErrorState error={catalog.error} retry={catalog.reload} />
      ) : catalog.data === undefined ? (
        <Loading what="Loading the firmware catalog" />
      ) : (
        <RolloutCreateForm releases={catalog.data.data} isAdmin={session.claims.isAdmin} onCreated={(rollout) => route(rolloutHref(rollout.id))} />
      )}
    </section>
  );
}
