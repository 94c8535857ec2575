/**
 * The console's one way to the server: every request of every page goes through this module.
 * It calls the documented JSON API only, typed by the generated OpenAPI client types
 * (clients/typescript), with the signed-in bearer token. A refused token (401) ends the session
 * with the API's reason; any other error is thrown as an ApiError naming the field the API
 * blamed, for the form to show next to it.
 */
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from '../../../clients/typescript/keyfleet-openapi.ts';
import { currentSession, signOut } from '../session.ts';
import { fieldMessage } from './error-message.ts';

export type Schemas = components['schemas'];
export type OkmRecord = Schemas['OkmRecord'];
export type Pagination = Schemas['Pagination'];

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

/** The sign-in page's explanation of a 401. */
export function refusedTokenReason(apiMessage: string): string {
  if (apiMessage === 'Token expired') return 'Your token has expired. Sign in with a new one (keyfleet console prints a sign-in URL).';
  return `The server no longer accepts your token (${apiMessage}): it may have been revoked or its signing key retired. Sign in with a new one.`;
}

const authorize: Middleware = {
  onRequest({ request }) {
    const session = currentSession();
    if (session) request.headers.set('authorization', `Bearer ${session.token}`);
    return request;
  },
};

const api = createClient<paths>({ baseUrl: window.location.origin });
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
    throw new ApiError(0, 'NETWORK', 'The keyfleet server could not be reached. Check the connection and try again.', null);
  }
  const { data, error, response } = answer;
  if (response.ok) return data as T;
  const body = (error ?? {}) as { error_code?: string; error_msg?: string };
  const apiMessage = body.error_msg ?? `${response.status} ${response.statusText}`;
  if (response.status === 401) signOut(refusedTokenReason(apiMessage));
  const { field, message } = fieldMessage(apiMessage);
  throw new ApiError(response.status, body.error_code ?? 'HTTP_ERROR', response.status === 400 ? message : apiMessage, field);
}

/** A list's `page` and `results_per_page`. */
export interface PageRequest {
  page?: number;
  results_per_page?: number;
}

// ---- Fleet ----------------------------------------------------------------------------------

export const getFleetSummary = (customer?: string) => call(api.GET('/api/v1/fleet/summary', { params: { query: { customer } } }));
export type FleetSummary = Awaited<ReturnType<typeof getFleetSummary>>['data'];

export const listFailingSubscribers = (customer?: string) => call(api.GET('/api/v1/fleet/failing-subscribers', { params: { query: { customer } } }));

// ---- OKMs -----------------------------------------------------------------------------------

/**
 * GET /api/v1/okms filters. `state`, `serial_prefix` and `sort` arrive with the paging branch;
 * until the generated types have them the query is widened here.
 */
export interface OkmListFilters extends PageRequest {
  customer?: string;
  firmware_version?: string;
  overdue?: boolean;
  unassigned?: boolean;
  state?: 'in_step' | 'drifting' | 'overdue' | 'never_polled';
  serial_prefix?: string;
  sort?: 'serial_number' | 'last_sync_time' | '-last_sync_time';
}

export const listOkms = (filters: OkmListFilters) =>
  call(api.GET('/api/v1/okms', { params: { query: filters as paths['/api/v1/okms']['get']['parameters']['query'] } }));

export const getOkm = (serial: string) => call(api.GET('/api/v1/okms/{serial}', { params: { path: { serial } } }));

export const getOkmDrift = (serial: string) => call(api.GET('/api/v1/okms/{serial}/drift', { params: { path: { serial } } }));
export type DriftReport = Awaited<ReturnType<typeof getOkmDrift>>['data'];

export type OkmPatch = NonNullable<paths['/api/v1/okms/{serial}']['patch']['requestBody']>['content']['application/json'];

/** An RFC 7396 merge patch: only the members present change, null unsets one. */
export const patchOkm = (serial: string, patch: OkmPatch) =>
  call(api.PATCH('/api/v1/okms/{serial}', { params: { path: { serial } }, body: patch, headers: { 'content-type': 'application/merge-patch+json' } }));

export const listOkmMessages = (serial: string) => call(api.GET('/api/v1/okms/{serial}/messages', { params: { path: { serial } } }));

export const queueOkmMessage = (serial: string, type: string, payload: unknown = null) =>
  call(api.POST('/api/v1/okms/{serial}/messages', { params: { path: { serial } }, body: { type, payload } }));

export const listOkmAudit = (serial: string, page: PageRequest) =>
  call(api.GET('/api/v1/okms/{serial}/audit', { params: { path: { serial }, query: page } }));

export const getOkmDeliveries = (serial: string) => call(api.GET('/api/v1/okms/{serial}/deliveries', { params: { path: { serial } } }));
export type DeliveryLog = Awaited<ReturnType<typeof getOkmDeliveries>>['data'];

/** Admin: a new device token (the old one stops working); shown once. */
export const issueDeviceToken = (serial: string) => call(api.POST('/api/v1/okms/{serial}/device-token', { params: { path: { serial } } }));

/** Admin: give the OKM to a customer, or to none (null). */
export const assignOkmCustomer = (serial: string, customer: string | null) =>
  call(api.PUT('/api/v1/okms/{serial}/customer', { params: { path: { serial } }, body: { customer } }));
