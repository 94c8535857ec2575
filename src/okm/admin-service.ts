import type { ErrorObject } from 'ajv';
import { recordChange, type ChangeSource } from '../audit/trail.ts';
import { actingCustomer, type Principal } from '../auth/guard.ts';
import type { Settings } from '../config/settings.ts';
import { findCustomerByName, type Customer } from '../customers/repository.ts';
import { cursorPageRequest, mapCursorPage, type CursorPage } from '../db/cursor-pages.ts';
import type { Db } from '../db/database.ts';
import { lockRelease } from '../firmware/catalog-repository.ts';
import { FIRMWARE_KINDS, type FirmwareKind } from '../firmware/version.ts';
import { badRequest, conflict, forbidden, notFound } from '../http/errors.ts';
import { everyItem } from '../http/csv-export.ts';
import { describeValidationError, validatorCompiler } from '../http/validation.ts';
import { stringifyWithJsonTexts } from '../http/json-texts.ts';
import { checkIfMatch, strongEtag, type IfMatch } from '../http/preconditions.ts';
import { canonicalJson } from '../shared/canonical-json.ts';
import { isHttpUrl } from '../shared/http-url.ts';
import { checkDestination } from '../webhooks/ssrf-guard.ts';
import { applyMergePatch } from '../shared/merge-patch.ts';
import { duplicateNamePath, JsonText, memberSource } from '../shared/raw-json.ts';
import { renderFieldPath } from '../http/validation.ts';
import { unlinkAclOfOkm } from './acl-link.ts';
import { okmChange, okmConfigured, okmDeleted, type OkmAuditState } from './audit-view.ts';
import { deleteOkmHistory, findOwnedOkm, listOkms, lockOkm, OKM_PAGES, setOkmCustomer, type OkmListFilter, type OwnedOkm } from './admin-repository.ts';
import { dividingStateOf, isOverdue, stateFactsOf, summaryStateOf } from './fleet-states.ts';
import { AUDIT_RECORD_PAGES, AUDIT_RECORD_PAGES_NEWEST_FIRST, listAuditRecords, type AuditRecord, type AuditRecordFilter } from './audit-repository.ts';
import { listMessages, MESSAGE_PAGES, queueMessage, type OkmMessage } from './messages-repository.ts';
import { UNCONFIGURED_OKM, type OkmSettings } from './model.ts';
import { deleteOkm, insertOkm, updateOkmSettings } from './repository.ts';
import {
  MAX_MESSAGE_PAYLOAD_BYTES,
  OkmSettingsBody,
  type AuditRecordExportQuery,
  type AuditRecordListQuery,
  type AuditRecordView,
  type MessageListQuery,
  type MessageRecord,
  type OkmListQuery,
  type OkmPatchBody,
  type OkmRecord,
} from './schemas.ts';

/** Who asks, for which customer (the `customer` query value), and when. */
export interface OkmRequest {
  db: Db;
  settings: Pick<Settings, 'fleetPollingInterval' | 'webhookAllowPrivateNetworks'>;
  principal: Principal;
  customerName: string | undefined;
  now: number;
}

/** A request that changes an OKM: also who asks, for the audit trail. */
export interface OkmChangeRequest extends OkmRequest {
  source: ChangeSource;
  /** The write's If-Match (PUT, PATCH, DELETE, customer), checked under the OKM's row lock; undefined: unconditional. */
  ifMatch?: IfMatch;
}

const OKM_NOT_FOUND = 'OKM not found';

const iso = (epochMs: number) => new Date(epochMs).toISOString();

export function toOkmRecord({ okm, customerName, aclId, stuck }: OwnedOkm, fleetPollingInterval: number): OkmRecord {
  const effectivePollingInterval = okm.pollingInterval ?? fleetPollingInterval;
  const facts = stateFactsOf({ last_correction: okm.lastCorrection, overdue_at: okm.overdueAt, stuck_resolver: stuck?.resolver ?? null });
  return {
    serial_number: okm.serialNumber,
    customer: customerName,
    cache_mode: okm.cacheMode,
    key_checkout_window: okm.keyCheckoutWindow,
    auditing_enabled: okm.auditingEnabled,
    asset_list: okm.assetList as string[] | null,
    users_assets: okm.usersAssets === null ? null : new JsonText(okm.usersAssetsJson ?? JSON.stringify(okm.usersAssets)),
    polling_interval: okm.pollingInterval,
    effective_polling_interval: effectivePollingInterval,
    firmware: { ...okm.firmware },
    subscribe_urls: { status: okm.statusUrls },
    acl_id: aclId,
    reported: okm.reported,
    install_code: okm.installCode,
    last_sync_time: okm.lastSyncTime === null ? null : iso(okm.lastSyncTime),
    last_ip: okm.lastIp,
    firmware_version: okm.firmwareVersion,
    last_correction: okm.lastCorrection,
    device_token_issued_at: okm.deviceTokenIssuedAt === null ? null : iso(okm.deviceTokenIssuedAt),
    state: dividingStateOf(facts),
    summary_state: summaryStateOf(facts),
    overdue: isOverdue(okm.overdueAt),
    stuck: stuck === null ? null : { resolver: stuck.resolver, since: stuck.since, polls: stuck.polls },
    created_at: iso(okm.createdAt),
    updated_at: iso(okm.updatedAt),
  };
}

/** The record's members that its ETag covers: its configuration, what the admin API writes (the device's reports and the poll's marks are not). */
const CONFIGURATION_MEMBERS = ['customer', 'acl_id', 'cache_mode', 'key_checkout_window', 'auditing_enabled', 'asset_list', 'polling_interval', 'firmware', 'subscribe_urls'] as const;

/**
 * The OKM's strong ETag: a digest of its configuration as its record shows it, firmware pins
 * and a linked ACL's lists included, so that a change by any path gives another tag, while
 * polls, which change only what the device reports, leave it (docs/adr/0100).
 */
export function okmEtag(record: OkmRecord): string {
  const configuration = Object.fromEntries(CONFIGURATION_MEMBERS.map((member) => [member, record[member]]));
  return strongEtag(`${canonicalJson(configuration)}\n${record.users_assets === null ? 'null' : record.users_assets.text}`);
}

/** Evaluates the request's If-Match against the OKM as it is; the caller holds its row lock (undefined: there is no such OKM). */
function checkOkmVersion(request: OkmChangeRequest, current: OwnedOkm | undefined): void {
  if (request.ifMatch === undefined) return;
  const record = current && toOkmRecord(current, request.settings.fleetPollingInterval);
  checkIfMatch(request.ifMatch, record ? okmEtag(record) : null, () => stringifyWithJsonTexts(record));
}

/** The settings a body describes; usersAssetsJson: its users_assets as the text it was sent in. */
function settingsFromBody(body: OkmSettingsBody, usersAssetsJson?: string): OkmSettings {
  return {
    cacheMode: body.cache_mode ?? null,
    keyCheckoutWindow: body.key_checkout_window ?? null,
    auditingEnabled: body.auditing_enabled ?? false,
    assetList: body.asset_list ?? null,
    usersAssets: body.users_assets ?? null,
    ...(usersAssetsJson === undefined ? {} : { usersAssetsJson }),
    pollingInterval: body.polling_interval ?? null,
    firmware: {
      kas: body.firmware?.kas ?? null,
      batch_key: body.firmware?.batch_key ?? null,
      wireless_key: body.firmware?.wireless_key ?? null,
    },
    statusUrls: body.subscribe_urls?.status ?? [],
  };
}

function settingsDocument(settings: OkmSettings): OkmSettingsBody {
  return {
    cache_mode: settings.cacheMode,
    key_checkout_window: settings.keyCheckoutWindow,
    auditing_enabled: settings.auditingEnabled,
    asset_list: settings.assetList as string[] | null,
    users_assets: settings.usersAssets as Record<string, unknown>[] | null,
    polling_interval: settings.pollingInterval,
    firmware: { ...settings.firmware },
    subscribe_urls: { status: settings.statusUrls },
  };
}

/** The OKM as the audit trail records it: a linked OKM's lists are its ACL's, as the API shows them. */
const auditStateOf = (owned: OwnedOkm): OkmAuditState => ({ customer: owned.customerName, configuration: { ...settingsDocument(owned.okm) } });

/**
 * Free-form JSON that goes to devices (users_assets, message payloads) may not repeat a name
 * within one object: JSON leaves the meaning of `{"a":1,"a":2}` open (RFC 8259 §4), and a
 * device whose parser keeps the first value would read another list than keyfleet digests, or
 * another message than the operator sees. Audit records and ACL user_data, which no device
 * reads back, are kept as sent, repeated names included.
 */
function refuseDuplicateNames(field: string, text: string): void {
  const path = duplicateNamePath(text);
  if (path) throw badRequest(`${renderFieldPath(field, path)}: a name that its object already has; JSON objects sent to devices must not repeat a name`);
}

/**
 * The body's users_assets as the text it was sent in, to be stored and shown as such (contract §16);
 * undefined when the body sets none (absent or null), or when its text is not known.
 */
function usersAssetsAsSent(jsonText: string | undefined, body: { users_assets?: unknown }): string | undefined {
  if (jsonText === undefined || body.users_assets === undefined || body.users_assets === null) return undefined;
  const text = memberSource(jsonText, 'users_assets')!;
  refuseDuplicateNames('users_assets', text);
  return text;
}

const validateSettingsBody = validatorCompiler({ schema: OkmSettingsBody, method: 'PATCH', url: '', httpPart: 'body' });

/** A merge patch can combine valid members into an invalid whole (a window without a contact). */
function parseMergedSettings(merged: unknown): OkmSettings {
  if (validateSettingsBody(merged) !== true) {
    const [error] = (validateSettingsBody.errors ?? []) as ErrorObject[];
    throw badRequest(error ? describeValidationError('body', error) : 'body: invalid settings');
  }
  return settingsFromBody(merged as OkmSettingsBody);
}

/**
 * Status subscriber URLs are http or https and, unless private networks are allowed, name no
 * private, loopback or link-local address nor localhost (the rule delivery applies). A URL the
 * OKM already holds is not checked again, so that one stored before the rule does not block
 * changes to other fields; delivery still refuses it.
 */
function checkStatusUrls(urls: readonly string[], settings: OkmRequest['settings'], kept: readonly string[] = []): void {
  urls.forEach((url, index) => {
    const field = `subscribe_urls.status[${index}]`;
    if (!isHttpUrl(url)) throw badRequest(`${field}: must be an http or https URL`);
    if (!kept.includes(url)) checkDestination(field, url, settings.webhookAllowPrivateNetworks);
  });
}

/**
 * Every newly pinned version must be a catalog release of its kind; the release stays locked
 * until the transaction ends, so it cannot be deleted under the pin. Pins already stored
 * need no check: deleting a pinned release is refused.
 */
async function checkNewFirmwarePins(
  trx: Db,
  desired: Record<FirmwareKind, string | null>,
  current: Record<FirmwareKind, string | null> | undefined,
): Promise<void> {
  for (const kind of FIRMWARE_KINDS) {
    const version = desired[kind];
    if (version === null || version === current?.[kind]) continue;
    if (!(await lockRelease(trx, kind, version))) {
      throw badRequest(`firmware.${kind}: no ${kind} release ${version} in the firmware catalog`);
    }
  }
}

const ACL_MANAGED_FIELDS = ['asset_list', 'users_assets'] as const;

/** While an ACL is linked, its locks and users are the OKM's two lists: a body that names either is refused. */
function rejectAclManagedFields(owned: OwnedOkm, body: object): void {
  if (owned.aclId === null) return;
  const field = ACL_MANAGED_FIELDS.find((name) => Object.hasOwn(body, name));
  if (field !== undefined) throw conflict(`${field}: set by the linked ACL ${owned.aclId}; change that ACL, or unlink it, instead`);
}

const isVisibleTo = (owned: OwnedOkm, acting: Customer | null) => acting === null || owned.okm.customerId === acting.id;

/** The OKM if the acting customer may see it; another customer's OKM is "not found" like a missing one. */
async function visibleOkm(db: Db, acting: Customer | null, serialNumber: string): Promise<OwnedOkm> {
  const owned = await findOwnedOkm(db, serialNumber);
  if (!owned || !isVisibleTo(owned, acting)) throw notFound(OKM_NOT_FOUND);
  return owned;
}

/** As visibleOkm, holding the OKM's row lock until the transaction ends. */
async function lockedVisibleOkm(trx: Db, acting: Customer | null, serialNumber: string): Promise<OwnedOkm> {
  if (!(await lockOkm(trx, serialNumber))) throw notFound(OKM_NOT_FOUND);
  return visibleOkm(trx, acting, serialNumber);
}

async function currentOwnedOkm(db: Db, serialNumber: string): Promise<OwnedOkm> {
  const owned = await findOwnedOkm(db, serialNumber);
  if (!owned) throw notFound(OKM_NOT_FOUND);
  return owned;
}

/** The record a PUT or PATCH leaves, its okm.configured entry appended as the transaction's last statements. */
async function recordConfigured(request: OkmChangeRequest, trx: Db, serialNumber: string, before: OwnedOkm | undefined): Promise<OkmRecord> {
  const after = await currentOwnedOkm(trx, serialNumber);
  await recordChange(trx, request.source, okmConfigured(serialNumber, before && auditStateOf(before), auditStateOf(after)), request.now);
  return toOkmRecord(after, request.settings.fleetPollingInterval);
}

const actingFor = (request: OkmRequest) => actingCustomer(request.db, request.principal, request.customerName);

export async function listOkmRecords(request: OkmRequest, query: OkmListQuery): Promise<CursorPage<OkmRecord>> {
  const page = cursorPageRequest(OKM_PAGES, query);
  const okms = await listOkms(request.db, await listFilterOf(request, query), page);
  return mapCursorPage(okms, (owned) => toOkmRecord(owned, request.settings.fleetPollingInterval));
}

/** The list's filters, as the OKM list and a bulk action take them. */
export type OkmFilterQuery = Pick<OkmListQuery, 'unassigned' | 'overdue' | 'firmware_version' | 'state' | 'serial_prefix' | 'last_correction' | 'subscriber_url'>;

/**
 * What the list's filters select, within what the principal may see: a customer's principal
 * its customer's OKMs only (another customer named: 403), unassigned OKMs for an admin only.
 */
export async function listFilterOf(request: OkmRequest, query: OkmFilterQuery): Promise<OkmListFilter> {
  if (query.unassigned && !request.principal.isAdmin) throw forbidden('unassigned: only an admin token may list unassigned OKMs');
  const acting = await actingFor(request);
  if (query.unassigned && acting !== null) throw badRequest('unassigned: cannot be combined with customer');
  return {
    ...(acting === null ? {} : { customerId: acting.id }),
    ...(query.unassigned ? { unassigned: true } : {}),
    ...(query.overdue === undefined ? {} : { overdue: query.overdue }),
    ...(query.firmware_version === undefined ? {} : { firmwareVersion: query.firmware_version }),
    ...(query.state === undefined ? {} : { state: query.state }),
    ...(query.serial_prefix === undefined ? {} : { serialPrefix: query.serial_prefix }),
    ...(query.last_correction === undefined ? {} : { lastCorrection: query.last_correction }),
    ...(query.subscriber_url === undefined ? {} : { subscriberUrl: query.subscriber_url }),
  };
}

/** Throws the 404 of an OKM that does not exist or that the acting customer may not see. */
export async function checkOkmVisible(request: OkmRequest, serialNumber: string): Promise<void> {
  await visibleOkm(request.db, await actingFor(request), serialNumber);
}

export async function getOkmRecord(request: OkmRequest, serialNumber: string): Promise<OkmRecord> {
  const owned = await visibleOkm(request.db, await actingFor(request), serialNumber);
  return toOkmRecord(owned, request.settings.fleetPollingInterval);
}

/**
 * A customer token may PUT or PATCH only the OKMs its customer holds. Any other serial number
 * (unassigned, another customer's, or not known yet) gets this one 409, so that a tenant can
 * neither take a device nor squat a serial number before the device's first poll, nor tell
 * those cases apart: a customer takes an OKM only by claiming it (claim-service.ts).
 */
async function lockedOwnOkm(trx: Db, acting: Customer, serialNumber: string): Promise<OwnedOkm> {
  const owned = (await lockOkm(trx, serialNumber)) ? await findOwnedOkm(trx, serialNumber) : undefined;
  if (owned?.okm.customerId !== acting.id) throw conflict(`OKM ${serialNumber} is not assigned to you; claim it with its installer code`);
  return owned;
}

/**
 * The acting customer of a principal that is not an admin; null for an admin, whichever
 * customer it acts for. Only an admin assigns an OKM directly (contract §10): a person of every
 * customer who is not one changes only OKMs their acting customer holds, as a customer token does.
 */
const customerTokenActing = (request: OkmRequest, acting: Customer | null) => (request.principal.isAdmin ? null : acting);

/**
 * PUT: replaces the settings of an OKM. A customer token: only of an OKM its customer holds
 * (lockedOwnOkm). An admin token creates the OKM for the customer it acts for, or for none;
 * acting for a customer, it also gives that customer an OKM nobody holds (both "created").
 * A serial number held by another customer is a 409: serial numbers are global.
 */
export async function replaceOkm(
  request: OkmChangeRequest,
  serialNumber: string,
  body: OkmSettingsBody,
  jsonText?: string,
): Promise<{ record: OkmRecord; created: boolean }> {
  const desired = settingsFromBody(body, usersAssetsAsSent(jsonText, body));
  checkStatusUrls(desired.statusUrls, request.settings);
  const acting = await actingFor(request);
  const customerToken = customerTokenActing(request, acting);
  return request.db.transaction().execute(async (trx) => {
    const replaceSettingsOf = async (current: OwnedOkm, created: boolean) => {
      rejectAclManagedFields(current, body);
      await checkNewFirmwarePins(trx, desired.firmware, current.okm.firmware);
      await updateOkmSettings(trx, serialNumber, desired, request.now, current.aclId !== null);
      return { record: await recordConfigured(request, trx, serialNumber, current), created };
    };
    if (customerToken !== null) {
      const own = await lockedOwnOkm(trx, customerToken, serialNumber);
      checkOkmVersion(request, own);
      return replaceSettingsOf(own, false);
    }
    const lockedExisting = await lockOkm(trx, serialNumber);
    // With If-Match, PUT only replaces: a missing OKM has no version to match.
    if (!lockedExisting) checkOkmVersion(request, undefined);
    if (!lockedExisting && (await insertOkm(trx, serialNumber, acting?.id ?? null, desired, request.now))) {
      await checkNewFirmwarePins(trx, desired.firmware, undefined);
      return { record: await recordConfigured(request, trx, serialNumber, undefined), created: true };
    }
    // Either it existed, or a poll inserted it between the lock attempt and the insert.
    if (!lockedExisting) await lockOkm(trx, serialNumber);
    const current = await findOwnedOkm(trx, serialNumber);
    if (!current) throw notFound(OKM_NOT_FOUND);
    const ownerId = current.okm.customerId;
    if (acting !== null && ownerId !== null && ownerId !== acting.id) throw conflict('serial number is not available');
    checkOkmVersion(request, current);
    const assigned = acting !== null && ownerId === null;
    if (assigned) await setOkmCustomer(trx, serialNumber, acting.id, request.now);
    return replaceSettingsOf(current, assigned);
  });
}

/**
 * PATCH (RFC 7396). users_assets is an array, which a merge patch replaces whole: a patch that
 * sets it stores the array as sent in that patch; one that does not name it leaves the stored
 * text as it is.
 */
export async function patchOkm(request: OkmChangeRequest, serialNumber: string, patch: OkmPatchBody, jsonText?: string): Promise<OkmRecord> {
  const usersAssetsJson = usersAssetsAsSent(jsonText, patch);
  const acting = await actingFor(request);
  const customerToken = customerTokenActing(request, acting);
  return request.db.transaction().execute(async (trx) => {
    const current = customerToken === null ? await lockedVisibleOkm(trx, acting, serialNumber) : await lockedOwnOkm(trx, customerToken, serialNumber);
    checkOkmVersion(request, current);
    return patchLockedOkm(request, trx, current, patch, usersAssetsJson);
  });
}

/** A merge patch of an OKM whose row lock `trx` holds, with its okm.configured entry (PATCH, and a bulk action's settings). */
export async function patchLockedOkm(request: OkmChangeRequest, trx: Db, current: OwnedOkm, patch: OkmPatchBody, usersAssetsJson?: string): Promise<OkmRecord> {
  const serialNumber = current.okm.serialNumber;
  rejectAclManagedFields(current, patch);
  const linked = current.aclId !== null;
  // A linked OKM's lists are the ACL's, which OKM settings bodies may not hold (caps of their own).
  const document = settingsDocument(linked ? { ...current.okm, assetList: null, usersAssets: null } : current.okm);
  const desired = parseMergedSettings(applyMergePatch(document, patch));
  const keptUsersAssetsJson = Object.hasOwn(patch, 'users_assets') ? usersAssetsJson : linked ? undefined : current.okm.usersAssetsJson;
  if (keptUsersAssetsJson !== undefined) desired.usersAssetsJson = keptUsersAssetsJson;
  checkStatusUrls(desired.statusUrls, request.settings, current.okm.statusUrls);
  await checkNewFirmwarePins(trx, desired.firmware, current.okm.firmware);
  await updateOkmSettings(trx, serialNumber, desired, request.now, linked);
  return recordConfigured(request, trx, serialNumber, current);
}

/** Deletes the OKM with its messages and audit records; if it polls again it comes back unassigned. */
export async function removeOkm(request: OkmChangeRequest, serialNumber: string): Promise<void> {
  const acting = await actingFor(request);
  await request.db.transaction().execute(async (trx) => {
    const deleted = await lockedVisibleOkm(trx, acting, serialNumber);
    checkOkmVersion(request, deleted);
    await deleteOkm(trx, serialNumber);
    await recordChange(trx, request.source, okmDeleted(serialNumber, auditStateOf(deleted)), request.now);
  });
}

/**
 * Operator call (the route requires the admin scope): moves the OKM to a customer, or to
 * none. Moving it away from a customer resets its desired configuration and deletes its
 * messages and audit records, so that neither the previous customer's webhooks, lists and
 * pins nor its history and undelivered messages follow the device to the next owner;
 * an ACL linked to it is unlinked and the device told to delete its assets.
 * Claiming an unassigned OKM keeps all of it.
 */
export async function assignOkm(request: OkmChangeRequest, serialNumber: string, customerName: string | null): Promise<OkmRecord> {
  return request.db.transaction().execute(async (trx) => {
    if (!(await lockOkm(trx, serialNumber))) throw notFound(OKM_NOT_FOUND);
    const customer = customerName === null ? null : await findCustomerByName(trx, customerName);
    if (customer === undefined) throw badRequest(`customer: unknown customer ${customerName}`);
    return assignLockedOkm(request, trx, serialNumber, customer);
  });
}

/** As assignOkm, for an OKM whose row lock `trx` holds and a customer found already (also a bulk action's assign). */
export async function assignLockedOkm(request: OkmChangeRequest, trx: Db, serialNumber: string, customer: Customer | null): Promise<OkmRecord> {
  const current = await findOwnedOkm(trx, serialNumber);
  if (!current) throw notFound(OKM_NOT_FOUND);
  checkOkmVersion(request, current);
  const previousId = current.okm.customerId;
  const nextId = customer?.id ?? null;
  if (previousId !== nextId) {
    if (previousId !== null) {
      await updateOkmSettings(trx, serialNumber, UNCONFIGURED_OKM, request.now);
      await deleteOkmHistory(trx, serialNumber);
      await unlinkAclOfOkm(trx, serialNumber, request.now);
    }
    await setOkmCustomer(trx, serialNumber, nextId, request.now);
  }
  const after = await currentOwnedOkm(trx, serialNumber);
  // The entry is the new customer's; one moved to none is still the previous customer's to see.
  const entryCustomer = after.customerName ?? current.customerName;
  const change = okmChange('okm.assigned', serialNumber, entryCustomer, { before: { customer: current.customerName }, after: { customer: after.customerName } });
  await recordChange(trx, request.source, change, request.now);
  return toOkmRecord(after, request.settings.fleetPollingInterval);
}

function toMessageRecord(message: OkmMessage): MessageRecord {
  return {
    id: message.id,
    type: message.type,
    payload: new JsonText(message.payloadJson),
    created_at: iso(message.createdAt),
    delivered_at: message.deliveredAt === null ? null : iso(message.deliveredAt),
  };
}

/**
 * Queues a message whose payload is the JSON text `payloadJson`, as sent (contract §16): stored as
 * that text, shown as that text, and sent to the device as keyfleet reads it.
 */
export async function postMessage(request: OkmChangeRequest, serialNumber: string, type: string, payloadJson: string): Promise<MessageRecord> {
  checkMessagePayload(payloadJson);
  const acting = await actingFor(request);
  return request.db.transaction().execute(async (trx) => queueMessageLocked(request, trx, await lockedVisibleOkm(trx, acting, serialNumber), type, payloadJson));
}

/** Checks a message's payload as postMessage does, before any transaction (a bulk action checks it once). */
export function checkMessagePayload(payloadJson: string): void {
  if (Buffer.byteLength(payloadJson) > MAX_MESSAGE_PAYLOAD_BYTES) {
    throw badRequest(`payload: must be at most ${MAX_MESSAGE_PAYLOAD_BYTES} bytes of JSON`);
  }
  refuseDuplicateNames('payload', payloadJson);
}

/** Queues a checked message for an OKM whose row lock `trx` holds, with its okm.message_queued entry. */
export async function queueMessageLocked(request: OkmChangeRequest, trx: Db, owned: OwnedOkm, type: string, payloadJson: string): Promise<MessageRecord> {
  const serialNumber = owned.okm.serialNumber;
  const message = await queueMessage(trx, serialNumber, type, new JsonText(payloadJson), request.now);
  // Id and type only: a payload may carry what no entry should hold, and it is kept with the message.
  await recordChange(trx, request.source, okmChange('okm.message_queued', serialNumber, owned.customerName, { after: { id: message.id, type: message.type } }), request.now);
  return toMessageRecord(message);
}

/**
 * Takes `url` out of the status URLs of an OKM whose row lock `trx` holds (a bulk action's
 * remove_subscriber_url), its other settings as they are; okm.configured records the change.
 * An OKM that does not hold the URL is left alone: false.
 */
export async function removeStatusUrlLocked(request: OkmChangeRequest, trx: Db, current: OwnedOkm, url: string): Promise<boolean> {
  if (!current.okm.statusUrls.includes(url)) return false;
  const linked = current.aclId !== null;
  await updateOkmSettings(trx, current.okm.serialNumber, { ...current.okm, statusUrls: current.okm.statusUrls.filter((kept) => kept !== url) }, request.now, linked);
  await recordConfigured(request, trx, current.okm.serialNumber, current);
  return true;
}

/** A page of the OKM's messages (pending and delivered, or those the query picks), oldest first. */
export async function messageHistory(request: OkmRequest, serialNumber: string, query: MessageListQuery): Promise<CursorPage<MessageRecord>> {
  const page = cursorPageRequest(MESSAGE_PAGES, query);
  await visibleOkm(request.db, await actingFor(request), serialNumber);
  return mapCursorPage(await listMessages(request.db, serialNumber, page, query.pending), toMessageRecord);
}

/** The filter of an audit record query; `until` before `since` is a 400. */
function auditRecordFilterOf(query: Pick<AuditRecordListQuery, 'order' | 'since' | 'until'>): AuditRecordFilter {
  const since = query.since === undefined ? undefined : Date.parse(query.since);
  const until = query.until === undefined ? undefined : Date.parse(query.until);
  if (since !== undefined && until !== undefined && until < since) throw badRequest('until: must not be before since');
  return { newestFirst: query.order === 'newest_first', ...(since === undefined ? {} : { since }), ...(until === undefined ? {} : { until }) };
}

const auditRecordView = (record: AuditRecord): AuditRecordView => ({ id: record.id, received_at: iso(record.receivedAt), record: new JsonText(record.recordJson) });

/** A page of the OKM's audit records, in the order they arrived or newest first, received in a window or at any time. */
export async function auditRecords(request: OkmRequest, serialNumber: string, query: AuditRecordListQuery): Promise<CursorPage<AuditRecordView>> {
  const filter = auditRecordFilterOf(query);
  const page = cursorPageRequest(filter.newestFirst ? AUDIT_RECORD_PAGES_NEWEST_FIRST : AUDIT_RECORD_PAGES, query);
  await visibleOkm(request.db, await actingFor(request), serialNumber);
  return mapCursorPage(await listAuditRecords(request.db, serialNumber, page, filter), auditRecordView);
}

/** Every audit record the query picks, a page at a time (for a CSV export); the first page's read is where a 404 comes from. */
export function everyAuditRecord(request: OkmRequest, serialNumber: string, query: AuditRecordExportQuery): AsyncGenerator<AuditRecord> {
  const filter = auditRecordFilterOf(query);
  const pages = filter.newestFirst ? AUDIT_RECORD_PAGES_NEWEST_FIRST : AUDIT_RECORD_PAGES;
  return everyItem(async (cursor, limit) => {
    if (cursor === undefined) await visibleOkm(request.db, await actingFor(request), serialNumber);
    return listAuditRecords(request.db, serialNumber, cursorPageRequest(pages, { cursor, limit }), filter);
  });
}
