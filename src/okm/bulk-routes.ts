import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type, type Static, type TObject, type TProperties } from 'typebox';
import { changeSourceOf } from '../audit/trail.ts';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { ErrorResponse, MESSAGES, Nullable, resourceResponse } from '../http/schemas.ts';
import { CUSTOMER_NAME_PATTERN, SERIAL_NUMBER_PATTERN } from '../shared/identifiers.ts';
import { memberSource } from '../shared/raw-json.ts';
import type { OkmChangeRequest, OkmFilterQuery } from './admin-service.ts';
import type { OkmAdminRoutesOptions } from './admin-routes.ts';
import { applyBulkAction, previewBulkAction, type BulkAction, type BulkSelection } from './bulk-actions.ts';
import { MessageBody, OkmPatchBody, okmListQuery } from './schemas.ts';

/** Most serial numbers `serial_numbers` may hold: BULK_ACTION_MAX's own upper bound. */
const MAX_EXPECTED_OKMS = 10_000;

/** The settings a bulk action may set: the OKM's own (a PATCH's members), not its lists or status URLs, which are per OKM. */
const BULK_SETTINGS = ['cache_mode', 'key_checkout_window', 'auditing_enabled', 'polling_interval', 'firmware'] as const;

const pick = <T extends TProperties, K extends keyof T>(properties: T, keys: readonly K[]) => Object.fromEntries(keys.map((key) => [key, properties[key]])) as Pick<T, K>;

/** The OKM list's filters (GET /api/v1/okms), without its paging. */
const bulkFilter = (correctionNames: readonly string[]) => {
  const list = okmListQuery(correctionNames) as TObject;
  const names = ['customer', 'overdue', 'firmware_version', 'unassigned', 'state', 'serial_prefix', 'last_correction', 'subscriber_url'] as const;
  return Type.Object(pick(list.properties, names), {
    additionalProperties: false,
    description: 'the OKMs to act on, as GET /api/v1/okms filters them (every one given must hold); {}: every OKM the token may see',
  });
};

const BulkActionSchema = Type.Union(
  [
    Type.Object(
      {
        type: Type.Literal('configure'),
        settings: Type.Object(pick(OkmPatchBody.properties, BULK_SETTINGS), {
          additionalProperties: false,
          minProperties: 1,
          description: 'a JSON merge patch of each OKM\'s settings (as PATCH /api/v1/okms/{serial}): null unsets; firmware pins must be catalog releases',
        }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('assign'),
        customer: Nullable(Type.String({ pattern: CUSTOMER_NAME_PATTERN, description: 'the customer that gets the OKMs; null: none (admin only, as PUT /api/v1/okms/{serial}/customer)' })),
      },
      { additionalProperties: false },
    ),
    Type.Object({ type: Type.Literal('queue_message'), message: MessageBody }, { additionalProperties: false }),
    Type.Object(
      {
        type: Type.Literal('remove_subscriber_url'),
        url: { ...(okmListQuery([]) as TObject).properties.subscriber_url!, description: 'the status URL to take out of subscribe_urls.status of every OKM selected that holds it' },
      },
      { additionalProperties: false },
    ),
  ],
  { description: 'what to do to each OKM selected: its type names it' },
);

const bulkBody = (correctionNames: readonly string[], apply: boolean) =>
  Type.Object(
    {
      filter: bulkFilter(correctionNames),
      action: BulkActionSchema,
      ...(apply
        ? {
            serial_numbers: Type.Optional(
              Type.Array(Type.String({ pattern: SERIAL_NUMBER_PATTERN }), {
                maxItems: MAX_EXPECTED_OKMS,
                uniqueItems: true,
                description: 'the OKMs the preview listed: when given, the action is refused with 409 (nothing changes) unless the filter selects exactly these',
              }),
            ),
          }
        : {}),
    },
    { additionalProperties: false },
  );
/** The body as the schema validated it (written out: the filter's schema is built from the list's at run time). */
interface BulkBody {
  filter: OkmFilterQuery & { customer?: string };
  action: Static<typeof BulkActionSchema>;
  serial_numbers?: string[];
}

const BulkSelectionView = Type.Object({
  count: Type.Integer({ minimum: 0, description: 'OKMs selected (preview, at most limit) or changed (applied)' }),
  serial_numbers: Type.Array(Type.String(), { description: 'those OKMs, by serial number' }),
  limit: Type.Integer({ description: 'most OKMs one bulk action may change (BULK_ACTION_MAX)' }),
  over_limit: Type.Boolean({ description: 'the filter selects more than limit OKMs: serial_numbers holds the first limit, and applying is refused with 409' }),
  applied: Type.Boolean({ description: 'false: a preview, nothing changed' }),
});

const selectionJson = (selection: BulkSelection) => ({
  count: selection.serialNumbers.length,
  serial_numbers: selection.serialNumbers,
  limit: selection.limit,
  over_limit: selection.overLimit,
  applied: selection.applied,
});

/** The body's action as the service takes it: a message's payload as the JSON text it was sent in (contract §16). */
function actionOf(body: BulkBody, jsonText: string | undefined): BulkAction {
  const action = body.action;
  if (action.type !== 'queue_message') return action as BulkAction;
  let payloadJson = action.message.payload === undefined ? 'null' : JSON.stringify(action.message.payload);
  if (jsonText !== undefined && action.message.payload !== undefined) {
    const actionText = memberSource(jsonText, 'action');
    const messageText = actionText === undefined ? undefined : memberSource(actionText, 'message');
    payloadJson = (messageText === undefined ? undefined : memberSource(messageText, 'payload')) ?? payloadJson;
  }
  return { type: 'queue_message', message: { type: action.message.type, payloadJson } };
}

const errorResponses = { '4xx': ErrorResponse };

/**
 * Bulk actions on a filtered OKM list, mounted at /api/v1/okm-bulk-actions: POST /preview says
 * which OKMs an action would change, POST / changes them in one transaction.
 */
const okmBulkRoutes: FastifyPluginAsyncTypebox<OkmAdminRoutesOptions> = async (app, { corrections }) => {
  const limit = app.settings.bulkActionMax;
  const okmRequest = (request: FastifyRequest, body: BulkBody): OkmChangeRequest => ({
    db: app.db,
    settings: app.settings,
    principal: principalOf(request),
    customerName: body.filter.customer,
    now: Date.now(),
    source: changeSourceOf(request),
  });

  app.post(
    '/preview',
    {
      onRequest: requireScopes('okm:read'),
      schema: {
        operationId: 'previewOkmBulkAction',
        summary: 'Which OKMs a bulk action would change now (nothing changes)',
        body: bulkBody(corrections.names, false),
        response: { 200: resourceResponse(BulkSelectionView), ...errorResponses },
      },
    },
    async (request) => {
      const body = request.body as BulkBody;
      return { message: MESSAGES.fetched, data: selectionJson(await previewBulkAction(okmRequest(request, body), body.filter, actionOf(body, request.jsonText), limit)) };
    },
  );

  app.post(
    '/',
    {
      onRequest: requireScopes('okm:read', 'okm:write'),
      schema: {
        operationId: 'applyOkmBulkAction',
        summary: 'Apply an action to every OKM a filter selects, in one transaction',
        description:
          'At most BULK_ACTION_MAX OKMs (default 1000): a larger selection is refused with 409 and nothing changes. Each OKM changed gets the audit entry its own route writes (okm.configured, okm.assigned, okm.message_queued).',
        body: bulkBody(corrections.names, true),
        response: { 200: resourceResponse(BulkSelectionView), ...errorResponses },
      },
    },
    async (request) => {
      const body = request.body as BulkBody;
      const selection = await applyBulkAction(okmRequest(request, body), body.filter, actionOf(body, request.jsonText), limit, body.serial_numbers);
      return { message: MESSAGES.updated, data: selectionJson(selection) };
    },
  );
};

export default okmBulkRoutes;
