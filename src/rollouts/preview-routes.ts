import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf, requireScopes } from '../auth/guard.ts';
import { ErrorResponse, MESSAGES, resourceResponse } from '../http/schemas.ts';
import { previewRollout } from './preview.ts';
import { CreateRolloutBody } from './schemas.ts';

const RolloutPreview = Type.Object({
  eligible: Type.Integer({ description: 'OKMs the rollout would reach now' }),
  up_to_date: Type.Integer({ description: 'OKMs that match but already report the version or newer: in no group' }),
  groups: Type.Array(Type.Object({ percent: Type.Integer(), okms: Type.Integer({ description: 'members the group would have' }) })),
});

/** POST /api/v1/rollouts/preview: the group sizes a create with this body would choose now; nothing is stored. */
const rolloutPreviewRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/preview',
    {
      onRequest: requireScopes('okm:read'),
      schema: {
        operationId: 'previewRollout',
        summary: 'The group sizes creating this rollout would choose now (nothing is created)',
        body: CreateRolloutBody,
        response: { 200: resourceResponse(RolloutPreview), '4xx': ErrorResponse },
      },
    },
    async (request) => ({
      message: MESSAGES.fetched,
      data: await previewRollout(app.db, principalOf(request), request.body),
    }),
  );
};

export default rolloutPreviewRoutes;
