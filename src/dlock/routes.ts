import fp from 'fastify-plugin';
import { Type, type Static } from 'typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { changeSourceOf } from '../audit/trail.ts';
import { methodNotAllowed, notFound } from '../http/errors.ts';
import { methodNotAllowedRoute } from '../http/openapi.ts';
import { FreeText } from '../http/schemas.ts';
import { CERTIFICATE_NAME_PATTERN, exportChain, findIntermediate } from '../pki/intermediates.ts';
import { requireApiKey, requireApiKeyReading } from './api-key-auth.ts';
import { findApiKey } from './api-keys.ts';
import { ensureDeploymentSecret, toBase64Form, type KeyCertificate } from './key-certificate.ts';
import { CertificateChainResponse, KeyCertificateResponse } from './schemas.ts';
import { deleteLock, findApiKeyWithLock, lockCertificate, registerLock, type ApiKeyWithLockRow, type LockContext } from './locks.ts';

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

// Documentation only: the certificate is stored and sent back unchanged, never re-serialized through a schema.
const keyCertificateAnswer = (description: string) => ({
  ...DLOCK,
  openapi: { responses: { 200: { description, content: { 'application/json': KeyCertificateResponse } } } },
});

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

/** The DLock resource under /v1 (contract §0.5, §7) and the PEM chain its key certificates verify against. */
async function dlockRoutes(app: FastifyInstance): Promise<void> {
  const context: LockContext = {
    db: app.db,
    keyRing: app.keyRing,
    deploymentSecret: await ensureDeploymentSecret(app.db, app.keyRing),
    validityDays: app.settings.dlockCertificateValidityDays,
    writesInWith: app.dialect.writesInWith,
  };

  app.post<{ Body: RegisterBody }>(
    '/v1/dlock',
    {
      config: keyCertificateAnswer('The lock is registered: its key certificate, in base64 form when `base64` is true'),
      onRequest: requireApiKey,
      schema: {
        operationId: 'enrolDlock',
        summary: 'Register a lock and get its key certificate',
        description: '403 for a `certificate` the caller\'s customer does not own (or that does not exist); 400 for a serial number already registered.',
        body: RegisterBody,
      },
      bodyLimit: REGISTER_BODY_LIMIT,
    },
    async (request, reply) => {
      const certificate = await registerLock(context, request.apiKeyOwner!, request.body, changeSourceOf(request));
      return keyResponse(reply, 'DLock registered successfully', certificate, request.body.base64);
    },
  );

  app.get<{ Params: { serial: string }; Querystring: { base64?: boolean } }>(
    '/v1/dlock/:serial',
    {
      config: keyCertificateAnswer('The lock\'s key certificate as registered: JSON form, or base64 form with `?base64=true`'),
      onRequest: requireKeyAndLock,
      schema: { operationId: 'getDlock', summary: 'Get a lock\'s key certificate', params: SerialParams, querystring: FetchQuery },
    },
    async (request, reply) => {
      const certificate = await lockCertificate(context.keyRing, request.params.serial, request.apiKeyRow as ApiKeyWithLockRow);
      return keyResponse(reply, 'DLock fetched successfully', certificate, request.query.base64 === true);
    },
  );

  app.delete<{ Params: { serial: string } }>(
    '/v1/dlock/:serial',
    {
      config: { ...DLOCK, openapi: { responses: { 204: { description: 'The lock is deleted; no body' } } } },
      onRequest: requireApiKey,
      schema: { operationId: 'deleteDlock', summary: 'Delete a lock and its key certificate', params: SerialParams },
    },
    async (request, reply) => {
      await deleteLock(app.db, request.apiKeyOwner!, request.params.serial, changeSourceOf(request));
      return reply.code(204).send();
    },
  );

  // A method the resource does not have is 405 whoever asks, before authentication: PUT and
  // PATCH (contract §0.5), and the other methods of the two paths, so that no method falls to a 404.
  for (const { url, methods, allow } of [
    { url: '/v1/dlock', methods: ['GET', 'PUT', 'PATCH', 'DELETE'], allow: 'POST' },
    { url: '/v1/dlock/:serial', methods: ['POST', 'PUT', 'PATCH'], allow: 'GET, HEAD, DELETE' },
  ]) {
    const stub = methodNotAllowedRoute(allow);
    app.route({ method: methods, url, config: { ...DLOCK, ...stub.config }, schema: stub.schema, handler: refuseMethod(allow) });
  }

  app.get<{ Params: { name: string } }>(
    '/v1/certificates/:name',
    {
      config: {
        ...DLOCK,
        openapi: { responses: { 200: { description: 'The PEM chain that the key certificates of this intermediate verify against', content: { 'application/json': CertificateChainResponse } } } },
      },
      onRequest: requireApiKey,
      schema: {
        operationId: 'getCertificateChain',
        summary: 'Get the PEM chain of one of the customer\'s intermediate certificates',
        description: '404 for a name the caller\'s customer does not own, as for one that does not exist.',
        params: CertificateParams,
      },
    },
    async (request, reply) => {
      // Reading a certificate that is not the caller's is a 404, as a lock it does not own is (contract §3); POST naming one stays 403.
      const certificate = await findIntermediate(app.db, request.params.name);
      if (certificate?.customerId !== request.apiKeyOwner!.customerId) throw notFound('Certificate not found');
      const { chainPem } = await exportChain(app.db, request.params.name);
      return reply
        .type('application/json; charset=utf-8')
        .send({ status: 200, msg: 'Certificate chain fetched successfully', data: { chain: chainPem } });
    },
  );
}

export default fp(dlockRoutes, { name: 'keyfleet-dlock-routes', dependencies: ['keyfleet-dlock-auth'] });
