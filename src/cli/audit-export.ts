import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { Command } from 'commander';
import { AUDIT_ACTION_NAMES, AUDIT_ENTITY_TYPES } from '../audit/actions.ts';
import { auditLogNewestFirst, type AuditFilter } from '../audit/repository.ts';
import { auditCsvHeader, auditCsvLine, auditNdjsonLine } from '../audit/export-format.ts';
import { UsageError, commandGroup, openContext, printResult } from './context.ts';

interface ExportOptions {
  format: string;
  json?: boolean;
  output?: string;
  actor?: string;
  customer?: string;
  entityType?: string;
  entityId?: string;
  action?: string;
  since?: string;
  until?: string;
}

function timeOption(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const time = Date.parse(text);
  if (Number.isNaN(time)) throw new UsageError(`--${name}: expected an ISO 8601 time, got "${text}"`);
  return time;
}

function filterOf(options: ExportOptions): AuditFilter {
  if (options.entityType !== undefined && !(AUDIT_ENTITY_TYPES as readonly string[]).includes(options.entityType)) throw new UsageError(`--entity-type: one of ${AUDIT_ENTITY_TYPES.join(', ')}`);
  if (options.action !== undefined && !(AUDIT_ACTION_NAMES as readonly string[]).includes(options.action)) throw new UsageError(`--action: one of ${AUDIT_ACTION_NAMES.join(', ')}`);
  const colon = options.actor?.indexOf(':') ?? -1;
  if (options.actor !== undefined && colon < 1) throw new UsageError('--actor: expected kind:id, e.g. person:12 or cli:root');
  const since = timeOption('since', options.since);
  const until = timeOption('until', options.until);
  return {
    ...(options.actor === undefined ? {} : { actor: { kind: options.actor.slice(0, colon), id: options.actor.slice(colon + 1) } }),
    ...(options.customer === undefined ? {} : { customer: options.customer }),
    ...(options.entityType === undefined ? {} : { entityType: options.entityType }),
    ...(options.entityId === undefined ? {} : { entityId: options.entityId }),
    ...(options.action === undefined ? {} : { action: options.action }),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
  };
}

export function register(program: Command): void {
  commandGroup(program, 'audit', 'verify and export the audit trail of changes')
    .command('export')
    .description('write the audit entries the filters select, newest first, as NDJSON (default) or CSV')
    .option('--format <format>', 'ndjson or csv', 'ndjson')
    .option('--output <file>', 'write to this file instead of standard output')
    .option('--actor <kind:id>', 'only changes by this actor (person:12, token:<jti>, cli:root …)')
    .option('--customer <name>', "only this customer's entries")
    .option('--entity-type <type>', 'only entries of this entity type (acl, okm, rollout …)')
    .option('--entity-id <id>', 'only entries of this entity')
    .option('--action <action>', 'only this action (acl.updated …)')
    .option('--since <time>', 'entries at or after this ISO 8601 time')
    .option('--until <time>', 'entries before this ISO 8601 time')
    .option('--json', 'with --output: print one JSON object saying how many entries were written where')
    .action(async (options: ExportOptions) => {
      if (options.format !== 'ndjson' && options.format !== 'csv') throw new UsageError('--format: ndjson or csv');
      if (options.json && options.output === undefined) throw new UsageError('--json: the export itself goes to standard output; give --output FILE for a summary');
      const filter = filterOf(options);
      const context = await openContext();
      const out = options.output === undefined ? process.stdout : createWriteStream(options.output);
      const write = async (text: string) => {
        if (!out.write(text)) await once(out, 'drain');
      };
      let written = 0;
      try {
        if (options.format === 'csv') await write(auditCsvHeader());
        for await (const entry of auditLogNewestFirst(context.db, filter)) {
          await write(options.format === 'csv' ? auditCsvLine(entry) : auditNdjsonLine(entry));
          written += 1;
        }
      } finally {
        if (out !== process.stdout) await new Promise<void>((resolve) => out.end(() => resolve()));
        await context.close();
      }
      if (options.output !== undefined) printResult(options.json, { entries: written, format: options.format, output: options.output }, `wrote ${written} entries to ${options.output}`);
    });
}
