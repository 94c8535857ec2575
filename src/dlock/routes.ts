import fp from 'fastify-plugin';
import { Type, type Static } from 'typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { methodNotAllowed } from '../http/errors.ts';
import { FreeText } from '../http/schemas.ts';
import { CERTIFICATE_NAME_PATTERN, exportChain } from '../pki/intermediates.ts';
import { requireApiKey, requireApiKeyReading } from './api-key-auth.ts';
import { findApiKey } from './api-keys.ts';
import { ensureDeploymentSecret, toBase64Form, type KeyCertificate } from './key-certificate.ts';
import { deleteLock, findApiKeyWithLock, lockCertificate, ownIntermediate, registerLock, type ApiKeyWithLockRow, type LockContext } from './locks.ts';

export const SERIAL_NO_PATTERN = '^[A-Za-z0-9._-]{1,64}$';
export const ENROLMENT_CODE_PATTERN = '^(?:[0-9A-Fa-f]{2}){8,256}$';

const RegisterBody = Type.Object(
  {
    serial_no: Type.String({ pattern: SERIAL_NO_PATTERN }),
    type: FreeText({ maxLength: 200 }),
    certificate: Type.String({ pattern: CERTIFICATE_NAME_PATTERN }),
    enrolment_code: Type.String({ pattern: ENROLMENT_CODE_PATTERN }),
    base64: Type.Boolean(),
  },
  { additionalProperties: false },
);
type RegisterBody = Static<typeof RegisterBody>;

/** Far above any valid body (the enrolment code is at most 512 hex digits). */
const REGISTER_BODY_LIMIT = 16 * 1024;

const FetchQuery = Type.Object({ base64: Type.Optional(Type.Boolean()) });
const SerialParams = Type.Object({ serial: Type.String({ pattern: SERIAL_NO_PATTERN }) }, { additionalProperties: false });
const CertificateParams = Type.Object({ name: Type.String({ pattern: CERTIFICATE_NAME_PATTERN }) }, { additionalProperties: false });
const SERIAL_NO = new RegExp(SERIAL_NO_PATTERN);

const DLOCK = { errorShape: 'dlock' } as const;

const refuseMethod = (allow: string) => async (request: FastifyRequest) => {
  throw methodNotAllowed(`Method ${request.method} not allowed`, allow);
};

/**
 * The key and the lock in one statement. Authentication runs before validation (onRequest), so
 * a serial number that is not valid reads the key alone and is then refused by the schema (400).
 */
const requireKeyAndLock = requireApiKeyReading((request) => {
  const { serial } = request.params as { serial: string };
  return SERIAL_NO.test(serial) ? findApiKeyWithLock(request.server.db, serial) : findApiKey(request.server.db);
});

const keyResponse = (reply: FastifyReply, msg: string, certificate: KeyCertificate, base64: boolean) =>
  reply
    .type('application/json; charset=utf-8')
    .send({ status: 200, msg, data: { key: base64 ? toBase64Form(certificate) : certificate } });

/** The DLock resource under /v1 (seed §DLock) and the PEM chain its key certificates verify against. */
async function dlockRoutes(app: FastifyInstance): Promise<void> {
  const context: LockContext = {
    db: app.db,
    keyRing: app.keyRing,
    deploymentSecret: await ensureDeploymentSecret(app.db, app.keyRing),
    validityDays: app.settings.dlockCertificateValidityDays,
  };

  app.post<{ Body: RegisterBody }>(
    '/v1/dlock',
    { config: DLOCK, onRequest: requireApiKey, schema: { body: RegisterBody }, bodyLimit: REGISTER_BODY_LIMIT },
    async (request, reply) => {
      const certificate = await registerLock(context, request.apiKeyOwner!, request.body);
      return keyResponse(reply, 'DLock registered successfully', certificate, request.body.base64);
    },
  );

  app.get<{ Params: { serial: string }; Querystring: { base64?: boolean } }>(
    '/v1/dlock/:serial',
    { config: DLOCK, onRequest: requireKeyAndLock, schema: { params: SerialParams, querystring: FetchQuery } },
    async (request, reply) => {
      const certificate = await lockCertificate(context.keyRing, request.params.serial, request.apiKeyRow as ApiKeyWithLockRow);
      return keyResponse(reply, 'DLock fetched successfully', certificate, request.query.base64 === true);
    },
  );

  app.delete<{ Params: { serial: string } }>(
    '/v1/dlock/:serial',
    { config: DLOCK, onRequest: requireApiKey, schema: { params: SerialParams } },
    async (request, reply) => {
      await deleteLock(app.db, request.apiKeyOwner!, request.params.serial);
      return reply.code(204).send();
    },
  );

  // A method the resource does not have is 405 whoever asks, before authentication: the seed's
  // PUT and PATCH, and the other methods of the two paths, so that no method falls to a 404.
  const notAllowed = { summary: 'Not a method of this resource: 405 with Allow' };
  app.route({ method: ['GET', 'PUT', 'PATCH', 'DELETE'], url: '/v1/dlock', config: DLOCK, schema: notAllowed, handler: refuseMethod('POST') });
  app.route({ method: ['POST', 'PUT', 'PATCH'], url: '/v1/dlock/:serial', config: DLOCK, schema: { ...notAllowed, params: SerialParams }, handler: refuseMethod('GET, HEAD, DELETE') });

  app.get<{ Params: { name: string } }>(
    '/v1/certificates/:name',
    { config: DLOCK, onRequest: requireApiKey, schema: { params: CertificateParams } },
    async (request, reply) => {
      await ownIntermediate(app.db, request.apiKeyOwner!, request.params.name);
      const { chainPem } = await exportChain(app.db, request.params.name);
      return reply
        .type('application/json; charset=utf-8')
        .send({ status: 200, msg: 'Certificate chain fetched successfully', data: { chain: chainPem } });
    },
  );
}

export default fp(dlockRoutes, { name: 'keyfleet-dlock-routes', dependencies: ['keyfleet-dlock-auth'] });
