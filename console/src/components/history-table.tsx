import { useState } from 'preact/hooks';
import type { AuditEntry } from '../api/client.ts';
import { actionLabel, actorFilter, actorText, changeLines, entityLabel, entityPath, historyHref } from '../audit-entry.ts';
import { LocalTime, RelativeTime } from './relative-time.tsx';

/** An entry shows this many lines of its change; more wait behind "Show all". */
const LINES_SHOWN = 6;

/** The lines of one change, the first few at once and the rest on request (an ACL created with thousands of users). */
function ChangeLines({ entry }: { entry: AuditEntry }) {
  const [expanded, setExpanded] = useState(false);
  const lines = changeLines(entry);
  if (lines.length === 0) return <span class="muted">—</span>;
  const shown = expanded || lines.length <= LINES_SHOWN ? lines : lines.slice(0, LINES_SHOWN - 1);
  return (
    <>
      <ul class="change-lines" data-testid="change-lines">
        {shown.map((line, index) => (
          <li key={index}>{line}</li>
        ))}
      </ul>
      {lines.length > LINES_SHOWN && (
        <button type="button" class="small-button change-more" aria-expanded={expanded} onClick={() => setExpanded(!expanded)}>
          {expanded ? 'Show fewer' : `Show all ${lines.length.toLocaleString()} lines`}
        </button>
      )}
    </>
  );
}

/** Where the change came from: the request, the address and the client; and the entry's place in the chain. */
function RequestDetails({ entry }: { entry: AuditEntry }) {
  return (
    <details class="history-request">
      <summary>Request</summary>
      <dl class="kv small">
        <dt>Entry</dt>
        <dd class="mono">#{entry.id}</dd>
        <dt>Request</dt>
        <dd class="mono break">{entry.request_id ?? '—'}</dd>
        <dt>From</dt>
        <dd class="mono">{entry.ip ?? '—'}</dd>
        <dt>Client</dt>
        <dd class="break">{entry.user_agent ?? '—'}</dd>
        <dt>Hash</dt>
        <dd class="mono break">{entry.hash}</dd>
      </dl>
    </details>
  );
}

/** The entity an entry is about, linked to its console page where it has one. */
function EntityCell({ entry, asOperator }: { entry: AuditEntry; asOperator: boolean }) {
  const path = entityPath(entry, asOperator);
  const id = path === null ? <span class="mono break">{entry.entity.id}</span> : <a class="mono break" href={path}>{entry.entity.id}</a>;
  return (
    <>
      {entityLabel(entry.entity.type)} {id}
    </>
  );
}

/**
 * Audit entries as people read them, newest first: when, who (a link to everything they did),
 * what was done to what, and the change line by line. `entityShown` false on an entity's own
 * page, where every entry is about it; `customerShown` for an operator's view of every customer.
 */
export function HistoryTable({ entries, asOperator, entityShown = true, customerShown = false, caption }: {
  entries: readonly AuditEntry[];
  asOperator: boolean;
  entityShown?: boolean;
  customerShown?: boolean;
  caption: string;
}) {
  return (
    <div class="table-wrap">
      <table class="history-table" data-testid="history">
        <caption class="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who</th>
            {customerShown && <th scope="col">Customer</th>}
            <th scope="col">What</th>
            <th scope="col">Change</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr key={entry.id} data-entry={entry.id} data-action={entry.action}>
              <td class="history-when">
                <LocalTime value={entry.time} />
                <span class="muted small">
                  <RelativeTime value={entry.time} />
                </span>
              </td>
              <td data-label="Who">
                <a href={historyHref({ actor: actorFilter(entry.actor) })} title="Everything this actor changed">
                  {actorText(entry.actor)}
                </a>
              </td>
              {customerShown && <td data-label="Customer">{entry.customer ?? <span class="muted">fleet-wide</span>}</td>}
              <td data-label="What">
                <strong class="history-action">{actionLabel(entry.action)}</strong>
                {entityShown && (
                  <span class="history-entity">
                    <EntityCell entry={entry} asOperator={asOperator} />
                  </span>
                )}
              </td>
              <td class="history-change">
                <ChangeLines entry={entry} />
                <RequestDetails entry={entry} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
