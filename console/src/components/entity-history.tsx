import { listAuditLog, type AuditEntityType } from '../api/client.ts';
import { ENTITY_LABELS, historyHref, mayReadAudit } from '../audit-entry.ts';
import { useSession } from '../session.ts';
import { HistoryTable } from './history-table.tsx';
import { ResourceView } from './resource-view.tsx';
import { useResource } from './use-resource.ts';

/** An entity's page shows its latest entries; the History page has them all. */
const ENTRIES_SHOWN = 10;

/**
 * The history of one OKM, ACL, rollout or lock on its own page: its latest changes, who made
 * them and what they changed, and a link to all of them on the History page. Shown to those who
 * may read the audit trail. `version`: a new value (a save on the page) loads it again.
 */
export function EntityHistory(props: { type: AuditEntityType; id: string; version?: unknown }) {
  const session = useSession()!;
  return mayReadAudit(session.claims) ? <LatestChanges {...props} asOperator={session.claims.customer === null} /> : null;
}

function LatestChanges({ type, id, version, asOperator }: { type: AuditEntityType; id: string; version?: unknown; asOperator: boolean }) {
  const history = useResource(() => listAuditLog({ entity_type: type, entity_id: id, limit: ENTRIES_SHOWN }), [type, id, version]);
  const all = historyHref({ entity_type: type, entity_id: id });
  return (
    <section class="card section entity-history" aria-labelledby="entity-history-title" data-testid="entity-history">
      <div class="card-header">
        <h2 id="entity-history-title">History</h2>
        <a href={all}>All changes of this {ENTITY_LABELS[type]} →</a>
      </div>
      <ResourceView resource={history} isEmpty={(page) => page.data.length === 0} empty={`No change of this ${ENTITY_LABELS[type]} has been recorded.`}>
        {(page) => (
          <>
            <HistoryTable entries={page.data} asOperator={asOperator} entityShown={false} caption={`Latest changes of this ${ENTITY_LABELS[type]}, newest first`} />
            {page.next_cursor !== null && (
              <p class="small">
                The {ENTRIES_SHOWN} latest changes. <a href={all}>Older ones on the History page</a>
              </p>
            )}
          </>
        )}
      </ResourceView>
    </section>
  );
}
