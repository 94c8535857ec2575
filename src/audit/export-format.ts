import { stringify } from 'csv-stringify/sync';
import type { AuditEntry } from './trail.ts';

/** How an export writes entries: the API's export and `keyfleet audit export` alike. */

const CSV_COLUMNS = ['id', 'time', 'actor_kind', 'actor_id', 'actor_name', 'customer', 'action', 'entity_type', 'entity_id', 'before', 'after', 'request_id', 'ip', 'user_agent', 'prev_hash', 'hash'];

/** CSV as spreadsheets open it: a cell that starts like a formula is written as text, never run. */
const csvLine = (cells: unknown[]) => stringify([cells], { escape_formulas: true, record_delimiter: '\r\n' });

export const auditCsvHeader = () => csvLine(CSV_COLUMNS);

/** One entry a row, before and after as JSON text. */
export const auditCsvLine = (entry: AuditEntry) =>
  csvLine([
    entry.id,
    entry.time,
    entry.actor.kind,
    entry.actor.id,
    entry.actor.name,
    entry.customer ?? '',
    entry.action,
    entry.entity.type,
    entry.entity.id,
    entry.before === null ? '' : JSON.stringify(entry.before),
    entry.after === null ? '' : JSON.stringify(entry.after),
    entry.request_id ?? '',
    entry.ip ?? '',
    entry.user_agent ?? '',
    entry.prev_hash,
    entry.hash,
  ]);

/** One entry a line, as the search shows it: its hash can be checked from the line alone. */
export const auditNdjsonLine = (entry: AuditEntry) => `${JSON.stringify(entry)}\n`;
