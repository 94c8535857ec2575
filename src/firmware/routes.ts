import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { changeSourceOf } from '../audit/trail.ts';
import { requireScopes } from '../auth/guard.ts';
import { unsupportedMediaType } from '../http/errors.ts';
import type { OperationDocumentation } from '../http/openapi.ts';
import { ErrorResponse, MESSAGES, resourceResponse } from '../http/schemas.ts';
import { IfMatchHeaders, parseIfMatch, preconditionFailedResponse } from '../http/preconditions.ts';
import { addFileRelease, addUrlRelease, fleetLatestEtag, getRelease, listCatalog, openDownload, previewLatest, removeRelease, setLatest } from './catalog-service.ts';
import {
  CatalogQuery,
  CatalogResponse,
  KindParams,
  LatestBody,
  LatestPreview,
  LatestPreviewQuery,
  LatestView,
  ReleaseParams,
  ReleaseView,
  UrlReleaseBody,
} from './schemas.ts';

const errorResponses = { '4xx': ErrorResponse };
const OCTET_STREAM = 'application/octet-stream';

const FirmwareFile = Type.String({ contentMediaType: OCTET_STREAM, description: 'the release file' });

/** Documentation only: the upload is read as a stream and the download sent as one, never through a schema. */
const UPLOAD: OperationDocumentation = { body: { description: 'The release file', content: { [OCTET_STREAM]: FirmwareFile } } };
const FILE_HEADERS = {
  etag: Type.String({ description: 'strong validator of the file' }),
  'accept-ranges': Type.Literal('bytes'),
};
const DOWNLOAD: OperationDocumentation = {
  headers: Type.Object({
    range: Type.Optional(Type.String({ description: 'one byte range, `bytes=first-last`, `bytes=first-` or `bytes=-suffix`; several ranges get the whole file' })),
    'if-range': Type.Optional(Type.String({ description: 'the ETag the range is for; another one gets the whole file' })),
    'if-none-match': Type.Optional(Type.String({ description: 'ETags the device has; a match is 304' })),
  }),
  responses: {
    200: { description: 'The whole file', content: { [OCTET_STREAM]: FirmwareFile }, headers: FILE_HEADERS },
    206: {
      description: 'One byte range of the file',
      content: { [OCTET_STREAM]: FirmwareFile },
      headers: { ...FILE_HEADERS, 'content-range': Type.String({ description: '`bytes first-last/size`' }) },
    },
    304: { description: 'Not modified (If-None-Match matches its ETag); no body', headers: { etag: FILE_HEADERS.etag } },
  },
  errors: [416],
};

async function requireOctetStream(request: FastifyRequest): Promise<void> {
  if (request.headers['content-type']?.split(';')[0]?.trim().toLowerCase() !== OCTET_STREAM) {
    throw unsupportedMediaType(`Content-Type must be ${OCTET_STREAM}`);
  }
}

function declaredLength(request: FastifyRequest): number | undefined {
  const header = request.headers['content-length'];
  return header === undefined || !/^\d+$/.test(header) ? undefined : Number(header);
}

const singleHeader = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(',') : value);

/** The firmware catalog, mounted at /api/v1/firmware. */
const firmwareRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // File uploads reach the handler as a stream: they are spooled, never held in memory whole.
  app.addContentTypeParser(OCTET_STREAM, (_request, payload, done) => done(null, payload));

  const canRead = requireScopes('okm:read');
  // The catalog is the fleet's: firmware:write is granted only for every customer (src/auth/roles.ts).
  const canWrite = requireScopes('firmware:write');

  app.get(
    '/',
    { onRequest: canRead, schema: { operationId: 'listFirmware', summary: 'The firmware catalog and the fleet-wide latest releases', querystring: CatalogQuery, response: { 200: CatalogResponse, ...errorResponses } } },
    async (request) => {
      const { releases, latest } = await listCatalog(app.db, app.settings, request.query.kind);
      return { message: MESSAGES.fetched, data: releases, latest };
    },
  );

  app.post(
    '/',
    { onRequest: canWrite, schema: { operationId: 'addFirmwareUrl', summary: 'Add a release served from a URL', body: UrlReleaseBody, response: { 201: resourceResponse(ReleaseView), ...errorResponses } } },
    async (request, reply) => {
      const release = await addUrlRelease(app.db, app.settings, changeSourceOf(request), request.body, Date.now());
      return reply.code(201).send({ message: MESSAGES.created, data: release });
    },
  );

  app.put(
    '/:kind/latest',
    {
      onRequest: canWrite,
      schema: {
        operationId: 'setLatestFirmware',
        summary: 'Set the fleet-wide latest release of a kind',
        description: 'With If-Match (the ETag of GET …/latest/preview), only if the fleet latest is still the one previewed (412 otherwise).',
        params: KindParams,
        headers: IfMatchHeaders,
        body: LatestBody,
        response: { 200: resourceResponse(LatestView), 412: preconditionFailedResponse(LatestView), ...errorResponses },
      },
    },
    async (request, reply) => {
      const latest = await setLatest(app.db, changeSourceOf(request), request.params.kind, request.body.version, Date.now(), parseIfMatch(request.headers['if-match']));
      reply.header('etag', fleetLatestEtag(latest.kind, latest.version));
      return { message: MESSAGES.updated, data: latest };
    },
  );

  app.get(
    '/:kind/latest/preview',
    {
      onRequest: canWrite,
      config: { openapi: { etag: true } },
      schema: {
        operationId: 'previewLatestFirmware',
        summary: 'How many OKMs setting (version) or clearing (no version) the fleet-wide latest of a kind would reach; changes nothing',
        params: KindParams,
        querystring: LatestPreviewQuery,
        response: { 200: resourceResponse(LatestPreview), ...errorResponses },
      },
    },
    async (request, reply) => {
      const preview = await previewLatest(app.db, request.params.kind, request.query.version ?? null);
      // The version of the fleet latest the counts are of: a change confirmed from them names it in If-Match.
      reply.header('etag', fleetLatestEtag(preview.kind, preview.current));
      return { message: MESSAGES.fetched, data: preview };
    },
  );

  app.put(
    '/:kind/:version',
    {
      onRequest: canWrite,
      preValidation: requireOctetStream,
      config: { openapi: UPLOAD },
      schema: { operationId: 'uploadFirmware', summary: 'Upload a release file (application/octet-stream)', params: ReleaseParams, response: { 201: resourceResponse(ReleaseView), ...errorResponses } },
    },
    async (request, reply) => {
      const { kind, version } = request.params;
      const release = await addFileRelease(app.db, app.settings, changeSourceOf(request), kind, version, request.body as Readable, declaredLength(request), Date.now());
      return reply.code(201).send({ message: MESSAGES.created, data: release });
    },
  );

  app.get(
    '/:kind/:version',
    { onRequest: canRead, schema: { operationId: 'getFirmware', summary: 'Get a release', params: ReleaseParams, response: { 200: resourceResponse(ReleaseView), ...errorResponses } } },
    async (request) => ({
      message: MESSAGES.fetched,
      data: await getRelease(app.db, app.settings, request.params.kind, request.params.version),
    }),
  );

  app.delete(
    '/:kind/:version',
    { onRequest: canWrite, schema: { operationId: 'deleteFirmware', summary: 'Delete a release', params: ReleaseParams, response: { 204: Type.Null(), ...errorResponses } } },
    async (request, reply) => {
      await removeRelease(app.db, changeSourceOf(request), request.params.kind, request.params.version);
      return reply.code(204).send(null);
    },
  );

  // No token: devices download from here with the URL their config poll gave them (so it is rate-limited as a device route).
  app.get(
    '/:kind/:version/file',
    {
      config: { rateLimitGroup: 'device', openapi: DOWNLOAD },
      schema: {
        operationId: 'downloadFirmware',
        summary: 'Download a release file (no token: the URL a config poll gave); Range supported',
        params: ReleaseParams,
        response: errorResponses,
      },
    },
    async (request, reply) => {
      const file = await openDownload(app.db, request.params.kind, request.params.version, {
        range: singleHeader(request.headers.range),
        ifRange: singleHeader(request.headers['if-range']),
        ifNoneMatch: singleHeader(request.headers['if-none-match']),
      });
      // The schema documents the bytes for OpenAPI; a stream is sent as it is, never serialized.
      const untypedReply: FastifyReply = reply.code(file.statusCode).headers(file.headers);
      return untypedReply.send(request.method === 'HEAD' || !file.openBody ? Readable.from([]) : file.openBody());
    },
  );
};

export default firmwareRoutes;
