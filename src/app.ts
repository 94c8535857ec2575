import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { Settings } from './config/settings.ts';
import type { Db } from './db/database.ts';
import type { DialectStrategy } from './db/dialects/strategy.ts';
import { registerDrainAnswer } from './http/draining.ts';
import { registerErrorHandling } from './http/error-handler.ts';
import { registerJsonBodies } from './http/json-bodies.ts';
import rateLimitsPlugin from './http/rate-limits.ts';
import { registerRequestActor, registerRequestIdHeader } from './http/request-log.ts';
import authPlugin from './auth/plugin.ts';
import auditPlugin from './audit-log/plugin.ts';
import { loadActiveSigningKey } from './auth/signing-keys.ts';
import healthPlugin from './observability/health.ts';
import metricsPlugin from './observability/metrics.ts';
import openApiPlugin, { type ComponentSchemas } from './http/openapi.ts';
import okmConfigRoutes from './device/config-routes.ts';
import okmAdminRoutes from './okm/admin-routes.ts';
import okmBulkRoutes from './okm/bulk-routes.ts';
import okmExportRoutes from './okm/export-routes.ts';
import pendingOkmRoutes from './okm/pending-routes.ts';
import okmDriftRoutes from './device/drift-routes.ts';
import { pollCorrections } from './device/drift-service.ts';
import fleetSummaryRoutes from './fleet/fleet-summary-routes.ts';
import firmwareRoutes from './firmware/routes.ts';
import pkiPlugin from './pki/plugin.ts';
import dlockAuthPlugin from './dlock/api-key-auth.ts';
import dlockRoutes from './dlock/routes.ts';
import locksListRoutes from './dlock/locks-list-routes.ts';
import aclRoutes, { aclSummaryRoutes } from './acl/routes.ts';
import aclUserRemovalRoutes from './acl/user-removal-routes.ts';
import statusEventsPlugin from './webhooks/plugin.ts';
import deliveriesRoutes from './okm/deliveries-routes.ts';
import webhookEndpointRoutes from './webhooks/endpoints-routes.ts';
import auditEventsPlugin from './webhooks/audit-events.ts';
import rolloutsPlugin from './rollouts/plugin.ts';
import fleetPassPlugin from './fleet/fleet-pass-plugin.ts';
import failingSubscribersRoutes from './webhooks/failing-subscribers-routes.ts';
import { failingEndpointsRoutes, webhookDeliveryRoutes } from './webhooks/delivery-routes.ts';
import consolePlugin from './console/plugin.ts';
import customerRoutes from './auth/customer-list-routes.ts';
import type { KeyRing } from './secrets/key-ring.ts';
import { AclUserView, AclView } from './acl/schemas.ts';
import { KeyCertificate } from './dlock/schemas.ts';
import { LatestVersions, ReleaseView } from './firmware/schemas.ts';
import { FirmwareReference, PollReply } from './device/device-schemas.ts';
import { AuditRecordView, DeviceTokenRecord, MessageRecord, OkmRecord, PendingOkmRecord } from './okm/schemas.ts';

declare module 'fastify' {
  interface FastifyInstance {
    settings: Settings;
    db: Db;
    dialect: DialectStrategy;
    keyRing: KeyRing;
  }
}

export interface AppOptions {
  settings: Settings;
  db: Db;
  dialect: DialectStrategy;
  keyRing: KeyRing;
}

/**
 * The capabilities' schemas the OpenAPI document names under `components.schemas`, so that a
 * generated client has one type for each (src/http/openapi.ts); listed here, where the
 * capabilities are assembled, so that the HTTP layer knows none of them.
 */
const COMPONENT_SCHEMAS: ComponentSchemas = {
  OkmRecord,
  PendingOkmRecord,
  OkmMessage: MessageRecord,
  OkmAuditRecord: AuditRecordView,
  DeviceToken: DeviceTokenRecord,
  Acl: AclView,
  AclUser: AclUserView,
  FirmwareRelease: ReleaseView,
  FirmwareLatestVersions: LatestVersions,
  FirmwareReference,
  PollReply,
  DlockKeyCertificate: KeyCertificate,
};

/** The whole keyfleet service as one Fastify plugin; server.ts only gives it a socket. */
async function keyfleetApp(app: FastifyInstance, options: AppOptions): Promise<void> {
  app.decorate('settings', options.settings);
  app.decorate('db', options.db);
  app.decorate('dialect', options.dialect);
  app.decorate('keyRing', options.keyRing);
  registerErrorHandling(app);
  registerRequestIdHeader(app);
  registerRequestActor(app);
  registerDrainAnswer(app);
  registerJsonBodies(app);

  await app.register(openApiPlugin, { components: COMPONENT_SCHEMAS });
  await app.register(metricsPlugin);
  await app.register(healthPlugin);
  await app.register(rateLimitsPlugin);
  await app.register(authPlugin);
  await app.register(pkiPlugin);
  await app.register(dlockAuthPlugin);
  await app.register(dlockRoutes);
  await app.register(statusEventsPlugin, { dispatch: options.settings.webhookDispatchInServer });
  await app.register(okmConfigRoutes);
  await app.register(okmAdminRoutes, { prefix: '/api/v1/okms', corrections: pollCorrections });
  await app.register(okmDriftRoutes, { prefix: '/api/v1/okms' });
  await app.register(okmExportRoutes, { prefix: '/api/v1', corrections: pollCorrections });
  await app.register(okmBulkRoutes, { prefix: '/api/v1/okm-bulk-actions', corrections: pollCorrections });
  await app.register(fleetSummaryRoutes, { prefix: '/api/v1/fleet' });
  await app.register(failingSubscribersRoutes, { prefix: '/api/v1/fleet' });
  await app.register(failingEndpointsRoutes, { prefix: '/api/v1/fleet' });
  await app.register(pendingOkmRoutes, { prefix: '/api/v1/pending-okms' });
  await app.register(deliveriesRoutes, { prefix: '/api/v1/okms' });
  await app.register(webhookEndpointRoutes, { prefix: '/api/v1/webhook-endpoints' });
  await app.register(webhookDeliveryRoutes, { prefix: '/api/v1/webhook-endpoints' });
  await app.register(firmwareRoutes, { prefix: '/api/v1/firmware' });
  await app.register(aclRoutes, { prefix: '/api/v1/acls' });
  await app.register(aclSummaryRoutes, { prefix: '/api/v1/acl-summaries' });
  await app.register(aclUserRemovalRoutes, { prefix: '/api/v1/acl-users' });
  await app.register(locksListRoutes, { prefix: '/api/v1/locks' });
  await app.register(customerRoutes, { prefix: '/api/v1/customers' });
  await app.register(rolloutsPlugin);
  await app.register(auditPlugin, { signingKey: () => loadActiveSigningKey(options.db, options.keyRing) });
  await app.register(auditEventsPlugin);
  await app.register(fleetPassPlugin);
  await app.register(consolePlugin);
}

export default fp(keyfleetApp, { name: 'keyfleet' });
