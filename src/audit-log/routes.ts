import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { cursorPageRequest } from '../db/cursor-pages.ts';
import type { OperationDocumentation } from '../http/openapi.ts';
import { Type, type Static } from 'typebox';
import { actingCustomer, principalOf, requireScopes } from '../auth/guard.ts';
import { badRequest } from '../http/errors.ts';
import { cursorPageQueryProperties, cursorPageResponse, NO_TOTAL, sendCursorPage } from '../http/cursor-paging.ts';
import { ErrorResponse, IsoTime, MESSAGES, Nullable } from '../http/schemas.ts';
import { CUSTOMER_NAME_PATTERN } from '../shared/identifiers.ts';
import { AUDIT_ACTION_NAMES, AUDIT_ENTITY_TYPES } from '../audit/actions.ts';
import { chainPendingEntries } from '../audit/chainer.ts';
import { auditCsvHeader, auditCsvLine, auditNdjsonLine } from '../audit/export-format.ts';
import { AUDIT_LOG_PAGES, auditLogNewestFirst, searchAuditLog, type AuditFilter } from '../audit/repository.ts';
import type { AuditEntry } from '../audit/trail.ts';

const ActorView = Type.Object({ kind: Type.Enum(['person', 'token', 'api_key', 'cli', 'system']), id: Type.String(), name: Type.String() });

const AuditEntryView = Type.Object({
  id: Type.Integer({ description: "the entry's place in the chain, from 1" }),
  time: IsoTime,
  actor: ActorView,
  customer: Nullable(Type.String()),
  action: Type.String({ description: 'one of the documented actions (docs/audit-trail.md)' }),
  entity: Type.Object({ type: Type.String(), id: Type.String() }),
  before: Type.Unknown({ description: 'the entity before the change (an update: the members that changed); null for a creation; secrets redacted' }),
  after: Type.Unknown({ description: 'the entity after the change; null for a deletion; secrets redacted' }),
  request_id: Nullable(Type.String()),
  ip: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
  prev_hash: Type.String({ description: 'the hash of the entry before (64 zeros for the first)' }),
  hash: Type.String({ description: 'SHA-256 of the canonical JSON (RFC 8785) of this entry without its hash' }),
});

/** Any text we store an id as: bounded, printable, no separators that could smuggle another filter. */
const ID_PATTERN = '^[A-Za-z0-9._:@+-]{1,200}$';

const filterProperties = {
  actor: Type.Optional(Type.String({ pattern: '^(person|token|api_key|cli|system):[A-Za-z0-9._:@+-]{1,200}$', description: 'kind:id of the actor, e.g. person:12, token:<jti>, cli:root' })),
  customer: Type.Optional(Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: "only this customer's entries (a customer's principal sees its own only)" })),
  entity_type: Type.Optional(Type.Enum(AUDIT_ENTITY_TYPES)),
  entity_id: Type.Optional(Type.String({ pattern: ID_PATTERN })),
  action: Type.Optional(Type.Enum(AUDIT_ACTION_NAMES)),
  since: Type.Optional({ ...IsoTime, description: 'entries at or after this time' }),
  until: Type.Optional({ ...IsoTime, description: 'entries before this time' }),
};

const AuditLogQuery = Type.Object({ ...filterProperties, ...cursorPageQueryProperties }, { additionalProperties: false });
const AuditExportQuery = Type.Object({ ...filterProperties, format: Type.Optional(Type.Enum(['ndjson', 'csv'], { default: 'ndjson' })) }, { additionalProperties: false });
type FilterQuery = Partial<Pick<Static<typeof AuditLogQuery>, keyof typeof filterProperties>>;

const EXPORT: OperationDocumentation = {
  responses: {
    200: {
      description: 'format=ndjson: one entry a line, as the search shows it (its hash verifiable from the line alone); format=csv: a header row, then one entry a row, before and after as JSON',
      content: { 'application/x-ndjson': Type.String(), 'text/csv': Type.String() },
    },
  },
};

/** The filter of a request: its query, and a customer's principal held to its own customer. */
async function filterOf(request: FastifyRequest, query: FilterQuery): Promise<AuditFilter> {
  const principal = principalOf(request);
  const customer = await actingCustomer(request.server.db, principal, query.customer);
  const since = query.since === undefined ? undefined : Date.parse(query.since);
  const until = query.until === undefined ? undefined : Date.parse(query.until);
  if (since !== undefined && until !== undefined && until < since) throw badRequest('until: must not be before since');
  const colon = query.actor?.indexOf(':') ?? -1;
  return {
    ...(query.actor === undefined ? {} : { actor: { kind: query.actor.slice(0, colon), id: query.actor.slice(colon + 1) } }),
    ...(customer === null ? {} : { customer: customer.name }),
    ...(query.entity_type === undefined ? {} : { entityType: query.entity_type }),
    ...(query.entity_id === undefined ? {} : { entityId: query.entity_id }),
    ...(query.action === undefined ? {} : { action: query.action }),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
  };
}

async function* ndjson(entries: AsyncIterable<AuditEntry>): AsyncGenerator<string> {
  for await (const entry of entries) yield auditNdjsonLine(entry);
}

async function* csv(entries: AsyncIterable<AuditEntry>): AsyncGenerator<string> {
  yield auditCsvHeader();
  for await (const entry of entries) yield auditCsvLine(entry);
}

/** The audit trail (contract §18), mounted at /api/v1/audit-log: search, and export of the same selection. */
const auditLogRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const canRead = requireScopes('audit:read');

  app.get(
    '/',
    {
      onRequest: canRead,
      schema: {
        operationId: 'listAuditLog',
        summary: 'Search the audit trail, newest first',
        tags: ['audit'],
        querystring: AuditLogQuery,
        response: { 200: cursorPageResponse(AuditEntryView, `The entries the filters select, newest first. ${NO_TOTAL}`), '4xx': ErrorResponse },
      },
    },
    async (request, reply) => {
      // The entries committed before this request are in the answer, not only those the chainer reached.
      await chainPendingEntries(app.db, app.dialect.rowSet);
      const page = await searchAuditLog(app.db, await filterOf(request, request.query), cursorPageRequest(AUDIT_LOG_PAGES, request.query));
      return sendCursorPage(request, reply, MESSAGES.fetched, page);
    },
  );

  app.get(
    '/export',
    {
      onRequest: canRead,
      config: { openapi: EXPORT },
      schema: {
        operationId: 'exportAuditLog',
        summary: 'Export the entries a search selects, newest first, as NDJSON or CSV (streamed)',
        tags: ['audit'],
        querystring: AuditExportQuery,
        response: { '4xx': ErrorResponse },
      },
    },
    async (request, reply) => {
      await chainPendingEntries(app.db, app.dialect.rowSet);
      const entries = auditLogNewestFirst(app.db, await filterOf(request, request.query));
      const format = request.query.format ?? 'ndjson';
      const stamp = new Date().toISOString().slice(0, 10);
      void reply
        .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson; charset=utf-8')
        .header('content-disposition', `attachment; filename="keyfleet-audit-${stamp}.${format}"`);
      // The document states the body (EXPORT); a stream is sent as it is, never serialized.
      const untypedReply: FastifyReply = reply;
      return untypedReply.send(Readable.from(format === 'csv' ? csv(entries) : ndjson(entries)));
    },
  );
};

export default auditLogRoutes;
