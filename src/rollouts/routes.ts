import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { changeSourceOf } from '../audit/trail.ts';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { cursorPageResponse, NO_TOTAL, sendCursorPage } from '../http/cursor-paging.ts';
import { ErrorResponse, MESSAGES, resourceResponse } from '../http/schemas.ts';
import type { EmitFleetEvent } from './events.ts';
import {
  abortRollout,
  advanceRollout,
  approveRollout,
  createRollout,
  getRolloutView,
  listRolloutOkmViews,
  listRolloutViews,
  pauseRollout,
  resumeRollout,
  startRollout,
  type RolloutRequest,
} from './service.ts';
import { CreateRolloutBody, CustomerOnlyQuery, RolloutListQuery, RolloutOkmListQuery, RolloutOkmView, RolloutParams, RolloutView } from './schemas.ts';

const errorResponses = { '4xx': ErrorResponse };

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

/** Firmware rollouts (SPEC section 13), mounted at /api/v1/rollouts. */
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
  });

  app.post(
    '/',
    {
      onRequest: canWrite,
      schema: { operationId: 'createRollout', summary: 'Create a staged firmware rollout (state ready; members chosen now)', body: CreateRolloutBody, response: { 201: resourceResponse(RolloutView), ...errorResponses } },
    },
    async (request, reply) => reply.code(201).send({ message: MESSAGES.created, data: await createRollout(rolloutRequest(request), request.body) }),
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
      schema: { operationId: 'getRollout', summary: 'Get a rollout with per-group counts', params: RolloutParams, querystring: CustomerOnlyQuery, response: { 200: resourceResponse(RolloutView), ...errorResponses } },
    },
    async (request) => ({ message: MESSAGES.fetched, data: await getRolloutView(rolloutRequest(request, request.query.customer), request.params.id) }),
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

  for (const { path, operationId, summary, action } of ACTIONS) {
    app.post(
      `/:id/${path}`,
      {
        onRequest: path === 'approve' ? canApprove : canWrite,
        schema: { operationId, summary, params: RolloutParams, querystring: CustomerOnlyQuery, response: { 200: resourceResponse(RolloutView), ...errorResponses } },
      },
      async (request) => ({ message: MESSAGES.updated, data: await action(rolloutRequest(request, request.query.customer), request.params.id) }),
    );
  }
};

export default rolloutRoutes;
