import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { fetchAuditExport, listAuditLog, type AuditEntityType, type AuditExportFormat, type AuditFilters } from '../api/client.ts';
import {
  ACTION_LABELS,
  actorProblem,
  AUDIT_ACTIONS,
  AUDIT_ENTITY_TYPES,
  ENTITY_LABELS,
  entityLabel,
  entityPath,
  entityTypeOf,
  exportFileName,
  exportHref,
  filtersOf,
  historyHref,
  isoFromLocalInput,
  localInputValue,
  mayReadAudit,
  rangeProblem,
} from '../audit-entry.ts';
import { HistoryTable } from '../components/history-table.tsx';
import { PageHeader } from '../components/layout.tsx';
import { Empty, ErrorState, Loading } from '../components/states.tsx';
import { useMorePages } from '../components/use-more-pages.ts';
import { useSession, type Session } from '../session.ts';
import { CustomerInput } from '../components/customer-input.tsx';
import { saveFile } from '../components/csv-download.tsx';

const ENTRIES_PER_PAGE = 50;

/**
 * The audit trail (contract §18): every change made through the API, the console, the
 * command line or a DLock API key, newest first, narrowed by the filters the address keeps, with
 * a download of the same selection.
 */
export function HistoryPage() {
  const session = useSession()!;
  const { query } = useLocation();
  const filters = filtersOf(query);
  const key = JSON.stringify(filters);
  const asOperator = session.claims.customer === null;
  const allowed = mayReadAudit(session.claims);
  const log = useMorePages((cursor) => (allowed ? listAuditLog({ ...filters, limit: ENTRIES_PER_PAGE, cursor }) : Promise.resolve({ data: [], next_cursor: null })), [key, allowed]);
  const filtered = Object.keys(filters).length > 0;

  if (!allowed) {
    return (
      <section>
        <PageHeader title="History" />
        <Empty>Reading the history of changes needs the audit:read scope (the auditor role) or admin.</Empty>
      </section>
    );
  }
  return (
    <section>
      <PageHeader title="History">
        <ExportLinks session={session} filters={filters} />
      </PageHeader>
      <p class="muted">
        Every change made through the API, this console, the command line or a DLock API key, newest first: who made it, what it changed, and from where. Device polls
        and reads are not changes.
      </p>
      <HistoryFilters key={key} filters={filters} asOperator={asOperator} />
      <EntityPageLink filters={filters} asOperator={asOperator} />
      {log.error !== undefined && <ErrorState error={log.error} retry={log.rows.length === 0 ? log.reload : log.more} />}
      {log.rows.length === 0 ? (
        log.loading ? (
          <Loading what="Loading the history" />
        ) : (
          log.error === undefined && <Empty>{filtered ? 'No change matches these filters.' : 'No change has been recorded yet.'}</Empty>
        )
      ) : (
        <>
          <p class="muted small" data-testid="history-count" aria-live="polite">
            {log.rows.length.toLocaleString()} {log.rows.length === 1 ? 'entry' : 'entries'}
            {log.hasMore ? ', and older ones' : filtered ? ': every entry that matches' : ': every entry'}
          </p>
          <HistoryTable entries={log.rows} asOperator={asOperator} customerShown={asOperator && filters.customer === undefined} caption="Changes, newest first" />
          {log.hasMore && (
            <p class="history-more">
              <button type="button" disabled={log.loading} onClick={log.more}>
                {log.loading ? 'Loading…' : `Show ${ENTRIES_PER_PAGE} older entries`}
              </button>
            </p>
          )}
        </>
      )}
    </section>
  );
}

/**
 * The filter form. It edits a copy of the address's filters and, on Show, puts them in the
 * address (so that a selection can be bookmarked and Back undoes it); a new address makes a new
 * form (its `key`), so the fields always say what the list shows.
 */
function HistoryFilters({ filters, asOperator }: { filters: AuditFilters; asOperator: boolean }) {
  const { route } = useLocation();
  const [actor, setActor] = useState(filters.actor ?? '');
  const [customer, setCustomer] = useState(filters.customer ?? '');
  const [entityType, setEntityType] = useState<string>(filters.entity_type ?? '');
  const [entityId, setEntityId] = useState(filters.entity_id ?? '');
  const [action, setAction] = useState<string>(filters.action ?? '');
  const [since, setSince] = useState(localInputValue(filters.since));
  const [until, setUntil] = useState(localInputValue(filters.until));
  const [problems, setProblems] = useState<{ actor?: string; range?: string }>({});

  const submit = (event: Event) => {
    event.preventDefault();
    const sinceIso = isoFromLocalInput(since);
    const untilIso = isoFromLocalInput(until);
    const found = { actor: actorProblem(actor) ?? undefined, range: rangeProblem(sinceIso, untilIso) ?? undefined };
    setProblems(found);
    if (found.actor !== undefined || found.range !== undefined) return;
    route(
      historyHref(
        filtersOf({
          actor,
          customer: asOperator ? customer : undefined,
          entity_type: entityType,
          entity_id: entityId,
          // An action of another entity type than the one chosen would select nothing.
          action: entityType !== '' && action !== '' && entityTypeOf(action) !== entityType ? '' : action,
          since: sinceIso,
          until: untilIso,
        }),
      ),
    );
  };
  const actions = AUDIT_ACTIONS.filter((name) => entityType === '' || entityTypeOf(name) === entityType);
  const groups = AUDIT_ENTITY_TYPES.filter((type) => actions.some((name) => entityTypeOf(name) === type));

  return (
    <form class="filters history-filters" onSubmit={submit} aria-label="Filter the history">
      <div class="field">
        <label for="history-actor">Who (kind:id)</label>
        <input
          id="history-actor"
          value={actor}
          autocomplete="off"
          spellcheck={false}
          placeholder="e.g. person:12"
          aria-invalid={problems.actor !== undefined || undefined}
          aria-describedby={problems.actor !== undefined ? 'history-actor-error' : undefined}
          onInput={(event) => setActor(event.currentTarget.value)}
        />
      </div>
      {asOperator && (
        <div class="field">
          <label for="history-customer">Customer</label>
          <CustomerInput id="history-customer" value={customer} placeholder="every customer" onValue={setCustomer} />
        </div>
      )}
      <div class="field">
        <label for="history-entity-type">Kind of thing</label>
        <select id="history-entity-type" value={entityType} onChange={(event) => setEntityType(event.currentTarget.value)}>
          <option value="">Anything</option>
          {AUDIT_ENTITY_TYPES.map((type) => (
            <option key={type} value={type}>
              {capitalised(ENTITY_LABELS[type])}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="history-entity-id">Id or serial</label>
        <input id="history-entity-id" value={entityId} autocomplete="off" spellcheck={false} placeholder="e.g. OKM-1001" onInput={(event) => setEntityId(event.currentTarget.value)} />
      </div>
      {/* With the customer field the form has an odd number of fields: on a phone the action takes a row, so that since and until share one. */}
      <div class={asOperator ? 'field history-field-wide' : 'field'}>
        <label for="history-action">Action</label>
        <select id="history-action" value={action} onChange={(event) => setAction(event.currentTarget.value)}>
          <option value="">Any action</option>
          {groups.map((type) => (
            <optgroup key={type} label={capitalised(ENTITY_LABELS[type as AuditEntityType])}>
              {actions
                .filter((name) => entityTypeOf(name) === type)
                .map((name) => (
                  <option key={name} value={name}>
                    {ACTION_LABELS[name]}
                  </option>
                ))}
            </optgroup>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="history-since">Since</label>
        <input id="history-since" type="datetime-local" value={since} aria-invalid={problems.range !== undefined || undefined} onInput={(event) => setSince(event.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="history-until">Until</label>
        <input id="history-until" type="datetime-local" value={until} aria-invalid={problems.range !== undefined || undefined} onInput={(event) => setUntil(event.currentTarget.value)} />
      </div>
      <div class="history-filter-actions">
        <button type="submit" class="primary">
          Show
        </button>
        <a class="button" href={historyHref()}>
          Clear
        </a>
      </div>
      {problems.actor !== undefined && (
        <p class="field-error history-problem" id="history-actor-error" role="alert">
          Who: {problems.actor}
        </p>
      )}
      {problems.range !== undefined && (
        <p class="field-error history-problem" role="alert">
          {problems.range}
        </p>
      )}
    </form>
  );
}

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** The way back from the history of one OKM, ACL, rollout or lock to its page. */
function EntityPageLink({ filters, asOperator }: { filters: AuditFilters; asOperator: boolean }) {
  if (filters.entity_type === undefined || filters.entity_id === undefined) return null;
  const entity = { type: filters.entity_type, id: filters.entity_id };
  const page = entityPath({ action: '', customer: filters.customer ?? null, entity }, asOperator);
  if (page === null) return null;
  return (
    <p class="small">
      The history of {entityLabel(entity.type)} <span class="mono">{entity.id}</span>: <a href={page}>open its page</a>
    </p>
  );
}

/**
 * Downloads of the selection. A person's session cookie authenticates the export's address
 * itself, so the browser saves the file as the server streams it; a token cannot ride on a link,
 * so for a token's console the file is fetched with it and then saved.
 */
function ExportLinks({ session, filters }: { session: Session; filters: AuditFilters }) {
  const [busy, setBusy] = useState<AuditExportFormat | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  const download = async (event: Event, format: AuditExportFormat) => {
    if (session.kind === 'person') return;
    event.preventDefault();
    setBusy(format);
    setFailure(null);
    try {
      saveFile(await fetchAuditExport(filters, format), exportFileName(format, Date.now()));
    } catch (error) {
      setFailure(error instanceof Error ? error.message : String(error));
    } finally {
      setBusy(null);
    }
  };
  return (
    <>
      <a class="button primary" href={exportHref(filters, 'csv')} download={exportFileName('csv', Date.now())} data-testid="history-csv" onClick={(event) => void download(event, 'csv')}>
        {busy === 'csv' ? 'Preparing CSV…' : 'Download CSV'}
      </a>
      <a class="button" href={exportHref(filters, 'ndjson')} download={exportFileName('ndjson', Date.now())} onClick={(event) => void download(event, 'ndjson')}>
        {busy === 'ndjson' ? 'Preparing NDJSON…' : 'NDJSON'}
      </a>
      {failure !== null && (
        <span class="field-error" role="alert">
          The download failed: {failure}
        </span>
      )}
    </>
  );
}
