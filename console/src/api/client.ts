/**
 * The console's one way to the server: every request of every page goes through this module.
 * It calls the documented JSON API only, typed by the generated OpenAPI client types
 * (clients/typescript), with the signed-in bearer token, or, for a person signed in by single
 * sign-on, with the session cookie the browser sends by itself and the anti-CSRF token on
 * writes. A refused credential (401) ends the session with the API's reason; any other error
 * is thrown as an ApiError naming the field the API blamed, for the form to show next to it.
 */
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from '../../../clients/typescript/keyfleet-openapi.ts';
import { currentSession, signInAsPerson, signOut } from '../session.ts';
import { NO_CREDENTIAL, noAccessReason, sessionEndedReason, type Me } from '../single-sign-on.ts';
import { fieldMessage } from './error-message.ts';

export type Schemas = components['schemas'];
export type OkmRecord = Schemas['OkmRecord'];

export class ApiError extends Error {
  constructor(
    /** The HTTP status; 0 when the server could not be reached. */
    readonly status: number,
    readonly code: string,
    message: string,
    /** The field the message is about ("polling_interval", "key_checkout_window.time"); null: none. */
    readonly field: string | null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/**
 * A 412: the write named the version it was based on (If-Match) and the resource has changed
 * since. `current` is the resource as it now is (null: it is gone), `etag` its version.
 */
export class VersionConflict extends ApiError {
  constructor(
    message: string,
    readonly current: unknown,
    readonly etag: string | null,
  ) {
    super(412, 'PRECONDITION_FAILED', message, null);
    this.name = 'VersionConflict';
  }
}

/** The ETag each answer came with, by its body and by the resource it holds (`data`). */
const etags = new WeakMap<object, string>();

/** The version (ETag) of a resource or answer as the server sent it; null: none known. Writes send it back as If-Match. */
export const etagOf = (answer: object | null | undefined): string | null => (answer ? (etags.get(answer) ?? null) : null);

/** Records the ETag of the resource `answer` holds (a 412's `current` is such a resource). */
function rememberEtag(answer: unknown, etag: string | null): void {
  if (etag === null || typeof answer !== 'object' || answer === null) return;
  etags.set(answer, etag);
  const data = (answer as { data?: unknown }).data;
  if (typeof data === 'object' && data !== null && !Array.isArray(data)) etags.set(data, etag);
}

/** The If-Match header of a write based on the version `etag`; none without one (the write is then unconditional). */
const ifMatch = (etag: string | null | undefined) => (etag ? { 'if-match': etag } : undefined);

/** The sign-in page's explanation of a 401. */
export function refusedTokenReason(apiMessage: string): string {
  if (apiMessage === 'Token expired') return 'Your token has expired. Sign in with a new one (keyfleet console prints a sign-in URL).';
  return `The server no longer accepts your token (${apiMessage}): it may have been revoked or its signing key retired. Sign in with a new one.`;
}

const UNREACHABLE = 'The keyfleet server could not be reached. Check the connection and try again.';
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The credential of a request: the bearer token; for a person, nothing on reads (the cookie goes
 * by itself, same origin) and the anti-CSRF token on writes, without which the server refuses them.
 */
function credentialHeaders(method: string): Record<string, string> {
  const session = currentSession();
  if (session?.kind === 'token') return { authorization: `Bearer ${session.token}` };
  if (session?.kind === 'person' && !READ_METHODS.has(method.toUpperCase())) return { 'x-csrf-token': session.csrfToken };
  return {};
}

const authorize: Middleware = {
  onRequest({ request }) {
    for (const [name, value] of Object.entries(credentialHeaders(request.method))) request.headers.set(name, value);
    return request;
  },
};

const api = createClient<paths>({ baseUrl: window.location.origin, credentials: 'same-origin' });
api.use(authorize);

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

async function call<T>(request: Promise<Answer<T>>): Promise<T> {
  let answer: Answer<T>;
  try {
    answer = await request;
  } catch {
    throw new ApiError(0, 'NETWORK', UNREACHABLE, null);
  }
  const { data, error, response } = answer;
  if (response.ok) {
    rememberEtag(data, response.headers.get('etag'));
    return data as T;
  }
  const body = (error ?? {}) as { error_code?: string; error_msg?: string; current?: unknown };
  const apiMessage = body.error_msg ?? `${response.status} ${response.statusText}`;
  if (response.status === 412) {
    rememberEtag(body.current, response.headers.get('etag'));
    throw new VersionConflict(apiMessage, body.current ?? null, response.headers.get('etag'));
  }
  const asPerson = currentSession()?.kind === 'person';
  if (response.status === 401) signOut(asPerson ? sessionEndedReason(apiMessage) : refusedTokenReason(apiMessage));
  // A person's role is read afresh by the server (their groups at the provider, the bindings): a
  // refusal may mean it changed, or that it is gone altogether.
  if (response.status === 403 && asPerson) void askWhoAgain();
  const { field, message } = fieldMessage(apiMessage);
  throw new ApiError(response.status, body.error_code ?? 'HTTP_ERROR', response.status === 400 ? message : apiMessage, field);
}

/**
 * One JSON request as openapi-fetch makes them, for the routes the generated client types do
 * not describe (single sign-on and the people routes).
 */
async function send<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown): Promise<Answer<T>> {
  const headers = new Headers(credentialHeaders(method));
  if (body !== undefined) headers.set('content-type', 'application/json');
  const response = await fetch(new URL(path, window.location.origin), { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return response.ok ? { data: parsed as T, response } : { error: parsed, response };
}

// ---- Who is signed in ------------------------------------------------------------------------

interface MeAnswer {
  message: string;
  data: Me;
}

/**
 * Asks GET /api/v1/me with nothing but the cookie and acts on the answer: a person's session
 * signs in (or updates who is signed in); a refused one signs out with the API's reason. At
 * start, no credential at all just means nobody is signed in; later, it means the cookie is
 * gone, and a server out of reach or failing leaves the person signed in, as any failed request does.
 */
async function askWho(atStart: boolean): Promise<void> {
  let answer: Answer<MeAnswer>;
  try {
    answer = await send<MeAnswer>('GET', '/api/v1/me');
  } catch {
    if (atStart) signOut(UNREACHABLE);
    return;
  }
  const { data, error, response } = answer;
  const csrfToken = response.headers.get('x-csrf-token');
  if (response.ok && data?.data.actor.kind === 'person' && csrfToken !== null) return signInAsPerson(data.data, csrfToken);
  const apiMessage = (error as { error_msg?: string } | undefined)?.error_msg ?? `${response.status} ${response.statusText}`;
  if (response.status === 401) {
    if (!atStart || apiMessage !== NO_CREDENTIAL) signOut(sessionEndedReason(apiMessage));
  } else if (response.status === 403) signOut(noAccessReason(apiMessage));
  else if (atStart) signOut(`Could not find out who is signed in (${apiMessage}). Sign in again.`);
}

/**
 * At start, without a token in this tab: signs in the person whose session cookie the browser
 * holds, if any (script cannot see an HttpOnly cookie, so only the server can tell).
 */
export const resumePersonSession = () => askWho(true);

let askingAgain: Promise<void> | null = null;
/** After a refusal of a person's request: who they are now, once however many requests were refused together. */
function askWhoAgain(): Promise<void> {
  askingAgain ??= askWho(false).finally(() => (askingAgain = null));
  return askingAgain;
}

/**
 * Ends a person's session on the server (POST /auth/logout); the answer is the provider's
 * sign-out page to go to (RP-initiated logout), or null when it has none.
 */
export async function signOutPerson(): Promise<string | null> {
  const answer = await call(send<{ message: string; data: { end_session_url: string | null } }>('POST', '/auth/logout'));
  return answer.data.end_session_url;
}

/**
 * Which page of a cursor-paged list: `limit` rows after `cursor` (the next_cursor of the page
 * before; none: the first page). Every list the console shows pages this way.
 */
export interface PageRequest {
  limit?: number;
  cursor?: string;
}

// ---- Fleet ----------------------------------------------------------------------------------

export const getFleetSummary = (customer?: string) => call(api.GET('/api/v1/fleet/summary', { params: { query: { customer } } }));
export type FleetSummary = Awaited<ReturnType<typeof getFleetSummary>>['data'];

export const listFailingSubscribers = (customer?: string) => call(api.GET('/api/v1/fleet/failing-subscribers', { params: { query: { customer } } }));

// ---- OKMs -----------------------------------------------------------------------------------

/** The OKM list's filters and page (GET /api/v1/okms). */
export type OkmListFilters = NonNullable<paths['/api/v1/okms']['get']['parameters']['query']>;

export const listOkms = (filters: OkmListFilters) => call(api.GET('/api/v1/okms', { params: { query: filters } }));

export const getOkm = (serial: string) => call(api.GET('/api/v1/okms/{serial}', { params: { path: { serial } } }));

export const getOkmDrift = (serial: string) => call(api.GET('/api/v1/okms/{serial}/drift', { params: { path: { serial } } }));
export type DriftReport = Awaited<ReturnType<typeof getOkmDrift>>['data'];

export type OkmPatch = NonNullable<paths['/api/v1/okms/{serial}']['patch']['requestBody']>['content']['application/json'];

/** An RFC 7396 merge patch: only the members present change, null unsets one. */
export const patchOkm = (serial: string, patch: OkmPatch, etag?: string | null) =>
  call(api.PATCH('/api/v1/okms/{serial}', { params: { path: { serial } }, body: patch, headers: { 'content-type': 'application/merge-patch+json', ...ifMatch(etag) } }));

/** `pending`: only the messages not delivered yet (true) or only the delivered ones (false). */
export const listOkmMessages = (serial: string, query: PageRequest & { pending?: boolean }) => call(api.GET('/api/v1/okms/{serial}/messages', { params: { path: { serial }, query } }));

export const queueOkmMessage = (serial: string, type: string, payload: unknown = null) =>
  call(api.POST('/api/v1/okms/{serial}/messages', { params: { path: { serial } }, body: { type, payload } }));

/** Which audit records of an OKM: the order and the window of when keyfleet received them (ISO times). */
export type OkmAuditFilters = Omit<NonNullable<paths['/api/v1/okms/{serial}/audit']['get']['parameters']['query']>, 'limit' | 'cursor' | 'customer'>;

export const listOkmAudit = (serial: string, page: PageRequest, filters: OkmAuditFilters = {}) =>
  call(api.GET('/api/v1/okms/{serial}/audit', { params: { path: { serial }, query: { ...filters, ...page } } }));

/** The OKM's audit records the filters pick, as a CSV file. */
export const fetchOkmAuditCsv = (serial: string, filters: OkmAuditFilters) =>
  call(api.GET('/api/v1/okms/{serial}/audit/export', { params: { path: { serial }, query: filters }, parseAs: 'blob' })) as Promise<Blob>;

/** The OKMs the list's filters select (no paging), as a CSV file. */
export const fetchOkmListCsv = (filters: Omit<OkmListFilters, 'limit' | 'cursor' | 'next_correction'>) =>
  call(api.GET('/api/v1/okm-export', { params: { query: filters }, parseAs: 'blob' })) as Promise<Blob>;

// ---- Customers ------------------------------------------------------------------------------

/** Customers whose name holds the text, ignoring case, by name: those the session may name (a customer's session: its own). */
export const listCustomers = (nameContains: string | undefined, limit: number) =>
  call(api.GET('/api/v1/customers', { params: { query: { limit, ...(nameContains === undefined || nameContains === '' ? {} : { name_contains: nameContains }) } } }));

export const getOkmDeliveries = (serial: string) => call(api.GET('/api/v1/okms/{serial}/deliveries', { params: { path: { serial } } }));
export type DeliveryLog = Awaited<ReturnType<typeof getOkmDeliveries>>['data'];

/** The failed status-event delivery attempts, newest first. */
export const listOkmDeliveryFailures = (serial: string, page: PageRequest) =>
  call(api.GET('/api/v1/okms/{serial}/deliveries/failures', { params: { path: { serial }, query: page } }));

/** Admin: a new device token (the old one stops working); shown once. */
export const issueDeviceToken = (serial: string) => call(api.POST('/api/v1/okms/{serial}/device-token', { params: { path: { serial } } }));

/** Admin: give the OKM to a customer, or to none (null). */
export const assignOkmCustomer = (serial: string, customer: string | null, etag?: string | null) =>
  call(api.PUT('/api/v1/okms/{serial}/customer', { params: { path: { serial } }, body: { customer }, headers: { ...ifMatch(etag) } }));

/** A bulk action on the OKMs a filter of the list selects: its filter and what it does to each. */
export type OkmBulkBody = NonNullable<paths['/api/v1/okm-bulk-actions']['post']['requestBody']>['content']['application/json'];
export type OkmBulkAction = OkmBulkBody['action'];

/** Which OKMs the action would change now (nothing changes). */
export const previewOkmBulkAction = (body: Omit<OkmBulkBody, 'serial_numbers'>) => call(api.POST('/api/v1/okm-bulk-actions/preview', { body }));
export type OkmBulkSelection = Awaited<ReturnType<typeof previewOkmBulkAction>>['data'];

/** Applies it, in one transaction, to exactly the OKMs the preview named (409 when the filter now selects others). */
export const applyOkmBulkAction = (body: OkmBulkBody) => call(api.POST('/api/v1/okm-bulk-actions', { body }));

// ---- ACLs -----------------------------------------------------------------------------------

export type Acl = Schemas['Acl'];
export type AclBody = NonNullable<paths['/api/v1/acls']['post']['requestBody']>['content']['application/json'];

export type AclSearchQuery = Omit<NonNullable<paths['/api/v1/acl-summaries']['get']['parameters']['query']>, 'customer' | 'limit' | 'cursor'>;

/** A page of the customer's ACLs (those the search finds) without their lists, which reach megabytes each: name, counts, link, last change. */
export const listAclSummaries = (customer: string, page: PageRequest, search: AclSearchQuery = {}) =>
  call(api.GET('/api/v1/acl-summaries', { params: { query: { customer, ...search, ...page } } }));

export const getAcl = (id: string, customer?: string) => call(api.GET('/api/v1/acls/{id}', { params: { path: { id }, query: { customer } } }));

/** The OKM the ACL is linked to (the ACL itself never shows okm_id). */
export const getAclOkm = (id: string, customer?: string) => call(api.GET('/api/v1/acls/{id}/okm', { params: { path: { id }, query: { customer } } }));

export const createAcl = (body: AclBody) => call(api.POST('/api/v1/acls', { body }));

/** `etag`: the version the edits were made on (If-Match); a 412 (VersionConflict) when another writer changed it since. */
export const replaceAcl = (id: string, body: AclBody, etag?: string | null) => call(api.PUT('/api/v1/acls/{id}', { params: { path: { id } }, body, headers: { ...ifMatch(etag) } }));

/** The linked OKM, if any, gets a delete-assets message on its next poll. */
export const deleteAcl = (id: string, customer?: string, etag?: string | null) => call(api.DELETE('/api/v1/acls/{id}', { params: { path: { id }, query: { customer } }, headers: { ...ifMatch(etag) } }));

/** Offboarding: which of the customer's ACLs hold the user, and the OKMs linked to them (nothing changes). */
export const previewAclUserRemoval = (userId: number, customer: string) =>
  call(api.GET('/api/v1/acl-users/{user_id}/removal', { params: { path: { user_id: userId }, query: { customer } } }));
export type AclUserRemoval = Awaited<ReturnType<typeof previewAclUserRemoval>>['data'];

/** Removes the user from exactly the ACLs the preview named, in one transaction (409 when others hold it now). */
export const removeAclUser = (userId: number, customer: string, aclIds: string[]) =>
  call(api.POST('/api/v1/acl-users/{user_id}/removal', { params: { path: { user_id: userId }, query: { customer } }, body: { acl_ids: aclIds } }));

// ---- Pending OKMs ---------------------------------------------------------------------------

export type PendingOkm = Schemas['PendingOkmRecord'];

export const listPendingOkms = (page: PageRequest) => call(api.GET('/api/v1/pending-okms', { params: { query: page } }));

/** Admin: the OKM is enrolled, for `customer` or (undefined) for none yet. */
export const acceptPendingOkm = (serial: string, customer: string | undefined) =>
  call(api.POST('/api/v1/pending-okms/{serial}/accept', { params: { path: { serial } }, body: customer === undefined ? {} : { customer } }));

// ---- Firmware -------------------------------------------------------------------------------

export type FirmwareRelease = Schemas['FirmwareRelease'];
export type FirmwareKind = FirmwareRelease['kind'];

export const listFirmware = () => call(api.GET('/api/v1/firmware'));

export const addFirmwareUrl = (body: { kind: FirmwareKind; version: string; url: string; sha256: string }) => call(api.POST('/api/v1/firmware', { body }));

/** Admin: the fleet-wide latest release of a kind; null: none. */
export const setLatestFirmware = (kind: FirmwareKind, version: string | null, etag?: string | null) =>
  call(api.PUT('/api/v1/firmware/{kind}/latest', { params: { path: { kind } }, body: { version }, headers: { ...ifMatch(etag) } }));

/** What setting (a version) or clearing (null) the fleet latest would reach, counted by the server. */
export const previewLatestFirmware = (kind: FirmwareKind, version: string | null) =>
  call(api.GET('/api/v1/firmware/{kind}/latest/preview', { params: { path: { kind }, query: version === null ? {} : { version } } }));
export type LatestFirmwarePreview = Awaited<ReturnType<typeof previewLatestFirmware>>['data'];

type UploadAnswer = paths['/api/v1/firmware/{kind}/{version}']['put']['responses'][201]['content']['application/json'];

/**
 * PUT of a file as application/octet-stream through XMLHttpRequest, the one browser API that
 * reports upload progress; its answer goes through `call` like every other request's.
 */
function putWithProgress<T>(path: string, file: Blob, onProgress: (sent: number, total: number) => void): Promise<Answer<T>> {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('PUT', new URL(path, window.location.origin).href);
    for (const [name, value] of Object.entries(credentialHeaders('PUT'))) request.setRequestHeader(name, value);
    request.setRequestHeader('content-type', 'application/octet-stream');
    request.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : file.size);
    request.onload = () => {
      const response = new Response(request.responseText, { status: request.status, statusText: request.statusText });
      let body: unknown;
      try {
        body = JSON.parse(request.responseText);
      } catch {
        body = undefined;
      }
      resolve(response.ok ? { data: body as T, response } : { error: body, response });
    };
    request.onerror = () => reject(new TypeError('upload failed'));
    request.send(file);
  });
}

/** Admin: uploads a release file, telling `onProgress` the bytes sent so far. */
export const uploadFirmware = (kind: FirmwareKind, version: string, file: Blob, onProgress: (sent: number, total: number) => void) =>
  call(putWithProgress<UploadAnswer>(`/api/v1/firmware/${encodeURIComponent(kind)}/${encodeURIComponent(version)}`, file, onProgress));

// ---- Locks ----------------------------------------------------------------------------------

export type LockRecord = Awaited<ReturnType<typeof listLocks>>['data'][number];

/** A customer's enrolled DLocks (lock:read); the API sends no key material. */
export const listLocks = (query: PageRequest & { customer?: string }) => call(api.GET('/api/v1/locks', { params: { query } }));

// ---- Rollouts -------------------------------------------------------------------------------

export type RolloutBody = NonNullable<paths['/api/v1/rollouts']['post']['requestBody']>['content']['application/json'];
export type RolloutAction = 'start' | 'pause' | 'resume' | 'advance' | 'abort' | 'approve';

export const listRollouts = (query: PageRequest & { customer?: string }) => call(api.GET('/api/v1/rollouts', { params: { query } }));
export type Rollout = Awaited<ReturnType<typeof listRollouts>>['data'][number];

export const getRollout = (id: number) => call(api.GET('/api/v1/rollouts/{id}', { params: { path: { id } } }));

/** A rollout's OKMs, of one state and one group when given (GET /api/v1/rollouts/{id}/okms). */
export type RolloutOkmQuery = NonNullable<paths['/api/v1/rollouts/{id}/okms']['get']['parameters']['query']>;
export const listRolloutOkms = (id: number, query: RolloutOkmQuery) => call(api.GET('/api/v1/rollouts/{id}/okms', { params: { path: { id }, query } }));
export type RolloutOkm = Awaited<ReturnType<typeof listRolloutOkms>>['data'][number];

/** The rollout's OKMs the filters select, as a CSV file. */
export const fetchRolloutOkmsCsv = (id: number, query: Omit<RolloutOkmQuery, 'limit' | 'cursor'>) =>
  call(api.GET('/api/v1/rollouts/{id}/okms/export', { params: { path: { id }, query }, parseAs: 'blob' })) as Promise<Blob>;

export const createRollout = (body: RolloutBody) => call(api.POST('/api/v1/rollouts', { body }));

/** The group sizes creating `body` would choose now; nothing is created. */
export const previewRollout = (body: RolloutBody) => call(api.POST('/api/v1/rollouts/preview', { body }));
export type RolloutPreview = Awaited<ReturnType<typeof previewRollout>>['data'];

const ROLLOUT_ACTION_PATHS = {
  start: '/api/v1/rollouts/{id}/start',
  pause: '/api/v1/rollouts/{id}/pause',
  resume: '/api/v1/rollouts/{id}/resume',
  advance: '/api/v1/rollouts/{id}/advance',
  abort: '/api/v1/rollouts/{id}/abort',
  approve: '/api/v1/rollouts/{id}/approve',
} as const;

/** PATCH a ready or paused rollout's thresholds. */
export type RolloutThresholds = NonNullable<paths['/api/v1/rollouts/{id}']['patch']['requestBody']>['content']['application/json'];
export const updateRolloutThresholds = (id: number, body: RolloutThresholds, etag?: string | null) =>
  call(api.PATCH('/api/v1/rollouts/{id}', { params: { path: { id } }, body, headers: { ...ifMatch(etag) } }));

/** Retry (another update timeout) or exclude failed OKMs of a running or paused rollout: those named, or every failed one. */
export const actOnFailedRolloutOkms = (id: number, action: 'retry' | 'exclude', serialNumbers?: string[]) =>
  call(
    api.POST(action === 'retry' ? '/api/v1/rollouts/{id}/okms/retry' : '/api/v1/rollouts/{id}/okms/exclude', {
      params: { path: { id } },
      body: serialNumbers === undefined ? {} : { serial_numbers: serialNumbers },
    }),
  );

export const actOnRollout = (id: number, action: RolloutAction, etag?: string | null) => call(api.POST(ROLLOUT_ACTION_PATHS[action], { params: { path: { id } }, headers: { ...ifMatch(etag) } }));

// ---- Events (fleet-event webhook endpoints) -------------------------------------------------

export type WebhookEndpointBody = NonNullable<paths['/api/v1/webhook-endpoints']['post']['requestBody']>['content']['application/json'];
export type FleetEventType = WebhookEndpointBody['event_types'][number];

export const listWebhookEndpoints = (query: PageRequest & { customer?: string }) => call(api.GET('/api/v1/webhook-endpoints', { params: { query } }));
export type WebhookEndpoint = Awaited<ReturnType<typeof listWebhookEndpoints>>['data'][number];

export const createWebhookEndpoint = (body: WebhookEndpointBody, customer?: string) =>
  call(api.POST('/api/v1/webhook-endpoints', { params: { query: { customer } }, body }));

/** Its queued deliveries and its delivery log go with it. `etag`: the version the delete is based on (If-Match); a 412 (VersionConflict) when it changed since. */
export const deleteWebhookEndpoint = (id: number, etag?: string | null) =>
  call(api.DELETE('/api/v1/webhook-endpoints/{id}', { params: { path: { id: String(id) } }, headers: { ...ifMatch(etag) } }));

/** Queues a signed webhook.test event to this endpoint alone. */
export const sendWebhookTestEvent = (id: number) => call(api.POST('/api/v1/webhook-endpoints/{id}/test', { params: { path: { id: String(id) } } }));

/** The endpoint's deliveries, newest first. */
export const getWebhookDeliveries = (id: number, page: PageRequest) =>
  call(api.GET('/api/v1/webhook-endpoints/{id}/deliveries', { params: { path: { id: String(id) }, query: page } }));
export type WebhookDelivery = Awaited<ReturnType<typeof getWebhookDeliveries>>['data'][number];

/** One delivery with the body it sends (secrets redacted). */
export const getWebhookDelivery = (id: number, deliveryId: number) =>
  call(api.GET('/api/v1/webhook-endpoints/{id}/deliveries/{delivery_id}', { params: { path: { id: String(id), delivery_id: String(deliveryId) } } }));
export type WebhookDeliveryDetail = Awaited<ReturnType<typeof getWebhookDelivery>>['data'];

/** Queues a finished delivery again: a new delivery of the same event id; answers with it. */
export const redeliverWebhookDelivery = (id: number, deliveryId: number) =>
  call(api.POST('/api/v1/webhook-endpoints/{id}/deliveries/{delivery_id}/redeliver', { params: { path: { id: String(id), delivery_id: String(deliveryId) } } }));

/** One endpoint (the Events page narrowed to it). */
export const getWebhookEndpoint = (id: number, customer?: string) =>
  call(api.GET('/api/v1/webhook-endpoints/{id}', { params: { path: { id: String(id) }, query: { customer } } }));

/** Endpoints whose newest attempted delivery did not get through (the overview). */
export const listFailingEndpoints = (customer?: string) => call(api.GET('/api/v1/fleet/failing-endpoints', { params: { query: { customer } } }));
export type FailingEndpoint = Awaited<ReturnType<typeof listFailingEndpoints>>['data'][number];

// ---- People & access (role bindings, sessions, API tokens) ----------------------------------

export const listRoleBindings = () => call(api.GET('/api/v1/role-bindings'));
export type RoleBinding = Awaited<ReturnType<typeof listRoleBindings>>['data'][number];
export type RoleBindingKind = RoleBinding['kind'];
export type RoleBindingBody = paths['/api/v1/role-bindings']['post']['requestBody']['content']['application/json'];

export const createRoleBinding = (body: RoleBindingBody) => call(api.POST('/api/v1/role-bindings', { body }));

/** The people it bound lose that role within a second. */
export const deleteRoleBinding = (id: string) => call(api.DELETE('/api/v1/role-bindings/{id}', { params: { path: { id } } }));

/** The sessions that have not ended, newest first. */
export const listPersonSessions = () => call(api.GET('/api/v1/sessions'));
export type PersonSessionRecord = Awaited<ReturnType<typeof listPersonSessions>>['data'][number];

/** Its next request is a 401. */
export const revokePersonSession = (id: string) => call(api.DELETE('/api/v1/sessions/{id}', { params: { path: { id } } }));

/** Offboarding: every session of the person ends. */
export const revokeEverySessionOf = (personId: number) => call(api.DELETE('/api/v1/people/{id}/sessions', { params: { path: { id: personId } } }));

/** The tokens this deployment signed, newest first; expired ones too with `includeExpired`. */
export const listApiTokens = (includeExpired: boolean) => call(api.GET('/api/v1/tokens', { params: { query: includeExpired ? { include_expired: true } : {} } }));
export type ApiTokenRecord = Awaited<ReturnType<typeof listApiTokens>>['data'][number];

export const revokeApiToken = (id: string) => call(api.DELETE('/api/v1/tokens/{id}', { params: { path: { id } } }));

// ---- History (the audit trail) --------------------------------------------------------------

/** The audit trail's filters and page (GET /api/v1/audit-log). */
export type AuditLogQuery = NonNullable<paths['/api/v1/audit-log']['get']['parameters']['query']>;
/** The filters alone: what the History page keeps in its address and the export selects. */
export type AuditFilters = Omit<AuditLogQuery, 'limit' | 'cursor'>;
export type AuditExportFormat = NonNullable<NonNullable<paths['/api/v1/audit-log/export']['get']['parameters']['query']>['format']>;

/** Entries the filters select, newest first (audit:read). */
export const listAuditLog = (query: AuditLogQuery) => call(api.GET('/api/v1/audit-log', { params: { query } }));
export type AuditEntry = Awaited<ReturnType<typeof listAuditLog>>['data'][number];
export type AuditAction = NonNullable<AuditLogQuery['action']>;
export type AuditEntityType = NonNullable<AuditLogQuery['entity_type']>;

/**
 * The export of the selection as a file, for a token's console: a link cannot carry the bearer
 * token, so the file is fetched and handed over whole (a person's console links to the export,
 * which its cookie authenticates and the browser saves as it streams).
 */
export const fetchAuditExport = (filters: AuditFilters, format: AuditExportFormat) =>
  call(api.GET('/api/v1/audit-log/export', { params: { query: { ...filters, format } }, parseAs: 'blob' })) as Promise<Blob>;
