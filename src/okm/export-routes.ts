import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { csvExportDocumentation, everyItem, sendCsv } from '../http/csv-export.ts';
import { SerialParams } from '../http/request-schemas.ts';
import { ErrorResponse } from '../http/schemas.ts';
import { everyAuditRecord, listOkmRecords, type OkmRequest } from './admin-service.ts';
import type { OkmAdminRoutesOptions } from './admin-routes.ts';
import { AuditRecordExportQuery, okmListQuery, type OkmRecord } from './schemas.ts';

const errorResponses = { '4xx': ErrorResponse };

/** The OKM list's columns: what an operator reads in a spreadsheet, never a secret (no install code, no device token). */
const OKM_COLUMNS = [
  'serial_number',
  'customer',
  'summary_state',
  'state',
  'overdue',
  'stuck_resolver',
  'firmware_version',
  'last_sync_time',
  'last_ip',
  'last_correction',
  'effective_polling_interval',
  'kas_firmware_pin',
  'batch_key_firmware_pin',
  'wireless_key_firmware_pin',
  'acl_id',
  'created_at',
  'updated_at',
] as const;

const okmRow = (okm: OkmRecord) => [
  okm.serial_number,
  okm.customer,
  okm.summary_state,
  okm.state,
  okm.overdue,
  okm.stuck?.resolver,
  okm.firmware_version,
  okm.last_sync_time,
  okm.last_ip,
  okm.last_correction,
  okm.effective_polling_interval,
  okm.firmware.kas,
  okm.firmware.batch_key,
  okm.firmware.wireless_key,
  okm.acl_id,
  okm.created_at,
  okm.updated_at,
];

const stamp = () => new Date().toISOString().slice(0, 10);

/**
 * CSV exports of the OKM list (GET /api/v1/okm-export, with the list's filters) and of an OKM's
 * audit records (GET /api/v1/okms/{serial}/audit/export), mounted at /api/v1. The OKM list's
 * export has a path of its own: under /api/v1/okms/ a fixed word would shadow the OKM of that
 * serial number. Each export reads its list a page of 500 at a time and streams the rows as it
 * goes, with the list's own tenancy: a customer's principal exports its own OKMs only.
 */
const okmExportRoutes: FastifyPluginAsyncTypebox<OkmAdminRoutesOptions> = async (app, { corrections }) => {
  const canRead = requireScopes('okm:read');
  const okmRequest = (request: FastifyRequest, customerName?: string): OkmRequest => ({
    db: app.db,
    settings: app.settings,
    principal: principalOf(request),
    customerName,
    now: Date.now(),
  });

  const { limit: _limit, cursor: _cursor, next_correction: _nextCorrection, ...listFilters } = okmListQuery(corrections.names).properties;
  const OkmExportQuery = Type.Object(listFilters, { additionalProperties: false });

  app.get(
    '/okm-export',
    {
      onRequest: canRead,
      config: { openapi: csvExportDocumentation(`A header row (${OKM_COLUMNS.join(', ')}), then one OKM a row, by serial number: the OKMs GET /api/v1/okms lists with the same filters`) },
      schema: {
        operationId: 'exportOkms',
        summary: 'Export the OKMs the list\'s filters select as CSV (streamed)',
        querystring: OkmExportQuery,
        response: errorResponses,
      },
    },
    async (request, reply) => {
      const query = request.query;
      const okms = everyItem((cursor, limit) => listOkmRecords(okmRequest(request, query.customer), { ...query, limit, ...(cursor === undefined ? {} : { cursor }) }));
      return sendCsv(reply, `keyfleet-okms-${stamp()}.csv`, OKM_COLUMNS, okms, okmRow);
    },
  );

  app.get(
    '/okms/:serial/audit/export',
    {
      onRequest: canRead,
      config: { openapi: csvExportDocumentation('A header row (id, received_at, record), then one audit record a row, the record as the JSON text the OKM sent') },
      schema: {
        operationId: 'exportOkmAuditRecords',
        summary: 'Export an OKM\'s audit records as CSV (streamed), in the order and window the list takes',
        params: SerialParams,
        querystring: AuditRecordExportQuery,
        response: errorResponses,
      },
    },
    async (request, reply) => {
      const { serial } = request.params;
      const records = everyAuditRecord(okmRequest(request, request.query.customer), serial, request.query);
      return sendCsv(reply, `keyfleet-${serial}-audit-${stamp()}.csv`, ['id', 'received_at', 'record'], records, (record) => [
        record.id,
        new Date(record.receivedAt).toISOString(),
        record.recordJson,
      ]);
    },
  );
};

export default okmExportRoutes;
