import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import app from './app.ts';
import type { Settings } from './config/settings.ts';
import type { Db } from './db/database.ts';
import type { DialectStrategy } from './db/dialects/strategy.ts';
import { sendError } from './http/error-handler.ts';
import { registerDeviceCallSummary, RequestLogController, requestIdOf } from './http/request-log.ts';
import { validatorCompiler } from './http/validation.ts';
import { parseQueryString } from './shared/query-string.ts';
import type { KeyRing } from './secrets/key-ring.ts';

export interface ServerDependencies {
  settings: Settings;
  db: Db;
  dialect: DialectStrategy;
  keyRing: KeyRing;
}

const REDACTED_PATHS = ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie'];

export async function buildServer(dependencies: ServerDependencies): Promise<FastifyInstance> {
  const { settings } = dependencies;
  const logController = new RequestLogController();
  const server = Fastify({
    logger: { level: settings.logLevel, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } },
    // proxy-addr takes a hop count too; Fastify's types only list the other forms.
    trustProxy: settings.trustProxy as boolean | string,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 2048, querystringParser: parseQueryString },
    genReqId: requestIdOf,
    logController,
    bodyLimit: 1024 * 1024,
    requestTimeout: settings.requestTimeoutSeconds * 1000,
    http: {
      headersTimeout: settings.headersTimeoutSeconds * 1000,
      // Node checks the two timeouts above on this interval (30 s by default).
      connectionsCheckingInterval: 1000,
    },
    // Errors Fastify meets before routing (a URL that is not valid UTF-8, say) get the same JSON shape.
    frameworkErrors: sendError,
    // Requests during the drain are answered by registerDrainAnswer (src/http/draining.ts), in the documented shape.
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>();
  server.setValidatorCompiler(validatorCompiler);
  registerDeviceCallSummary(server, logController);
  await server.register(app, dependencies);
  return server;
}
