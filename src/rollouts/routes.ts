import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { changeSourceOf } from '../audit/trail.ts';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { cursorPageResponse, NO_TOTAL, sendCursorPage } from '../http/cursor-paging.ts';
import { ErrorResponse, MESSAGES, resourceResponse } from '../http/schemas.ts';
import { IfMatchHeaders, parseIfMatch, preconditionFailedResponse } from '../http/preconditions.ts';
import { csvExportDocumentation, everyItem, sendCsv } from '../http/csv-export.ts';
import type { EmitFleetEvent } from './events.ts';
import {
  abortRollout,
  advanceRollout,
  approveRollout,
  createRollout,
  etagOfView,
  excludeFailedMembers,
  getRolloutView,
  listRolloutOkmViews,
  listRolloutViews,
  pauseRollout,
  resumeRollout,
  retryFailedMembers,
  startRollout,
  updateRollout,
  type RolloutRequest,
} from './service.ts';
import { CreateRolloutBody, CustomerOnlyQuery, FailedMembersBody, RolloutListQuery, RolloutOkmExportQuery, RolloutOkmListQuery, RolloutOkmView, RolloutParams, RolloutView, UpdateRolloutBody } from './schemas.ts';

const errorResponses = { '4xx': ErrorResponse };

/** The columns of a rollout's OKMs as CSV: the list's fields, in its order. */
const ROLLOUT_OKM_COLUMNS = ['serial_number', 'group', 'state', 'offered_at', 'last_sync_time', 'reported_version', 'blocked_by', 'first_poll_due_at'] as const satisfies readonly (keyof RolloutOkmView)[];
/** The answers of a change that honours If-Match: a 412 holds the rollout as it now is. */
const conditionalErrorResponses = { 412: preconditionFailedResponse(RolloutView), ...errorResponses };

/** The rollout with the ETag of the version it shows (RFC 9110 §8.8.3), the one a later If-Match names. */
function withEtag(reply: FastifyReply, view: RolloutView): RolloutView {
  const etag = etagOfView(view);
  if (etag !== undefined) reply.header('etag', etag);
  return view;
}

export interface RolloutRoutesOptions {
  emit: EmitFleetEvent;
}

type Action = (request: RolloutRequest, id: number) => Promise<RolloutView>;

const ACTIONS: { path: string; operationId: string; summary: string; action: Action }[] = [
  { path: 'start', operationId: 'startRollout', summary: 'Start a ready rollout: its first group is offered the version', action: startRollout },
  { path: 'pause', operationId: 'pauseRollout', summary: 'Pause a running rollout: no offers until it resumes (idempotent)', action: pauseRollout },
  { path: 'resume', operationId: 'resumeRollout', summary: 'Resume a paused rollout', action: resumeRollout },
  { path: 'advance', operationId: 'advanceRollout', summary: 'Start the next group now, whatever the thresholds say (after the last: finished)', action: advanceRollout },
  { path: 'abort', operationId: 'abortRollout', summary: 'Emergency stop: no OKM that has not updated is offered the version any more (idempotent)', action: abortRollout },
  { path: 'approve', operationId: 'approveRollout', summary: 'Approve a rollout that requires it, as an operator other than its creator', action: approveRollout },
];

/** Firmware rollouts (contract §13), mounted at /api/v1/rollouts. */
const rolloutRoutes: FastifyPluginAsyncTypebox<RolloutRoutesOptions> = async (app, options) => {
  const canRead = requireScopes('okm:read');
  const canWrite = requireScopes('okm:read', 'rollout:write');
  const canApprove = requireScopes('okm:read', 'rollout:approve');

  const rolloutRequest = (request: FastifyRequest, customerName?: string): RolloutRequest => ({
    db: app.db,
    principal: principalOf(request),
    customerName,
    now: Date.now(),
    emit: options.emit,
    source: changeSourceOf(request),
    fleetPollingInterval: app.settings.fleetPollingInterval,
  });
  /** As rolloutRequest, for a change: with its If-Match (RFC 9110). */
  const conditionalRequest = (request: FastifyRequest, customerName?: string): RolloutRequest => {
    const ifMatch = parseIfMatch(request.headers['if-match']);
    return { ...rolloutRequest(request, customerName), ...(ifMatch === undefined ? {} : { ifMatch }) };
  };

  app.post(
    '/',
    {
      onRequest: canWrite,
      config: { openapi: { etag: true } },
      schema: { operationId: 'createRollout', summary: 'Create a staged firmware rollout (state ready; members chosen now)', body: CreateRolloutBody, response: { 201: resourceResponse(RolloutView), ...errorResponses } },
    },
    async (request, reply) => reply.code(201).send({ message: MESSAGES.created, data: withEtag(reply, await createRollout(rolloutRequest(request), request.body)) }),
  );

  app.get(
    '/',
    {
      onRequest: canRead,
      schema: {
        operationId: 'listRollouts',
        summary: 'List rollouts, newest first, with per-group counts',
        querystring: RolloutListQuery,
        response: { 200: cursorPageResponse(RolloutView, `The rollouts, newest first. ${NO_TOTAL}`), ...errorResponses },
      },
    },
    async (request, reply) => sendCursorPage(request, reply, MESSAGES.fetched, await listRolloutViews(rolloutRequest(request), request.query)),
  );

  app.get(
    '/:id',
    {
      onRequest: canRead,
      config: { openapi: { etag: true } },
      schema: { operationId: 'getRollout', summary: 'Get a rollout with per-group counts', params: RolloutParams, querystring: CustomerOnlyQuery, response: { 200: resourceResponse(RolloutView), ...errorResponses } },
    },
    async (request, reply) => ({ message: MESSAGES.fetched, data: withEtag(reply, await getRolloutView(rolloutRequest(request, request.query.customer), request.params.id)) }),
  );

  app.get(
    '/:id/okms',
    {
      onRequest: canRead,
      schema: {
        operationId: 'listRolloutOkms',
        summary: 'List a rollout\'s OKMs with their state and offer time',
        description: 'By serial number, a page at a time; `state` and `group` pick the OKMs a group count counts.',
        params: RolloutParams,
        querystring: RolloutOkmListQuery,
        response: { 200: cursorPageResponse(RolloutOkmView, `The rollout's OKMs that match, by serial number. ${NO_TOTAL} The rollout's group counts (GET /api/v1/rollouts/{id}) count each state.`), ...errorResponses },
      },
    },
    async (request, reply) => sendCursorPage(request, reply, MESSAGES.fetched, await listRolloutOkmViews(rolloutRequest(request, request.query.customer), request.params.id, request.query)),
  );

  app.get(
    '/:id/okms/export',
    {
      onRequest: canRead,
      config: { openapi: csvExportDocumentation(`A header row (${ROLLOUT_OKM_COLUMNS.join(', ')}), then one OKM a row, by serial number: the OKMs GET /api/v1/rollouts/{id}/okms lists with the same filters`) },
      schema: {
        operationId: 'exportRolloutOkms',
        summary: 'Export a rollout\'s OKMs, with their state and offer time, as CSV (streamed)',
        params: RolloutParams,
        querystring: RolloutOkmExportQuery,
        response: errorResponses,
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const members = everyItem((cursor, limit) => listRolloutOkmViews(rolloutRequest(request, request.query.customer), id, { ...request.query, limit, ...(cursor === undefined ? {} : { cursor }) }));
      return sendCsv(reply, `keyfleet-rollout-${id}-okms-${new Date().toISOString().slice(0, 10)}.csv`, ROLLOUT_OKM_COLUMNS, members, (okm) => ROLLOUT_OKM_COLUMNS.map((column) => okm[column]));
    },
  );

  app.patch(
    '/:id',
    {
      onRequest: canWrite,
      schema: {
        operationId: 'updateRollout',
        summary: 'Change the thresholds of a ready or paused rollout (409 while running: pause it first)',
        params: RolloutParams,
        querystring: CustomerOnlyQuery,
        headers: IfMatchHeaders,
        body: UpdateRolloutBody,
        response: { 200: resourceResponse(RolloutView), ...conditionalErrorResponses },
      },
    },
    async (request, reply) => ({ message: MESSAGES.updated, data: withEtag(reply, await updateRollout(conditionalRequest(request, request.query.customer), request.params.id, request.body)) }),
  );

  for (const { path, operationId, summary, action } of [
    { path: 'retry', operationId: 'retryRolloutOkms', summary: 'Give failed OKMs of a running or paused rollout another update timeout: offered the version again', action: retryFailedMembers },
    { path: 'exclude', operationId: 'excludeRolloutOkms', summary: 'Take failed OKMs out of a running or paused rollout: no longer offered its version nor counted', action: excludeFailedMembers },
  ]) {
    app.post(
      `/:id/okms/${path}`,
      {
        onRequest: canWrite,
        schema: {
          operationId,
          summary,
          params: RolloutParams,
          querystring: CustomerOnlyQuery,
          headers: IfMatchHeaders,
          body: FailedMembersBody,
          response: { 200: resourceResponse(RolloutView), ...conditionalErrorResponses },
        },
      },
      async (request, reply) => ({ message: MESSAGES.updated, data: withEtag(reply, await action(conditionalRequest(request, request.query.customer), request.params.id, request.body ?? {})) }),
    );
  }

  for (const { path, operationId, summary, action } of ACTIONS) {
    app.post(
      `/:id/${path}`,
      {
        onRequest: path === 'approve' ? canApprove : canWrite,
        schema: { operationId, summary, params: RolloutParams, querystring: CustomerOnlyQuery, headers: IfMatchHeaders, response: { 200: resourceResponse(RolloutView), ...conditionalErrorResponses } },
      },
      async (request, reply) => ({ message: MESSAGES.updated, data: withEtag(reply, await action(conditionalRequest(request, request.query.customer), request.params.id)) }),
    );
  }
};

export default rolloutRoutes;
