import { changedMembers } from '../audit/changed-members.ts';
import { recordChange, type Change, type ChangeSource } from '../audit/trail.ts';
import { actingCustomer, type Principal } from '../auth/guard.ts';
import type { Settings } from '../config/settings.ts';
import type { Db } from '../db/database.ts';
import { cursorPageRequest, mapCursorPage, type CursorPage, type CursorPageQuery } from '../db/cursor-pages.ts';
import { badRequest, conflict, forbidden, notFound } from '../http/errors.ts';
import { checkIfMatch, strongEtag, type IfMatch } from '../http/preconditions.ts';
import { isHttpUrl } from '../shared/http-url.ts';
import {
  countEndpoints,
  deleteEndpoint,
  ENDPOINT_PAGES,
  findEndpoint,
  insertEndpoint,
  listEndpoints,
  lockEndpoint,
  updateEndpoint,
  type EndpointScope,
  type WebhookEndpoint,
} from './endpoints-repository.ts';
import { toDeliveryRecord } from './delivery-records.ts';
import { ENDPOINT_DELIVERY_PAGES, endpointDeliveries } from './fleet-deliveries-repository.ts';
import { DEPLOYMENT_ONLY_EVENT_TYPES, endpointsChanged, eventBody, newEventId, queueDeliveries, type FleetEventType } from './fleet-events.ts';
import { checkDestination } from './ssrf-guard.ts';
import type { EndpointBody, EndpointDeliveryRecord, EndpointPatchBody, WebhookEndpointRecord } from './endpoints-schemas.ts';

/** Endpoints one customer (or the deployment) may have. */
export const MAX_ENDPOINTS_PER_OWNER = 20;

/** The body type of the event the "send test event" action queues; no endpoint subscribes to it. */
export const TEST_EVENT_TYPE = 'webhook.test';

export interface EndpointRequest {
  db: Db;
  settings: Pick<Settings, 'webhookAllowPrivateNetworks'>;
  principal: Principal;
  customerName: string | undefined;
  now: number;
  /** Who changes, for the audit trail (unused by reads). */
  source: ChangeSource;
  /** A write's If-Match (PATCH, DELETE), checked under the endpoint's row lock; undefined: unconditional. */
  ifMatch?: IfMatch;
}

export const toEndpointRecord = (endpoint: WebhookEndpoint): WebhookEndpointRecord => ({
  id: endpoint.id,
  url: endpoint.url,
  event_types: endpoint.eventTypes,
  customer: endpoint.customerName,
  created_at: new Date(endpoint.createdAt).toISOString(),
});

/** The endpoint's strong ETag: a digest of what its record shows of it, all of which a PATCH can change or names it by (docs/adr/0100). */
export function endpointEtag(record: WebhookEndpointRecord): string {
  return strongEtag(JSON.stringify([record.id, record.customer, record.url, record.event_types]));
}

/** Evaluates the request's If-Match against the endpoint as it is (the caller holds its row lock when it writes). */
function checkEndpointVersion(request: EndpointRequest, current: WebhookEndpoint | undefined): void {
  if (request.ifMatch === undefined) return;
  const record = current && toEndpointRecord(current);
  checkIfMatch(request.ifMatch, record ? endpointEtag(record) : null, () => JSON.stringify(record));
}

/** An endpoint as the audit trail records it: where it delivers and what (it has no secret of its own: its customer's signs). */
const endpointState = (endpoint: Pick<WebhookEndpoint, 'url' | 'eventTypes'>) => ({ url: endpoint.url, event_types: endpoint.eventTypes });

const endpointChange = (action: 'webhook_endpoint.created' | 'webhook_endpoint.updated' | 'webhook_endpoint.deleted', endpoint: WebhookEndpoint, before?: object, after?: object): Change => ({
  action,
  customer: endpoint.customerName,
  entity: { type: 'webhook_endpoint', id: String(endpoint.id) },
  ...(before === undefined ? {} : { before }),
  ...(after === undefined ? {} : { after }),
});

/**
 * The customer a request's endpoints belong to; null (the deployment's, and every customer's)
 * for an admin naming none. A principal of every customer that is not an admin (a person's
 * fleet-wide role) must name a customer: deployment-wide endpoints receive every customer's
 * events and the admin-only ones (contract §14).
 */
async function actingOwner(request: EndpointRequest): Promise<{ id: number; name: string } | null> {
  const acting = await actingCustomer(request.db, request.principal, request.customerName);
  if (acting === null && !request.principal.isAdmin) throw forbidden('Deployment-wide webhook endpoints are an admin\'s: name a customer (?customer=…)');
  return acting;
}

/** The endpoints a request may read or change: its customer's; an admin's, every one unless it names a customer. */
export async function scopeOf(request: EndpointRequest): Promise<EndpointScope> {
  const acting = await actingOwner(request);
  return acting === null ? {} : { customerId: acting.id };
}

/**
 * Refused as a status subscriber URL is: not http or https, or, unless private networks are
 * allowed, a literal private, loopback or link-local address or a localhost name (another name
 * is checked at each delivery, on the address connected to).
 */
function checkEndpointUrl(url: string, settings: EndpointRequest['settings']): void {
  if (!isHttpUrl(url)) throw badRequest('url: must be an http or https URL');
  checkDestination('url', url, settings.webhookAllowPrivateNetworks);
}

/**
 * A customer's endpoint may not take the event types only deployment-wide endpoints receive;
 * and `audit.entry` ships the audit trail, which only a principal that may read it (audit:read)
 * subscribes to.
 */
function checkEventTypes(eventTypes: readonly string[], customerId: number | null, principal: Principal): void {
  if (eventTypes.includes('audit.entry') && !principal.isAdmin && !principal.scopes.has('audit:read')) throw forbidden('event_types: audit.entry needs the audit:read scope');
  const deploymentOnly = eventTypes.find((type) => DEPLOYMENT_ONLY_EVENT_TYPES.has(type as FleetEventType));
  if (customerId !== null && deploymentOnly !== undefined) {
    throw badRequest(`event_types: ${deploymentOnly} is only for deployment-wide endpoints (an admin token naming no customer)`);
  }
}

/**
 * Creates an endpoint of the acting customer; an admin naming no customer creates a
 * deployment-wide one, which receives the events of every customer and those of no customer.
 */
export async function createEndpoint(request: EndpointRequest, body: EndpointBody): Promise<WebhookEndpointRecord> {
  const acting = await actingOwner(request);
  checkEndpointUrl(body.url, request.settings);
  checkEventTypes(body.event_types, acting?.id ?? null, request.principal);
  const customerId = acting?.id ?? null;
  if ((await countEndpoints(request.db, { customerId })) >= MAX_ENDPOINTS_PER_OWNER) {
    throw conflict(`At most ${MAX_ENDPOINTS_PER_OWNER} webhook endpoints per customer; delete one first`);
  }
  const endpoint = await request.db.transaction().execute(async (tx) => {
    const id = await insertEndpoint(tx, { customerId, url: body.url, eventTypes: body.event_types, now: request.now });
    const created = (await findEndpoint(tx, id, {}))!;
    await recordChange(tx, request.source, endpointChange('webhook_endpoint.created', created, undefined, endpointState(created)), request.now);
    return created;
  });
  endpointsChanged(request.db);
  return toEndpointRecord(endpoint);
}

/** One page of the endpoints the request may see, oldest first. */
export async function endpointRecords(request: EndpointRequest, query: CursorPageQuery): Promise<CursorPage<WebhookEndpointRecord>> {
  const page = cursorPageRequest(ENDPOINT_PAGES, query);
  return mapCursorPage(await listEndpoints(request.db, await scopeOf(request), page), toEndpointRecord);
}

const endpointNotFound = (id: number) => notFound(`No webhook endpoint ${id}`);

export async function getEndpoint(request: EndpointRequest, id: number): Promise<WebhookEndpoint> {
  const endpoint = await findEndpoint(request.db, id, await scopeOf(request));
  if (!endpoint) throw endpointNotFound(id);
  return endpoint;
}

/**
 * Changes the fields the patch gives (url, event_types), checked as at creation; the endpoint
 * keeps its id, owner and deliveries. A patch that changes no field is no change: no entry.
 */
export async function patchEndpoint(request: EndpointRequest, id: number, patch: EndpointPatchBody): Promise<WebhookEndpointRecord> {
  const endpoint = await getEndpoint(request, id);
  if (patch.url !== undefined) checkEndpointUrl(patch.url, request.settings);
  if (patch.event_types !== undefined) checkEventTypes(patch.event_types, endpoint.customerId, request.principal);
  if (patch.url === undefined && patch.event_types === undefined) {
    checkEndpointVersion(request, endpoint);
    return toEndpointRecord(endpoint);
  }
  const changed = await request.db.transaction().execute(async (tx) => {
    if (!(await lockEndpoint(tx, endpoint.id))) throw endpointNotFound(id);
    const before = (await findEndpoint(tx, endpoint.id, {}))!;
    checkEndpointVersion(request, before);
    await updateEndpoint(tx, endpoint.id, { url: patch.url, eventTypes: patch.event_types });
    const after = (await findEndpoint(tx, endpoint.id, {}))!;
    const difference = changedMembers(endpointState(before), endpointState(after));
    if (Object.keys(difference.after).length > 0) await recordChange(tx, request.source, endpointChange('webhook_endpoint.updated', after, difference.before, difference.after), request.now);
    return after;
  });
  endpointsChanged(request.db);
  return toEndpointRecord(changed);
}

export async function removeEndpoint(request: EndpointRequest, id: number): Promise<void> {
  const scope = await scopeOf(request);
  const deleted = await request.db.transaction().execute(async (tx) => {
    if (request.ifMatch !== undefined && (await lockEndpoint(tx, id))) checkEndpointVersion(request, await findEndpoint(tx, id, scope));
    const endpoint = await deleteEndpoint(tx, id, scope);
    if (endpoint) await recordChange(tx, request.source, endpointChange('webhook_endpoint.deleted', endpoint, endpointState(endpoint)), request.now);
    return endpoint;
  });
  if (!deleted) throw endpointNotFound(id);
  endpointsChanged(request.db);
}

/** Queues a `webhook.test` event to this endpoint alone, whatever its event types; returns its webhook-id. */
export async function sendTestEvent(request: EndpointRequest, id: number): Promise<string> {
  const endpoint = await getEndpoint(request, id);
  const body = eventBody(newEventId(), TEST_EVENT_TYPE, request.now, { endpoint_id: endpoint.id, url: endpoint.url });
  await queueDeliveries(request.db, [{ endpointId: endpoint.id, body }], request.now);
  return body.id;
}

/** One page of the endpoint's deliveries, newest first. */
export async function deliveryRecords(request: EndpointRequest, id: number, query: CursorPageQuery): Promise<CursorPage<EndpointDeliveryRecord>> {
  const page = cursorPageRequest(ENDPOINT_DELIVERY_PAGES, query);
  const endpoint = await getEndpoint(request, id);
  return mapCursorPage(await endpointDeliveries(request.db, endpoint.id, page), toDeliveryRecord);
}
